package shm

// Fuzz targets over ring files and headers, and a table of corrupt files.
//
// Invariants: attaching to any file never panics or faults; a refused file
// fails with an error wrapping ErrCorrupt, ErrMagic, ErrVersion or
// ErrTruncated that is a *FieldError naming a field (also in its message);
// an accepted ring can be read (readers, raw slots, blobs, registry) without
// a panic, and what it returns is consistent.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
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
	dir := tb.TempDir()
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
		path := filepath.Join(dir, "fixed")
		w, err := Create(path, RingConfig{PayloadSize: 56, Capacity: 16, SchemaSig: 0x5EED}, CreateOptions{})
		must(err)
		for s := uint64(1); s <= 20; s++ {
			_, err := w.Push(payload(56, s))
			must(err)
		}
		snap("fixed-16x56", path)
		w.Close()
	}
	// Empty fixed ring, capacity 1, 1-byte payload (16-byte stride).
	{
		path := filepath.Join(dir, "tiny")
		w, err := Create(path, RingConfig{PayloadSize: 1, Capacity: 1}, CreateOptions{})
		must(err)
		snap("empty-1x1", path)
		w.Close()
	}
	// Lossless ring with a 2-entry registry and one registered reader.
	{
		path := filepath.Join(dir, "lossless")
		w, err := Create(path, RingConfig{PayloadSize: 8, Capacity: 4, Flags: FlagLossless, Readers: 2}, CreateOptions{})
		must(err)
		rd, err := OpenReader(path, ReadOptions{Start: StartOldest, Name: "fuzz-seed"})
		must(err)
		for s := uint64(1); s <= 3; s++ {
			_, err := w.Push(payload(8, s))
			must(err)
		}
		rd.TryRecv(make([]byte, 8))
		snap("lossless-4x8-registry2", path)
		rd.Close()
		w.Close()
	}
	// Sparse (mirror) ring with holes.
	{
		path := filepath.Join(dir, "sparse")
		w, err := Create(path, RingConfig{PayloadSize: 16, Capacity: 8, Flags: FlagSparse}, CreateOptions{})
		must(err)
		for _, s := range []uint64{1, 2, 5, 7} {
			must(w.Store(s, payload(16, s)))
		}
		must(w.Publish(7))
		must(w.Store(12, payload(16, 12)))
		must(w.Publish(12))
		snap("sparse-8x16-holes", path)
		w.Close()
	}
	// Blob ring, u32 metadata, small arena that has wrapped.
	{
		path := filepath.Join(dir, "blob")
		p, err := NewBlobProducer[uint32](path, BlobOptions{Capacity: 4, ArenaSize: 256})
		must(err)
		for i, n := range []int{10, 100, 60, 0, 64} {
			meta := uint32(i)
			_, err := p.PushFlags(&meta, payload(n, uint64(i)), uint32(i))
			must(err)
		}
		snap("blob-4-arena256", path)
		p.Close()
	}
	// Blob ring with a registry and a registered reader.
	{
		path := filepath.Join(dir, "blobreg")
		w, err := Create(path, RingConfig{PayloadSize: BlobPayloadSize(8), Capacity: 2, ArenaSize: 128, Readers: 1}, CreateOptions{})
		must(err)
		c, err := NewBlobConsumer[uint64](path, ReadOptions{Start: StartOldest, Name: "blob-seed"})
		must(err)
		pl := make([]byte, BlobPayloadSize(8))
		for i := range 3 {
			off, err := w.AppendBlob(payload(40, uint64(i)))
			must(err)
			binary.LittleEndian.PutUint64(pl, uint64(i))
			Descriptor{Offset: off, Len: 40}.Encode(pl)
			_, err = w.Push(pl)
			must(err)
		}
		var meta uint64
		c.TryRecv(&meta, make([]byte, 64))
		snap("blob-2-arena128-registry1", path)
		c.Close()
		w.Close()
	}
	// Spec-built ring (no library code) with a slot being written.
	seeds = append(seeds, fzSeed{"spec-8x56-writing", laySpec{capacity: 8, payload: 56, flags: 0x11, writeSeq: 13,
		slots: map[uint64]uint64{0: 8, 1: 9, 2: 10, 3: 11, 4: 12, 5: 13, 6: math.MaxUint64, 7: 7}}.bytes()})
	// The reference implementation's own ring, when the fixture is there.
	if b, err := os.ReadFile(filepath.Join(fxDir(), fxRingName)); err == nil {
		seeds = append(seeds, fzSeed{"python-fixture", b})
	}
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

