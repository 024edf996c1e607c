package main

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/bpf"
	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/xdp"
)

// xdpctl runs the command in-process in ns (nil: the calling namespace)
// and returns its output.
func xdpctl(ns *netns.NS, args ...string) (stdout, stderr string, err error) {
	var o, e bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f := func() error { return run(ctx, args, &o, &e) }
	if ns == nil {
		err = f()
	} else {
		err = ns.Do(f)
	}
	return o.String(), e.String(), err
}

// must runs xdpctl and fails the test on error.
func must(t *testing.T, ns *netns.NS, args ...string) string {
	t.Helper()
	out, errOut, err := xdpctl(ns, args...)
	if err != nil {
		t.Fatalf("xdpctl %s: %v (stderr %q)", strings.Join(args, " "), err, errOut)
	}
	return out
}

// pair is a veth pair whose pins of B's veth0 (and A's) are removed, and
// any pinned program detached, when the test ends.
func pair(t *testing.T) *netns.Pair {
	t.Helper()
	netns.Require(t)
	p := netns.NewPair(t)
	for _, e := range []struct {
		ns  *netns.NS
		ifn string
	}{{p.A, p.AIf}, {p.B, p.BIf}} {
		var dir string
		if err := e.ns.Do(func() (err error) { dir, err = bpf.PinDir(bpf.DefaultFS, e.ifn); return err }); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			e.ns.Do(func() error {
				if prog, err := bpf.LoadPinned(dir); err == nil {
					prog.Detach()
					prog.Close()
				}
				return nil
			})
			bpf.RemovePins(dir)
		})
	}
	return p
}

// xdpOn is the XDP kind `ip link` shows on ifname in ns ("" for none).
func xdpOn(t *testing.T, ns *netns.NS, ifname string) string {
	t.Helper()
	out, err := ns.Exec("ip", "-o", "link", "show", "dev", ifname)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(out) {
		kind, _, _ := strings.Cut(f, "/")
		switch kind {
		case "xdp", "xdpgeneric", "xdpdrv":
			return kind
		}
	}
	return ""
}

// send sends n datagrams from ns to dst.
func send(t *testing.T, ns *netns.NS, dst netip.AddrPort, n int) {
	t.Helper()
	err := ns.Do(func() error {
		c, err := net.ListenUDP("udp4", nil)
		if err != nil {
			return err
		}
		defer c.Close()
		for range n {
			if _, err := c.WriteToUDPAddrPort([]byte("x"), dst); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(cond func() bool) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// smallRings keeps the transports' UMEM small.
var smallRings = xdp.Config{RingSize: 256}
