package wire

// The frame codec: round trips and wire bytes of every kind, and what the
// header, HELLO, NAK, GEOMETRY and MULTICAST parsers reject.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/ringfire/ringfire/shm"
)

// ftParse splits one frame into its header and payload, failing the test
// when the header is rejected or the payload length disagrees.
func ftParse(t *testing.T, b []byte) (Header, []byte) {
	t.Helper()
	h, err := ParseHeader(b, 1<<20)
	if err != nil {
		t.Fatalf("ParseHeader(% x): %v", b, err)
	}
	if int(h.Len) != len(b)-HeaderSize {
		t.Fatalf("%v: len %d, frame carries %d payload bytes", h.Kind, h.Len, len(b)-HeaderSize)
	}
	return h, b[HeaderSize:]
}

func ftBlobGeometry() Geometry {
	return Geometry{Capacity: 1024, ElementSize: 32, RingFlags: uint32(shm.FlagSPMC | shm.FlagArena),
		SlotsOffset: 128, ArenaOffset: 128 + 1024*32, ArenaSize: 1 << 16}
}

func TestFrameRoundTrips(t *testing.T) {
	b := AppendHello(nil, 77, Hello{Flags: HelloUDP | HelloUnicast})
	h, p := ftParse(t, b)
	hello, err := ParseHello(p)
	if err != nil || h.Kind != KindHello || h.Seq != 77 || hello.Flags != HelloUDP|HelloUnicast {
		t.Fatalf("HELLO: %+v %+v %v", h, hello, err)
	}

	l, err := shm.NewLayout(shm.RingConfig{PayloadSize: 56, Capacity: 4096, Flags: shm.FlagLossless})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []Geometry{GeometryOf(l), ftBlobGeometry()} {
		b = AppendGeometry(nil, 9, GeometryReset|GeometryMulticast, g)
		h, p = ftParse(t, b)
		got, err := ParseGeometry(p)
		if err != nil || h.Kind != KindGeometry || h.Seq != 9 || h.Flags != GeometryReset|GeometryMulticast || got != g {
			t.Fatalf("GEOMETRY: %+v %+v %v, want %+v", h, got, err, g)
		}
	}

	mc := Multicast{Group: [4]byte{239, 1, 2, 3}, Port: 7400, MTU: 1472, TTL: 3, Session: 200, Token: 0xCAFEF00D}
	h, p = ftParse(t, AppendMulticast(nil, mc))
	gotMC, err := ParseMulticast(p)
	if err != nil || h.Kind != KindMulticast || gotMC != mc || gotMC.Unicast() {
		t.Fatalf("MULTICAST: %+v %+v %v", h, gotMC, err)
	}
	uni := Multicast{Port: 7403, MTU: MinMTU, Token: 1}
	_, p = ftParse(t, AppendMulticast(nil, uni))
	if got, err := ParseMulticast(p); err != nil || got != uni || !got.Unicast() {
		t.Fatalf("unicast MULTICAST: %+v %v", got, err)
	}

	h, p = ftParse(t, AppendNak(nil, 10, 10+MaxNakRecords-1))
	first, last, err := ParseNak(h, p)
	if err != nil || h.Kind != KindNak || first != 10 || last != 10+MaxNakRecords-1 {
		t.Fatalf("NAK: %+v %d..%d %v", h, first, last, err)
	}

	for _, k := range []Kind{KindGap, KindHeartbeat, KindPunch} {
		h, p = ftParse(t, AppendEmpty(nil, k, 0x42, 1<<40+3))
		if h != (Header{Kind: k, Flags: 0x42, Seq: 1<<40 + 3}) || len(p) != 0 {
			t.Fatalf("%v: %+v", k, h)
		}
	}

	dh := Header{Kind: KindData, Flags: 7, Count: 3, Len: 3 * 56, Seq: 1000}
	var hb [HeaderSize]byte
	dh.Put(hb[:])
	if got, err := ParseHeader(hb[:], 3*56); err != nil || got != dh {
		t.Fatalf("DATA header: %+v %v", got, err)
	}
	// Appending keeps what was there.
	b = AppendNak([]byte{0xEE}, 1, 2)
	if b[0] != 0xEE || len(b) != 1+HeaderSize+8 {
		t.Fatalf("append clobbered its prefix: % x", b)
	}
}

