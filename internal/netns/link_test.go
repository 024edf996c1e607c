package netns

import (
	"net"
	"testing"
)

// A link added to a pair carries datagrams both ways between the pair's
// namespaces, on its own addresses, beside the first veth.
func TestAddLink(t *testing.T) {
	Require(t)
	t.Parallel()
	p := NewPair(t)
	l, err := p.AddLink()
	if err != nil {
		t.Fatal(err)
	}
	if l.AIf != "veth1" || l.BIf != "veth1" || l.AAddr == p.AAddr {
		t.Fatalf("link %+v beside pair %v/%v", l, p.AAddr, p.BAddr)
	}
	rb := listen(t, p.B, l.BAddr)
	sendFrom(t, p.A, rb.LocalAddr(), "over the link")
	if msg, from := recv(t, rb); msg != "over the link" || from.(*net.UDPAddr).AddrPort().Addr() != l.AAddr {
		t.Fatalf("got %q from %v", msg, from)
	}
	ra := listen(t, p.A, l.AAddr)
	sendFrom(t, p.B, ra.LocalAddr(), "and back")
	if msg, _ := recv(t, ra); msg != "and back" {
		t.Fatalf("got %q, want %q", msg, "and back")
	}
	if l2, err := p.AddLink(); err != nil || l2.AIf != "veth2" {
		t.Fatalf("second link: %+v, %v", l2, err)
	}
}
