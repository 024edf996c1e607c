package main

import (
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
)

// fault drops every Nth steered packet, a ratio, or none; status shows it.
func TestFault(t *testing.T) {
	p := pair(t)
	must(t, p.B, "attach", p.BIf, "--mode", "generic", "--port", "7700")
	if out := must(t, p.B, "fault", p.BIf); out != "veth0: fault off\n" {
		t.Errorf("fault: %q", out)
	}
	if out := must(t, p.B, "fault", p.BIf, "--drop-every", "2"); out != "veth0: fault drop every 2\n" {
		t.Errorf("fault --drop-every: %q", out)
	}
	send(t, p.A, netip.AddrPortFrom(p.BAddr, 7700), 10)
	var s sample
	if !waitFor(func() bool {
		out, _, err := xdpctl(p.B, "stats", p.BIf, "--json")
		return err == nil && json.Unmarshal([]byte(out), &s) == nil && s.Dropped+s.NoSocket == 10
	}) || s.Dropped != 5 {
		t.Errorf("drop every 2 of 10: %+v", s)
	}
	if out := must(t, p.B, "status", p.BIf); !strings.Contains(out, "fault: drop every 2") {
		t.Errorf("status: %s", out)
	}
	if out := must(t, p.B, "fault", p.BIf, "--drop-ratio", "0.25"); out != "veth0: fault drop ratio 0.25\n" {
		t.Errorf("fault --drop-ratio: %q", out)
	}
	if out := must(t, p.B, "fault", p.BIf, "--off"); out != "veth0: fault off\n" {
		t.Errorf("fault --off: %q", out)
	}
	if _, _, err := xdpctl(p.A, "fault", p.AIf, "--off"); err == nil || !strings.Contains(err.Error(), "xdpctl attach") {
		t.Errorf("fault without a pinned program: %v", err)
	}
}
