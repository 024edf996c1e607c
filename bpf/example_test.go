package bpf_test

import (
	"log"
	"net"
	"net/netip"

	"github.com/ringfire/ringfire/bpf"
)

// Load the program, attach it to eth0 (native XDP if the driver has it),
// steer a multicast flow and read the counters. The AF_XDP socket bound to
// queue 0 of eth0 (xskFD) comes from elsewhere.
func Example() {
	ifi, err := net.InterfaceByName("eth0")
	if err != nil {
		log.Fatal(err)
	}
	p, err := bpf.Load()
	if err != nil {
		log.Fatal(err) // errors.Is(err, bpf.ErrNotSupported): no root/CAP_BPF
	}
	defer p.Close()
	if err := p.Attach(ifi.Index, bpf.ModeAuto); err != nil {
		log.Fatal(err) // errors.Is(err, bpf.ErrBusy): another XDP program
	}
	log.Printf("attached in %v mode", p.Mode())
	if err := p.AddFlow(bpf.Flow{Addr: netip.MustParseAddr("239.1.2.3"), Port: 7700}); err != nil {
		log.Fatal(err)
	}
	var xskFD int // an AF_XDP socket bound to eth0 queue 0
	if err := p.SetSocket(0, xskFD); err != nil {
		log.Fatal(err)
	}
	c, err := p.Counters()
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("%d redirected, %d passed", c.Redirected, c.Passed)
}