func TestFrameWireBytes(t *testing.T) {
	magic := []byte{0x52, 0x52, 0x49, 0x4D, 0x47, 0x4E, 0x49, 0x52} // 0x5249_4E47_4D49_5252 LE
	hello := []byte{
		1, 0, 0, 0, 16, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1, // HELLO, len 16, seq
	}
	hello = append(hello, magic...)
	hello = append(hello, 1, 0, 0, 0, 0x03, 0, 0, 0) // version 1, flags, pad
	if got := AppendHello(nil, 0x0102030405060708, Hello{Flags: 3}); !bytes.Equal(got, hello) {
		t.Errorf("HELLO\n got % x\nwant % x", got, hello)
	}

	g := Geometry{Capacity: 0x1000, ElementSize: 64, RingFlags: 0x212, SchemaSig: 0x1122334455667788,
		RegistryCount: 32, SlotsOffset: 2176, ArenaOffset: 0, ArenaSize: 0}
	geom := []byte{
		2, 0x01, 0, 0, 48, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, // GEOMETRY RESET, len 48, first 5
		0, 0x10, 0, 0, 0, 0, 0, 0, // capacity @0
		64, 0, 0, 0, 0x12, 0x02, 0, 0, // element_size @8, ring flags @12
		0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, // schema_sig @16
		32, 0, 0, 0, 0x80, 0x08, 0, 0, // registry_count @24, slots_offset @28
		0, 0, 0, 0, 0, 0, 0, 0, // arena_offset @32
		0, 0, 0, 0, 0, 0, 0, 0, // arena_size @40
	}
	if got := AppendGeometry(nil, 5, GeometryReset, g); !bytes.Equal(got, geom) {
		t.Errorf("GEOMETRY\n got % x\nwant % x", got, geom)
	}

	mc := Multicast{Group: [4]byte{239, 1, 2, 3}, Port: 8013, MTU: 1472, TTL: 4, Session: 0xAB, Token: 0xDEADBEEF}
	mcast := []byte{
		7, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // MULTICAST, len 16, seq 0
		239, 1, 2, 3, // group @0
		0x4D, 0x1F, 0xC0, 0x05, // port @4, mtu @6
		4, 0xAB, 0xEF, 0xBE, 0xAD, 0xDE, 0, 0, // ttl @8, session @9, token @10, pad
	}
	if got := AppendMulticast(nil, mc); !bytes.Equal(got, mcast) {
		t.Errorf("MULTICAST\n got % x\nwant % x", got, mcast)
	}

	nak := []byte{
		6, 0, 0, 0, 8, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, // NAK, len 8, first 5
		0x34, 0x12, 0, 0, 0, 0, 0, 0, // last
	}
	if got := AppendNak(nil, 5, 0x1234); !bytes.Equal(got, nak) {
		t.Errorf("NAK\n got % x\nwant % x", got, nak)
	}

	data := []byte{3, 0x5A, 26, 0, 0xB0, 0x05, 0, 0, 0xEF, 0xCD, 0xAB, 0x89, 0x67, 0x45, 0x23, 0x01}
	var got [HeaderSize]byte
	Header{Kind: KindData, Flags: 0x5A, Count: 26, Len: 26 * 56, Seq: 0x0123456789ABCDEF}.Put(got[:])
	if !bytes.Equal(got[:], data) {
		t.Errorf("DATA header\n got % x\nwant % x", got, data)
	}
	if got := AppendEmpty(nil, KindPunch, 9, 0xAABBCCDD); !bytes.Equal(got, []byte{8, 9, 0, 0, 0, 0, 0, 0, 0xDD, 0xCC, 0xBB, 0xAA, 0, 0, 0, 0}) {
		t.Errorf("PUNCH % x", got)
	}
}