// fzWrite writes data to the worker's scratch ring file.
func fzWrite(t *testing.T, dir string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, "ring")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
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
		path := fzWrite(t, dir, data)
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
		binary.LittleEndian.PutUint64(enc[:], Magic)
		h2, err := ParseHeader(enc[:], size)
		if err != nil || h2.Layout != h.Layout {
			t.Fatalf("re-encoded header: %+v, %v; want %+v", h2.Layout, err, h.Layout)
		}
	})
}

// fzField is a word of a ring file that FuzzHeaderField and
// TestOpenRefusesCorrupt overwrite.
type fzField struct {
	name  string
	off   uint64 // in the header, or relative to arena_offset when arena is set
	width int    // 4 or 8 bytes
	arena bool
	// fields an error may name when this word is corrupted; nil: the word
	// is a live counter or padding and the ring must still open.
	blame []string
}

var fzFields = []fzField{
	{name: "magic", off: 0, width: 8, blame: []string{"magic"}},
	{name: "version", off: 8, width: 4, blame: []string{"version"}},
	// A new stride moves the end of the slots: it may no longer fit the
	// file, or now run into the arena.
	{name: "element_size", off: 12, width: 4, blame: []string{"element_size", "slots", "arena_offset"}},
	// A new power-of-two capacity disagrees with the mask first.
	{name: "capacity", off: 16, width: 8, blame: []string{"capacity", "mask", "arena_offset"}},
	{name: "mask", off: 24, width: 8, blame: []string{"mask"}},
	{name: "write_seq", off: 32, width: 8},
	{name: "claim_seq", off: 40, width: 8},
	// Flags gate the registry and arena fields, which then disagree.
	{name: "flags", off: 48, width: 4, blame: []string{"flags", "reader_registry_count", "reader_registry_offset", "arena_offset", "arena_size", "element_size"}},
	{name: "futex_word", off: 52, width: 4},
	{name: "waiting_consumers", off: 56, width: 4},
	{name: "pad@60", off: 60, width: 4},
	{name: "read_seq", off: 64, width: 8},
	{name: "schema_sig", off: 72, width: 8},
	{name: "arena_offset", off: 80, width: 8, blame: []string{"arena_offset", "arena capacity", "arena mask", "arena_size"}},
	{name: "arena_size", off: 88, width: 8, blame: []string{"arena_size", "arena_offset", "arena capacity", "arena mask"}},
	{name: "reader_registry_offset", off: 96, width: 4, blame: []string{"reader_registry_offset"}},
	{name: "reader_registry_count", off: 100, width: 4, blame: []string{"reader_registry_count", "slots_offset"}},
	{name: "slots_offset", off: 104, width: 8, blame: []string{"slots_offset", "slots", "arena_offset"}},
	{name: "pad@112", off: 112, width: 8},
	{name: "pad@120", off: 120, width: 8},
	{name: "arena capacity", off: 0, width: 8, arena: true, blame: []string{"arena capacity"}},
	{name: "arena mask", off: 8, width: 8, arena: true, blame: []string{"arena mask"}},
	{name: "arena reserved", off: 16, width: 8, arena: true},
	{name: "registry[0].pid", off: 128, width: 4},
	{name: "registry[0].cursor", off: 136, width: 8},
	{name: "slot[0].seq", off: math.MaxUint64, width: 8}, // at slots_offset
}

