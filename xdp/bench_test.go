package xdp_test

// Raw datagram blasters between two namespaces joined by a veth pair, the
// setup of the replication benchmarks (replica/bench_test.go): how many
// datagrams per second each path
// delivers, with no protocol on top. They need root; they report, and never
// assert on, rates.
//
//	go test -run '^$' -bench Blast -benchtime 2s ./xdp
//
// One op is one batch of blastBatch datagrams sent from ns A to ns B. The
// sender runs on a thread pinned to CPU 0, the receiver on a thread pinned
// to CPU 1 (on veth the receive path up to the socket's queue or AF_XDP
// ring runs in softirq on the sender's CPU). Each sub-benchmark reports
// datagrams/s delivered (received, over the time from the first send to
// the last receipt), sent/s and loss-% (sent but never received; a blaster
// has no flow control, so a receiver that falls behind loses).

import (
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/bpf"
	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/pkt"
	"github.com/ringfire/ringfire/internal/xdptest"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/transport"
	"github.com/ringfire/ringfire/xdp"
)

const (
	blastBatch = 32   // datagrams per op (per sendmmsg, per TX kick)
	blastPort  = 7600 // the receiver's UDP port in ns B
	blastQuiet = 50 * time.Millisecond
)

// blastSizes are the UDP payloads: the 64-byte datagrams of the issue's
// blaster, and full datagrams of the default MTU, the size replication
// sends under load (22 records of 64 bytes each).
var blastSizes = []int{64, replica.DefaultMTU}

// BenchmarkBlast moves datagrams from ns A to ns B over:
//
//   - xdp: AF_XDP TX (copy mode, ReserveTX/TXFrame/SubmitTX, frames built
//     from a pkt.Template, one sendto kick per batch) to an AF_XDP socket
//     fed by the steering program in native mode; the receiver busy-polls
//     the RX ring (Receive/Release, no system call while frames come).
//   - xdp-poll: the same, the receiver parking in an xdp.Poller (Go's
//     network poller) whenever the RX ring is empty.
//   - udp: replica.UDP (kernel UDP) SendBatch (one sendmmsg per batch) to
//     RecvBatch (recvmmsg, parking in Go's poller when nothing is queued).
//   - udp-spin: the same, the receiver polling without parking (wait 0).
//   - transport: transport.XDP SendBatch to RecvBatch with a
//     1 ms wait, as a mirror's idle step does; what replication uses.
//   - transport-spin: the same, the receiver polling (wait 0), as a
//     mirror with Spin does.
//   - afpacket, afpacket-spin: the same over transport.AFPacket
//     (a TPACKET_V2 TX ring with qdisc bypass to a TPACKET_V2 RX frame
//     ring behind a socket filter), no XDP program anywhere.
func BenchmarkBlast(b *testing.B) {
	kinds := []struct {
		name string
		run  func(b *testing.B, p *netns.Pair, size int) (tx func() int, rx func() int, stop func())
	}{
		{"xdp", func(b *testing.B, p *netns.Pair, size int) (func() int, func() int, func()) {
			return rawTX(b, p, size), rawRX(b, p, false), func() {}
		}},
		{"xdp-poll", func(b *testing.B, p *netns.Pair, size int) (func() int, func() int, func()) {
			return rawTX(b, p, size), rawRX(b, p, true), func() {}
		}},
		{"udp", func(b *testing.B, p *netns.Pair, size int) (func() int, func() int, func()) {
			return udpBlast(b, p, size, 10*time.Millisecond)
		}},
		{"udp-spin", func(b *testing.B, p *netns.Pair, size int) (func() int, func() int, func()) {
			return udpBlast(b, p, size, 0)
		}},
		{"transport", func(b *testing.B, p *netns.Pair, size int) (func() int, func() int, func()) {
			return transportBlast(b, p, size, time.Millisecond, openXDP)
		}},
		{"transport-spin", func(b *testing.B, p *netns.Pair, size int) (func() int, func() int, func()) {
			return transportBlast(b, p, size, 0, openXDP)
		}},
		{"afpacket", func(b *testing.B, p *netns.Pair, size int) (func() int, func() int, func()) {
			return transportBlast(b, p, size, time.Millisecond, openPacket)
		}},
		{"afpacket-spin", func(b *testing.B, p *netns.Pair, size int) (func() int, func() int, func()) {
			return transportBlast(b, p, size, 0, openPacket)
		}},
	}
	for _, size := range blastSizes {
		for _, k := range kinds {
			b.Run(fmt.Sprintf("%s-%d", k.name, size), func(b *testing.B) {
				netns.Require(b)
				p := netns.NewPair(b)
				tx, rx, stop := k.run(b, p, size)
				blast(b, tx, rx, stop)
			})
		}
	}
}

