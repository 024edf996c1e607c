package afpacket_test

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/ringfire/ringfire/afpacket"
)

// An AF_PACKET socket whose receive ring gets only the UDP datagrams to
// 10.0.0.7:7401, and a send ring that bypasses the qdisc.
func Example() {
	const ifindex = 2 // the interface (net.InterfaceByName)
	filter, err := afpacket.UDPFilter(netip.MustParseAddr("10.0.0.7"), 7401)
	if err != nil {
		return
	}
	s, err := afpacket.Open(ifindex, afpacket.Config{Filter: filter})
	if err != nil {
		fmt.Println(err) // needs root or CAP_NET_RAW
		return
	}
	defer s.Close()
	p, err := afpacket.NewPoller(s)
	if err != nil {
		return
	}
	defer p.Close()
	frames := make([][]byte, 64)
	if ok, _ := p.WaitFor(100*time.Millisecond, nil); ok {
		n := s.Receive(frames)
		for _, f := range frames[:n] {
			_ = f // an Ethernet frame, valid until Release
		}
		s.Release()
	}
	if s.ReserveTX(1) == 1 {
		n := copy(s.TXFrame(0), []byte{ /* Ethernet, IPv4, UDP headers and payload */ })
		s.SubmitTX([]int{n})
	}
}
