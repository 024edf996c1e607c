package pkt_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/testenv"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/pkt"
)

const kernelPort = 9876

// captureKernelUDP sends payload with a kernel UDP socket from p.A to p.B
// and returns the frame as an AF_PACKET socket on p.B's veth saw it.
func captureKernelUDP(t *testing.T, p *netns.Pair, payload []byte) []byte {
	t.Helper()
	var fd int
	err := p.B.Do(func() error {
		ifi, err := net.InterfaceByName(p.BIf)
		if err != nil {
			return err
		}
		proto := int(htons(unix.ETH_P_ALL))
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
		if err != nil {
			return err
		}
		tv := unix.NsecToTimeval(int64(200 * time.Millisecond))
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
			return err
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index})
	})
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	err = p.A.Do(func() error {
		c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.BAddr, kernelPort)))
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write(payload)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return readUDPFrame(t, fd)
}

// readUDPFrame returns the first frame on fd for UDP port kernelPort.
func readUDPFrame(t *testing.T, fd int) []byte {
	t.Helper()
	buf := make([]byte, 2048)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		n, from, err := unix.Recvfrom(fd, buf, 0)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("recvfrom: %v", err)
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		f := buf[:n]
		if n >= pkt.HeaderLen && binary.BigEndian.Uint16(f[12:]) == pkt.EtherTypeIPv4 && f[23] == 17 &&
			binary.BigEndian.Uint16(f[36:]) == kernelPort {
			return slices.Clone(f)
		}
	}
	t.Fatal("no UDP frame captured")
	return nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// checkKernelPacket parses f and checks the addresses and payload.
func checkKernelPacket(t *testing.T, p *netns.Pair, f, payload []byte) pkt.Packet {
	t.Helper()
	var q pkt.Packet
	if err := pkt.Parse(f, &q); err != nil {
		t.Fatalf("Parse of the kernel's frame: %v\n% x", err, f)
	}
	if q.SrcAddr.Addr() != p.AAddr || q.DstAddr != netip.AddrPortFrom(p.BAddr, kernelPort) ||
		!bytes.Equal(q.Payload, payload) {
		t.Fatalf("parsed %+v; want %v -> %v:%d, payload %q", q, p.AAddr, p.BAddr, kernelPort, payload)
	}
	return q
}

// TestKernelFrame is a known-answer test against a frame the kernel built
// with software checksums (TX checksum offload off).
func TestKernelFrame(t *testing.T) {
	netns.Require(t)
	t.Parallel()
	p := netns.NewPair(t)
	if err := p.A.SetTxChecksum(p.AIf, false); err != nil {
		testenv.Skipf(t, "%v", err)
	}
	for _, n := range []int{0, 1, 21, 1472} {
		payload := []byte(fmt.Sprintf("%0*d", n, n))[:n]
		f := captureKernelUDP(t, p, payload)
		q := checkKernelPacket(t, p, f, payload)
		if binary.BigEndian.Uint16(f[40:]) == 0 {
			t.Fatalf("kernel sent no UDP checksum")
		}
		h := pkt.Header{Dst: q.Dst, Src: q.Src, SrcAddr: q.SrcAddr, DstAddr: q.DstAddr, TTL: q.TTL, TOS: f[15]}
		id := binary.BigEndian.Uint16(f[18:])
		ours := build(t, h, payload, id)
		// Ethernet padding of short frames is not ours to compare.
		if !bytes.Equal(ours, f[:len(ours)]) {
			t.Errorf("%d bytes: Build differs from the kernel's frame\nkernel % x\nours   % x", n, f[:len(ours)], ours)
		}
		if ip, udp := f[24:26], f[40:42]; !bytes.Equal(ours[24:26], ip) || !bytes.Equal(ours[40:42], udp) {
			t.Errorf("%d bytes: checksums kernel ip % x udp % x, ours ip % x udp % x", n, ip, udp, ours[24:26], ours[40:42])
		}
	}
}

// TestKernelPartialChecksum captures a real CHECKSUM_PARTIAL frame (TX
// checksum offload on): Parse accepts it and refuses corrupted variants.
func TestKernelPartialChecksum(t *testing.T) {
	netns.Require(t)
	t.Parallel()
	p := netns.NewPair(t)
	if err := p.A.SetTxChecksum(p.AIf, true); err != nil {
		testenv.Skipf(t, "%v", err)
	}
	payload := []byte("checksum partial from veth")
	f := captureKernelUDP(t, p, payload)
	q := checkKernelPacket(t, p, f, payload)
	h := pkt.Header{Dst: q.Dst, Src: q.Src, SrcAddr: q.SrcAddr, DstAddr: q.DstAddr, TTL: q.TTL, TOS: f[15]}
	full := build(t, h, payload, binary.BigEndian.Uint16(f[18:]))
	if field := binary.BigEndian.Uint16(f[40:]); field == binary.BigEndian.Uint16(full[40:]) {
		t.Fatalf("the kernel computed the full checksum %#04x: not a CHECKSUM_PARTIAL frame", field)
	}
	var r pkt.Packet
	bad := slices.Clone(f)
	bad[41] ^= 0x10
	if err := pkt.Parse(bad, &r); !errors.Is(err, pkt.ErrChecksum) {
		t.Errorf("corrupted checksum field: Parse = %v, want ErrChecksum", err)
	}
	bad = slices.Clone(f)
	bad[33]++ // destination address (in the pseudo-header), IP checksum repaired
	fixIPChecksum(bad, pkt.EthLen)
	if err := pkt.Parse(bad, &r); !errors.Is(err, pkt.ErrChecksum) {
		t.Errorf("corrupted destination: Parse = %v, want ErrChecksum", err)
	}
}
