package shm

// Byte-level layout tests against compat.md §1.
//
// TestLayoutBytes creates rings with the library and checks the raw file
// bytes (os.ReadFile) at the offsets the spec documents. TestReadSpecBuiltRing
// goes the other way: it builds ring files byte by byte from the spec with
// encoding/binary only, then attaches the library's readers to them.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var layLE = binary.LittleEndian

// layRec is the 56-byte fixed record of these tests (and of the Python
// fixture): seq u64 @0, value u64 @8, text [40]byte @16.
type layRec struct {
	Seq   uint64
	Value uint64
	Text  [40]byte
}

func layMakeRec(seq uint64) layRec {
	r := layRec{Seq: seq, Value: 7 * seq}
	copy(r.Text[:], fmt.Sprintf("lay-%04d", seq))
	return r
}

// layPayload encodes layMakeRec(seq) as the 56 payload bytes, without going
// through the library.
func layPayload(seq uint64) []byte {
	b := make([]byte, 56)
	layLE.PutUint64(b[0:], seq)
	layLE.PutUint64(b[8:], 7*seq)
	copy(b[16:], fmt.Sprintf("lay-%04d", seq))
	return b
}

func layRoundUp(v, to uint64) uint64 { return (v + to - 1) / to * to }

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

func (f layFile) u64(off uint64) uint64 { return layLE.Uint64(f.b[off:]) }
func (f layFile) u32(off uint64) uint32 { return layLE.Uint32(f.b[off:]) }

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
// layPayload(s); slots never written hold sequence 0 and a zero payload.
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
		f.wantBytes(fmt.Sprintf("slot %d payload", i), off+8, layPayload(want))
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
		got, err := w.Push(layPayload(s))
		if err != nil || got != s {
			t.Fatalf("push %d: got %d, %v", s, got, err)
		}
	}
}

