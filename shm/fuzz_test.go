package shm

// Fuzz targets over ring files and headers (the per-field fuzz target and
// the table of corrupt files are in corrupt_test.go).
//
// Invariants: attaching to any file never panics or faults; a refused file
// fails with an error wrapping ErrCorrupt, ErrMagic, ErrVersion or
// ErrTruncated that is a *FieldError naming a field (also in its message);
// an accepted ring can be read (readers, raw slots, blobs, registry) without
// a panic, and what it returns is consistent.

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type fzSeed struct {
	name string
	data []byte
}

// fzSeedRings returns the bytes of valid rings of several kinds, written by
// the library (plus a spec-built ring and the Python fixture when present).
// They are small so that fuzzing stays fast.
func fzSeedRings(tb testing.TB) []fzSeed {
	tb.Helper()
	var seeds []fzSeed
	snap := func(name, path string) {
		b, err := os.ReadFile(path)
		if err != nil {
			tb.Fatal(err)
		}
		seeds = append(seeds, fzSeed{name, b})
	}
	must := func(err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
	}
	payload := func(n int, seq uint64) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(seq*31 + uint64(i))
		}
		return b
	}

	// Fixed lossy ring, wrapped: 20 records in 16 slots of 56 bytes.
	{
		w, path := createRing(tb, RingConfig{PayloadSize: 56, Capacity: 16, SchemaSig: 0x5EED})
		for s := uint64(1); s <= 20; s++ {
			_, err := w.Push(payload(56, s))
			must(err)
		}
		snap("fixed-16x56", path)
	}
	// Empty fixed ring, capacity 1, 1-byte payload (16-byte stride).
	{
		_, path := createRing(tb, RingConfig{PayloadSize: 1, Capacity: 1})
		snap("empty-1x1", path)
	}
	// Lossless ring with a 2-entry registry and one registered reader.
	{
		w, path := createRing(tb, RingConfig{PayloadSize: 8, Capacity: 4, Flags: FlagLossless, Readers: 2})
		rd, err := OpenReader(path, ReadOptions{Start: StartOldest, Name: "fuzz-seed"})
		rd = closeAtEnd(tb, rd, err)
		for s := uint64(1); s <= 3; s++ {
			_, err := w.Push(payload(8, s))
			must(err)
		}
		rd.TryRecv(make([]byte, 8))
		snap("lossless-4x8-registry2", path)
	}
	// Sparse (mirror) ring with holes.
	{
		w, path := createRing(tb, RingConfig{PayloadSize: 16, Capacity: 8, Flags: FlagSparse})
		for _, s := range []uint64{1, 2, 5, 7} {
			must(w.Store(s, payload(16, s)))
		}
		must(w.Publish(7))
		must(w.Store(12, payload(16, 12)))
		must(w.Publish(12))
		snap("sparse-8x16-holes", path)
	}
	// Blob ring, u32 metadata, small arena that has wrapped.
	{
		path := ringPath(tb)
		p := blobProducer[uint32](tb, path, BlobOptions{Capacity: 4, ArenaSize: 256})
		for i, n := range []int{10, 100, 60, 0, 64} {
			meta := uint32(i)
			_, err := p.PushFlags(&meta, payload(n, uint64(i)), uint32(i))
			must(err)
		}
		snap("blob-4-arena256", path)
	}
	// Blob ring with a registry and a registered reader.
	{
		w, path := createRing(tb, RingConfig{PayloadSize: BlobPayloadSize(8), Capacity: 2, ArenaSize: 128, Readers: 1})
		c := blobConsumer[uint64](tb, path, ReadOptions{Start: StartOldest, Name: "blob-seed"})
		pl := make([]byte, BlobPayloadSize(8))
		for i := range 3 {
			off, err := w.AppendBlob(payload(40, uint64(i)))
			must(err)
			le.PutUint64(pl, uint64(i))
			Descriptor{Offset: off, Len: 40}.Encode(pl)
			_, err = w.Push(pl)
			must(err)
		}
		var meta uint64
		c.TryRecv(&meta, make([]byte, 64))
		snap("blob-2-arena128-registry1", path)
	}
	// Spec-built ring (no library code) with a slot being written.
	seeds = append(seeds, fzSeed{"spec-8x56-writing", specRing{capacity: 8, payload: 56, flags: 0x11, writeSeq: 13,
		slots: map[uint64]uint64{0: 8, 1: 9, 2: 10, 3: 11, 4: 12, 5: 13, 6: math.MaxUint64, 7: 7}}.bytes()})
	// The reference implementation's own ring.
	b, err := os.ReadFile(filepath.Join(fixtureDir, fxRingName))
	must(err)
	seeds = append(seeds, fzSeed{"python-fixture", b})
	return seeds
}

