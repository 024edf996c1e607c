package replica_test

// The repair budget's rules, each on a pair of namespaces: NAK answers
// and catch-up are paced per address and in total, live data never; a
// mirror whose NAK the budget cannot answer at once gets the answer
// later, never a GAP.

import (
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/faulty"
	"github.com/ringfire/ringfire/internal/testenv"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/replica/wire"
)

// frameMax is the largest DATA frame the source writes over TCP: one take
// from a bucket.
const frameMax = 64<<10 + wire.HeaderSize

// Connect, NAK, read the answer and hang up, over and over for 1 s from
// one address: the repair sent stays within the bucket that limits it
// (the address's, or the total's: 256 KiB/s, a bucket of one frame), and
// the budget says which held the NAKs back. At 256 KiB/s a 64 KiB frame
// waits 250 ms, past the 100 ms a NAK may wait: the NAK is left for a
// repeat. (A peer that hangs up at once may be gone before its NAK is
// read: reading the answer makes every NAK meet the budget.)
func TestRepairBudgetPacesNakLoops(t *testing.T) {
	for _, c := range []struct {
		name   string
		cfg    replica.ServerConfig
		byAddr bool
	}{
		{"address", replica.ServerConfig{RepairRate: -1, RepairAddrRate: 256 << 10, RepairAddrBurst: frameMax}, true},
		{"total", replica.ServerConfig{RepairRate: 256 << 10, RepairBurst: frameMax, RepairAddrRate: -1}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, src := pairSource(t, 65536)
			src.push(70000)
			c.cfg.UDPPort = 7403
			began := time.Now()
			srv := src.serve(c.cfg)
			src.drained()
			var loops, failed atomic.Int64
			deadline := time.Now().Add(time.Second)
			<-p.B.Go(func() {
				for time.Now().Before(deadline) {
					if _, err := nakLoop(srv.Addr().String(), true); err != nil {
						failed.Add(1)
					}
					loops.Add(1)
				}
			})
			testenv.Until(t, 5*time.Second, "every NAK read", func() bool { return srv.Stats().Mirrors == 0 })
			st := srv.Stats()
			rep := st.Repair
			rate, burst := rep.AddrRate, rep.AddrBurst
			if !c.byAddr {
				rate, burst = rep.Rate, rep.Burst
			}
			budget := float64(burst) + rate*(time.Since(began)+100*time.Millisecond).Seconds()
			t.Logf("%d loops (%d failed), %d NAKs, repair %+v, budget %.0f", loops.Load(), failed.Load(), st.NaksAnswered, rep, budget)
			switch {
			case loops.Load()-failed.Load() < 10:
				t.Fatalf("the loop did not run: %d, %d failed", loops.Load(), failed.Load())
			case float64(rep.Bytes) > budget || rep.Bytes == 0:
				t.Errorf("repair sent %d bytes, budget %.0f", rep.Bytes, budget)
			case rep.NaksRefused == 0:
				t.Errorf("no NAK was left unanswered: %+v", rep)
			case c.byAddr != (rep.NaksRefusedByAddr == rep.NaksRefused):
				t.Errorf("refusals %d, by the address's bucket %d: want all by the %s's", rep.NaksRefused, rep.NaksRefusedByAddr, c.name)
			case rep.CatchUpBytes > uint64(loops.Load())*(recordSize+wire.HeaderSize) || rep.Addresses > 1:
				// A session's history is the ring's newest record.
				t.Errorf("history %d bytes, %d addresses: want at most a record a loop, one address", rep.CatchUpBytes, rep.Addresses)
			}
		})
	}
}

// A mirror from oldest is sent the whole ring without waiting under the
// default budget (a bucket holds one full catch-up); under a budget of
// 256 KiB/s its catch-up (4,096 records) is paced, and in both the live
// records that follow are not: 2.8 MB of them arrive within 5 s, when the
// budget would have taken 11 s, and no byte of them counts as repair.
func TestRepairBudgetCatchUpPacedLiveNot(t *testing.T) {
	const capacity = 16384
	for _, c := range []struct {
		name   string
		cfg    replica.ServerConfig
		ring   uint64 // records in the ring when the mirror comes
		waited bool
	}{
		{"default", replica.ServerConfig{}, 2 * capacity, false},
		{"256KiB/s", replica.ServerConfig{RepairRate: 256 << 10, RepairBurst: frameMax, RepairAddrRate: -1}, 4096, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, src := pairSource(t, capacity)
			src.push(int(c.ring))
			srv := src.serve(c.cfg)
			mr := startMirror(t, p.B, p.BAddr, src, replica.MirrorConfig{TCPOnly: true, From: fromOldest}, nil)
			mr.waitFor(c.ring, 10*time.Second)
			hist := srv.Stats().Repair
			if min := min(c.ring, capacity) * recordSize; hist.CatchUpBytes < min || hist.Bytes != hist.CatchUpBytes {
				t.Errorf("catch-up %d bytes (repair %d), want at least %d, all of it", hist.CatchUpBytes, hist.Bytes, min)
			}
			if (hist.CatchUpWaits > 0) != c.waited {
				t.Errorf("catch-up waited %d times, want waits: %v", hist.CatchUpWaits, c.waited)
			}
			start := time.Now()
			src.pushPaced(50000, 1000, 2*time.Millisecond) // each burst 1/16 of the ring
			st := mr.waitFor(c.ring+50000, 5*time.Second)
			rep := srv.Stats().Repair
			t.Logf("live: 50000 records in %v; repair %+v", time.Since(start).Round(time.Millisecond), rep)
			if rep.Bytes != hist.Bytes || st.Gaps != 0 {
				t.Errorf("live records counted as repair (%d bytes, %d before) or lost (%d gaps)", rep.Bytes, hist.Bytes, st.Gaps)
			}
		})
	}
}

