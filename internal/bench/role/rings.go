package role

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ringfire/ringfire/internal/bench/hist"
	"github.com/ringfire/ringfire/internal/bench/report"
	"github.com/ringfire/ringfire/internal/idle"
	"github.com/ringfire/ringfire/internal/synth"
	"github.com/ringfire/ringfire/shm"
)

// The rings section's roles: one pinger and one echo process for all the
// rings of a measurement. A thread cannot sleep on N rings' futexes, so
// both poll every ring of theirs in turn on a locked thread and, after a
// pass that found nothing, call sched_yield (spin: poll again at once),
// whatever the wait mode of the run processes.
const (
	RingsPinger = "rings-pinger" // pushes into every Ai, reads every Bi', times each ring's round trip
	RingsEcho   = "rings-echo"   // copies every Ai' into Bi
)

// ringsIdler is how the roles wait between fruitless passes.
func ringsIdler(wait string) *idle.Idler {
	mode := idle.Yield
	if wait == "spin" {
		mode = idle.Spin
	}
	return idle.NewIdler(idle.Strategy{Mode: mode}, nil)
}

// ringsEnds creates every ring of s.Rings, says ready, opens every ring
// of s.Reads (from its oldest record) once a mirror has made it, and locks
// the goroutine to its thread (the roles poll on it); closeAll unlocks the
// thread and closes them all.
func ringsEnds(s Spec, out *bufio.Writer) (ws []*shm.Writer, rds []*shm.Reader, closeAll func(), err error) {
	if len(s.Rings) == 0 || len(s.Rings) != len(s.Reads) {
		return nil, nil, nil, fmt.Errorf("role: %s: %d rings to write, %d to read", s.Role, len(s.Rings), len(s.Reads))
	}
	closeAll = func() {
		for _, w := range ws {
			w.Close()
		}
		for _, rd := range rds {
			rd.Close()
		}
	}
	for _, path := range s.Rings {
		w, err := createRing(path, s.Record)
		if err != nil {
			closeAll()
			return nil, nil, nil, err
		}
		ws = append(ws, w)
	}
	if err := say(out, LineReady); err != nil {
		closeAll()
		return nil, nil, nil, err
	}
	for _, path := range s.Reads {
		rd, err := openRingWhenReady(path, roleWait(s.Wait))
		if err != nil {
			closeAll()
			return nil, nil, nil, err
		}
		rds = append(rds, rd)
	}
	unlock, err := idle.LockThread(-1)
	if err != nil {
		closeAll()
		return nil, nil, nil, err
	}
	closeRings := closeAll
	closeAll = func() {
		unlock()
		closeRings()
	}
	return ws, rds, closeAll, nil
}

// ringsPing is the pinger's state: one record in flight on every ring.
type ringsPing struct {
	ws       []*shm.Writer
	rds      []*shm.Reader
	hs       []hist.Hist // per ring
	all      hist.Hist
	seqs     []uint64 // the record in flight on each ring
	pending  []bool
	rec, buf []byte
	base     time.Time
	d        *idle.Idler
}

// ringsPinger times each ring's round trips, Ai to Bi', in two ways,
// after WarmUp rounds (at most WarmUpMax of them) at once: at once, a
// stamped record pushed into every ring and every echo awaited, then in
// turn, one record in flight in all, ring after ring. Each is Samples
// rounds (at most Limit of them) between a measuring and a result line.
func ringsPinger(s Spec, out *bufio.Writer, gone <-chan struct{}) error {
	ws, rds, closeAll, err := ringsEnds(s, out)
	if err != nil {
		return err
	}
	defer closeAll()
	n := len(ws)
	pg := &ringsPing{ws: ws, rds: rds, hs: make([]hist.Hist, n), seqs: make([]uint64, n), pending: make([]bool, n),
		rec: make([]byte, s.Record), buf: make([]byte, s.Record), base: time.Now(), d: ringsIdler(s.Wait)}
	every := make([]int, n)
	for i := range every {
		every[i] = i
	}
	if err := warmUp(s, func(first bool) error { return pg.round(every, first, false) }); err != nil {
		return err
	}
	atOnce := func(first bool) error { return pg.round(every, first, true) }
	inTurn := func(bool) error {
		for i := range every {
			if err := pg.round(every[i:i+1], false, true); err != nil {
				return err
			}
		}
		return nil
	}
	for k, round := range []func(first bool) error{atOnce, inTurn} {
		if err := pg.measure(s, out, round, k == 0 && s.WarmUp == 0); err != nil {
			return err
		}
	}
	return awaitGone(gone)
}

// measure runs the pinger's rounds into fresh histograms (measureRounds).
func (pg *ringsPing) measure(s Spec, out *bufio.Writer, round func(first bool) error, first bool) error {
	return measureRounds(s, out, &pg.all, pg.hs, round, first)
}