func TestParseHeaderRejects(t *testing.T) {
	hdr := func(k Kind, count uint16, n uint32) []byte {
		b := make([]byte, HeaderSize)
		Header{Kind: k, Count: count, Len: n, Seq: 1}.Put(b)
		return b
	}
	cases := []struct {
		name string
		b    []byte
		max  int
		want error
	}{
		{"empty", nil, 64, ErrMalformed},
		{"short", hdr(KindNak, 0, 8)[:15], 64, ErrMalformed},
		{"kind 0", hdr(0, 0, 0), 64, ErrMalformed},
		{"kind 9", hdr(9, 0, 0), 64, ErrMalformed},
		{"kind 255", hdr(255, 0, 0), 64, ErrMalformed},
		{"oversized", hdr(KindData, 1, 65), 64, ErrTooLarge},
		{"oversized 4G", hdr(KindData, 1, ^uint32(0)), 1 << 20, ErrTooLarge},
		{"hello 15", hdr(KindHello, 0, 15), 64, ErrMalformed},
		{"hello 17", hdr(KindHello, 0, 17), 64, ErrMalformed},
		{"geometry 40", hdr(KindGeometry, 0, 40), 64, ErrMalformed},
		{"multicast 0", hdr(KindMulticast, 0, 0), 64, ErrMalformed},
		{"nak 16", hdr(KindNak, 0, 16), 64, ErrMalformed},
		{"gap 1", hdr(KindGap, 0, 1), 64, ErrMalformed},
		{"heartbeat 8", hdr(KindHeartbeat, 0, 8), 64, ErrMalformed},
		{"punch 4", hdr(KindPunch, 0, 4), 64, ErrMalformed},
	}
	for _, c := range cases {
		if _, err := ParseHeader(c.b, c.max); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	// Fixed sizes at the limit and a DATA of any length within it pass.
	for _, b := range [][]byte{hdr(KindHello, 0, 16), hdr(KindGeometry, 0, 48), hdr(KindMulticast, 0, 16),
		hdr(KindNak, 0, 8), hdr(KindGap, 0, 0), hdr(KindData, 1, 64), hdr(KindData, 0, 0)} {
		if _, err := ParseHeader(b, 64); err != nil {
			t.Errorf("% x: %v", b, err)
		}
	}
}

func TestParseHelloRejects(t *testing.T) {
	good := AppendHello(nil, 0, Hello{})[HeaderSize:]
	bad := bytes.Clone(good)
	bad[0] ^= 1
	if _, err := ParseHello(bad); !errors.Is(err, ErrMagic) {
		t.Errorf("wrong magic: %v", err)
	}
	for _, v := range []uint32{0, 2, 0xFFFFFFFF} {
		bad = bytes.Clone(good)
		binary.LittleEndian.PutUint32(bad[8:], v)
		if _, err := ParseHello(bad); !errors.Is(err, ErrVersion) || errors.Is(err, ErrMagic) {
			t.Errorf("version %d: %v", v, err)
		}
	}
	for _, n := range []int{0, 12, 15, 17} {
		if _, err := ParseHello(make([]byte, n)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%d bytes: %v", n, err)
		}
	}
}

// A REPORT is a bare header asking for a STATUS once its sequence is
// applied; anything else in it is refused.
func TestReport(t *testing.T) {
	b := AppendReport(nil, 42)
	h, p := ftParse(t, b)
	if seq, err := ParseReport(h, p); err != nil || seq != 42 || KindReport.String() != "REPORT" || KindReport != 12 {
		t.Fatalf("REPORT 42: %d, %v (%v)", seq, err, KindReport)
	}
	bad := []struct {
		name string
		h    Header
		p    []byte
	}{
		{"seq 0", Header{Kind: KindReport}, nil},
		{"flags", Header{Kind: KindReport, Seq: 1, Flags: 1}, nil},
		{"count", Header{Kind: KindReport, Seq: 1, Count: 1}, nil},
		{"payload", Header{Kind: KindReport, Seq: 1, Len: 1}, []byte{0}},
		{"kind", Header{Kind: KindHeartbeat, Seq: 1}, nil},
	}
	for _, c := range bad {
		if _, err := ParseReport(c.h, c.p); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", c.name, err)
		}
	}
	if HelloReportOnAsk != 1<<5 || GeometryReportOnAsk != 1<<4 {
		t.Errorf("flag bits %#x %#x", HelloReportOnAsk, GeometryReportOnAsk)
	}
}

