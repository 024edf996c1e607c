package main

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/testenv"
	"github.com/ringfire/ringfire/shm"
)

// A ring a run file both mirrors and serves is a hub: the serve waits for
// the mirror to create the ring, and the mirror hands each datagram's
// records to the server on the goroutine that applied them (handoffs).
// The source side's process also mirrors the hub back as a leaf.
func TestRunHub(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	r := newTestRings(t, "src")
	dst := t.TempDir()
	hub, leaf := filepath.Join(dst, "hub"), filepath.Join(r.dir, "leaf")
	cfgA, cfgB := filepath.Join(t.TempDir(), "a.toml"), filepath.Join(t.TempDir(), "b.toml")
	writeFile(t, cfgA, fmt.Sprintf(`metrics = "%[1]s:9464"
[[serve]]
ring = %[2]q
bind = "%[1]s:7400"
udp = 7403

[[mirror]]
source = "%[3]s:7500"
ring = %[4]q
unicast = true
from = "oldest"
reconnect-ms = 100
`, p.AAddr, r.path("src"), p.BAddr, leaf))
	writeFile(t, cfgB, fmt.Sprintf(`metrics = "%[1]s:9464"
[[mirror]]
source = "%[2]s:7400"
ring = %[3]q
unicast = true
from = "oldest"
reconnect-ms = 100

[[serve]]
ring = %[3]q
bind = "%[1]s:7500"
udp = 7503
`, p.BAddr, p.AAddr, hub))
	a := startRun(t, p.A, cfgA)
	waitListening(t, p.A, p.AAddr.String()+":7400")
	b := startRun(t, p.B, cfgB)
	b.waitLogs(t, 1, `msg="waiting for the ring to be created" unit=serve ring=hub`)
	r.push(t, "src", 100) // the hub's mirror creates its ring from the first records
	waitListening(t, p.B, p.BAddr.String()+":7500")
	waitMirrored(t, p.A, p.AAddr.String()+":9464", "leaf", 100)
	r.push(t, "src", 3000) // live: through the hub's hand-off
	waitMirrored(t, p.A, p.AAddr.String()+":9464", "leaf", 3100)
	testenv.Until(t, 10*time.Second, "the leaf ring at 3100", func() bool {
		l, err := shm.Open(leaf, shm.OpenOptions{})
		if err != nil {
			return false
		}
		defer l.Close()
		return l.WriteSeq() == 3100
	})
	if v := metricsIn(t, p.B, p.BAddr.String()+":9464")[`ringfire_serve_handoffs_total{ring="hub"}`]; v == 0 {
		t.Error("the hub's server ran no hand-off round")
	}
	b.stop(t)
	a.stop(t)
	sameRings(t, r.path("src"), hub)
	sameRings(t, r.path("src"), leaf)
}
