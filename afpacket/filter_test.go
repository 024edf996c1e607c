package afpacket_test

import (
	"net/netip"
	"testing"

	"golang.org/x/net/bpf"

	"github.com/ringfire/ringfire/afpacket"
	"github.com/ringfire/ringfire/internal/pkt"
)

// The filter, run in x/net/bpf's VM on frames pkt builds: only UDP to our
// port (and address, when given) passes, whole.
func TestUDPFilterVM(t *testing.T) {
	us := netip.MustParseAddr("10.1.2.3")
	frame := func(dst netip.Addr, dport uint16, edit func([]byte)) []byte {
		h := pkt.Header{SrcAddr: netip.MustParseAddrPort("10.1.2.4:999"), DstAddr: netip.AddrPortFrom(dst, dport)}
		b := make([]byte, 200)
		n, err := h.Build(b, make([]byte, 100), 1)
		if err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			edit(b)
		}
		return b[:n]
	}
	cases := []struct {
		name   string
		frame  []byte
		byAddr bool // passes the filter with the address
		byPort bool // passes the filter of the port alone
	}{
		{"ours", frame(us, port, nil), true, true},
		{"other port", frame(us, port+1, nil), false, false},
		{"other address", frame(netip.MustParseAddr("239.1.1.1"), port, nil), false, true},
		{"TCP", frame(us, port, func(b []byte) { b[23] = 6 }), false, false},
		{"ARP", frame(us, port, func(b []byte) { b[12], b[13] = 0x08, 0x06 }), false, false},
		{"fragment", frame(us, port, func(b []byte) { b[20] |= 0x20 }), false, false},
		{"later fragment", frame(us, port, func(b []byte) { b[21] = 1 }), false, false},
		{"IP options", frame(us, port, func(b []byte) {
			b[14] = 0x46 // IHL 6: the port is read 4 bytes further, where payload zeros are
		}), false, false},
		{"DF", frame(us, port, func(b []byte) { b[20] |= 0x40 }), true, true},
	}
	for _, filt := range []struct {
		dst    netip.Addr
		byAddr bool
	}{{us, true}, {netip.Addr{}, false}} {
		raw, err := afpacket.UDPFilter(filt.dst, port)
		if err != nil {
			t.Fatal(err)
		}
		prog, ok := bpf.Disassemble(raw)
		if !ok {
			t.Fatalf("disassemble %v", raw)
		}
		vm, err := bpf.NewVM(prog)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			n, err := vm.Run(c.frame)
			if err != nil {
				t.Fatal(err)
			}
			want := c.byPort
			if filt.byAddr {
				want = c.byAddr
			}
			if (n >= len(c.frame)) != want || (n != 0 && n < len(c.frame)) {
				t.Errorf("filter for %v: %s: passes %d of %d bytes, want pass %v", filt.dst, c.name, n, len(c.frame), want)
			}
		}
	}
	if _, err := afpacket.UDPFilter(netip.MustParseAddr("::1"), 1); err == nil {
		t.Error("an IPv6 address was accepted")
	}
	prog, _ := bpf.Disassemble(afpacket.DropAll())
	vm, _ := bpf.NewVM(prog)
	if n, _ := vm.Run(frame(us, port, nil)); n != 0 {
		t.Errorf("DropAll passed %d bytes", n)
	}
}