// fzCheckRefusal asserts the contract of a refused ring file.
func fzCheckRefusal(t *testing.T, err error) *FieldError {
	t.Helper()
	if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrMagic) && !errors.Is(err, ErrVersion) && !errors.Is(err, ErrTruncated) {
		t.Fatalf("refusal wraps none of ErrCorrupt, ErrMagic, ErrVersion, ErrTruncated: %v", err)
	}
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field == "" {
		t.Fatalf("refusal is not a *FieldError naming a field: %v", err)
	}
	if !strings.Contains(err.Error(), fe.Field) {
		t.Fatalf("message %q does not name the field %q", err.Error(), fe.Field)
	}
	return fe
}

// fzExercise opens the file at path and, when it is accepted, reads
// everything a consumer, a server and a mirror would. It must never panic.
func fzExercise(t *testing.T, path string, size int) {
	r, err := Open(path, OpenOptions{})
	if err != nil {
		fzCheckRefusal(t, err)
		return
	}
	defer r.Close()
	l := r.Layout()
	if l.FileSize() > uint64(size) {
		t.Fatalf("accepted a ring whose layout needs %d bytes in a %d-byte file: %+v", l.FileSize(), size, l)
	}
	if err := l.Validate(); err != nil {
		t.Fatalf("accepted layout fails Validate: %v", err)
	}
	h, err := r.Header()
	if err != nil {
		t.Fatalf("Header() of an accepted ring: %v", err)
	}
	if h.Layout != l || h.Magic != Magic || h.Version != Version || h.Mask != l.Capacity-1 {
		t.Fatalf("Header() %+v disagrees with the layout %+v", h, l)
	}
	rs, err := r.Readers()
	if err != nil {
		t.Fatalf("Readers(): %v", err)
	}
	if len(rs) > int(l.RegistryCount) {
		t.Fatalf("%d readers listed, registry holds %d", len(rs), l.RegistryCount)
	}
	for _, ri := range rs {
		if ri.Index < 0 || ri.Index >= int(l.RegistryCount) || ri.PID == 0 || len(ri.Name) > 32 {
			t.Fatalf("bad registry entry %+v", ri)
		}
	}

	ws := r.WriteSeq()
	capa := l.Capacity
	buf := make([]byte, l.PayloadSize())
	for _, seq := range []uint64{0, 1, 2, ws - 1, ws, ws + 1, r.Oldest(), ws - capa, ws + capa, 1 << 63, math.MaxUint64 - 1, math.MaxUint64} {
		st, err := r.ReadSlot(seq, buf)
		if seq == 0 || seq == math.MaxUint64 {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ReadSlot(%d): %v, want ErrInvalid", seq, err)
			}
			continue
		}
		if err != nil || st < SlotReady || st > SlotHole {
			t.Fatalf("ReadSlot(%d) = %v, %v", seq, st, err)
		}
		if st == SlotReady && r.SlotSeq(seq) != seq {
			t.Fatalf("ReadSlot(%d) ready but the slot holds %d", seq, r.SlotSeq(seq))
		}
		if st == SlotReady && l.Flags&FlagArena != 0 {
			fzReadBlob(t, r, buf)
		}
	}

	for _, opts := range []ReadOptions{
		{Start: StartOldest, NoRegister: true},
		{Start: StartLatest, NoRegister: true},
		{Start: StartSequence, Sequence: 1, NoRegister: true},
		{Start: StartOldest, Name: "fuzz"}, // registers when the ring has a registry
	} {
		rd, err := OpenReader(path, opts)
		if err != nil {
			if errors.Is(err, ErrNoReaderSlots) && !opts.NoRegister {
				continue // a lossless ring whose registry the input filled with live pids
			}
			t.Fatalf("OpenReader(%+v) on a ring Open accepted: %v", opts, err)
		}
		var got uint64
		for range 64 {
			seq, ok := rd.TryRecv(buf)
			if !ok {
				break
			}
			got++
			if seq != rd.Seq() {
				t.Fatalf("TryRecv returned %d, Seq() %d", seq, rd.Seq())
			}
			if l.Flags&FlagArena != 0 {
				fzReadBlob(t, r, buf)
			}
		}
		if rd.Received() != got {
			t.Fatalf("Received() %d, got %d", rd.Received(), got)
		}
		rd.Close()
	}

	if l.Flags&FlagArena != 0 && l.PayloadSize() == BlobPayloadSize(4) {
		c, err := NewBlobConsumer[uint32](path, ReadOptions{Start: StartOldest, NoRegister: true})
		if err != nil {
			t.Fatalf("NewBlobConsumer on an accepted blob ring: %v", err)
		}
		blob := make([]byte, 4096)
		for range 16 {
			var meta uint32
			n, ok, err := c.TryRecv(&meta, blob)
			if err != nil && !errors.Is(err, ErrShortBuffer) {
				t.Fatalf("blob TryRecv: %v", err)
			}
			if !ok || errors.Is(err, ErrShortBuffer) {
				break
			}
			if n < 0 || n > len(blob) {
				t.Fatalf("blob TryRecv returned %d bytes", n)
			}
		}
		c.Close()
	}
}

