package wire

// The mirror's checks of a source's handshake: GEOMETRY must describe the
// canonical layout of its fields (Canonical), so that a source decides the
// size of the mirror ring only through capacity, element size, registry
// and arena size. Fuzz targets of the handshake decoders.

import (
	"bytes"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"strings"
	"testing"

	"github.com/ringfire/ringfire/shm"
)

// hsLayouts are rings of every kind shm makes: each one's GEOMETRY is
// canonical.
func hsLayouts(t testing.TB) map[string]shm.Layout {
	t.Helper()
	out := map[string]shm.Layout{}
	for name, c := range map[string]shm.RingConfig{
		"fixed":          {PayloadSize: 56, Capacity: 4096},
		"lossless":       {PayloadSize: 56, Capacity: 1024, Flags: shm.FlagLossless},
		"3 readers":      {PayloadSize: 100, Capacity: 64, Readers: 3},
		"blob":           {PayloadSize: 24, Capacity: 1024, ArenaSize: 1 << 16},
		"blob 5 readers": {PayloadSize: 40, Capacity: 256, ArenaSize: 1 << 12, Readers: 5},
		"mpmc":           {PayloadSize: 8, Capacity: 16, Flags: shm.FlagMPMC},
		"schema":         {PayloadSize: 1, Capacity: 1, SchemaSig: 0xFEED},
	} {
		l, err := shm.NewLayout(c)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = l
	}
	return out
}

func TestGeometryCanonicalAccepted(t *testing.T) {
	for name, l := range hsLayouts(t) {
		g, err := ParseGeometry(AppendGeometry(nil, 1, 0, GeometryOf(l))[HeaderSize:])
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		ml, err := g.MirrorLayout()
		if err != nil || ml.FileSize() != l.FileSize() {
			t.Errorf("%s: mirror layout %+v (%v): %d bytes, the source's ring %d", name, ml, err, ml.FileSize(), l.FileSize())
		}
	}
}

// A ring written by the reference implementation (shm/testdata, its
// Python producer) is canonical: a source serving it is mirrored.
func TestGeometryOfForeignRingCanonical(t *testing.T) {
	b, err := os.ReadFile("../../shm/testdata/ring-py-fixed-16x56.bin")
	if err != nil {
		t.Fatal(err)
	}
	h, err := shm.ParseHeader(b, uint64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseGeometry(AppendGeometry(nil, 1, 0, GeometryOf(h.Layout))[HeaderSize:]); err != nil {
		t.Fatalf("the reference implementation's ring %+v: %v", h.Layout, err)
	}
}

// A GEOMETRY whose offsets are not where the layout puts them is refused
// with ErrMalformed naming the field and the offset the layout wants: the
// issue's slots_offset of 2^31 for 4,096 slots of 64 B would have made a
// 2 GiB mirror ring.
func TestGeometryNonCanonicalRefused(t *testing.T) {
	ls := hsLayouts(t)
	cases := []struct {
		name, field string
		want        uint64 // the offset the error names as the layout's
		g           Geometry
	}{
		{"slots at 2^31", "slots_offset", 128, edit(ls["fixed"], func(g *Geometry) { g.SlotsOffset = 1 << 31 })},
		{"slots 64 late", "slots_offset", 128, edit(ls["fixed"], func(g *Geometry) { g.SlotsOffset += 64 })},
		{"slots after a longer registry", "slots_offset", 128 + 64*32, edit(ls["lossless"], func(g *Geometry) { g.SlotsOffset += 64 * 32 })},
		{"blob slots unaligned to 128", "slots_offset", 128, edit(ls["blob"], func(g *Geometry) { g.SlotsOffset = 192; g.ArenaOffset += 64 })},
		{"blob registry slots", "slots_offset", 512, edit(ls["blob 5 readers"], func(g *Geometry) { g.SlotsOffset = 448; g.ArenaOffset -= 64 })},
		{"arena 1 TiB late", "arena_offset", ls["blob"].ArenaOffset, edit(ls["blob"], func(g *Geometry) { g.ArenaOffset += 1 << 40 })},
		{"arena 128 late", "arena_offset", ls["blob"].ArenaOffset, edit(ls["blob"], func(g *Geometry) { g.ArenaOffset += 128 })},
		{"arena without the flag", "arena_offset", 0, edit(ls["fixed"], func(g *Geometry) { g.ArenaOffset, g.ArenaSize = 1<<20, 1<<16 })},
		{"arena size without the flag", "arena_offset", 0, edit(ls["fixed"], func(g *Geometry) { g.ArenaSize = 1 << 16 })},
	}
	for _, c := range cases {
		if err := c.g.Validate(); err != nil {
			t.Fatalf("%s: the field rules alone refuse it (%v): not a test of the layout", c.name, err)
		}
		_, err := ParseGeometry(AppendGeometry(nil, 1, 0, c.g)[HeaderSize:])
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), c.field+" = ") ||
			!strings.Contains(err.Error(), fmt.Sprintf("puts it at %d", c.want)) {
			t.Errorf("%s: %v, want ErrMalformed naming %s and offset %d", c.name, err, c.field, c.want)
		}
	}
	// A payload of 0 bytes is no ring shm makes.
	g := Geometry{Capacity: 64, ElementSize: 8, SlotsOffset: 128}
	if _, err := ParseGeometry(AppendGeometry(nil, 1, 0, g)[HeaderSize:]); !errors.Is(err, ErrMalformed) {
		t.Errorf("element_size 8: %v, want ErrMalformed", err)
	}
}

