package main

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
)

// stats counts steered datagrams without a socket as passed and
// no_socket; live mode prints --count lines with rates.
func TestStats(t *testing.T) {
	p := pair(t)
	must(t, p.B, "attach", p.BIf, "--mode", "generic", "--port", "7700")
	dst := netip.AddrPortFrom(p.BAddr, 7700)
	send(t, p.A, dst, 5)
	var s sample
	ok := waitFor(func() bool {
		out, _, err := xdpctl(p.B, "stats", p.BIf, "--json")
		return err == nil && json.Unmarshal([]byte(out), &s) == nil && s.NoSocket == 5
	})
	if !ok || s.Seen < 5 || s.Passed < 5 || s.Redirected != 0 || s.Seen != s.Redirected+s.Passed+s.Dropped || s.Rates != nil {
		t.Fatalf("stats %+v", s)
	}
	out := must(t, p.B, "stats", p.BIf)
	if !strings.Contains(out, "no_socket") || !strings.Contains(out, " 5\n") {
		t.Errorf("stats:\n%s", out)
	}

	out = must(t, p.B, "stats", p.BIf, "--interval-ms", "20", "--count", "3")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], "redirected/s") {
		t.Errorf("live stats:\n%s", out)
	}
	out = must(t, p.B, "stats", p.BIf, "--interval-ms", "20", "--count", "2", "--json")
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("live JSON stats:\n%s", out)
	}
	for _, l := range lines {
		var s sample
		if err := json.Unmarshal([]byte(l), &s); err != nil || s.Rates == nil || s.NoSocket != 5 {
			t.Errorf("live JSON line %q: %+v, %v", l, s, err)
		}
	}
	if _, _, err := xdpctl(p.A, "stats", p.AIf); err == nil || !strings.Contains(err.Error(), "xdpctl attach") {
		t.Errorf("stats without a pinned program: %v", err)
	}
}
