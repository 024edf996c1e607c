package main

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/replica"
)

func TestWaitFlags(t *testing.T) {
	ring := filepath.Join(t.TempDir(), "ring")
	mustRun(t, "gen", ring, "--count", "1")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", ring, "--wait", "nap"}, "--wait"},
		{[]string{"serve", ring, "--spin", "--wait", "block"}, "--spin"},
		{[]string{"serve", ring, "--cpu", "-5"}, "--cpu"},
		{[]string{"serve", ring, "--cpu", "100000", "--bind", "127.0.0.1:0"}, "CPU 100000"},
		{[]string{"mirror", "127.0.0.1:1", ring + "m", "--wait", "snooze"}, "--wait"},
		{[]string{"mirror", "127.0.0.1:1", ring + "m", "--spin", "--wait", "yield"}, "--spin"},
		{[]string{"mirror", "127.0.0.1:1", ring + "m", "--cpu", "100000", "--once"}, "CPU 100000"},
	} {
		_, _, err := runCmd(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error naming %q", c.args, err, c.want)
		}
	}
	// --spin is --wait spin, and --wait spin --spin agree.
	var w waitFlags
	w.mode, w.spin = "spin", true
	if m, _, err := w.check(); err != nil || m != replica.WaitSpin {
		t.Errorf("--wait spin --spin: %v, %v", m, err)
	}
	w = waitFlags{mode: "adaptive", spin: true, cpu: -1}
	if m, p, err := w.check(); err != nil || m != replica.WaitSpin || p.On {
		t.Errorf("--spin: %v, %+v, %v", m, p, err)
	}
	w = waitFlags{mode: "yield", cpu: 0}
	if m, p, err := w.check(); err != nil || m != replica.WaitYield || !p.On || p.CPU != 0 {
		t.Errorf("--wait yield --cpu 0: %v, %+v, %v", m, p, err)
	}
	_, _, err := runCmd(t, "serve", ring, "--cpu", "100000", "--bind", "127.0.0.1:0")
	if !errors.Is(err, replica.ErrPin) {
		t.Errorf("--cpu 100000: %v, want ErrPin", err)
	}
}

// --xdp-busy-poll-us -1 (the default) busy-polls the AF_XDP queues for the
// loops that never sleep, and only for them, where the interface lets it
// (BusyPollAuto: not a veth); a value asked for applies everywhere.
func TestAutoBusyPoll(t *testing.T) {
	for m, want := range map[replica.WaitMode]time.Duration{
		replica.WaitAdaptive: 0, replica.WaitBlock: 0, replica.WaitYield: autoBusyPoll, replica.WaitSpin: autoBusyPoll,
	} {
		x := xdpFlags{busyUS: -1, mode: "auto", iface: "eth9"}
		cfg, err := x.check()
		if err != nil {
			t.Fatal(err)
		}
		x.busyPollFor(&cfg, m)
		if cfg.XDP.Socket.BusyPoll != want || cfg.XDP.BusyPollAuto != (want > 0) {
			t.Errorf("--wait %v: busy poll %v (auto %v), want %v", m, cfg.XDP.Socket.BusyPoll, cfg.XDP.BusyPollAuto, want)
		}
	}
	for us, want := range map[int]time.Duration{0: 0, 50: 50 * time.Microsecond} { // asked for: on every interface
		x := xdpFlags{busyUS: us, mode: "auto", iface: "eth9"}
		cfg, _ := x.check()
		x.busyPollFor(&cfg, replica.WaitSpin)
		if cfg.XDP.Socket.BusyPoll != want || cfg.XDP.BusyPollAuto {
			t.Errorf("--xdp-busy-poll-us %d --wait spin: busy poll %v (auto %v), want %v", us, cfg.XDP.Socket.BusyPoll, cfg.XDP.BusyPollAuto, want)
		}
	}
}
