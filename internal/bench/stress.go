package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/ringfire/ringfire/internal/bench/hist"
	"github.com/ringfire/ringfire/internal/bench/pace"
	"github.com/ringfire/ringfire/internal/bench/report"
	"github.com/ringfire/ringfire/internal/synth"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/shm"
)

// sweep runs the open loop at every rate on one loop of transport tr, up
// to the second rate in a row that loses, and returns the runs.
func (r *rig) sweep(tr string, size int, rates []int, d time.Duration) ([]report.Stress, error) {
	defer r.reset()
	l, err := r.newLoop(tr, size)
	if err != nil {
		return nil, err
	}
	if err := l.warmUp(300 * time.Millisecond); err != nil {
		return nil, err
	}
	var runs []report.Stress
	failed := 0
	for _, rate := range rates {
		s, err := l.stress(rate, d)
		if err != nil {
			return runs, err
		}
		runs = append(runs, s)
		if failed = failed + 1; s.Lossless() {
			failed = 0
		}
		if failed == 2 {
			break
		}
	}
	return runs, nil
}

// zeroLoss finds the highest rate transport tr carries one way (source on
// host A, mirror on host B) with every record delivered in order and no
// NAK repair, its sender and mirror waiting as wait (a bench wait name:
// "default", a mode, or a loop's such as loop-yield, a Loop per host): the
// producer pushes at each rate for d without waiting, and the mirror must
// then hold every record, with no gap and no retransmission. The sweep
// stops at the second rate in a row that loses.
func (r *rig) zeroLoss(tr, wait string, size int, rates []int, d time.Duration) (report.ZeroLoss, error) {
	defer r.reset()
	onA, onB, mode, err := r.zeroLossWaits(wait)
	if err != nil {
		return report.ZeroLoss{}, err
	}
	p := r.pair
	src, err := r.newSource(p.A, p.AAddr, "Z", size, 1<<20, tr, 0, func(c *replica.ServerConfig) { c.Wait, c.Loop = mode, onA })
	if err != nil {
		return report.ZeroLoss{}, err
	}
	m, err := r.newMirror(p.B, p.BAddr, src, "Z-mirror", tr, 0, func(c *replica.MirrorConfig) { c.Wait, c.Loop = mode, onB })
	if err != nil {
		return report.ZeroLoss{}, err
	}
	if err := r.live(src, m); err != nil {
		return report.ZeroLoss{}, err
	}
	best, err := pace.ZeroLoss(tr, rates, func(rate int) (float64, bool, error) { return r.oneWay(src, m, rate, d) })
	best.Wait = report.ZeroLossWait(wait)
	return best, err
}

// zeroLossWaits sets up a bench wait name for the zero-loss sweep: its
// mode (ModeOf; "default" is the zero mode, adaptive), and a Loop per
// host for a loop's name.
func (r *rig) zeroLossWaits(wait string) (onA, onB *replica.Loop, mode replica.WaitMode, err error) {
	if name := report.ModeOf(wait); name != "default" {
		if mode, err = replica.ParseWaitMode(name); err != nil {
			return nil, nil, mode, err
		}
	}
	if _, _, loop := report.LoopWait(wait); loop {
		onA, onB, err = r.hostLoopsWith(mode)
	}
	return onA, onB, mode, err
}

// live pushes a record every millisecond until the mirror has caught up
// with at least one record and, unless it takes no datagrams (m.stream),
// receives datagrams: a unicast mirror has punched, and the records
// before that, which came over TCP, are not the first rate's.
func (r *rig) live(src *source, m *mirrorEnd) error {
	return pace.Until(5*time.Second, "the mirror to be live", func() bool {
		st := m.m.Stats()
		if (st.Datagrams > 0 || m.stream) && st.Next > 0 && st.Next == src.w.Next() {
			return true
		}
		return src.push(r) != nil
	})
}

// oneWay pushes at rate for d and waits for the mirror: the records per
// second it received and whether it got them all without repair, each
// record the mirror ring still holds byte for byte.
//
// The producer stamps its records once per burst, not once per record:
// nothing here measures latency, and a clock read per record (rig.stamp,
// about 32 ns on a 2-core VM: BenchmarkStamp) is CPU the two cores'
// shared budget takes from the sender and the mirror, which the sweep
// measures.
func (r *rig) oneWay(src *source, m *mirrorEnd, rate int, d time.Duration) (float64, bool, error) {
	before := m.m.Stats()
	first := src.w.Next()
	start := time.Now()
	ts := r.stamp()
	pushed, err := pace.Push(d, rate, func(int) error { return src.pushAt(ts) }, func() { pace.Sleep(); ts = r.stamp() })
	if err != nil {
		return 0, false, err
	}
	last := src.w.Next() - 1
	if err := pace.Until(pace.DrainWait, "the mirror", func() bool { return m.m.Stats().Next > last }); err != nil {
		return 0, false, nil
	}
	done := time.Since(start)
	after := m.m.Stats()
	ok := after.Gaps == before.Gaps && after.Retransmitted == before.Retransmitted
	if ok {
		if err := m.verify(first, last); err != nil {
			return 0, false, err
		}
	}
	return float64(pushed) / done.Seconds(), ok, nil
}

