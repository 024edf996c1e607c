package xdp_test

import (
	"fmt"
	"time"

	"github.com/ringfire/ringfire/xdp"
)

// One AF_XDP socket on queue 0 of an interface: receive what an XDP
// program redirects to it (see package bpf: Program.SetSocket(0, s.FD())),
// and send a frame built into the UMEM.
func Example() {
	const ifindex = 2 // the interface (net.InterfaceByName)
	s, err := xdp.Open(ifindex, 0, xdp.Config{})
	if err != nil {
		fmt.Println(err) // no AF_XDP, no permission, queue busy...
		return
	}
	defer s.Close()
	if zc, why := s.ZeroCopy(); !zc {
		fmt.Println("copy mode:", why)
	}

	p, err := xdp.NewPoller(s)
	if err != nil {
		return
	}
	defer p.Close()
	frames := make([][]byte, 64)
	if ok, _ := p.Wait(100 * time.Millisecond); ok {
		n := s.Receive(frames)
		for _, f := range frames[:n] {
			_ = f // an Ethernet frame, valid until Release
		}
		s.Release()
	}

	if s.ReserveTX(1) == 1 {
		frame := s.TXFrame(0)
		n := copy(frame, []byte{ /* Ethernet, IPv4, UDP headers and payload */ })
		s.SubmitTX([]int{n}) // and kicks the kernel
	}
}
