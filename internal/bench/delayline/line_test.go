package delayline

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
)

// frame is an Ethernet/IPv4/UDP frame to port carrying a DATA header of
// sequence seq (one record) and the monotonic time it is sent.
func frame(port uint16, kind byte, seq uint64) []byte {
	f := make([]byte, ethLen+minIPv4+udpLen+wireHdr+8)
	copy(f, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(f[12:], ethIPv4)
	ip := f[ethLen:]
	ip[0], ip[8], ip[9] = 0x45, 64, protoUDP
	binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)))
	copy(ip[12:], []byte{10, 99, 0, 1, 10, 99, 0, 2})
	udp := ip[minIPv4:]
	binary.BigEndian.PutUint16(udp[0:], 9999)
	binary.BigEndian.PutUint16(udp[2:], port)
	binary.BigEndian.PutUint16(udp[4:], uint16(len(udp)))
	w := udp[udpLen:]
	w[0] = kind
	binary.LittleEndian.PutUint16(w[2:], 1)
	binary.LittleEndian.PutUint64(w[8:], seq)
	binary.LittleEndian.PutUint64(w[wireHdr:], uint64(now()))
	return f
}

// stampOf is the send time frame wrote.
func stampOf(f []byte) int64 {
	return int64(binary.LittleEndian.Uint64(f[ethLen+minIPv4+udpLen+wireHdr:]))
}

// TestLineDelaysAndDrops runs a line in namespace B between B's veth0
// (In) and veth1 (Out), sends DATA frames into A's veth0 and reads them
// from A's veth1: every frame that arrives is at least Delay late, the
// ones missing are exactly the ones the line says it dropped, about Loss
// of them, frames to another port are never dropped, and a frame the
// other way passes.
func TestLineDelaysAndDrops(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	link, err := p.AddLink()
	if err != nil {
		t.Fatal(err)
	}
	const (
		port  = 7701
		n     = 3000
		delay = 300 * time.Microsecond
		loss  = 0.1
	)
	var l *Line
	if err := p.B.Do(func() (err error) {
		l, err = Open(Config{In: p.BIf, Out: link.BIf, Delay: delay, Loss: loss, Seed: 41, Port: port, Realtime: true})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var src, dst *packetSocket
	if err := p.A.Do(func() (err error) {
		if src, err = openSocket(p.AIf); err != nil {
			return err
		}
		dst, err = openSocket(link.AIf)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer src.close()
	defer dst.close()
	stop, ran := make(chan struct{}), make(chan error, 1)
	go func() { ran <- l.Run(stop) }()
	defer func() {
		close(stop)
		if err := <-ran; err != nil {
			t.Error(err)
		}
	}()

	for i := range n { // DATA frames, then some to another port, then one back
		if err := src.write(frame(port, kindData, uint64(i+1))); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 100 {
		if err := src.write(frame(port+1, kindData, uint64(n+i+1))); err != nil {
			t.Fatal(err)
		}
	}
	got := map[uint64]bool{}
	var early int
	b := make([]byte, frameMax)
	deadline := time.Now().Add(5 * time.Second)
	for len(got) < n+100-int(l.Stats().DataDropped) && time.Now().Before(deadline) {
		k, err := dst.read(b)
		if err != nil {
			t.Fatal(err)
		}
		seq, _, ok := dataFrame(b[:k], 0)
		if k == 0 || !ok {
			continue
		}
		if now()-stampOf(b[:k]) < delay.Nanoseconds() {
			early++
		}
		got[seq] = true
	}
	st := l.Stats()
	if early > 0 {
		t.Errorf("%d frames arrived less than %v after they were sent", early, delay)
	}
	var missing []uint64
	for s := uint64(1); s <= n+100; s++ {
		if !got[s] {
			missing = append(missing, s)
		}
	}
	if !slices.Equal(missing, st.Dropped) {
		t.Errorf("missing %d frames, the line dropped %d: missing %v..., dropped %v...",
			len(missing), len(st.Dropped), missing[:min(5, len(missing))], st.Dropped[:min(5, len(st.Dropped))])
	}
	if st.Data != n || st.Overflow != 0 { // the frames to another port are not the line's DATA
		t.Errorf("the line saw %d DATA frames (want %d), %d overflowed", st.Data, n, st.Overflow)
	}
	if rate := float64(st.DataDropped) / n; rate < 0.07 || rate > 0.13 {
		t.Errorf("dropped %d of %d DATA frames (%.3f), want about %v", st.DataDropped, n, rate, loss)
	}
	for _, s := range st.Dropped {
		if s > n {
			t.Errorf("dropped frame %d, which went to another port", s)
		}
	}
	t.Logf("dropped %d of %d, worst send %v past due", st.DataDropped, n, time.Duration(st.MaxLateNs))

	// The other way: at once, never dropped.
	back := frame(port, kindData, 1<<40)
	if err := dst.write(back); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Second); ; {
		k, err := src.read(b)
		if err != nil {
			t.Fatal(err)
		}
		if seq, _, ok := dataFrame(b[:k], 0); k > 0 && ok && seq == 1<<40 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a frame Out → In did not come through within 2s")
		}
	}
}

// TestOpenRefuses checks the config's errors.
func TestOpenRefuses(t *testing.T) {
	for _, c := range []Config{{In: "x", Out: "x"}, {In: "a", Out: "b", Delay: -1}, {In: "a", Out: "b", Loss: 1}, {In: "a", Out: "b", Loss: -0.1}} {
		if _, err := Open(c); err == nil {
			t.Errorf("Open(%+v): no error", c)
		}
	}
}
