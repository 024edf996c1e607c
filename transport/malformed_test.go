package transport_test

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/bpf"
	"github.com/ringfire/ringfire/internal/pkt"
	"github.com/ringfire/ringfire/replica"
)

// Frames to the transport's flow that fail validation (bad IP header
// checksum, bad UDP checksum, inconsistent lengths, cut short) are steered
// to the AF_XDP socket by the program, which looks at addresses and ports
// only, so the kernel never sees them; the transport counts them as
// Malformed and delivers none. A valid frame for another steered port is
// Foreign. A frame too short to hold a UDP header is passed to the kernel
// (which drops it). Valid frames around them are delivered, in order.
func TestMalformedFrames(t *testing.T) {
	xp := newXDPPair(t)
	p, b := xp.p, xp.b
	const otherPort = 7641
	if err := b.Program().AddFlow(bpf.Flow{Addr: p.BAddr, Port: otherPort}); err != nil {
		t.Fatal(err)
	}
	dstMAC, _ := macOf(t, p.B, p.BIf)
	srcMAC, aIndex := macOf(t, p.A, p.AIf)
	src := netip.AddrPortFrom(p.AAddr, 7640)
	build := func(dst netip.AddrPort, payload string) []byte {
		h := pkt.Header{Dst: dstMAC, Src: srcMAC, SrcAddr: src, DstAddr: dst}
		f := make([]byte, h.Len()+len(payload))
		n, err := h.Build(f, []byte(payload), 1)
		if err != nil {
			t.Fatal(err)
		}
		return f[:n]
	}
	const ipOff, udpOff = pkt.EthLen, pkt.EthLen + pkt.IPv4Len
	fixIPSum := func(f []byte) {
		ip := f[ipOff : ipOff+pkt.IPv4Len]
		ip[10], ip[11] = 0, 0
		binary.BigEndian.PutUint16(ip[10:], pkt.Checksum(ip, 0))
	}
	type frame struct {
		name  string
		b     []byte
		valid bool // delivered
		steer bool // redirected by the program
	}
	var frames []frame
	add := func(name string, valid, steer bool, dst netip.AddrPort, corrupt func([]byte) []byte) {
		f := build(dst, "frame "+name)
		if corrupt != nil {
			f = corrupt(f)
		}
		frames = append(frames, frame{name, f, valid, steer})
	}
	flow := b.LocalAddr()
	add("valid-1", true, true, flow, nil)
	add("bad-ip-checksum", false, true, flow, func(f []byte) []byte { f[ipOff+10] ^= 0xff; return f })
	add("valid-2", true, true, flow, nil)
	add("bad-udp-checksum", false, true, flow, func(f []byte) []byte {
		f[udpOff+6] ^= 0x5a // never 0 (that would mean "no checksum"): the field is 0x5a off a valid sum
		if f[udpOff+6] == 0 && f[udpOff+7] == 0 {
			f[udpOff+7] = 1
		}
		return f
	})
	add("payload-corrupted", false, true, flow, func(f []byte) []byte { f[len(f)-1] ^= 0x01; return f })
	add("udp-length-short", false, true, flow, func(f []byte) []byte {
		binary.BigEndian.PutUint16(f[udpOff+4:], binary.BigEndian.Uint16(f[udpOff+4:])-4)
		return f
	})
	add("udp-length-long", false, true, flow, func(f []byte) []byte {
		binary.BigEndian.PutUint16(f[udpOff+4:], binary.BigEndian.Uint16(f[udpOff+4:])+4)
		return f
	})
	add("ip-length-beyond-frame", false, true, flow, func(f []byte) []byte { return f[:len(f)-3] })
	add("ip-length-short", false, true, flow, func(f []byte) []byte {
		binary.BigEndian.PutUint16(f[ipOff+2:], binary.BigEndian.Uint16(f[ipOff+2:])-4)
		fixIPSum(f)
		return f
	})
	add("fragment", false, true, flow, func(f []byte) []byte {
		binary.BigEndian.PutUint16(f[ipOff+6:], 0x2000) // MF: first fragment, steered
		fixIPSum(f)
		return f
	})
	add("valid-3", true, true, flow, nil)
	add("foreign-port", false, true, netip.AddrPortFrom(p.BAddr, otherPort), nil)
	add("runt", false, false, flow, func(f []byte) []byte { return f[:udpOff+4] })
	add("valid-4", true, true, flow, nil)

	var fd int
	if err := p.A.Do(func() (err error) {
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			return err
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: aIndex})
	}); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)

	before := stats(t, b)
	var valid []string
	steered, malformed := 0, 0
	for _, f := range frames {
		if err := unix.Sendto(fd, f.b, 0, &unix.SockaddrLinklayer{Ifindex: aIndex}); err != nil {
			t.Fatalf("%s: sendto: %v", f.name, err)
		}
		if f.valid {
			valid = append(valid, "frame "+f.name)
		}
		if f.steer {
			steered++
			if !f.valid && f.name != "foreign-port" {
				malformed++
			}
		}
	}
	got := recvN(t, b, len(valid), 2048)
	expectNone(t, b, 200*time.Millisecond)
	for i, d := range got {
		if i >= len(valid) || string(d.data) != valid[i] || d.from != src {
			t.Errorf("delivered %q from %v; want in order %q from %v", d.data, d.from, valid, src)
		}
	}
	if len(got) != len(valid) {
		t.Errorf("delivered %d datagrams, want %d (%q)", len(got), len(valid), valid)
	}
	var after = stats(t, b)
	if !pollUntil(func() bool {
		after = stats(t, b)
		return after.Program.Seen-before.Program.Seen >= uint64(len(frames))
	}) {
		t.Errorf("program saw %d of %d frames", after.Program.Seen-before.Program.Seen, len(frames))
	}
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"Malformed", after.Malformed - before.Malformed, uint64(malformed)},
		{"Foreign", after.Foreign - before.Foreign, 1},
		{"Received", after.Received - before.Received, uint64(len(valid))},
		{"Program.Redirected", after.Program.Redirected - before.Program.Redirected, uint64(steered)},
		{"Socket.RXFrames", after.Socket.RXFrames - before.Socket.RXFrames, uint64(steered)},
	} {
		if c.got != c.want {
			t.Errorf("%s grew by %d, want %d", c.name, c.got, c.want)
		}
	}
	if after.Program.Passed == before.Program.Passed {
		t.Errorf("the runt was not passed to the kernel: program %+v -> %+v", before.Program, after.Program)
	}
	if t.Failed() {
		t.Logf("before %+v", before)
		t.Logf("after  %+v", after)
	}
}

// A datagram larger than the caller's buffer is counted Truncated and not
// delivered; one that just fits is delivered; the ones around it too.
func TestRecvTruncated(t *testing.T) {
	xp := newXDPPair(t)
	const bufSize = 100
	sizes := []int{50, 101, bufSize, 1000, 1}
	var ms []replica.Message
	for i, n := range sizes {
		ms = append(ms, replica.Message{Buf: payload(i, n), Addr: xp.b.LocalAddr()})
	}
	sendAll(t, xp.a, ms)
	got := recvN(t, xp.b, 3, bufSize)
	expectNone(t, xp.b, 100*time.Millisecond)
	var gotSizes []int
	for _, d := range got {
		gotSizes = append(gotSizes, len(d.data))
	}
	if fmt.Sprint(gotSizes) != fmt.Sprint([]int{50, bufSize, 1}) {
		t.Errorf("delivered sizes %v into %d-byte buffers, want [50 100 1]", gotSizes, bufSize)
	}
	st := stats(t, xp.b)
	if st.Truncated != 2 || st.Received != 3 || st.Malformed != 0 {
		t.Errorf("Truncated %d, Received %d, Malformed %d; want 2, 3, 0", st.Truncated, st.Received, st.Malformed)
	}
}