func TestLayoutBytes(t *testing.T) {
	t.Run("fixed-16x56-lossy", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "ring")
		p, err := NewProducer[layRec](path, ProducerOptions{Capacity: 16, SchemaSig: 0xC0FFEE})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		for s := uint64(1); s <= 20; s++ {
			r := layMakeRec(s)
			if got, err := p.Push(&r); err != nil || got != s {
				t.Fatalf("push %d: %d %v", s, got, err)
			}
		}
		f := layRead(t, path)
		elem := uint32(layRoundUp(8+56, 8))
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
		path := filepath.Join(t.TempDir(), "ring")
		w, err := Create(path, RingConfig{PayloadSize: 13, Capacity: 4}, CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
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
		path := filepath.Join(t.TempDir(), "ring")
		w, err := Create(path, RingConfig{PayloadSize: 56, Capacity: 16, Flags: FlagLossless}, CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
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
		slots := layRoundUp(128+64*32, 64)
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
		path := filepath.Join(t.TempDir(), "ring")
		p, err := NewBlobProducer[uint32](path, BlobOptions{Capacity: 8, ArenaSize: 4096})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
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
		payload := layRoundUp(metaSize, 8) + 16
		elem := uint32(layRoundUp(8+payload, 8))
		if elem != 32 || BlobPayloadSize(4) != 24 {
			t.Fatalf("stride %d, BlobPayloadSize(4) = %d", elem, BlobPayloadSize(4))
		}
		slotsOff := uint64(128)
		arenaOff := layRoundUp(slotsOff+8*uint64(elem), 128) // 384
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
			d := off + 8 + layRoundUp(metaSize, 8) // descriptor at round_up(meta, 8)
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
		c, err := NewBlobConsumer[uint32](path, ReadOptions{Start: StartOldest})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
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
		path := filepath.Join(t.TempDir(), "ring")
		// 3 registry entries end at 128+192 = 320: a fixed ring would put
		// its slots at 320, a blob ring rounds up to 128 (384).
		w, err := Create(path, RingConfig{PayloadSize: BlobPayloadSize(4), Capacity: 8, ArenaSize: 4096, Readers: 3}, CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		c, err := NewBlobConsumer[uint32](path, ReadOptions{Start: StartOldest, Name: "blob-reader-0123456789-abcdefghij"})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		payload := make([]byte, BlobPayloadSize(4))
		for i := 0; i < 3; i++ {
			b := bytes.Repeat([]byte{byte('a' + i)}, 64*i+10)
			off, err := w.AppendBlob(b)
			if err != nil {
				t.Fatal(err)
			}
			clear(payload)
			layLE.PutUint32(payload, uint32(0xCAFE0+i))
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
		slotsOff := layRoundUp(128+64*3, 128)
		arenaOff := layRoundUp(slotsOff+8*32, 128)
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

// laySpec builds a ring file from compat.md §1 with encoding/binary alone.
type laySpec struct {
	capacity uint64
	payload  uint64 // bytes; the stride is round_up(8 + payload, 8)
	flags    uint32
	writeSeq uint64
	slots    map[uint64]uint64 // slot index → slot sequence word (0 when absent)
}

func (s laySpec) elem() uint64 { return layRoundUp(8+s.payload, 8) }

func (s laySpec) bytes() []byte {
	elem := s.elem()
	b := make([]byte, 128+s.capacity*elem)
	le := layLE
	le.PutUint64(b[0:], 0x5249_4E47_4649_5245)
	le.PutUint32(b[8:], 2)
	le.PutUint32(b[12:], uint32(elem))
	le.PutUint64(b[16:], s.capacity)
	le.PutUint64(b[24:], s.capacity-1)
	le.PutUint64(b[32:], s.writeSeq)
	le.PutUint32(b[48:], s.flags)
	le.PutUint64(b[104:], 128)
	for i, seq := range s.slots {
		off := 128 + i*elem
		le.PutUint64(b[off:], seq)
		if seq != 0 && seq != ^uint64(0) {
			copy(b[off+8:], layPayload(seq))
		}
	}
	return b
}

func (s laySpec) write(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "spec-ring")
	if err := os.WriteFile(path, s.bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// layDrain reads with TryRecv until it returns false, checking each payload.
func layDrain(t *testing.T, rd *Reader) []uint64 {
	t.Helper()
	var got []uint64
	buf := make([]byte, rd.Ring().Layout().PayloadSize())
	for range 1000 {
		seq, ok := rd.TryRecv(buf)
		if !ok {
			return got
		}
		if seq != rd.Seq() {
			t.Errorf("TryRecv returned %d, Seq() = %d", seq, rd.Seq())
		}
		if want := layPayload(seq); !bytes.Equal(buf[:len(want)], want) {
			t.Errorf("record %d payload %q, want %q", seq, buf, want)
		}
		got = append(got, seq)
	}
	t.Fatal("reader never ran dry")
	return nil
}

func layOpenReader(t *testing.T, path string, opts ReadOptions) *Reader {
	t.Helper()
	opts.NoRegister = true
	rd, err := OpenReader(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rd.Close() })
	return rd
}

func laySeqs(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

func layEqual(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

type layReaderCase struct {
	name       string
	opts       ReadOptions
	want       []uint64
	wantLapped uint64
}

func layCheckReaders(t *testing.T, path string, cases []layReaderCase) map[string]*Reader {
	t.Helper()
	out := map[string]*Reader{}
	for _, c := range cases {
		rd := layOpenReader(t, path, c.opts)
		got := layDrain(t, rd)
		if !layEqual(got, c.want) || rd.Lapped() != c.wantLapped || rd.Received() != uint64(len(c.want)) {
			t.Errorf("%s reader: got %v lapped %d received %d, want %v lapped %d",
				c.name, got, rd.Lapped(), rd.Received(), c.want, c.wantLapped)
		}
		out[c.name] = rd
	}
	return out
}

func layCheckSlot(t *testing.T, r *Ring, seq uint64, want SlotState) {
	t.Helper()
	buf := make([]byte, r.Layout().PayloadSize())
	got, err := r.ReadSlot(seq, buf)
	if err != nil {
		t.Errorf("ReadSlot(%d): %v", seq, err)
		return
	}
	if got != want {
		t.Errorf("ReadSlot(%d) = %v, want %v (slot word %d, write_seq %d)", seq, got, want, r.SlotSeq(seq), r.WriteSeq())
		return
	}
	if got == SlotReady && !bytes.Equal(buf, layPayload(seq)) {
		t.Errorf("ReadSlot(%d) payload %q", seq, buf)
	}
}

func TestReadSpecBuiltRing(t *testing.T) {
	t.Run("wrapped-with-slot-being-written", func(t *testing.T) {
		// Capacity 8, records 1..13 written (slot i holds i+8 for i <= 5,
		// 6 and 7 in slots 6 and 7), and the writer is mid-way through
		// record 14: slot 6 holds u64::MAX while write_seq is still 13.
		spec := laySpec{capacity: 8, payload: 56, flags: 0x11, writeSeq: 13, slots: map[uint64]uint64{
			0: 8, 1: 9, 2: 10, 3: 11, 4: 12, 5: 13, 6: ^uint64(0), 7: 7,
		}}
		path := spec.write(t)

		r, err := Open(path, OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		h, err := r.Header()
		if err != nil {
			t.Fatal(err)
		}
		if h.ElementSize != 64 || h.Capacity != 8 || h.Mask != 7 || h.WriteSeq != 13 || h.Flags != FlagSPMC|FlagLatestWins ||
			h.SlotsOffset != 128 || h.RegistryCount != 0 || h.ArenaOffset != 0 || r.Layout().FileSize() != 128+8*64 {
			t.Errorf("header %+v", h)
		}
		if r.Oldest() != 6 || r.WriteSeq() != 13 || r.SlotSeq(14) != SlotWriting {
			t.Errorf("oldest %d write_seq %d slot(14) %#x", r.Oldest(), r.WriteSeq(), r.SlotSeq(14))
		}
		for seq, want := range map[uint64]SlotState{
			7: SlotReady, 8: SlotReady, 13: SlotReady,
			5:  SlotOverwritten, // slot 5 holds 13
			1:  SlotOverwritten,
			14: SlotNotYet, // being written (u64::MAX, write_seq < 14)
			15: SlotNotYet, // slot 7 holds 7 < 15, write_seq < 15
			21: SlotNotYet,
		} {
			layCheckSlot(t, r, seq, want)
		}
		// Record 6's slot is being overwritten by 14 (u64::MAX, write_seq
		// 13 >= 6). compat.md's reader rule reads u64::MAX as "nothing yet"
		// (retry; once 14 lands, 14 > 6 is a lap); inferring the lap at once
		// from write_seq >= 6 is equivalent on this still file. Accept both.
		if st, err := r.ReadSlot(6, make([]byte, 56)); err != nil || (st != SlotNotYet && st != SlotOverwritten) {
			t.Errorf("ReadSlot(6) on a slot being overwritten: %v %v", st, err)
		}
		if _, err := r.ReadSlot(0, make([]byte, 56)); !errors.Is(err, ErrInvalid) {
			t.Errorf("ReadSlot(0): %v, want ErrInvalid", err)
		}

		readers := layCheckReaders(t, path, []layReaderCase{
			{"latest", ReadOptions{Start: StartLatest}, []uint64{13}, 0},
			{"head", ReadOptions{Start: StartHead}, nil, 0},
			{"seq10", ReadOptions{Start: StartSequence, Sequence: 10}, laySeqs(10, 13), 0},
			{"seq20", ReadOptions{Start: StartSequence, Sequence: 20}, nil, 0},
		})
		if n := readers["head"].Next(); n != 14 {
			t.Errorf("head reader wants %d, want 14", n)
		}
		if n := readers["seq20"].Next(); n != 20 {
			t.Errorf("seq20 reader wants %d, want 20", n)
		}
		// Oldest = write_seq-capacity+1 = 6, whose slot is being
		// overwritten; sequence 2 is clamped to 6 (4 counted lapped). Each
		// either waits at 6 (spec: u64::MAX is "nothing yet") or is lapped
		// past it at once and reads 7..13.
		waiting := map[string]*Reader{}
		got := map[string][]uint64{}
		for name, c := range map[string]struct {
			opts   ReadOptions
			lapped uint64 // at attach
		}{
			"oldest": {ReadOptions{Start: StartOldest}, 0},
			"seq2":   {ReadOptions{Start: StartSequence, Sequence: 2}, 4},
		} {
			rd := layOpenReader(t, path, c.opts)
			waiting[name] = rd
			got[name] = layDrain(t, rd)
			switch {
			case len(got[name]) == 0:
				if rd.Next() != 6 || rd.Lapped() != c.lapped {
					t.Errorf("%s reader waiting at the slot being written: next %d lapped %d, want 6 and %d", name, rd.Next(), rd.Lapped(), c.lapped)
				}
			case !layEqual(got[name], laySeqs(7, 13)) || rd.Lapped() != c.lapped+1:
				t.Errorf("%s reader: got %v lapped %d, want 7..13 lapped %d (or nothing yet)", name, got[name], rd.Lapped(), c.lapped+1)
			}
		}

		// A writer taking over finishes the lap: 14 lands in slot 6 and
		// every reader waiting for it gets it.
		w, err := OpenWriter(path)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if w.Next() != 14 {
			t.Fatalf("writer continues at %d, want 14", w.Next())
		}
		layPushRecs(t, w, 14, 14)
		for _, name := range []string{"latest", "head", "seq10"} {
			if got := layDrain(t, readers[name]); !layEqual(got, []uint64{14}) {
				t.Errorf("%s reader after write of 14: %v", name, got)
			}
		}
		// Whichever way they took at 6, the oldest readers end with 7..14
		// and exactly one more lapped record (6) than at attach.
		for name, lapped := range map[string]uint64{"oldest": 1, "seq2": 5} {
			all := append(got[name], layDrain(t, waiting[name])...)
			if !layEqual(all, laySeqs(7, 14)) || waiting[name].Lapped() != lapped {
				t.Errorf("%s reader after write of 14: got %v in all, lapped %d; want 7..14, lapped %d", name, all, waiting[name].Lapped(), lapped)
			}
		}
		layCheckSlot(t, r, 14, SlotReady)
		layCheckSlot(t, r, 6, SlotOverwritten)
		f := layRead(t, path)
		f.want64("write_seq", 32, 14)
		f.want64("slot 6 seq", 128+6*64, 14)
		f.wantBytes("slot 6 payload", 128+6*64+8, layPayload(14))
	})

	t.Run("magic-zero-is-unfinished", func(t *testing.T) {
		spec := laySpec{capacity: 8, payload: 56, flags: 0x11}
		b := spec.bytes()
		layLE.PutUint64(b, 0)
		path := filepath.Join(t.TempDir(), "ring")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Open(path, OpenOptions{})
		var fe *FieldError
		if !errors.Is(err, ErrMagic) || !errors.As(err, &fe) || fe.Field != "magic" {
			t.Fatalf("open with magic 0: %v", err)
		}
	})

	t.Run("sparse-with-holes", func(t *testing.T) {
		// A mirror ring (SPARSE, 0x400) of capacity 8 with write_seq 12 that
		// holds 6, 7, 9, 10, 12. Holes: 5 (slot 5 never written), 8 (slot 0
		// never written) and 11 (slot 3 still holds 3 from the first lap).
		// Slot 4 holds 12, which overwrote 4.
		spec := laySpec{capacity: 8, payload: 56, flags: 0x411, writeSeq: 12, slots: map[uint64]uint64{
			0: 0, 1: 9, 2: 10, 3: 3, 4: 12, 5: 0, 6: 6, 7: 7,
		}}
		path := spec.write(t)
		r, err := Open(path, OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if r.Layout().Flags != FlagSparse|FlagSPMC|FlagLatestWins {
			t.Errorf("flags %#x", r.Layout().Flags)
		}
		for seq, want := range map[uint64]SlotState{
			6: SlotReady, 7: SlotReady, 9: SlotReady, 10: SlotReady, 12: SlotReady,
			5: SlotHole, 8: SlotHole, 11: SlotHole,
			4:  SlotOverwritten,
			13: SlotNotYet, 16: SlotNotYet,
		} {
			layCheckSlot(t, r, seq, want)
		}
		present := []uint64{6, 7, 9, 10, 12}
		readers := layCheckReaders(t, path, []layReaderCase{
			{"oldest", ReadOptions{Start: StartOldest}, present, 3},
			// 1..4 are behind the oldest retained (5): 4 lapped, then 3 holes.
			{"seq1", ReadOptions{Start: StartSequence, Sequence: 1}, present, 7},
			{"seq8", ReadOptions{Start: StartSequence, Sequence: 8}, []uint64{9, 10, 12}, 2},
			{"latest", ReadOptions{Start: StartLatest}, []uint64{12}, 0},
			{"head", ReadOptions{Start: StartHead}, nil, 0},
		})
		for name, rd := range readers {
			// Every sequence from the start to write_seq was either
			// received or counted lapped.
			start := map[string]uint64{"oldest": 5, "seq1": 1, "seq8": 8, "latest": 12, "head": 13}[name]
			if rd.Received()+rd.Lapped() != 12-start+1 {
				t.Errorf("%s: received %d + lapped %d != %d", name, rd.Received(), rd.Lapped(), 12-start+1)
			}
		}

		// The same bytes without the SPARSE flag: a reader must wait at
		// the hole instead of skipping it.
		spec.flags = 0x11
		plain := spec.write(t)
		rd := layOpenReader(t, plain, ReadOptions{Start: StartOldest})
		if got := layDrain(t, rd); len(got) != 0 || rd.Lapped() != 0 || rd.Next() != 5 {
			t.Errorf("non-sparse reader at a hole: got %v lapped %d next %d", got, rd.Lapped(), rd.Next())
		}

		// A mirror writer leaves a new gap (13, 14) with Store + Publish;
		// the waiting readers skip it and count it.
		w, err := OpenWriter(path)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if err := w.Store(15, layPayload(15)); err != nil {
			t.Fatal(err)
		}
		if err := w.Publish(15); err != nil {
			t.Fatal(err)
		}
		for name, before := range map[string]uint64{"oldest": 3, "latest": 0, "head": 0} {
			rd := readers[name]
			if got := layDrain(t, rd); !layEqual(got, []uint64{15}) || rd.Lapped() != before+2 {
				t.Errorf("%s after gap 13..14: got %v lapped %d, want [15] lapped %d", name, got, rd.Lapped(), before+2)
			}
		}
		layCheckSlot(t, r, 13, SlotHole)
		layCheckSlot(t, r, 14, SlotHole)
		layCheckSlot(t, r, 15, SlotReady)
	})
}

// TestTryRecvLargeBufferStaysInSlot: Reader.TryRecv is documented to copy
// "up to len(dst) bytes" of the record's payload. A dst longer than the
// payload must receive the payload and nothing else: the bytes after it are
// the next slot (or the end of the mapping), not part of the record.
// Regression test: TryRecv used to copy len(dst) bytes from the slot, past
// its end; with a large dst on the last slot that read past the mapping and
// the process died of SIGSEGV.
func TestTryRecvLargeBufferStaysInSlot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ring")
	w, err := Create(path, RingConfig{PayloadSize: 56, Capacity: 4}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	layPushRecs(t, w, 1, 2)
	rd := layOpenReader(t, path, ReadOptions{Start: StartOldest})
	buf := bytes.Repeat([]byte{0xEE}, 64+8)
	seq, ok := rd.TryRecv(buf)
	if !ok || seq != 1 {
		t.Fatalf("TryRecv: %d %v", seq, ok)
	}
	if !bytes.Equal(buf[:56], layPayload(1)) {
		t.Fatalf("payload %q", buf[:56])
	}
	if tail := buf[56:]; !bytes.Equal(tail, bytes.Repeat([]byte{0xEE}, len(tail))) {
		t.Errorf("TryRecv with a %d-byte dst on a 56-byte payload wrote %d bytes past the record: % x "+
			"(the next slot's sequence word and payload): dst must be clamped to PayloadSize as ReadSlot does, "+
			"or the last slot reads past the end of the mapping",
			len(buf), len(tail), tail[:16])
	}
}
