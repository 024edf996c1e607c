package transport_test

import (
	"errors"
	"fmt"
	"log"
	"net/netip"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/transport"
)

// A program serving or mirroring a ring takes AF_XDP where it can and
// kernel UDP elsewhere: Config's factories are the NewTransport of
// replica.ServerConfig and replica.MirrorConfig, and report hears what
// each one chose and why (log it as you like). Here the server and the
// mirror live in two network namespaces joined by a veth pair (it needs
// root), and the factories are called as the Server and the Mirror call
// them; then one datagram goes from the server's transport to the
// mirror's.
func ExampleConfig_ServerFactory() {
	var lab netns.Owner // the test network; a program has interfaces of its own
	defer lab.Close()
	p, err := lab.NewPair()
	if err != nil {
		log.Fatal(err)
	}

	cfg := transport.Config{Kind: transport.KindXDP} // AF_XDP, else kernel UDP
	report := func(c transport.Choice) {
		fmt.Printf("%s on %s (fell back: %v)\n", c.Kind.Label(), c.Iface, c.FellBack())
	}
	newServer := cfg.ServerFactory(report) // replica.ServerConfig{..., NewTransport: newServer}
	newMirror := cfg.MirrorFactory(report) // replica.MirrorConfig{..., NewTransport: newMirror}

	var srv, mir replica.Transport
	err = p.A.Do(func() (err error) {
		srv, err = newServer(replica.UDPConfig{Bind: netip.AddrPortFrom(p.AAddr, 7400), Iface: p.AAddr})
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	err = p.B.Do(func() (err error) {
		mir, err = newMirror(replica.DatagramSpec{Source: srv.LocalAddr(), Iface: p.BAddr})
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	defer mir.Close()
	if got, err := exchange(srv, mir, "hello"); err != nil {
		log.Fatal(err)
	} else {
		fmt.Printf("mirror received %q over %s\n", got, replica.TransportName(mir))
	}

	// Where AF_XDP cannot be used (here: no such interface), kernel UDP
	// carries the datagrams and the Choice says why.
	cfg.Iface = "nosuch0"
	var c transport.Choice
	err = p.A.Do(func() error {
		t, ch, err := cfg.OpenServer(replica.UDPConfig{Bind: netip.AddrPortFrom(p.AAddr, 7401), Iface: p.AAddr})
		if err == nil {
			c = ch
			t.Close()
		}
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s; AF_XDP refused: %v\n", c.Kind.Label(), errors.Is(c.XDPErr, transport.ErrXDPUnavailable))
	// Output:
	// AF_XDP on veth0 (fell back: false)
	// AF_XDP on veth0 (fell back: false)
	// mirror received "hello" over xdp
	// kernel UDP; AF_XDP refused: true
}

// exchange sends msg from a to b until b receives it (the first sends may
// go while b's next hop is being resolved), for at most five seconds.
func exchange(a, b replica.Transport, msg string) (string, error) {
	in := []replica.Message{{Buf: make([]byte, 2048)}}
	out := []replica.Message{{Buf: []byte(msg), Addr: b.LocalAddr()}}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if _, err := a.SendBatch(out); err != nil {
			return "", err
		}
		n, err := b.RecvBatch(in, 100*time.Millisecond)
		if err != nil || n > 0 {
			return string(in[0].Buf[:in[0].N]), err
		}
	}
	return "", errors.New("nothing received in 5 s")
}