// fzPoke overwrites field fd of ring bytes b with v; false when b has no
// such word (no arena, no registry).
func fzPoke(b []byte, fd fzField, v uint64) bool {
	le := binary.LittleEndian
	off := fd.off
	switch {
	case fd.arena:
		if Flags(le.Uint32(b[48:]))&FlagArena == 0 {
			return false
		}
		off += le.Uint64(b[80:])
	case fd.off == math.MaxUint64:
		off = le.Uint64(b[104:])
	case fd.off >= 128 && fd.off < 192:
		if le.Uint32(b[100:]) == 0 {
			return false
		}
	}
	if off+uint64(fd.width) > uint64(len(b)) {
		return false
	}
	if fd.width == 4 {
		le.PutUint32(b[off:], uint32(v))
	} else {
		le.PutUint64(b[off:], v)
	}
	return true
}

func FuzzHeaderField(f *testing.F) {
	seeds := fzSeedRings(f)
	interesting := []uint64{0, 1, 7, 8, 12, 16, 63, 64, 100, 127, 128, 256, 384, 4096, 1 << 20, 1 << 32, 1 << 40, 1 << 41, 1 << 63, math.MaxUint64}
	for i := range seeds {
		for j := range fzFields {
			f.Add(uint8(i), uint8(j), interesting[(i+j)%len(interesting)])
		}
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, base, field uint8, v uint64) {
		s := seeds[int(base)%len(seeds)]
		fd := fzFields[int(field)%len(fzFields)]
		b := bytes.Clone(s.data)
		if !fzPoke(b, fd, v) {
			return
		}
		path := fzWrite(t, dir, b)
		r, err := Open(path, OpenOptions{})
		if err != nil {
			fe := fzCheckRefusal(t, err)
			if !slices.Contains(fd.blame, fe.Field) {
				t.Fatalf("%s: %s = %#x refused naming %q, want one of %q: %v", s.name, fd.name, v, fe.Field, fd.blame, err)
			}
			return
		}
		r.Close()
		fzExercise(t, path, len(b))
		fzExerciseWriter(t, path)
	})
}