// verify checks every record from first to last that the mirror ring
// still holds: its sequence and its synth checksum.
func (m *mirrorEnd) verify(first, last uint64) error {
	ring := m.rd.Ring()
	lay := ring.Layout()
	first = max(first, last-min(last, lay.Capacity)+1)
	buf := make([]byte, lay.PayloadSize())
	for seq := first; seq <= last; seq++ {
		st, err := ring.ReadSlot(seq, buf)
		switch {
		case err != nil:
			return fmt.Errorf("bench: mirror record %d: %w", seq, err)
		case st == shm.SlotOverwritten:
			continue // the ring holds the newest records
		case st != shm.SlotReady:
			return fmt.Errorf("bench: mirror record %d: %v, after the mirror reported it", seq, st)
		}
		if got, _, err := synth.Check(buf); err != nil {
			return fmt.Errorf("bench: mirror record %d: %w", seq, err)
		} else if got != seq {
			return fmt.Errorf("bench: mirror record %d holds record %d", seq, got)
		}
	}
	return nil
}

// stress pushes at rate for d without waiting for anything, while a
// receiver matches the echoes by sequence.
func (l *loop) stress(rate int, d time.Duration) (report.Stress, error) {
	before := l.repairs()
	first := l.a.w.Next()
	rx := l.receive(first)
	start := time.Now()
	pushed := uint64(0)
	for {
		el := time.Since(start)
		if el >= d {
			break
		}
		due := uint64(el.Seconds() * float64(rate))
		for ; pushed < due; pushed++ {
			if err := l.a.push(l.r); err != nil {
				return report.Stress{}, err
			}
		}
		time.Sleep(100 * time.Microsecond) // Go sleeps about 1 ms: bursts of rate/1000
	}
	elapsed := time.Since(start)
	res := rx.finish(first+pushed-1, pace.DrainWait)
	after := l.repairs()
	s := report.Stress{
		Transport: l.tr, Rate: rate, Duration: report.Duration(elapsed), Pushed: pushed,
		Delivered: res.got, Disorder: res.disorder, Lat: res.h.Percentiles(),
		NAKs: after.NaksSent - before.NaksSent, Retransmitted: after.Retransmitted - before.Retransmitted,
		Gaps: after.Gaps - before.Gaps,
	}
	if pushed > 0 {
		s.DeliveredPct = 100 * float64(res.got) / float64(pushed)
	}
	s.Achieved = float64(res.got) / elapsed.Seconds()
	return s, res.err
}

// repairs sums both mirrors' repair counters.
func (l *loop) repairs() replica.MirrorStats {
	a, b := l.ma.m.Stats(), l.mb.m.Stats()
	return replica.MirrorStats{NaksSent: a.NaksSent + b.NaksSent,
		Retransmitted: a.Retransmitted + b.Retransmitted, Gaps: a.Gaps + b.Gaps}
}

// receiver counts the echoes of one stress run.
type receiver struct {
	l        *loop
	h        hist.Hist
	got      uint64
	disorder uint64
	last     chan uint64
	done     chan struct{}
	err      error
}

// receive starts taking echoes of records from first on; it sleeps on B's
// futex when idle.
func (l *loop) receive(first uint64) *receiver {
	rx := &receiver{l: l, h: hist.New(), last: make(chan uint64, 1), done: make(chan struct{})}
	ws := shm.FutexWait(64)
	rd, err := shm.OpenReader(l.mb.path, shm.ReadOptions{Start: shm.StartHead, NoRegister: true, Wait: &ws})
	if err != nil {
		rx.err = err
		close(rx.done)
		return rx
	}
	go rx.run(rd, first)
	return rx
}

func (rx *receiver) run(rd *shm.Reader, first uint64) {
	defer close(rx.done)
	defer rd.Close()
	buf := make([]byte, len(rx.l.buf))
	var high, until uint64
	var deadline time.Time
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		_, err := rd.RecvContext(ctx, buf)
		cancel()
		select {
		case until = <-rx.last:
			deadline = time.Now().Add(pace.DrainWait)
		default:
		}
		if err == nil {
			seq, ts, cerr := synth.Check(buf)
			if cerr != nil {
				rx.err = cerr
				return
			}
			if seq >= first {
				rx.got++
				rx.h.Record(rx.l.r.since(ts))
				if seq < high {
					rx.disorder++
				}
				high = max(high, seq)
			}
		}
		if until != 0 && (high >= until || time.Now().After(deadline)) {
			return
		}
	}
}

type rxResult struct {
	got, disorder uint64
	h             hist.Hist
	err           error
}

// finish tells the receiver the last sequence pushed and waits for it.
func (rx *receiver) finish(last uint64, _ time.Duration) rxResult {
	select {
	case rx.last <- last:
	case <-rx.done:
	}
	<-rx.done
	return rxResult{got: rx.got, disorder: rx.disorder, h: rx.h, err: rx.err}
}
