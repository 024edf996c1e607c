package bench

import (
	"context"
	"time"

	"github.com/ringfire/ringfire/internal/synth"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/shm"
)

// drainWait bounds how long a stress run waits for the last echoes.
const drainWait = 2 * time.Second

// sweep runs the open loop at every rate on one loop of transport tr and
// returns the runs and the highest rate carried without loss.
func (r *rig) sweep(tr string, size int, rates []int, d time.Duration) ([]Stress, ZeroLoss, error) {
	defer r.reset()
	l, err := r.newLoop(tr, size)
	if err != nil {
		return nil, ZeroLoss{}, err
	}
	if err := l.warmUp(300 * time.Millisecond); err != nil {
		return nil, ZeroLoss{}, err
	}
	var runs []Stress
	best := ZeroLoss{Transport: tr}
	for i, rate := range rates {
		s, err := l.stress(rate, d)
		if err != nil {
			return runs, best, err
		}
		runs = append(runs, s)
		if s.Lossless() {
			best.Rate, best.Achieved, best.Capped = rate, s.Achieved, i == len(rates)-1
		}
	}
	return runs, best, nil
}

// stress pushes at rate for d without waiting for anything, while a
// receiver matches the echoes by sequence.
func (l *loop) stress(rate int, d time.Duration) (Stress, error) {
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
				return Stress{}, err
			}
		}
		time.Sleep(100 * time.Microsecond) // Go sleeps about 1 ms: bursts of rate/1000
	}
	elapsed := time.Since(start)
	res := rx.finish(first+pushed-1, drainWait)
	after := l.repairs()
	s := Stress{
		Transport: l.tr, Rate: rate, Duration: Duration(elapsed), Pushed: pushed,
		Delivered: res.got, Disorder: res.disorder, Lat: res.h.percentiles(),
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
	h        hist
	got      uint64
	disorder uint64
	last     chan uint64
	done     chan struct{}
	err      error
}

// receive starts taking echoes of records from first on; it sleeps on B's
// futex when idle.
func (l *loop) receive(first uint64) *receiver {
	rx := &receiver{l: l, h: newHist(), last: make(chan uint64, 1), done: make(chan struct{})}
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
			deadline = time.Now().Add(drainWait)
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
				rx.h.record(rx.l.r.since(ts))
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
	h             hist
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