func TestParseNakRanges(t *testing.T) {
	cases := []struct {
		first, last uint64
		ok          bool
	}{
		{1, 1, true},
		{5, 4 + MaxNakRecords, true},
		{0, 0, false},
		{0, 10, false},
		{10, 9, false},
		{^uint64(0), 0, false},
		{5, 5 + MaxNakRecords, false},
		{1, ^uint64(0), false},
		{^uint64(0) - 1, ^uint64(0), true},
	}
	for _, c := range cases {
		b := AppendNak(nil, c.first, c.last)
		h, p := ftParse(t, b)
		first, last, err := ParseNak(h, p)
		if c.ok != (err == nil) || (err != nil && !errors.Is(err, ErrMalformed)) {
			t.Errorf("NAK %d..%d: %v, want ok=%v", c.first, c.last, err, c.ok)
		}
		if err == nil && (first != c.first || last != c.last) {
			t.Errorf("NAK %d..%d decoded as %d..%d", c.first, c.last, first, last)
		}
	}
	if _, _, err := ParseNak(Header{Kind: KindNak, Seq: 1}, make([]byte, 7)); !errors.Is(err, ErrMalformed) {
		t.Errorf("7-byte NAK: %v", err)
	}
}

func TestParseGeometryRules(t *testing.T) {
	fixed := Geometry{Capacity: 1024, ElementSize: 64, RingFlags: uint32(shm.FlagSPMC), SlotsOffset: 128}
	blob := ftBlobGeometry()
	for _, g := range []Geometry{fixed, blob} {
		if err := g.Validate(); err != nil {
			t.Fatalf("valid %+v: %v", g, err)
		}
	}
	cases := []struct {
		field string
		g     Geometry
		edit  func(*Geometry)
	}{
		{"capacity", fixed, func(g *Geometry) { g.Capacity = 0 }},
		{"capacity", fixed, func(g *Geometry) { g.Capacity = 1000 }},
		{"capacity", fixed, func(g *Geometry) { g.Capacity = 1 << 41 }},
		{"element_size", fixed, func(g *Geometry) { g.ElementSize = 0 }},
		{"element_size", fixed, func(g *Geometry) { g.ElementSize = 4 }},
		{"element_size", fixed, func(g *Geometry) { g.ElementSize = 60 }},
		{"element_size", fixed, func(g *Geometry) { g.ElementSize = 1<<24 + 8 }},
		{"registry_count", fixed, func(g *Geometry) { g.RegistryCount, g.SlotsOffset = 4097, 1<<20 }},
		{"slots_offset", fixed, func(g *Geometry) { g.SlotsOffset = 64 }},
		{"slots_offset", fixed, func(g *Geometry) { g.SlotsOffset = 160 }},
		{"slots_offset", fixed, func(g *Geometry) { g.RegistryCount = 32; g.SlotsOffset = 2112 }},
		{"arena_size", blob, func(g *Geometry) { g.ArenaSize = 0 }},
		{"arena_size", blob, func(g *Geometry) { g.ArenaSize = 32 }},
		{"arena_size", blob, func(g *Geometry) { g.ArenaSize = 3 << 10 }},
		{"arena_size", blob, func(g *Geometry) { g.ArenaSize = 1 << 45 }},
		{"arena_offset", blob, func(g *Geometry) { g.ArenaOffset = 128 }},
		{"arena_offset", blob, func(g *Geometry) { g.ArenaOffset = 128 + 1024*32 - 64 }},
		{"arena_offset", blob, func(g *Geometry) { g.ArenaOffset += 8 }},
		{"element_size", blob, func(g *Geometry) { g.ElementSize = 16; g.ArenaOffset = 128 + 1024*16 }},
	}
	for _, c := range cases {
		g := c.g
		c.edit(&g)
		_, err := ParseGeometry(AppendGeometry(nil, 1, 0, g)[HeaderSize:])
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), c.field+" ") {
			t.Errorf("%+v: %v, want ErrMalformed naming %s", g, err, c.field)
		}
	}
	if _, err := ParseGeometry(make([]byte, 47)); !errors.Is(err, ErrMalformed) {
		t.Errorf("47 bytes: %v", err)
	}
}

