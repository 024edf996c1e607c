package shm

// Byte-level layout tests against compat.md §1: TestLayoutBytes creates
// rings with the library and checks the raw file bytes (os.ReadFile) at the
// offsets the spec documents. specring_test.go goes the other way.

import (
	"bytes"
	"fmt"
	"os"
	"testing"
)

// layMakeRec is record seq of these tests as a tick; its bytes are
// specPayload(seq).
func layMakeRec(seq uint64) tick {
	r := tick{Seq: seq, Value: 7 * seq}
	copy(r.Text[:], fmt.Sprintf("lay-%04d", seq))
	return r
}

// layFile is a raw view of a ring file's bytes.
type layFile struct {
	t *testing.T
	b []byte
}

func layRead(t *testing.T, path string) layFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return layFile{t, b}
}

func (f layFile) u64(off uint64) uint64 { return le.Uint64(f.b[off:]) }
func (f layFile) u32(off uint64) uint32 { return le.Uint32(f.b[off:]) }

func (f layFile) want64(what string, off, want uint64) {
	f.t.Helper()
	if got := f.u64(off); got != want {
		f.t.Errorf("%s (u64 @%d) = %d (%#x), want %d (%#x)", what, off, got, got, want, want)
	}
}

func (f layFile) want32(what string, off uint64, want uint32) {
	f.t.Helper()
	if got := f.u32(off); got != want {
		f.t.Errorf("%s (u32 @%d) = %d (%#x), want %d (%#x)", what, off, got, got, want, want)
	}
}

func (f layFile) wantBytes(what string, off uint64, want []byte) {
	f.t.Helper()
	if got := f.b[off : off+uint64(len(want))]; !bytes.Equal(got, want) {
		f.t.Errorf("%s (@%d, %d bytes) = %q, want %q", what, off, len(want), got, want)
	}
}

// layHeaderWant is what the spec says the header of a ring must hold.
type layHeaderWant struct {
	elementSize   uint32
	capacity      uint64
	writeSeq      uint64
	flags         uint32
	schemaSig     uint64
	arenaOffset   uint64
	arenaSize     uint64
	registryOff   uint32
	registryCount uint32
	slotsOffset   uint64
	fileSize      int
}

func (f layFile) checkHeader(w layHeaderWant) {
	f.t.Helper()
	if len(f.b) != w.fileSize {
		f.t.Errorf("file size %d, want %d", len(f.b), w.fileSize)
	}
	f.want64("magic", 0, 0x5249_4E47_4649_5245)
	f.wantBytes("magic bytes", 0, []byte("ERIFGNIR")) // "RINGFIRE" as a little-endian u64
	f.want32("version", 8, 2)
	f.want32("element_size", 12, w.elementSize)
	f.want64("capacity", 16, w.capacity)
	f.want64("mask", 24, w.capacity-1)
	f.want64("write_seq", 32, w.writeSeq)
	f.want64("claim_seq", 40, 0)
	f.want32("flags", 48, w.flags)
	f.want32("waiting_consumers", 56, 0)
	f.want32("pad@60", 60, 0)
	f.want64("read_seq", 64, 0)
	f.want64("schema_sig", 72, w.schemaSig)
	f.want64("arena_offset", 80, w.arenaOffset)
	f.want64("arena_size", 88, w.arenaSize)
	f.want32("reader_registry_offset", 96, w.registryOff)
	f.want32("reader_registry_count", 100, w.registryCount)
	f.want64("slots_offset", 104, w.slotsOffset)
	f.wantBytes("pad@112", 112, make([]byte, 16))
}

// checkFixedSlots checks that slot i (at slots_offset + i*element_size)
// holds the newest sequence s <= writeSeq with s&mask == i, followed by
// specPayload(s); slots never written hold sequence 0 and a zero payload.
func (f layFile) checkFixedSlots(slotsOff uint64, elem uint32, capa, writeSeq uint64) {
	f.t.Helper()
	for i := uint64(0); i < capa; i++ {
		off := slotsOff + i*uint64(elem)
		var want uint64
		for s := writeSeq; s >= 1 && s+capa > writeSeq; s-- {
			if s&(capa-1) == i {
				want = s
				break
			}
		}
		f.want64(fmt.Sprintf("slot %d seq", i), off, want)
		if want == 0 {
			f.wantBytes(fmt.Sprintf("slot %d payload", i), off+8, make([]byte, elem-8))
			continue
		}
		f.wantBytes(fmt.Sprintf("slot %d payload", i), off+8, specPayload(want))
		if elem > 64 {
			f.wantBytes(fmt.Sprintf("slot %d padding", i), off+64, make([]byte, elem-64))
		}
	}
}