// blast runs tx once per op on a thread pinned to CPU 0 while rx runs
// on a thread pinned to CPU 1, then lets the receiver drain and reports.
// tx sends one batch and returns how many datagrams it queued; rx receives
// what is there (or waits briefly) and returns how many datagrams it got.
func blast(b *testing.B, tx, rx func() int, stop func()) {
	defer stop()
	var got atomic.Uint64
	var lastRecv atomic.Int64 // UnixNano of the latest receipt
	var done atomic.Bool
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		defer pin(1)()
		quietSince := time.Time{}
		for {
			n := rx()
			if n > 0 {
				got.Add(uint64(n))
				lastRecv.Store(time.Now().UnixNano())
				quietSince = time.Time{}
				continue
			}
			if !done.Load() {
				continue
			}
			if quietSince.IsZero() {
				quietSince = time.Now()
			} else if time.Since(quietSince) > blastQuiet {
				return
			}
		}
	}()
	defer pin(0)()

	// Warm up: until datagrams arrive (ARP for kernel UDP, first wake-ups).
	deadline := time.Now().Add(5 * time.Second)
	for got.Load() == 0 && time.Now().Before(deadline) {
		tx()
		time.Sleep(time.Millisecond)
	}
	if got.Load() == 0 {
		done.Store(true)
		<-finished
		b.Fatal("no datagram arrived in 5 s")
	}
	time.Sleep(blastQuiet) // let the warm-up drain
	got0 := got.Load()

	var sent uint64
	start := time.Now()
	for b.Loop() {
		sent += uint64(tx())
	}
	sendTime := time.Since(start)
	done.Store(true)
	<-finished
	recv := got.Load() - got0
	span := time.Duration(lastRecv.Load() - start.UnixNano())
	b.ReportMetric(float64(recv)/span.Seconds(), "datagrams/s")
	b.ReportMetric(float64(sent)/sendTime.Seconds(), "sent/s")
	lost := 0.0
	if sent > recv {
		lost = 100 * float64(sent-recv) / float64(sent)
	}
	b.ReportMetric(lost, "loss-%")
}

// pin locks the goroutine to its thread and the thread to cpu (when the
// machine has it); the returned function restores the thread's affinity
// and unlocks it.
func pin(cpu int) func() {
	runtime.LockOSThread()
	var old, set unix.CPUSet
	if unix.SchedGetaffinity(0, &old) != nil || cpu >= runtime.NumCPU() {
		return runtime.UnlockOSThread
	}
	set.Set(cpu)
	if unix.SchedSetaffinity(0, &set) != nil {
		return runtime.UnlockOSThread
	}
	return func() {
		unix.SchedSetaffinity(0, &old)
		runtime.UnlockOSThread()
	}
}

