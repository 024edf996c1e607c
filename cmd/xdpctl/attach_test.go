package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/ringfire/ringfire/bpf"
)

// attach pins a program that outlives the command, with one flow per port
// and address; a second attach is refused; detach removes it all.
func TestAttachDetach(t *testing.T) {
	p := pair(t)
	out := must(t, p.B, "attach", p.BIf, "--mode", "generic", "--port", "7700", "--port", "7701", "--group", "239.1.2.3", "--addr", "10.9.9.9")
	if !strings.Contains(out, "in generic mode, pinned at /sys/fs/bpf/ringfire/") {
		t.Errorf("attach: %s", out)
	}
	for _, f := range []string{"239.1.2.3:7700", "10.9.9.9:7700", "239.1.2.3:7701", "10.9.9.9:7701"} {
		if !strings.Contains(out, "steering "+f) {
			t.Errorf("attach output lacks %s:\n%s", f, out)
		}
	}
	if got := xdpOn(t, p.B, p.BIf); got != "xdpgeneric" {
		t.Fatalf("after attach exited: xdp %q", got)
	}
	var dir string
	p.B.Do(func() (err error) { dir, err = bpf.PinDir(bpf.DefaultFS, p.BIf); return err })
	if _, err := os.Stat(dir + "/link"); err != nil {
		t.Fatal(err)
	}

	_, _, err := xdpctl(p.B, "attach", p.BIf)
	if !errors.Is(err, errBusy) || !strings.Contains(err.Error(), "xdpctl detach") {
		t.Errorf("second attach: %v", err)
	}

	out = must(t, p.B, "detach", p.BIf)
	if !strings.Contains(out, "detached steering program id") {
		t.Errorf("detach: %s", out)
	}
	if got := xdpOn(t, p.B, p.BIf); got != "" {
		t.Errorf("after detach: xdp %q", got)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("pins left: %v", err)
	}
	if _, _, err := xdpctl(p.B, "detach", p.BIf); !errors.Is(err, errNotAttached) {
		t.Errorf("second detach: %v", err)
	}
}

// Without --addr or --group the interface's addresses are steered; native
// mode on a veth; --netns from the root namespace reaches the same pins.
func TestAttachNetnsFlag(t *testing.T) {
	p := pair(t)
	out := must(t, nil, "attach", p.BIf, "--netns", p.B.Name, "--mode", "native", "--port", "7700")
	if !strings.Contains(out, "in native mode") || !strings.Contains(out, fmt.Sprintf("steering %s:7700", p.BAddr)) {
		t.Errorf("attach: %s", out)
	}
	if got := xdpOn(t, p.B, p.BIf); got != "xdp" {
		t.Errorf("xdp %q, want native", got)
	}
	// A's veth0 is another interface with the same name: its own pins.
	must(t, p.A, "attach", p.AIf, "--mode", "generic")
	out = must(t, p.B, "status", p.BIf)
	if !strings.Contains(out, fmt.Sprintf("%s:7700", p.BAddr)) || !strings.Contains(out, "native mode") {
		t.Errorf("status in B: %s", out)
	}
	must(t, nil, "detach", p.BIf, "--netns", p.B.Name)
	if got := xdpOn(t, p.A, p.AIf); got != "xdpgeneric" {
		t.Errorf("detaching B's veth0 detached A's: xdp %q", got)
	}
	if _, _, err := xdpctl(nil, "status", "--netns", "rf-no-such-ns"); err == nil || !strings.Contains(err.Error(), "ip netns list") {
		t.Errorf("missing namespace: %v", err)
	}
}

// Errors say what to do: native XDP refused, an interface with a foreign
// program, a missing interface; stale pins are reported and removed.
func TestAttachErrors(t *testing.T) {
	p := pair(t)
	_, _, err := xdpctl(p.B, "attach", "lo", "--mode", "native")
	if err == nil || !strings.Contains(err.Error(), "--mode generic") {
		t.Errorf("native on lo: %v", err)
	}
	if _, _, err := xdpctl(p.B, "attach", "nosuch0"); !errors.Is(err, errNoIface) {
		t.Errorf("missing interface: %v", err)
	}
	if _, err := p.B.Exec("ip", "link", "set", "dev", p.BIf, "xdpgeneric", "obj", "../../bpf/steer_bpfel.o", "sec", "xdp"); err != nil {
		t.Fatal(err)
	}
	_, _, err = xdpctl(p.B, "attach", p.BIf)
	if !errors.Is(err, errBusy) || !strings.Contains(err.Error(), "xdp off") {
		t.Errorf("attach over a foreign program: %v", err)
	}
	if _, _, err := xdpctl(p.B, "detach", p.BIf); !errors.Is(err, errNotAttached) || !strings.Contains(err.Error(), "not attached by xdpctl") {
		t.Errorf("detach of a foreign program: %v", err)
	}
	if out := must(t, p.B, "status"); !strings.Contains(out, "not pinned by xdpctl") {
		t.Errorf("status of a foreign program: %s", out)
	}
	p.B.Exec("ip", "link", "set", "dev", p.BIf, "xdpgeneric", "off")

	// Pins of an interface deleted since are stale.
	must(t, p.B, "attach", p.BIf, "--mode", "generic")
	if _, err := p.B.Exec("ip", "link", "del", p.BIf); err != nil {
		t.Fatal(err)
	}
	if out := must(t, p.B, "status"); !strings.Contains(out, "stale pins") {
		t.Errorf("status after the interface was deleted: %s", out)
	}
	if out := must(t, p.B, "detach", p.BIf); !strings.Contains(out, "removed stale pins") {
		t.Errorf("detach of stale pins: %s", out)
	}
	if out := must(t, p.B, "status"); !strings.Contains(out, "no XDP program and no pins") {
		t.Errorf("status after detach: %s", out)
	}
}
