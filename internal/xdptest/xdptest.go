// Package xdptest holds test helpers for the AF_XDP data path: the
// steering program attached to an interface of a test namespace, and an
// interface's MAC address there. Tests only.
package xdptest

import (
	"net"
	"testing"

	"github.com/ringfire/ringfire/bpf"
	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/pkt"
)

// Attach loads the steering program, attaches it to ifname in ns in mode
// with flows, and detaches it when the test ends. It returns the program
// and the interface's index.
func Attach(tb testing.TB, ns *netns.NS, ifname string, mode bpf.Mode, flows ...bpf.Flow) (*bpf.Program, int) {
	tb.Helper()
	var (
		prog  *bpf.Program
		index int
	)
	err := ns.Do(func() error {
		ifi, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		index = ifi.Index
		if prog, err = bpf.Load(); err != nil {
			return err
		}
		if err := prog.Attach(ifi.Index, mode); err != nil {
			return err
		}
		for _, f := range flows {
			if err := prog.AddFlow(f); err != nil {
				return err
			}
		}
		return nil
	})
	if prog != nil {
		tb.Cleanup(func() { prog.Close() })
	}
	if err != nil {
		tb.Fatalf("steering program on %s in %s: %v", ifname, ns.Name, err)
	}
	return prog, index
}

// MAC is the hardware address of ifname in ns.
func MAC(tb testing.TB, ns *netns.NS, ifname string) (m pkt.MAC) {
	tb.Helper()
	err := ns.Do(func() error {
		ifi, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		copy(m[:], ifi.HardwareAddr)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return m
}