func edit(l shm.Layout, f func(*Geometry)) Geometry {
	g := GeometryOf(l)
	f(&g)
	return g
}

// hsMaxFile is the largest file a mirror ring of g may take: its slots,
// registry and arena and, around them, the header and alignment padding.
func hsMaxFile(g Geometry) uint64 {
	hi, slots := bits.Mul64(g.Capacity, uint64(g.ElementSize))
	if hi != 0 {
		return 0
	}
	size := shm.HeaderSize + shm.RegistryEntry*uint64(g.RegistryCount) + 128 + slots
	if g.Blob() {
		size += 128 + shm.ArenaHeaderSize + g.ArenaSize
	}
	return size
}

// hsCheckGeometry checks what the mirror does with an accepted GEOMETRY:
// it re-encodes to the same payload, and the mirror ring it describes is
// valid and no larger than its slots, registry and arena need.
func hsCheckGeometry(t *testing.T, g Geometry, p []byte) {
	t.Helper()
	if again := AppendGeometry(nil, 0, 0, g)[HeaderSize:]; !bytes.Equal(again, p) {
		t.Fatalf("GEOMETRY round trip % x -> % x", p, again)
	}
	l, err := g.MirrorLayout()
	if err != nil {
		t.Fatalf("accepted %+v, but its mirror layout fails: %v", g, err)
	}
	if l.FileSize() > hsMaxFile(g) {
		t.Fatalf("accepted %+v: a mirror ring of %d bytes, its regions need at most %d", g, l.FileSize(), hsMaxFile(g))
	}
}

func FuzzGeometry(f *testing.F) {
	for _, l := range hsLayouts(f) {
		f.Add(AppendGeometry(nil, 0, 0, GeometryOf(l))[HeaderSize:])
	}
	big := GeometryOf(hsLayouts(f)["fixed"])
	big.SlotsOffset = 1 << 31
	f.Add(AppendGeometry(nil, 0, 0, big)[HeaderSize:])
	f.Fuzz(func(t *testing.T, p []byte) {
		g, err := ParseGeometry(p)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v wraps no codec error", err)
			}
			return
		}
		hsCheckGeometry(t, g, p)
	})
}

