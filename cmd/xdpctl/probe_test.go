package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// probe of a veth: driver, MTU, one queue, native and generic XDP, no
// zero-copy; with a program attached it reports it and tries nothing.
func TestProbe(t *testing.T) {
	p := pair(t)
	var r probeResult
	if err := json.Unmarshal([]byte(must(t, p.B, "probe", p.BIf, "--json")), &r); err != nil {
		t.Fatal(err)
	}
	if r.Driver != "veth" || r.MTU != 1500 || r.Queues != 1 || r.XDP != nil {
		t.Errorf("probe %+v", r)
	}
	if r.Native != "yes" || r.Generic != "yes" || !strings.HasPrefix(r.ZeroCopy, "no:") {
		t.Errorf("support: native %q generic %q zero-copy %q", r.Native, r.Generic, r.ZeroCopy)
	}
	if got := xdpOn(t, p.B, p.BIf); got != "" {
		t.Errorf("probe left %s attached", got)
	}

	// lo has no native XDP.
	out := must(t, p.B, "probe", "lo")
	if !strings.Contains(out, "native xdp  no:") || !strings.Contains(out, "generic xdp yes") {
		t.Errorf("probe lo:\n%s", out)
	}

	must(t, p.B, "attach", p.BIf, "--mode", "generic")
	out = must(t, p.B, "probe", p.BIf)
	for _, want := range []string{"driver      veth", "queues      1", "in generic mode", "generic xdp yes (a program is attached", "native xdp  unknown: not tried"} {
		if !strings.Contains(out, want) {
			t.Errorf("probe with a program attached lacks %q:\n%s", want, out)
		}
	}
	out = must(t, p.B, "probe", p.BIf, "--passive")
	if !strings.Contains(out, "not tried (--passive)") {
		t.Errorf("probe --passive:\n%s", out)
	}
	if _, _, err := xdpctl(p.B, "probe", "nosuch0"); !errors.Is(err, errNoIface) || !strings.Contains(err.Error(), "ip link") {
		t.Errorf("probe of a missing interface: %v", err)
	}
}
