package main

import (
	"strings"
	"testing"

	"github.com/ringfire/ringfire/internal/netns"
)

// --transport afpacket carries the datagrams over AF_PACKET, multicast and
// unicast, on the interface holding --iface's address, and says so in the
// log and the statistics.
func TestServeMirrorAFPacket(t *testing.T) {
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
			srv, mir := replicate(t, p, append(tc.serve, "--transport", "afpacket", "--require-transport"),
				append(tc.mirr, "--transport", "afpacket", "--transport-iface", "veth0"))
			wantContains(t, "mirror output", mir.out.String(), "mirror: afpacket "+tc.name, "next 20001", "gaps 0")
			wantContains(t, "serve output", srv.out.String(), "  afpacket: frames")
			for _, r := range []*running{srv, mir} {
				wantContains(t, "log", r.log.String(), `msg="datagrams over AF_PACKET" iface=veth0`)
			}
		})
	}
}

// --transport auto takes AF_XDP where it can; where another XDP program
// holds the interface it takes AF_PACKET; one log line says what it chose
// and why.
func TestTransportAuto(t *testing.T) {
	netns.Require(t)
	t.Run("xdp", func(t *testing.T) {
		p := netns.NewPair(t)
		srv, mir := replicate(t, p, []string{"--multicast", "239.255.0.1:7401", "--transport", "auto", "--xdp-mode", "native"},
			[]string{"--transport", "auto", "--xdp", "veth0", "--xdp-mode", "native"})
		wantContains(t, "mirror output", mir.out.String(), "mirror: xdp multicast", "gaps 0")
		wantContains(t, "serve output", srv.out.String(), "  xdp: frames")
		for _, r := range []*running{srv, mir} {
			wantContains(t, "log", r.log.String(), `msg="transport auto: datagrams over AF_XDP" iface=veth0`)
			wantOnce(t, r.log.String(), "transport auto")
		}
	})
	t.Run("xdp-unavailable", func(t *testing.T) {
		p := netns.NewPair(t)
		for _, ns := range []*netns.NS{p.A, p.B} {
			occupy(t, ns, "veth0")
		}
		srv, mir := replicate(t, p, []string{"--udp", "7403", "--transport", "auto"}, []string{"--unicast", "--transport", "auto"})
		wantContains(t, "mirror output", mir.out.String(), "mirror: afpacket unicast", "next 20001", "gaps 0")
		wantContains(t, "serve output", srv.out.String(), "  afpacket: frames")
		for _, r := range []*running{srv, mir} {
			wantContains(t, "log", r.log.String(), `msg="transport auto: datagrams over AF_PACKET" iface=veth0`,
				"xdp_unavailable=", "already has an XDP program")
			wantOnce(t, r.log.String(), "transport auto")
		}
	})
}

// Unprivileged (no CAP_BPF, no CAP_NET_RAW), --transport auto finds
// neither AF_XDP nor AF_PACKET and serves over kernel UDP, saying why in
// one line; with --require-transport, afpacket and auto fail.
func TestTransportAutoWithoutPrivilege(t *testing.T) {
	unprivileged := unprivilegedServe(t)
	out, err := unprivileged("--transport", "auto")
	if err != nil {
		t.Fatalf("unprivileged serve --transport auto: %v\n%s", err, out)
	}
	wantContains(t, "unprivileged serve", out, `msg="transport auto: datagrams over kernel UDP" iface=veth0`,
		"needs root or CAP_BPF", "needs root or CAP_NET_RAW", "msg=serving", "  udp: frames")
	wantOnce(t, out, "transport auto")
	for _, kind := range []string{"afpacket", "auto"} {
		out, err = unprivileged("--transport", kind, "--require-transport")
		if err == nil || !strings.Contains(out, "--require-transport") || !strings.Contains(out, "CAP_NET_RAW") {
			t.Fatalf("unprivileged serve --transport %s --require-transport: %v\n%s", kind, err, out)
		}
	}
}

func TestTransportFlagErrors(t *testing.T) {
	ring := genRing(t, "--count", "10")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", ring, "--transport", "dpdk", "--udp", "7403"}, "--transport"},
		{[]string{"serve", ring, "--transport", "auto"}, "needs --multicast or --udp"},
		{[]string{"serve", ring, "--transport", "auto", "--require-xdp", "--udp", "7403"}, "--require-xdp needs"},
		{[]string{"serve", ring, "--transport", "afpacket", "--require-xdp", "--udp", "7403"}, "--require-xdp needs"},
		{[]string{"serve", ring, "--require-transport", "--udp", "7403"}, "--require-transport needs"},
		{[]string{"serve", ring, "--transport", "udp", "--require-transport", "--udp", "7403"}, "--require-transport needs"},
		{[]string{"serve", ring, "--transport", "afpacket", "--xdp", "veth0", "--udp", "7403"}, "--xdp names an AF_XDP interface"},
		{[]string{"mirror", "127.0.0.1:1", "m", "--transport", "afpacket", "--require-xdp"}, "--require-xdp needs"},
		{[]string{"mirror", "127.0.0.1:1", "m", "--require-transport"}, "--require-transport needs"},
		{[]string{"mirror", "127.0.0.1:1", "m", "--transport", "udp", "--xdp", "veth0"}, "--xdp names an AF_XDP interface"},
		{[]string{"mirror", "127.0.0.1:1", "m", "--transport", "xdp2"}, "--transport"},
	} {
		_, _, err := runCmd(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v, want it to mention %q", c.args, err, c.want)
		}
	}
}

// wantOnce checks that s mentions sub exactly once.
func wantOnce(t *testing.T, s, sub string) {
	t.Helper()
	if n := strings.Count(s, sub); n != 1 {
		t.Errorf("%q appears %d times, want once:\n%s", sub, n, s)
	}
}