// A mirror that lost 500 datagrams in a row NAKs a hole the budget (256
// KiB/s for its address, a 64 KiB bucket) cannot answer at once: part of
// the NAK is left for its repeat, and the repeats fill the hole. It never
// sees a GAP, and keeps its connection.
func TestRepairBudgetLeavesNakForRepeat(t *testing.T) {
	p, src := pairSource(t, 65536)
	srv := src.serve(replica.ServerConfig{UDPPort: 7403, RepairAddrRate: 256 << 10, RepairAddrBurst: frameMax})
	faults := &faulty.Faults{Drop: func(kind wire.Kind, _, n uint64) bool { return kind == wire.KindData && n > 20 && n <= 520 }}
	mr := startMirror(t, p.B, p.BAddr, src, replica.MirrorConfig{Unicast: true}, faults)
	mr.connected()
	waitDatagrams(t, mr)
	for range 600 { // one datagram for each push: the sender has sent it before the next
		src.push(40)
		last := src.w.Next() - 1
		testenv.Until(t, 5*time.Second, "the push sent", func() bool { return srv.Stats().LastSent >= last })
	}
	st := mr.waitFor(src.w.Next()-1, 20*time.Second)
	rep := srv.Stats().Repair
	t.Logf("dropped %d datagrams; mirror %+v; repair %+v", mr.faults.Stats().Dropped, st, rep)
	oneConnection(t, st)
	if st.Gaps != 0 || rep.NaksRefused == 0 || rep.NaksRefusedByAddr != rep.NaksRefused {
		t.Errorf("gaps %d, NAKs left for a repeat %d (%d by the address): want no gap, some left by the address's bucket", st.Gaps, rep.NaksRefused, rep.NaksRefusedByAddr)
	}
	if st.Retransmitted == 0 {
		t.Errorf("nothing was retransmitted: %+v", st)
	}
}

// nakLoop is one turn of the attack from the calling goroutine's
// namespace: connect, HELLO from newest (with datagrams, so that a NAK up
// to the stream's last sequence is in range), read GEOMETRY, NAK the
// 65,535 records before it, hang up: at once, or with drain once the
// answer stopped coming for 5 ms (so that it crosses the uplink). It
// returns the bytes it sent.
func nakLoop(server string, drain bool) (int, error) {
	c, err := net.DialTimeout("tcp", server, time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	hello := wire.AppendHello(nil, wire.StartNewest, wire.Hello{Flags: wire.HelloUDP | wire.HelloUnicast})
	if _, err := c.Write(hello); err != nil {
		return 0, err
	}
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	b := make([]byte, wire.HeaderSize+wire.GeometrySize)
	if _, err := io.ReadFull(c, b); err != nil {
		return len(hello), err
	}
	h, err := wire.ParseHeader(b, wire.GeometrySize)
	if err != nil || h.Kind != wire.KindGeometry {
		return len(hello), fmt.Errorf("expected GEOMETRY: %+v %v", h, err)
	}
	last := max(h.Seq, 65) - 64 // the datagram stream has sent it
	nak := wire.AppendNak(nil, max(last, wire.MaxNakRecords)-wire.MaxNakRecords+1, last)
	if _, err = c.Write(nak); err != nil || !drain {
		return len(hello) + len(nak), err
	}
	buf := make([]byte, 64<<10)
	for end := time.Now().Add(time.Second); time.Now().Before(end); {
		c.SetReadDeadline(time.Now().Add(5 * time.Millisecond))
		if _, err := c.Read(buf); err != nil {
			break
		}
	}
	return len(hello) + len(nak), nil
}
