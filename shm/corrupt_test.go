package shm

// Corrupting one word of a valid ring at a time (fuzz_test.go's seeds):
// FuzzHeaderField with any value, TestOpenRefusesCorrupt with a table of
// values each refusal must name, and truncated files.

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

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
		path := writeRing(t, dir, b)
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
			fzCheckOpen(t, writeRing(t, dir, b), c.err, c.want, c.field, c.value)
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
			fzCheckOpen(t, writeRing(t, dir, c.data), ErrTruncated, c.want, "", 0)
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
		r, err := Open(writeRing(t, dir, b), OpenOptions{})
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
