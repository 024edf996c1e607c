package transport_test

import (
	"errors"
	"log"
	"net/netip"
	"time"

	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/transport"
)

// Open an AF_XDP transport on eth0 by hand, falling back to kernel UDP
// where AF_XDP cannot be used (Config makes this choice for a server or a
// mirror: see ExampleConfig_ServerFactory), then send a batch and receive
// one. It needs root (CAP_NET_ADMIN and CAP_BPF) and an interface called
// eth0, so it has no output section and is only compiled.
func ExampleNewXDP() {
	bind := netip.MustParseAddrPort("192.0.2.10:7400")
	var tr replica.Transport
	x, err := transport.NewXDP(transport.XDPConfig{Iface: "eth0", Bind: bind})
	switch {
	case err == nil:
		tr = x
	case errors.Is(err, transport.ErrXDPUnavailable):
		log.Printf("AF_XDP: %v; using kernel UDP", err)
		u, err := replica.NewUDP(replica.UDPConfig{Bind: bind})
		if err != nil {
			log.Fatal(err)
		}
		tr = u
	default:
		log.Fatal(err)
	}
	defer tr.Close()

	// One Message per destination; they may share a Buf.
	frame := []byte("hello")
	out := []replica.Message{
		{Buf: frame, Addr: netip.MustParseAddrPort("192.0.2.20:7400")},
		{Buf: frame, Addr: netip.MustParseAddrPort("192.0.2.21:7400")},
	}
	if _, err := tr.SendBatch(out); err != nil {
		log.Print(err) // EMSGSIZE for a datagram above the MTU, ErrWouldBlock on a full ring
	}

	// Receive into buffers the caller owns; the payload is copied once.
	in := make([]replica.Message, 32)
	for i := range in {
		in[i].Buf = make([]byte, 2048)
	}
	n, err := tr.RecvBatch(in, 100*time.Millisecond)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range in[:n] {
		log.Printf("%d bytes from %v", m.N, m.Addr)
	}
	if x != nil {
		st, _ := x.Stats()
		log.Printf("sent %d, received %d, malformed %d", st.Sent, st.Received, st.Malformed)
	}
}