// checkRegistryEntry checks reader registry entry i (at 128 + 64*i).
func (f layFile) checkRegistryEntry(i int, pid uint32, active uint32, cursor uint64, name string) {
	f.t.Helper()
	off := uint64(128 + 64*i)
	f.want32(fmt.Sprintf("registry[%d].pid", i), off, pid)
	f.want32(fmt.Sprintf("registry[%d].active", i), off+4, active)
	f.want64(fmt.Sprintf("registry[%d].cursor_seq", i), off+8, cursor)
	nb := make([]byte, 32)
	copy(nb, name)
	f.wantBytes(fmt.Sprintf("registry[%d].name", i), off+24, nb)
}

func layPushRecs(t *testing.T, w *Writer, from, to uint64) {
	t.Helper()
	for s := from; s <= to; s++ {
		got, err := w.Push(specPayload(s))
		if err != nil || got != s {
			t.Fatalf("push %d: got %d, %v", s, got, err)
		}
	}
}

func TestLayoutBytes(t *testing.T) {
	t.Run("fixed-16x56-lossy", func(t *testing.T) {
		path := ringPath(t)
		p := producer[tick](t, path, ProducerOptions{Capacity: 16, SchemaSig: 0xC0FFEE})
		for s := uint64(1); s <= 20; s++ {
			r := layMakeRec(s)
			if got, err := p.Push(&r); err != nil || got != s {
				t.Fatalf("push %d: %d %v", s, got, err)
			}
		}
		f := layRead(t, path)
		elem := uint32(specRoundUp(8+56, 8))
		if elem != 64 {
			t.Fatalf("test arithmetic: stride %d", elem)
		}
		f.checkHeader(layHeaderWant{elementSize: elem, capacity: 16, writeSeq: 20,
			flags: 0x10 | 0x1, schemaSig: 0xC0FFEE, slotsOffset: 128, fileSize: 128 + 16*64})
		f.checkFixedSlots(128, elem, 16, 20)
		// The fixture's story: slot i holds i+16 for i < 5, i otherwise.
		for i := uint64(0); i < 16; i++ {
			want := i
			if i < 5 {
				want = i + 16
			}
			f.want64(fmt.Sprintf("slot %d", i), 128+i*64, want)
		}
	})

	t.Run("fixed-odd-payload-stride", func(t *testing.T) {
		// Slot stride = round_up(8 + payload, 8): a 13-byte payload takes 24.
		w, path := createRing(t, RingConfig{PayloadSize: 13, Capacity: 4})
		if _, err := w.Push([]byte("abcdefghijklm")); err != nil {
			t.Fatal(err)
		}
		f := layRead(t, path)
		f.checkHeader(layHeaderWant{elementSize: 24, capacity: 4, writeSeq: 1, flags: 0x11,
			slotsOffset: 128, fileSize: 128 + 4*24})
		f.want64("slot 1 seq", 128+24, 1)
		f.wantBytes("slot 1 payload", 128+24+8, append([]byte("abcdefghijklm"), 0, 0, 0))
		f.want64("slot 0 seq", 128, 0)
	})

	t.Run("lossless-default-32-readers", func(t *testing.T) {
		w, path := createRing(t, RingConfig{PayloadSize: 56, Capacity: 16, Flags: FlagLossless})
		layPushRecs(t, w, 1, 5)
		rd, err := OpenReader(path, ReadOptions{Start: StartOldest, Name: "layout-reader"})
		if err != nil {
			t.Fatal(err)
		}
		defer rd.Close()
		if !rd.Registered() {
			t.Fatal("reader on a lossless ring is not registered")
		}
		buf := make([]byte, 56)
		for want := uint64(1); want <= 3; want++ {
			if s, ok := rd.TryRecv(buf); !ok || s != want {
				t.Fatalf("recv: %d %v, want %d", s, ok, want)
			}
		}
		f := layRead(t, path)
		slots := specRoundUp(128+64*32, 64)
		if slots != 2176 {
			t.Fatalf("test arithmetic: %d", slots)
		}
		f.checkHeader(layHeaderWant{elementSize: 64, capacity: 16, writeSeq: 5,
			flags: 0x2 | 0x10 | 0x200, registryOff: 128, registryCount: 32,
			slotsOffset: 2176, fileSize: 2176 + 16*64})
		// Entry 0 is ours: pid, active, cursor = next wanted (4), name.
		f.checkRegistryEntry(0, uint32(os.Getpid()), 1, 4, "layout-reader")
		f.want64("registry[0].heartbeat", 128+16, 0)
		f.wantBytes("registry[0].pad", 128+56, make([]byte, 8))
		for i := 1; i < 32; i++ {
			f.wantBytes(fmt.Sprintf("registry[%d]", i), uint64(128+64*i), make([]byte, 64))
		}
		f.checkFixedSlots(2176, 64, 16, 5)

		// Close releases the entry: pid and active back to 0.
		rd.Close()
		f = layRead(t, path)
		f.want32("registry[0].pid after close", 128, 0)
		f.want32("registry[0].active after close", 132, 0)
	})

	t.Run("blob-u32-cap8-arena4096", func(t *testing.T) {
		path := ringPath(t)
		p := blobProducer[uint32](t, path, BlobOptions{Capacity: 8, ArenaSize: 4096})
		// Blob sizes chosen so that reservations round to 64 and the fourth
		// blob wraps to the next lap boundary, overwriting the first two.
		sizes := []int{100, 1000, 2000, 1000, 10}
		wantOff := []uint64{0, 128, 1152, 4096, 5120} // cumulative offsets
		blobs := make([][]byte, len(sizes))
		for i, n := range sizes {
			blobs[i] = bytes.Repeat([]byte{byte(0xB0 + i)}, n)
			meta := uint32(0xA000 + i)
			if s, err := p.PushFlags(&meta, blobs[i], uint32(0x50+i)); err != nil || s != uint64(i+1) {
				t.Fatalf("push %d: %d %v", i, s, err)
			}
		}
		metaSize := uint64(4)
		payload := specRoundUp(metaSize, 8) + 16
		elem := uint32(specRoundUp(8+payload, 8))
		if elem != 32 || BlobPayloadSize(4) != 24 {
			t.Fatalf("stride %d, BlobPayloadSize(4) = %d", elem, BlobPayloadSize(4))
		}
		slotsOff := uint64(128)
		arenaOff := specRoundUp(slotsOff+8*uint64(elem), 128) // 384
		f := layRead(t, path)
		f.checkHeader(layHeaderWant{elementSize: elem, capacity: 8, writeSeq: 5,
			flags: 0x1 | 0x10 | 0x100, arenaOffset: arenaOff, arenaSize: 4096,
			slotsOffset: slotsOff, fileSize: int(arenaOff + 64 + 4096)})
		// Arena header: capacity, mask, reserved (cumulative bytes reserved).
		f.want64("arena.capacity", arenaOff, 4096)
		f.want64("arena.mask", arenaOff+8, 4095)
		f.want64("arena.reserved", arenaOff+16, 5120+64)
		for i := range sizes {
			off := slotsOff + uint64(i+1)*uint64(elem) // record i is sequence i+1
			f.want64(fmt.Sprintf("slot %d seq", i+1), off, uint64(i+1))
			f.want32(fmt.Sprintf("slot %d meta", i+1), off+8, uint32(0xA000+i))
			f.want32(fmt.Sprintf("slot %d meta pad", i+1), off+12, 0)
			d := off + 8 + specRoundUp(metaSize, 8) // descriptor at round_up(meta, 8)
			f.want64(fmt.Sprintf("slot %d desc.offset", i+1), d, wantOff[i])
			f.want32(fmt.Sprintf("slot %d desc.len", i+1), d+8, uint32(sizes[i]))
			f.want32(fmt.Sprintf("slot %d desc.flags", i+1), d+12, uint32(0x50+i))
		}
		// Blobs 2..4 are intact at arena_offset + 64 + (offset & mask);
		// blob 3 started at the lap boundary and overwrote blobs 0 and 1.
		for _, i := range []int{2, 3, 4} {
			f.wantBytes(fmt.Sprintf("blob %d", i), arenaOff+64+wantOff[i]&4095, blobs[i])
		}
		f.wantBytes("blob 3 overwrote blob 0", arenaOff+64, blobs[3][:100])

		// The library agrees: blobs 0 and 1 are lost (lapped), 2..4 read back.
		c := blobConsumer[uint32](t, path, ReadOptions{Start: StartOldest})
		buf := make([]byte, 4096)
		for _, i := range []int{2, 3, 4} {
			var meta uint32
			n, ok, err := c.TryRecv(&meta, buf)
			if err != nil || !ok || n != sizes[i] || meta != uint32(0xA000+i) || !bytes.Equal(buf[:n], blobs[i]) {
				t.Fatalf("blob %d: n %d ok %v err %v meta %#x", i, n, ok, err, meta)
			}
		}
		if c.Lapped() != 2 {
			t.Errorf("lapped %d, want 2 (the two overwritten blobs)", c.Lapped())
		}
	})

	t.Run("blob-with-registry", func(t *testing.T) {
		// 3 registry entries end at 128+192 = 320: a fixed ring would put
		// its slots at 320, a blob ring rounds up to 128 (384).
		w, path := createRing(t, RingConfig{PayloadSize: BlobPayloadSize(4), Capacity: 8, ArenaSize: 4096, Readers: 3})
		c := blobConsumer[uint32](t, path, ReadOptions{Start: StartOldest, Name: "blob-reader-0123456789-abcdefghij"})
		payload := make([]byte, BlobPayloadSize(4))
		for i := 0; i < 3; i++ {
			b := bytes.Repeat([]byte{byte('a' + i)}, 64*i+10)
			off, err := w.AppendBlob(b)
			if err != nil {
				t.Fatal(err)
			}
			clear(payload)
			le.PutUint32(payload, uint32(0xCAFE0+i))
			Descriptor{Offset: off, Len: uint32(len(b)), Flags: 7}.Encode(payload)
			if _, err := w.Push(payload); err != nil {
				t.Fatal(err)
			}
		}
		var meta uint32
		buf := make([]byte, 4096)
		if n, ok, err := c.TryRecv(&meta, buf); !ok || err != nil || n != 10 || meta != 0xCAFE0 {
			t.Fatalf("recv: %d %v %v %#x", n, ok, err, meta)
		}
		slotsOff := specRoundUp(128+64*3, 128)
		arenaOff := specRoundUp(slotsOff+8*32, 128)
		if slotsOff != 384 || arenaOff != 640 {
			t.Fatalf("test arithmetic %d %d", slotsOff, arenaOff)
		}
		f := layRead(t, path)
		f.checkHeader(layHeaderWant{elementSize: 32, capacity: 8, writeSeq: 3,
			flags: 0x1 | 0x10 | 0x100 | 0x200, arenaOffset: arenaOff, arenaSize: 4096,
			registryOff: 128, registryCount: 3, slotsOffset: slotsOff, fileSize: int(arenaOff + 64 + 4096)})
		// The name is cut to its 32 bytes.
		f.checkRegistryEntry(0, uint32(os.Getpid()), 1, 2, "blob-reader-0123456789-abcdefghij"[:32])
		f.wantBytes("registry[1]", 192, make([]byte, 128))
		f.want64("arena.capacity", arenaOff, 4096)
		f.want64("arena.mask", arenaOff+8, 4095)
		f.want64("arena.reserved", arenaOff+16, 64+128+192)
		offs := []uint64{0, 64, 192}
		for i := 0; i < 3; i++ {
			off := slotsOff + uint64(i+1)*32
			f.want64(fmt.Sprintf("slot %d seq", i+1), off, uint64(i+1))
			f.want32(fmt.Sprintf("slot %d meta", i+1), off+8, uint32(0xCAFE0+i))
			f.want64(fmt.Sprintf("slot %d desc.offset", i+1), off+16, offs[i])
			f.want32(fmt.Sprintf("slot %d desc.len", i+1), off+24, uint32(64*i+10))
			f.want32(fmt.Sprintf("slot %d desc.flags", i+1), off+28, 7)
			f.wantBytes(fmt.Sprintf("blob %d", i), arenaOff+64+offs[i], bytes.Repeat([]byte{byte('a' + i)}, 64*i+10))
		}
	})
}