// measureRounds says measuring, runs Samples rounds (at most Limit of
// them; the first one first when no warm-up came before) into fresh
// histograms, all and one per ring (or socket) in hs, and says the
// result, a RingsResult.
func measureRounds(s Spec, out *bufio.Writer, all *hist.Hist, hs []hist.Hist, round func(first bool) error, first bool) error {
	for i := range hs {
		hs[i] = hist.New()
	}
	*all = hist.New()
	if err := say(out, LineMeasuring); err != nil {
		return err
	}
	end := time.Now().Add(time.Duration(s.Limit))
	for i := 0; i < s.Samples && (i == 0 || time.Now().Before(end)); i++ {
		if err := round(i == 0 && first); err != nil {
			return fmt.Errorf("round %d: %w", i, err)
		}
	}
	res := RingsResult{All: all.Percentiles()}
	for _, h := range hs {
		res.PerRing = append(res.PerRing, h.Percentiles())
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	return say(out, LineResult+string(b))
}

// round pushes one record on each ring of rings and waits for all their
// echoes (FirstEchoWait for the very first round, else EchoWait),
// recording each ring's round trip when record is set.
func (pg *ringsPing) round(rings []int, first, record bool) error {
	for _, i := range rings {
		w := pg.ws[i]
		seq := w.Next()
		synth.Fill(pg.rec, seq, uint64(time.Since(pg.base)))
		if _, err := w.Push(pg.rec); err != nil {
			return err
		}
		pg.seqs[i], pg.pending[i] = seq, true
	}
	wait := EchoWait
	if first {
		wait = FirstEchoWait
	}
	deadline := time.Now().Add(wait)
	for polls, left := 0, len(rings); left > 0; polls++ {
		pg.d.Round()
		found := false
		for _, i := range rings {
			if !pg.pending[i] {
				continue
			}
			ok, err := pg.take(i, pg.rds[i], record)
			if err != nil {
				return err
			}
			if ok {
				pg.pending[i], found = false, true
				left--
			}
		}
		if found {
			pg.d.Busy(time.Now())
			continue
		}
		if polls%256 == 255 && time.Now().After(deadline) {
			return pg.late(left, len(rings), wait)
		}
		pg.d.Idle(0)
	}
	return nil
}

// take reads ring i's echoes up to the one of its record in flight,
// skipping older ones (at most a ring's worth).
func (pg *ringsPing) take(i int, rd *shm.Reader, record bool) (bool, error) {
	for range ringCapacity {
		if _, ok := rd.TryRecv(pg.buf); !ok {
			return false, nil
		}
		got, ts, err := synth.Check(pg.buf)
		switch {
		case err != nil:
			return false, fmt.Errorf("ring %d: torn or corrupt echo: %w", i+1, err)
		case got == pg.seqs[i]:
			if record {
				d := time.Since(pg.base) - time.Duration(ts)
				pg.hs[i].Record(d)
				pg.all.Record(d)
			}
			return true, nil
		case got > pg.seqs[i]:
			return false, fmt.Errorf("ring %d: waiting for the echo of %d, got %d", i+1, pg.seqs[i], got)
		}
	}
	return false, nil
}

// late is the error of a round whose echoes did not all come back.
func (pg *ringsPing) late(left, of int, wait time.Duration) error {
	for i, p := range pg.pending {
		if p {
			return fmt.Errorf("no echo on %d of %d rings within %v (ring %d: record %d)", left, of, wait, i+1, pg.seqs[i])
		}
	}
	return errors.New("no echo")
}

// ringsEchoLimit bounds an echo's life: its rings, the pinger's warm-up
// and its two sets of samples, and the parent's wait before it closes
// stdin.
func ringsEchoLimit(s Spec) time.Duration {
	return ringOpenWait + FirstEchoWait + WarmUpMax + EchoWait + 2*(time.Duration(s.Limit)+EchoWait) + roleLimit
}

// ringsEcho copies every record of each Ai' into Bi until stdin closes.
func ringsEcho(s Spec, out *bufio.Writer, gone <-chan struct{}) error {
	ws, rds, closeAll, err := ringsEnds(s, out)
	if err != nil {
		return err
	}
	defer closeAll()
	d := ringsIdler(s.Wait)
	buf := make([]byte, s.Record)
	end := time.Now().Add(ringsEchoLimit(s))
	for polls := 0; ; polls++ {
		if polls%256 == 255 {
			select {
			case <-gone:
				return nil
			default:
			}
			if time.Now().After(end) {
				return fmt.Errorf("role: echo still running after %v", ringsEchoLimit(s))
			}
		}
		d.Round()
		found := false
		for i, rd := range rds {
			moved, err := CopyRecords(buf, rd, 64, ws[i]) // at most 64 records of a ring per pass
			if err != nil {
				return err
			}
			found = found || moved
		}
		if found {
			d.Busy(time.Now())
			continue
		}
		d.Idle(0)
	}
}

// RingsResult is the rings pinger's result line.
type RingsResult struct {
	PerRing []report.Percentiles `json:"per_ring"`
	All     report.Percentiles   `json:"all"`
}