// rawTX opens an AF_XDP socket on A's end (copy mode) and returns a sender
// of batches of size-byte datagrams to B:blastPort.
func rawTX(b *testing.B, p *netns.Pair, size int) func() int {
	var s *xdp.Socket
	err := p.A.Do(func() error {
		ifi, err := net.InterfaceByName(p.AIf)
		if err != nil {
			return err
		}
		s, err = xdp.Open(ifi.Index, 0, xdp.Config{Bind: xdp.BindCopy})
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	tmpl, err := pkt.NewTemplate(pkt.Header{
		Dst: xdptest.MAC(b, p.B, p.BIf), Src: xdptest.MAC(b, p.A, p.AIf),
		SrcAddr: netip.AddrPortFrom(p.AAddr, blastPort), DstAddr: netip.AddrPortFrom(p.BAddr, blastPort),
	})
	if err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, size)
	lens := make([]int, blastBatch)
	var id uint16
	return func() int {
		k := s.ReserveTX(blastBatch)
		if k == 0 {
			if err := s.Kick(); err != nil {
				b.Error(err)
			}
			return 0
		}
		for i := range k {
			id++
			lens[i] = tmpl.Build(s.TXFrame(i), payload, id)
		}
		if err := s.SubmitTX(lens[:k]); err != nil {
			b.Error(err)
		}
		return k
	}
}

// rawRX attaches the steering program to B's end, steering B:blastPort to
// an AF_XDP socket, and returns a receiver that takes what the RX ring
// holds; with poll, it parks in an xdp.Poller while the ring is empty
// (up to 10 ms).
func rawRX(b testing.TB, p *netns.Pair, poll bool) func() int {
	prog, index := xdptest.Attach(b, p.B, p.BIf, bpf.ModeNative, bpf.Flow{Addr: p.BAddr, Port: blastPort})
	var s *xdp.Socket
	err := p.B.Do(func() (err error) {
		if s, err = xdp.Open(index, 0, xdp.Config{}); err != nil {
			return err
		}
		return prog.SetSocket(0, s.FD())
	})
	if s != nil {
		b.Cleanup(func() {
			st, _ := s.Stats()
			b.Logf("receiver: %+v", st)
			s.Close()
		})
	}
	if err != nil {
		b.Fatal(err)
	}
	var poller *xdp.Poller
	if poll {
		if poller, err = xdp.NewPoller(s); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { poller.Close() })
	}
	frames := make([][]byte, 64)
	return func() int {
		n := s.Receive(frames)
		s.Release()
		if n == 0 && poll {
			poller.Wait(10 * time.Millisecond)
		}
		return n
	}
}

// udpBlast is kernel UDP from A to B:blastPort through replica.UDP with
// the socket buffers replication uses; the receiver waits up to wait.
func udpBlast(b *testing.B, p *netns.Pair, size int, wait time.Duration) (func() int, func() int, func()) {
	var tx, rx *replica.UDP
	err := p.A.Do(func() (err error) {
		tx, err = replica.NewUDP(replica.UDPConfig{Bind: netip.AddrPortFrom(p.AAddr, 0), Iface: p.AAddr, SocketBuffer: 4 << 20})
		return err
	})
	if err == nil {
		err = p.B.Do(func() (err error) {
			rx, err = replica.NewUDP(replica.UDPConfig{Bind: netip.AddrPortFrom(p.BAddr, blastPort), Iface: p.BAddr, SocketBuffer: 4 << 20})
			return err
		})
	}
	if err != nil {
		if tx != nil {
			tx.Close()
		}
		b.Fatal(err)
	}
	return sendBatches(b, tx, rx.LocalAddr(), size), recvBatches(b, rx, wait), func() { tx.Close(); rx.Close() }
}

// opener opens a replica transport on an interface of the calling
// thread's namespace.
type opener func(iface string, bind netip.AddrPort) (replica.Transport, error)

func openXDP(iface string, bind netip.AddrPort) (replica.Transport, error) {
	t, err := transport.NewXDP(transport.XDPConfig{Iface: iface, Bind: bind})
	if err != nil {
		return nil, err
	}
	return t, nil
}

