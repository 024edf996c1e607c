package role

import (
	"encoding/json"
	"testing"
)

// The datagrams-at-once pair on loopback: the pinger times every socket
// of every round, and the echo answers each on its own socket.
func TestDgramsAtOnce(t *testing.T) {
	const n, samples = 4, 200
	spec := Spec{Wait: "yield", Record: 64, WarmUp: 10, Samples: samples, Limit: 0, Sockets: n}
	echo, ping := spec, spec
	echo.Role, echo.Local, echo.Peer = DgramsEcho, "127.0.0.1:7921", "127.0.0.1:7901"
	ping.Role, ping.Local, ping.Peer = DgramsPinger, "127.0.0.1:7901", "127.0.0.1:7921"
	ping.Limit = 1 << 62
	e := startRole(t, echo)
	e.expect(t, LineReady)
	p := startRole(t, ping)
	p.expect(t, LineMeasuring)
	var res RingsResult
	if err := json.Unmarshal([]byte(p.expect(t, LineResult)), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.PerRing) != n || res.All.Samples != n*samples {
		t.Fatalf("%d sockets, %d samples in all; want %d and %d", len(res.PerRing), res.All.Samples, n, n*samples)
	}
	for i, pc := range res.PerRing {
		if pc.Samples != samples || pc.P50 <= 0 {
			t.Errorf("socket %d: %+v", i, pc)
		}
	}
}

// A spec whose ports run past 65535, or without sockets, is refused.
func TestDgramsBadSpec(t *testing.T) {
	for _, s := range []Spec{
		{Wait: "yield", Local: "127.0.0.1:65535", Peer: "127.0.0.1:7000", Sockets: 2},
		{Wait: "yield", Local: "127.0.0.1:7000", Peer: "127.0.0.1:7100", Sockets: 0},
		{Wait: "sometimes", Local: "127.0.0.1:7000", Peer: "127.0.0.1:7100", Sockets: 1},
	} {
		if _, _, _, err := dgramsEnds(s); err == nil {
			t.Errorf("%+v: no error", s)
		}
	}
}