// FuzzHandshake feeds the mirror's side of the handshake: the frames a
// source answers HELLO with (GEOMETRY or ERROR, then MULTICAST and
// SESSION as GEOMETRY's flags say), decoded and checked as the mirror
// does. Whatever it accepts describes a mirror ring of bounded size.
func FuzzHandshake(f *testing.F) {
	ls := hsLayouts(f)
	var seed []byte
	seed = AppendGeometry(seed, 5, GeometryMulticast|GeometrySession64|GeometryTelemetry, GeometryOf(ls["blob"]))
	seed = AppendMulticast(seed, Multicast{Group: [4]byte{239, 0, 0, 1}, Port: 9, MTU: DefaultMTU, Session: 3})
	seed = AppendSession(seed, Session{ID: 0x0102030405060708, Trailer: true, Incarnation: [SessionSize]byte{8, 7, 6, 5, 4, 3, 2, 1}})
	f.Add(seed)
	f.Add(AppendGeometry(nil, StartOldest, GeometryReset, GeometryOf(ls["lossless"])))
	f.Add(AppendError(nil, "no key"))
	f.Fuzz(func(t *testing.T, b []byte) {
		next := func(maxLen int) (Header, []byte, bool) {
			h, err := ParseHeader(b, maxLen)
			if err != nil {
				if !fzCodecErr(err) {
					t.Fatalf("header: %v", err)
				}
				return h, nil, false
			}
			if len(b)-HeaderSize < int(h.Len) {
				return h, nil, false // the stream ends mid-frame
			}
			p := b[HeaderSize : HeaderSize+int(h.Len)]
			b = b[HeaderSize+int(h.Len):]
			return h, p, true
		}
		h, p, ok := next(max(GeometrySize, MaxErrorLen))
		if !ok {
			return
		}
		if h.Kind == KindError {
			if msg, err := ParseError(p); err == nil && len(msg) > MaxErrorLen {
				t.Fatalf("ERROR of %d bytes accepted", len(msg))
			}
			return
		}
		if h.Kind != KindGeometry {
			return // the mirror hangs up
		}
		g, err := ParseGeometry(p)
		if err != nil {
			if !fzCodecErr(err) {
				t.Fatalf("GEOMETRY: %v", err)
			}
			return
		}
		hsCheckGeometry(t, g, p)
		if h.Flags&GeometryMulticast != 0 {
			mh, mp, ok := next(MulticastSize)
			if !ok || mh.Kind != KindMulticast {
				return
			}
			if m, err := ParseMulticast(mp); err == nil && (m.Port == 0 || m.MTU < MinMTU || m.MTU > MaxMTU) {
				t.Fatalf("MULTICAST %+v accepted", m)
			}
		}
		if h.Flags&GeometrySession64 != 0 {
			if sh, sp, ok := next(max(SessionSize, MaxErrorLen)); ok && sh.Kind == KindSession {
				if _, err := ParseSession(sh, sp); err != nil && !fzCodecErr(err) {
					t.Fatalf("SESSION: %v", err)
				}
			}
		}
	})
}

// FuzzParseHello is the source's side: a HELLO is accepted only whole,
// with the magic and version, and re-encodes to the same frame.
func FuzzParseHello(f *testing.F) {
	f.Add(AppendHello(nil, StartOldest, Hello{Flags: HelloUDP | HelloTelemetry}))
	f.Add(AppendHello(nil, 0, Hello{}))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHeader(b, HelloSize)
		if err != nil || h.Kind != KindHello || len(b) != HeaderSize+int(h.Len) {
			return
		}
		hello, err := ParseHello(b[HeaderSize:])
		if err != nil {
			if !fzCodecErr(err) {
				t.Fatalf("HELLO: %v", err)
			}
			return
		}
		again := AppendHello(nil, h.Seq, hello)
		if h.Flags == 0 && h.Count == 0 && !bytes.Equal(again[:HeaderSize+13], b[:HeaderSize+13]) {
			t.Fatalf("HELLO round trip % x -> % x", b, again)
		}
	})
}
