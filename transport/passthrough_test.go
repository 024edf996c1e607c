package transport_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/netip"
	osexec "os/exec"
	"testing"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/transport"
)

// With the steering program attached and an AF_XDP transport open in B,
// everything that is not the transport's flow still reaches B's kernel:
// ARP (after flushing the neighbour tables), ICMP echo, UDP to another
// port, TCP. The program passes it, and the transport receives none of it.
func TestOtherTrafficPasses(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	x := openXDP(t, p.B, transport.XDPConfig{Bind: netip.AddrPortFrom(p.BAddr, 7620)})
	before := stats(t, x)
	exec(t, p.A, "ip", "neigh", "flush", "all")
	exec(t, p.B, "ip", "neigh", "flush", "all")

	t.Run("ping", func(t *testing.T) {
		if _, err := osexec.LookPath("ping"); err != nil {
			t.Logf("no ping command (%v): ICMP echo from Go only", err)
		} else {
			exec(t, p.A, "ping", "-c", "3", "-W", "1", p.BAddr.String())
		}
		if err := echo(p.A, p.BAddr, 3); err != nil {
			t.Fatal(err)
		}
		out := exec(t, p.A, "ip", "neigh", "show", p.BAddr.String())
		t.Logf("A's neighbour entry for B: %s", bytes.TrimSpace([]byte(out)))
	})
	t.Run("udp-other-port", func(t *testing.T) {
		c := listenUDP(t, p.B, netip.AddrPortFrom(p.BAddr, 7621))
		from := netip.AddrPortFrom(p.AAddr, 7622)
		sendKernel(t, p.A, from, netip.AddrPortFrom(p.BAddr, 7621), "", []byte("to the kernel"))
		if d := recvKernel(t, c); string(d.data) != "to the kernel" || d.from != from {
			t.Fatalf("kernel socket got %q from %v", d.data, d.from)
		}
	})
	t.Run("tcp", func(t *testing.T) {
		var ln net.Listener
		if err := p.B.Do(func() (err error) {
			ln, err = net.Listen("tcp4", netip.AddrPortFrom(p.BAddr, 7620).String()) // the UDP port's number
			return err
		}); err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		done := make(chan error, 1)
		go func() {
			c, err := ln.Accept()
			if err != nil {
				done <- err
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(wait))
			_, err = io.Copy(c, io.LimitReader(c, 100000)) // echo
			done <- err
		}()
		msg := bytes.Repeat([]byte("tcp through XDP_PASS "), 5000) // 105000 bytes: many segments
		msg = msg[:100000]
		var c net.Conn
		if err := p.A.Do(func() (err error) {
			d := net.Dialer{Timeout: wait}
			c, err = d.Dial("tcp4", ln.Addr().String())
			return err
		}); err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(wait))
		werr := make(chan error, 1)
		go func() { _, err := c.Write(msg); werr <- err }()
		got := make([]byte, len(msg))
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatalf("read echo: %v", err)
		}
		if err := <-werr; err != nil {
			t.Fatalf("write: %v", err)
		}
		if !bytes.Equal(got, msg) {
			t.Fatal("TCP echo differs")
		}
		if err := <-done; err != nil {
			t.Fatalf("server: %v", err)
		}
	})

	expectNone(t, x, 100*time.Millisecond)
	after := stats(t, x)
	if after.Program.Passed <= before.Program.Passed {
		t.Errorf("program Passed %d -> %d: it did not see the traffic", before.Program.Passed, after.Program.Passed)
	}
	if after.Program.Redirected != before.Program.Redirected || after.Received != before.Received ||
		after.Socket.RXFrames != before.Socket.RXFrames || after.Malformed+after.Foreign != 0 {
		t.Errorf("the transport saw other traffic: before %+v, after %+v", before, after)
	}
	t.Logf("program counters: before %+v, after %+v", before.Program, after.Program)
}

// echo sends n ICMP echo requests from ns to dst and waits for each reply.
func echo(ns *netns.NS, dst netip.Addr, n int) error {
	var c *icmp.PacketConn
	if err := ns.Do(func() (err error) {
		c, err = icmp.ListenPacket("ip4:icmp", "0.0.0.0")
		return err
	}); err != nil {
		return err
	}
	defer c.Close()
	buf := make([]byte, 1500)
	for seq := 1; seq <= n; seq++ {
		req := icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: 0x7eaf, Seq: seq, Data: []byte("ringfire")}}
		b, err := req.Marshal(nil)
		if err != nil {
			return err
		}
		if _, err := c.WriteTo(b, &net.IPAddr{IP: dst.AsSlice()}); err != nil {
			return fmt.Errorf("echo %d: %w", seq, err)
		}
		c.SetReadDeadline(time.Now().Add(wait))
		for {
			k, from, err := c.ReadFrom(buf)
			if err != nil {
				return fmt.Errorf("echo %d to %v: no reply: %w", seq, dst, err)
			}
			m, err := icmp.ParseMessage(1, buf[:k])
			if err != nil {
				continue
			}
			if e, ok := m.Body.(*icmp.Echo); ok && m.Type == ipv4.ICMPTypeEchoReply && e.Seq == seq &&
				from.(*net.IPAddr).IP.Equal(dst.AsSlice()) {
				break
			}
		}
	}
	return nil
}