func TestParseMulticastRejects(t *testing.T) {
	good := Multicast{Group: [4]byte{239, 255, 0, 1}, Port: 7401, MTU: DefaultMTU, TTL: 1, Session: 1, Token: 7}
	cases := []struct {
		why  string
		edit func(*Multicast)
	}{
		{"port 0", func(m *Multicast) { m.Port = 0 }},
		{"unicast port 0", func(m *Multicast) { m.Group, m.Port = [4]byte{}, 0 }},
		{"mtu 0", func(m *Multicast) { m.MTU = 0 }},
		{"mtu below min", func(m *Multicast) { m.MTU = MinMTU - 1 }},
		{"mtu above max", func(m *Multicast) { m.MTU = MaxMTU + 1 }},
		{"unicast address", func(m *Multicast) { m.Group = [4]byte{10, 0, 0, 1} }},
		{"class E", func(m *Multicast) { m.Group = [4]byte{240, 0, 0, 1} }},
		{"broadcast", func(m *Multicast) { m.Group = [4]byte{255, 255, 255, 255} }},
		{"below 224", func(m *Multicast) { m.Group = [4]byte{223, 255, 255, 255} }},
	}
	for _, c := range cases {
		m := good
		c.edit(&m)
		if _, err := ParseMulticast(AppendMulticast(nil, m)[HeaderSize:]); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", c.why, err)
		}
	}
	for _, m := range []Multicast{good, {Group: [4]byte{224, 0, 0, 0}, Port: 1, MTU: MinMTU}, {Port: 1, MTU: MaxMTU}} {
		if _, err := ParseMulticast(AppendMulticast(nil, m)[HeaderSize:]); err != nil {
			t.Errorf("%+v: %v", m, err)
		}
	}
	if _, err := ParseMulticast(make([]byte, 15)); !errors.Is(err, ErrMalformed) {
		t.Errorf("15 bytes: %v", err)
	}
}

// TestHistoryFlagBits pins the history extension's bits: append-only, the
// next free ones.
func TestHistoryFlagBits(t *testing.T) {
	if HelloHistory != 1<<6 || GeometryHistory != 1<<5 {
		t.Errorf("flag bits %#x %#x", HelloHistory, GeometryHistory)
	}
	all := HelloUDP | HelloUnicast | HelloTelemetry | HelloKeyed | HelloSession64 | HelloReportOnAsk
	if HelloHistory&all != 0 {
		t.Errorf("HelloHistory %#x overlaps %#x", HelloHistory, all)
	}
	geo := GeometryReset | GeometryMulticast | GeometryTelemetry | GeometrySession64 | GeometryReportOnAsk
	if GeometryHistory&geo != 0 {
		t.Errorf("GeometryHistory %#x overlaps %#x", GeometryHistory, geo)
	}
}
