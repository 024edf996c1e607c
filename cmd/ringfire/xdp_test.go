package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/bpf"
	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/xdptest"
)

// running is a CLI run on a thread of a namespace.
type running struct {
	done     <-chan struct{}
	out, log bytes.Buffer
	err      error
}

func start(ns *netns.NS, args ...string) *running {
	r := &running{}
	r.done = ns.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		r.err = run(ctx, args, &r.out, &r.log)
	})
	return r
}

func (r *running) wait(t *testing.T, what string) {
	t.Helper()
	waitDone(t, r.done, what)
}

// replicate serves a 20,000-record ring from A to a mirror in B with the
// extra flags given, checks the mirror ring with tail, and returns both
// runs.
func replicate(t *testing.T, p *netns.Pair, serve, mirror []string) (srv, mir *running) {
	t.Helper()
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	mustRun(t, "gen", src, "--count", "20000", "--size", "56", "--capacity", "65536")
	bind := p.AAddr.String() + ":7400"
	srv = start(p.A, append([]string{"serve", src, "--bind", bind, "--iface", p.AAddr.String(), "--duration", "3s"}, serve...)...)
	waitListening(t, p.A, bind)
	mir = start(p.B, append([]string{"mirror", bind, dst, "--from", "oldest", "--iface", p.BAddr.String(), "--duration", "2s"}, mirror...)...)
	mir.wait(t, "mirror")
	srv.wait(t, "serve")
	if mir.err != nil || srv.err != nil {
		t.Fatalf("mirror: %v, serve: %v\nmirror log:\n%s\nserve log:\n%s", mir.err, srv.err, &mir.log, &srv.log)
	}
	out := mustRun(t, "tail", dst, "--from", "oldest", "--quiet", "--count", "20000", "--timeout", "1s")
	wantContains(t, "tail of the mirror", out, "received 20000", "checksum errors 0", "sequence errors 0")
	return srv, mir
}

// serve --xdp and mirror --xdp carry the datagrams over AF_XDP, multicast
// and unicast, and say so.
func TestServeMirrorXDP(t *testing.T) {
	netns.Require(t)
	for _, tc := range []struct {
		name        string
		serve, mirr []string
	}{
		{"multicast", []string{"--multicast", "239.255.0.1:7401"}, nil},
		{"unicast", []string{"--udp", "7403"}, []string{"--unicast"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := netns.NewPair(t)
			srv, mir := replicate(t, p, append(tc.serve, "--xdp", "veth0", "--require-xdp", "--xdp-busy-poll-us", "50"),
				append(tc.mirr, "--xdp", "veth0", "--require-xdp", "--xdp-mode", "native"))
			wantContains(t, "mirror output", mir.out.String(), "mirror: xdp "+tc.name, "next 20001", "gaps 0")
			wantContains(t, "serve output", srv.out.String(), "  xdp: frames")
			for _, r := range []*running{srv, mir} {
				wantContains(t, "log", r.log.String(), `msg="datagrams over AF_XDP" iface=veth0 attach=native`)
			}
		})
	}
}

// Where AF_XDP cannot run (no such interface; an interface that already
// has another XDP program), serve and mirror say why in one log line and
// replicate over kernel UDP; --require-xdp makes that an error instead.
func TestXDPFallback(t *testing.T) {
	netns.Require(t)
	t.Run("no-such-interface", func(t *testing.T) {
		p := netns.NewPair(t)
		srv, mir := replicate(t, p, []string{"--multicast", "239.255.0.1:7401", "--xdp", "nosuch0"},
			[]string{"--xdp", "nosuch0"})
		wantContains(t, "mirror output", mir.out.String(), "mirror: udp multicast", "next 20001")
		for _, r := range []*running{srv, mir} {
			wantContains(t, "log", r.log.String(), `msg="AF_XDP unavailable, falling back to kernel UDP" iface=nosuch0`, "nosuch0")
			if n := strings.Count(r.log.String(), "falling back"); n != 1 {
				t.Errorf("the fallback was logged %d times, want once:\n%s", n, &r.log)
			}
		}
	})
	t.Run("program-cannot-attach", func(t *testing.T) {
		p := netns.NewPair(t)
		for _, ns := range []*netns.NS{p.A, p.B} {
			occupy(t, ns, "veth0")
		}
		srv, mir := replicate(t, p, []string{"--udp", "7403", "--xdp", "veth0"}, []string{"--unicast", "--xdp", "veth0"})
		wantContains(t, "mirror output", mir.out.String(), "mirror: udp unicast", "next 20001")
		for _, r := range []*running{srv, mir} {
			wantContains(t, "log", r.log.String(), "AF_XDP unavailable, falling back to kernel UDP", "already has an XDP program")
		}
	})
	t.Run("require-xdp", func(t *testing.T) {
		p := netns.NewPair(t)
		ring := genRing(t, "--count", "10")
		r := start(p.A, "serve", ring, "--bind", p.AAddr.String()+":7400", "--multicast", "239.255.0.1:7401",
			"--xdp", "nosuch0", "--require-xdp", "--duration", "2s")
		r.wait(t, "serve")
		if r.err == nil || !strings.Contains(r.err.Error(), "--require-xdp") || !strings.Contains(r.err.Error(), "nosuch0") {
			t.Fatalf("serve --require-xdp on a missing interface: %v", r.err)
		}
	})
}

// occupy attaches another steering program to ifname in ns for the test.
func occupy(t *testing.T, ns *netns.NS, ifname string) {
	t.Helper()
	xdptest.Attach(t, ns, ifname, bpf.ModeNative)
}

func TestXDPFlagErrors(t *testing.T) {
	ring := genRing(t, "--count", "10")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", ring, "--require-xdp", "--udp", "7403"}, "--require-xdp needs --xdp"},
		{[]string{"serve", ring, "--xdp", "veth0"}, "needs --multicast or --udp"},
		{[]string{"serve", ring, "--xdp", "veth0", "--udp", "7403", "--xdp-mode", "fast"}, "--xdp-mode"},
		{[]string{"mirror", "127.0.0.1:1", "m", "--require-xdp"}, "--require-xdp needs --xdp"},
		{[]string{"mirror", "127.0.0.1:1", "m", "--xdp", "x", "--xdp-mode", "hw"}, "--xdp-mode"},
		{[]string{"mirror", "127.0.0.1:1", "m", "--xdp", "x", "--xdp-busy-poll-us", "-2"}, "--xdp-busy-poll-us"},
	} {
		_, _, err := runCmd(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v, want it to mention %q", c.args, err, c.want)
		}
	}
}

// A mirror run with --no-telemetry (version-1 behaviour) replicates as
// before.
func TestMirrorNoTelemetry(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	_, mir := replicate(t, p, []string{"--udp", "7403"}, []string{"--unicast", "--no-telemetry"})
	wantContains(t, "mirror output", mir.out.String(), "mirror: udp unicast", "next 20001", "gaps 0")
}