// TestOpenRefusesCorrupt corrupts one field at a time of valid rings and
// checks the refusal names that field and wraps the right sentinel.
func TestOpenRefusesCorrupt(t *testing.T) {
	seeds := map[string][]byte{}
	for _, s := range fzSeedRings(t) {
		seeds[s.name] = s.data
	}
	const (
		fixed    = "fixed-16x56"
		lossless = "lossless-4x8-registry2" // registry of 2: slots at 256
		blob     = "blob-4-arena256"        // slots at 128, arena at 256
		blobReg  = "blob-2-arena128-registry1"
	)
	field := func(name string) fzField {
		for _, fd := range fzFields {
			if fd.name == name {
				return fd
			}
		}
		t.Fatalf("no field %s", name)
		return fzField{}
	}
	cases := []struct {
		name  string
		base  string
		field string
		value uint64
		err   error
		want  []string // acceptable FieldError.Field values (the first is the field itself)
	}{
		{"magic zero (creator not finished)", fixed, "magic", 0, ErrMagic, []string{"magic"}},
		{"magic of another format", fixed, "magic", 0x5249_4E47_4242_4F52, ErrMagic, []string{"magic"}},
		{"version 1", fixed, "version", 1, ErrVersion, []string{"version"}},
		{"version 3", blob, "version", 3, ErrVersion, []string{"version"}},
		{"element_size not a multiple of 8", fixed, "element_size", 60, ErrCorrupt, []string{"element_size"}},
		{"element_size 0", lossless, "element_size", 0, ErrCorrupt, []string{"element_size"}},
		{"element_size too small for a blob descriptor", blob, "element_size", 16, ErrCorrupt, []string{"element_size"}},
		{"element_size huge", fixed, "element_size", 1 << 30, ErrCorrupt, []string{"element_size"}},
		{"capacity not a power of two", fixed, "capacity", 12, ErrCorrupt, []string{"capacity"}},
		{"capacity 0", blob, "capacity", 0, ErrCorrupt, []string{"capacity"}},
		{"capacity beyond 2^40", lossless, "capacity", 1 << 41, ErrCorrupt, []string{"capacity"}},
		{"mask not capacity-1", fixed, "mask", 14, ErrCorrupt, []string{"mask"}},
		{"mask of a blob ring", blob, "mask", 7, ErrCorrupt, []string{"mask"}},
		{"flags unknown bit", fixed, "flags", 0x8011, ErrCorrupt, []string{"flags"}},
		{"flags drop WITH_REGISTRY", lossless, "flags", 0x12, ErrCorrupt, []string{"flags", "reader_registry_count"}},
		{"flags drop WITH_ARENA", blob, "flags", 0x11, ErrCorrupt, []string{"flags", "arena_offset"}},
		{"registry offset 64", lossless, "reader_registry_offset", 64, ErrCorrupt, []string{"reader_registry_offset"}},
		{"registry offset 256 without registry", fixed, "reader_registry_offset", 256, ErrCorrupt, []string{"reader_registry_offset"}},
		{"registry count 0 with WITH_REGISTRY", lossless, "reader_registry_count", 0, ErrCorrupt, []string{"reader_registry_count"}},
		{"registry count without WITH_REGISTRY", fixed, "reader_registry_count", 3, ErrCorrupt, []string{"reader_registry_count"}},
		{"registry count beyond 4096", blobReg, "reader_registry_count", 5000, ErrCorrupt, []string{"reader_registry_count"}},
		{"registry runs into the slots", lossless, "reader_registry_count", 3, ErrCorrupt, []string{"reader_registry_count", "slots_offset"}},
		{"slots_offset not 64-aligned", fixed, "slots_offset", 136, ErrCorrupt, []string{"slots_offset"}},
		{"slots_offset inside the header", fixed, "slots_offset", 64, ErrCorrupt, []string{"slots_offset"}},
		{"slots_offset inside the registry", lossless, "slots_offset", 192, ErrCorrupt, []string{"slots_offset"}},
		{"slots_offset beyond the file", fixed, "slots_offset", 1 << 20, ErrTruncated, []string{"slots_offset", "slots"}},
		{"slots_offset beyond 2^32", fixed, "slots_offset", 1 << 33, ErrCorrupt, []string{"slots_offset"}},
		{"arena_offset 0", blob, "arena_offset", 0, ErrCorrupt, []string{"arena_offset"}},
		{"arena_offset inside the slots", blob, "arena_offset", 192, ErrCorrupt, []string{"arena_offset"}},
		{"arena_offset not 64-aligned", blob, "arena_offset", 264, ErrCorrupt, []string{"arena_offset"}},
		// arena_offset 64-aligned and after the slots, but past the end of
		// the file: the offset alone is wrong (ParseHeader even tests
		// ArenaOffset > fileSize on its own), so the error must name it,
		// not arena_size, whose value is intact.
		{"arena_offset beyond the file", blob, "arena_offset", 1 << 20, ErrTruncated, []string{"arena_offset"}},
		// Inside the file but the arena then overruns it: offset or size.
		{"arena_offset one line too far", blob, "arena_offset", 320, ErrTruncated, []string{"arena_offset", "arena_size", "arena"}},
		{"arena_offset without WITH_ARENA", fixed, "arena_offset", 1152, ErrCorrupt, []string{"arena_offset"}},
		{"arena_size not a power of two", blob, "arena_size", 1000, ErrCorrupt, []string{"arena_size"}},
		{"arena_size 0", blobReg, "arena_size", 0, ErrCorrupt, []string{"arena_size"}},
		{"arena_size below 64", blob, "arena_size", 32, ErrCorrupt, []string{"arena_size"}},
		{"arena_size beyond the file", blob, "arena_size", 512, ErrTruncated, []string{"arena_size"}},
		{"arena_size without WITH_ARENA", fixed, "arena_size", 4096, ErrCorrupt, []string{"arena_size", "arena_offset"}},
		{"arena header capacity", blob, "arena capacity", 128, ErrCorrupt, []string{"arena capacity"}},
		{"arena header capacity 0", blobReg, "arena capacity", 0, ErrCorrupt, []string{"arena capacity"}},
		{"arena header mask", blob, "arena mask", 254, ErrCorrupt, []string{"arena mask"}},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := bytes.Clone(seeds[c.base])
			if b == nil {
				t.Fatalf("no seed %s", c.base)
			}
			if !fzPoke(b, field(c.field), c.value) {
				t.Fatalf("%s has no %s", c.base, c.field)
			}
			fzCheckOpen(t, fzWrite(t, dir, b), c.err, c.want, c.field, c.value)
		})
	}

	truncated := []struct {
		name string
		data []byte
		want []string
	}{
		{"empty file", nil, []string{"file size"}},
		{"100 bytes", seeds[fixed][:100], []string{"file size"}},
		{"127 bytes", seeds[fixed][:127], []string{"file size"}},
		{"header only", seeds[fixed][:128], []string{"slots", "file size"}},
		{"fixed ring short by one byte", seeds[fixed][:len(seeds[fixed])-1], []string{"slots", "file size"}},
		{"fixed ring short by a slot", seeds[fixed][:len(seeds[fixed])-64], []string{"slots", "file size"}},
		{"registry ring cut in the registry", seeds[lossless][:200], []string{"slots", "file size"}},
		{"blob ring short by one byte", seeds[blob][:len(seeds[blob])-1], []string{"arena_size", "arena", "file size"}},
		{"blob ring cut before the arena", seeds[blob][:256], []string{"arena_size", "arena", "file size"}},
	}
	for _, c := range truncated {
		t.Run("truncated: "+c.name, func(t *testing.T) {
			fzCheckOpen(t, fzWrite(t, dir, c.data), ErrTruncated, c.want, "", 0)
			if len(c.data) >= HeaderSize {
				_, err := ParseHeader(c.data, uint64(len(c.data)))
				if fe := fzCheckRefusal(t, err); !errors.Is(err, ErrTruncated) || !slices.Contains(c.want, fe.Field) {
					t.Errorf("ParseHeader: %v", err)
				}
			}
		})
	}

	// Every seed opens as it is.
	for name, b := range seeds {
		r, err := Open(fzWrite(t, dir, b), OpenOptions{})
		if err != nil {
			t.Errorf("seed %s: %v", name, err)
			continue
		}
		r.Close()
	}
}