func openPacket(iface string, bind netip.AddrPort) (replica.Transport, error) {
	t, err := transport.NewAFPacket(transport.AFPacketConfig{Iface: iface, Bind: bind})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// transportBlast sends through a transport open opens in A to one in B
// on blastPort; the receiver waits up to wait.
func transportBlast(b *testing.B, p *netns.Pair, size int, wait time.Duration, open opener) (func() int, func() int, func()) {
	var tx, rx replica.Transport
	err := p.A.Do(func() (err error) {
		tx, err = open(p.AIf, netip.AddrPortFrom(p.AAddr, 0))
		return err
	})
	if err == nil {
		err = p.B.Do(func() (err error) {
			rx, err = open(p.BIf, netip.AddrPortFrom(p.BAddr, blastPort))
			return err
		})
	}
	if err != nil {
		if tx != nil {
			tx.Close()
		}
		b.Fatal(err)
	}
	return sendBatches(b, tx, rx.LocalAddr(), size), recvBatches(b, rx, wait), func() {
		logStats(b, "sender", tx)
		logStats(b, "receiver", rx)
		tx.Close()
		rx.Close()
	}
}

func logStats(b *testing.B, who string, t replica.Transport) {
	switch t := t.(type) {
	case *transport.XDP:
		if st, err := t.Stats(); err == nil {
			b.Logf("%s %+v", who, st)
		}
	case *transport.AFPacket:
		if st, err := t.Stats(); err == nil {
			b.Logf("%s %+v", who, st)
		}
	}
}

// sendBatches returns a sender of blastBatch size-byte datagrams to dst
// per call, all sharing one buffer, as the replica sender does.
func sendBatches(b *testing.B, t replica.Transport, dst netip.AddrPort, size int) func() int {
	payload := make([]byte, size)
	ms := make([]replica.Message, blastBatch)
	for i := range ms {
		ms[i] = replica.Message{Buf: payload, Addr: dst}
	}
	return func() int {
		n, err := t.SendBatch(ms)
		if err != nil && err != replica.ErrWouldBlock {
			b.Error(err)
		}
		return n
	}
}

// recvBatches returns a receiver of up to 64 datagrams per call, waiting
// up to wait for the first.
func recvBatches(b *testing.B, t replica.Transport, wait time.Duration) func() int {
	ms := make([]replica.Message, 64)
	for i := range ms {
		ms[i].Buf = make([]byte, replica.MaxMTU)
	}
	return func() int {
		n, err := t.RecvBatch(ms, wait)
		if err != nil {
			b.Error(err)
		}
		return n
	}
}

// One SubmitTX of more frames than the kernel sends per system call in
// copy mode (32) sends them all, without a later kick.
func TestSubmitSendsAll(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	rx := rawRX(t, p, false)
	var s *xdp.Socket
	err := p.A.Do(func() error {
		ifi, err := net.InterfaceByName(p.AIf)
		if err != nil {
			return err
		}
		s, err = xdp.Open(ifi.Index, 0, xdp.Config{RingSize: 256, Bind: xdp.BindCopy})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tmpl, err := pkt.NewTemplate(pkt.Header{
		Dst: xdptest.MAC(t, p.B, p.BIf), Src: xdptest.MAC(t, p.A, p.AIf),
		SrcAddr: netip.AddrPortFrom(p.AAddr, blastPort), DstAddr: netip.AddrPortFrom(p.BAddr, blastPort),
	})
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	if k := s.ReserveTX(n); k != n {
		t.Fatalf("reserved %d of %d", k, n)
	}
	lens := make([]int, n)
	for i := range lens {
		lens[i] = tmpl.Build(s.TXFrame(i), make([]byte, 64), uint16(i))
	}
	if err := s.SubmitTX(lens); err != nil {
		t.Fatal(err)
	}
	got := 0
	for deadline := time.Now().Add(2 * time.Second); got < n && time.Now().Before(deadline); {
		got += rx()
		time.Sleep(time.Millisecond)
	}
	if got != n {
		st, _ := s.Stats()
		t.Fatalf("received %d of %d frames submitted at once (sender %+v)", got, n, st)
	}
}

// BenchmarkReceiveEmpty is one poll of an empty RX ring, what a yielding
// mirror does between datagrams: with busy polling off (a veth), Receive
// should cost a few loads and no clock read.
//
//	go test -run '^$' -bench ReceiveEmpty -benchmem ./xdp
func BenchmarkReceiveEmpty(b *testing.B) {
	netns.Require(b)
	p := netns.NewPair(b)
	rx := rawRX(b, p, false)
	b.ReportAllocs()
	for b.Loop() {
		if rx() != 0 {
			b.Fatal("a frame came to a socket nobody sends to")
		}
	}
}
