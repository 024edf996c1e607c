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

// Pin does what `xdpctl attach` does on ifname in ns: mount bpffs, load,
// attach in generic mode with flows, pin. The pins are removed (and the
// program detached) when the test ends.
func Pin(tb testing.TB, ns *netns.NS, ifname string, flows ...bpf.Flow) {
	tb.Helper()
	if _, err := bpf.MountFS(bpf.DefaultFS); err != nil {
		tb.Fatal(err)
	}
	var dir string
	err := ns.Do(func() error {
		var err error
		if dir, err = bpf.PinDir(bpf.DefaultFS, ifname); err != nil {
			return err
		}
		ifi, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		p, err := bpf.Load()
		if err != nil {
			return err
		}
		defer p.Close()
		if err := p.Attach(ifi.Index, bpf.ModeGeneric); err != nil {
			return err
		}
		for _, f := range flows {
			if err := p.AddFlow(f); err != nil {
				return err
			}
		}
		return p.Pin(dir)
	})
	tb.Cleanup(func() {
		ns.Do(func() error {
			if p, err := bpf.LoadPinned(dir); err == nil {
				p.Detach()
				p.Close()
			}
			return nil
		})
		bpf.RemovePins(dir)
	})
	if err != nil {
		tb.Fatal(err)
	}
}
