//go:build vmtest

package vmtest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/ringfire/ringfire/bpf"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/transport"
)

// openXDP opens an AF_XDP transport on the side's virtio-net NIC with the
// program attached in native (driver) mode, closed by the cleanup.
func openXDP(t *testing.T, s side, port uint16) *transport.XDP {
	t.Helper()
	var x *transport.XDP
	err := s.do(func() (err error) {
		x, err = transport.NewXDP(transport.XDPConfig{
			Iface: s.If, Bind: netip.AddrPortFrom(s.Addr, port), Mode: bpf.ModeNative,
		})
		return err
	})
	if err != nil {
		t.Fatalf("AF_XDP on %s (virtio-net) in %s: %v", s.If, s.NS, err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

func xdpStats(t *testing.T, x *transport.XDP) transport.XDPStats {
	t.Helper()
	st, err := x.Stats()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// AF_XDP runs on a real NIC driver: the steering program attaches to each
// virtio-net NIC in native mode, and datagrams of many sizes flow both
// ways between the two namespaces, each exactly once and intact.
func TestVirtioNetNativeXDP(t *testing.T) {
	a, b := guest(t)
	xa, xb := openXDP(t, a, 7601), openXDP(t, b, 7602)
	for _, x := range []*transport.XDP{xa, xb} {
		st := xdpStats(t, x)
		t.Logf("%s: attach %s, zero-copy %v (%s), %d sockets", st.Iface, st.Attach, st.ZeroCopy, st.CopyWhy, st.Sockets)
		if st.Attach != "native" {
			t.Fatalf("%s: program attached %q, want native on virtio-net", st.Iface, st.Attach)
		}
	}
	const n = 2000
	send(t, xa, xb, n)
	send(t, xb, xa, n)
	for _, x := range []*transport.XDP{xa, xb} {
		st := xdpStats(t, x)
		t.Logf("%s: sent %d, received %d; socket %+v; program %+v", st.Iface, st.Sent, st.Received, st.Socket, st.Program)
		if st.Sent != n || st.Received != n || st.Socket.TXFrames < n || st.Program.Redirected < n {
			t.Fatalf("%s: counters disagree with %d datagrams each way: %+v", st.Iface, n, st)
		}
	}
}

// send sends n datagrams (sizes 8..1400 bytes, numbered) from x to y in
// windows of 32 and checks that y receives each once, intact, from x.
func send(t *testing.T, x, y *transport.XDP, n int) {
	t.Helper()
	const window = 32
	out := make([]replica.Message, window)
	in := make([]replica.Message, window)
	for i := range in {
		in[i].Buf = make([]byte, 2048)
	}
	start := time.Now()
	for base := 0; base < n; base += window {
		w := min(window, n-base)
		for i := range w {
			out[i] = replica.Message{Buf: datagram(base + i), Addr: y.LocalAddr()}
		}
		for sent := 0; sent < w; {
			k, err := x.SendBatch(out[sent:w])
			sent += k
			if err != nil && !errors.Is(err, replica.ErrWouldBlock) {
				t.Fatalf("send: %v", err)
			}
			if err != nil {
				time.Sleep(100 * time.Microsecond)
			}
		}
		seen := map[int]bool{}
		deadline := time.Now().Add(10 * time.Second)
		for len(seen) < w {
			if time.Now().After(deadline) {
				t.Fatalf("%v -> %v: datagrams %d..%d: %d of %d arrived within 10 s; receiver %+v",
					x.LocalAddr(), y.LocalAddr(), base, base+w-1, len(seen), w, xdpStats(t, y))
			}
			k, err := y.RecvBatch(in, 100*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range in[:k] {
				if m.Addr != x.LocalAddr() {
					t.Fatalf("datagram from %v, want %v", m.Addr, x.LocalAddr())
				}
				i := int(binary.BigEndian.Uint32(m.Buf))
				if i < base || i >= base+w || seen[i] || !bytes.Equal(m.Buf[:m.N], datagram(i)) {
					t.Fatalf("window %d..%d: unexpected, duplicated or damaged datagram %d (%d bytes)", base, base+w-1, i, m.N)
				}
				seen[i] = true
			}
		}
	}
	t.Logf("%v -> %v: %d datagrams in %v", x.LocalAddr(), y.LocalAddr(), n, time.Since(start).Round(time.Millisecond))
}

// datagram i: its number, then bytes derived from it; 8 to 1400 bytes.
func datagram(i int) []byte {
	b := make([]byte, 8+(i*37)%1393)
	binary.BigEndian.PutUint32(b, uint32(i))
	for j := 4; j < len(b); j++ {
		b[j] = byte(i*7 + j)
	}
	return b
}