// fzReadBlob reads the blob a slot payload describes, if it is small.
func fzReadBlob(t *testing.T, r *Ring, payload []byte) {
	if len(payload) < DescriptorSize {
		return
	}
	d := DecodeDescriptor(payload)
	dst := make([]byte, min(uint64(d.Len), 1<<16))
	ok, err := r.ReadBlob(d, dst)
	if uint64(d.Len) > uint64(len(dst)) {
		if !errors.Is(err, ErrShortBuffer) {
			t.Fatalf("ReadBlob of %d bytes into %d: %v", d.Len, len(dst), err)
		}
		return
	}
	if err != nil {
		t.Fatalf("ReadBlob(%+v): %v", d, err)
	}
	_ = ok
}

// fzExerciseWriter takes the ring over as a writer (as a restarted mirror
// would) and checks that what it pushes reads back.
func fzExerciseWriter(t *testing.T, path string) {
	w, err := OpenWriter(path)
	if err != nil {
		if errors.Is(err, ErrInvalid) { // multi-producer rings are refused
			return
		}
		fzCheckRefusal(t, err)
		return
	}
	defer w.Close()
	if w.Next() == 0 || w.Next() >= 1<<62 {
		return // a write_seq at the end of the sequence space
	}
	r := w.Ring()
	p := make([]byte, r.Layout().PayloadSize())
	got := make([]byte, len(p))
	for i := range 3 {
		for j := range p {
			p[j] = byte(i*7 + j)
		}
		seq, err := w.TryPush(p)
		if errors.Is(err, ErrBackpressure) {
			return
		}
		if err != nil {
			t.Fatalf("TryPush: %v", err)
		}
		if st, err := r.ReadSlot(seq, got); err != nil || st != SlotReady || !bytes.Equal(got, p) {
			t.Fatalf("record %d just pushed reads back as %v %v", seq, st, err)
		}
		if r.WriteSeq() != seq {
			t.Fatalf("write_seq %d after pushing %d", r.WriteSeq(), seq)
		}
	}
}

func FuzzOpenRing(f *testing.F) {
	for _, s := range fzSeedRings(f) {
		f.Add(s.data)
		f.Add(s.data[:min(len(s.data), 100)])
		f.Add(s.data[:len(s.data)-1])
	}
	f.Add([]byte{})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := writeRing(t, dir, data)
		fzExercise(t, path, len(data))
		fzExerciseWriter(t, path)
	})
}

func FuzzParseHeader(f *testing.F) {
	for _, s := range fzSeedRings(f) {
		f.Add(s.data[:HeaderSize], uint64(len(s.data)))
		f.Add(s.data[:HeaderSize], uint64(len(s.data)-1))
	}
	f.Add(make([]byte, 10), uint64(1000))
	f.Fuzz(func(t *testing.T, b []byte, size uint64) {
		h, err := ParseHeader(b, size)
		if err != nil {
			fzCheckRefusal(t, err)
			return
		}
		if len(b) < HeaderSize {
			t.Fatalf("accepted a %d-byte header", len(b))
		}
		if h.Magic != Magic || h.Version != Version || h.Mask != h.Capacity-1 {
			t.Fatalf("accepted header %+v", h)
		}
		if err := h.Layout.Validate(); err != nil {
			t.Fatalf("accepted layout fails Validate: %v", err)
		}
		if h.FileSize() > size {
			t.Fatalf("accepted layout needs %d bytes, file has %d: %+v", h.FileSize(), size, h.Layout)
		}
		if h.RegistryCount > 0 && h.SlotsOffset < RegistryOffset+RegistryEntry*uint64(h.RegistryCount) {
			t.Fatalf("registry overlaps the slots: %+v", h.Layout)
		}
		if h.Flags&FlagArena != 0 && h.ArenaOffset < h.SlotsOffset+h.Capacity*uint64(h.ElementSize) {
			t.Fatalf("arena overlaps the slots: %+v", h.Layout)
		}
		// The layout round-trips through the header encoding.
		var enc [HeaderSize]byte
		h.Layout.encode(enc[:])
		le.PutUint64(enc[:], Magic)
		h2, err := ParseHeader(enc[:], size)
		if err != nil || h2.Layout != h.Layout {
			t.Fatalf("re-encoded header: %+v, %v; want %+v", h2.Layout, err, h.Layout)
		}
	})
}