func fzCheckOpen(t *testing.T, path string, wantErr error, wantField []string, corrupted string, value uint64) {
	t.Helper()
	r, err := Open(path, OpenOptions{})
	if err == nil {
		r.Close()
		t.Fatalf("corrupt ring opened")
	}
	if !errors.Is(err, wantErr) {
		t.Errorf("error %v does not wrap %v", err, wantErr)
	}
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v is not a *FieldError", err)
	}
	if !slices.Contains(wantField, fe.Field) {
		t.Errorf("refusal names field %q (value %d), want %q: %v", fe.Field, fe.Value, wantField[0], err)
	}
	if !strings.Contains(err.Error(), fe.Field) {
		t.Errorf("message %q does not name the field", err)
	}
	if corrupted != "" && fe.Field == corrupted && fe.Value != value&fzWidthMask(corrupted) {
		t.Errorf("refusal names %s but reports value %d, the corrupted value is %d", fe.Field, fe.Value, value)
	}
	// OpenReader refuses it the same way.
	if rd, err2 := OpenReader(path, ReadOptions{NoRegister: true}); err2 == nil {
		rd.Close()
		t.Errorf("OpenReader accepted what Open refused")
	} else if !errors.Is(err2, wantErr) {
		t.Errorf("OpenReader: %v", err2)
	}
}

func fzWidthMask(name string) uint64 {
	for _, fd := range fzFields {
		if fd.name == name && fd.width == 4 {
			return math.MaxUint32
		}
	}
	return math.MaxUint64
}
