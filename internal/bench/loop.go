package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ringfire/ringfire/internal/bench/hist"
	"github.com/ringfire/ringfire/internal/bench/report"
	"github.com/ringfire/ringfire/internal/synth"
	"github.com/ringfire/ringfire/shm"
)

// loop is the round trip both ping-pong and stress use: ring A (host A) is
// mirrored to A' (host B), an echo copies every record of A' into ring B
// (host B), mirrored to B' (host A), which the pinger reads. Two
// replication hops and an echo per round trip, every record stamped with
// the time of its push. Each direction has a link of its own (a second
// veth pair): as between real hosts, no interface carries a source's and
// a mirror's AF_XDP or AF_PACKET sockets at once.
type loop struct {
	r       *rig
	tr      string
	a, b    *source
	ma, mb  *mirrorEnd
	buf     []byte
	echoErr chan error
}

func (r *rig) newLoop(tr string, size int) (*loop, error) {
	p, q := r.pair, r.back
	l := &loop{r: r, tr: tr, buf: make([]byte, size), echoErr: make(chan error, 1)}
	var err error
	if l.a, err = r.newSource(p.A, p.AAddr, "A", size, 1<<16, tr, 0, nil); err != nil {
		return nil, err
	}
	if l.b, err = r.newSource(q.B, q.BAddr, "B", size, 1<<16, tr, 1, nil); err != nil {
		return nil, err
	}
	if l.ma, err = r.newMirror(p.B, p.BAddr, l.a, "A-mirror", tr, 0, nil); err != nil {
		return nil, err
	}
	if l.mb, err = r.newMirror(q.A, q.AAddr, l.b, "B-mirror", tr, 1, nil); err != nil {
		return nil, err
	}
	l.startEcho(size)
	return l, nil
}

// startEcho copies A' into B; it sleeps on A's futex between records (a
// second spinner would take the machine's other CPU from the servers).
func (l *loop) startEcho(size int) {
	ws := shm.FutexWait(64)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		rd, err := shm.OpenReader(l.ma.path, shm.ReadOptions{Start: shm.StartOldest, NoRegister: true, Wait: &ws})
		if err != nil {
			l.echoErr <- err
			return
		}
		defer rd.Close()
		buf := make([]byte, size)
		for {
			if _, err := rd.RecvContext(ctx, buf); err != nil {
				return
			}
			if _, err := l.b.w.Push(buf); err != nil {
				l.echoErr <- err
				return
			}
		}
	}()
	l.r.stops = append(l.r.stops, func() { cancel(); <-done })
}

// warmUp pings until every path is live (punches, catch-ups), for at least
// d.
func (l *loop) warmUp(d time.Duration) error {
	start := time.Now()
	for i := 0; i < 20 || time.Since(start) < d; i++ {
		if _, err := l.ping(); err != nil {
			return err
		}
	}
	return nil
}

// ping pushes one record and busy-polls B' for its echo.
func (l *loop) ping() (time.Duration, error) {
	seq := l.a.w.Next()
	if err := l.a.push(l.r); err != nil {
		return 0, err
	}
	deadline := time.Now().Add(2 * time.Second)
	for i := 0; ; i++ {
		got, ts, ok, err := l.recv()
		switch {
		case err != nil:
			return 0, err
		case ok && got == seq:
			return l.r.since(ts), nil
		case ok && got > seq:
			return 0, fmt.Errorf("bench: waiting for the echo of %d, got %d", seq, got)
		}
		if i%1024 == 0 && time.Now().After(deadline) {
			return 0, fmt.Errorf("bench: no echo of record %d over %s within 2 s", seq, l.tr)
		}
	}
}

// recv takes one echo from B' if there is one.
func (l *loop) recv() (seq, ts uint64, ok bool, err error) {
	select {
	case err := <-l.echoErr:
		return 0, 0, false, fmt.Errorf("bench: echo: %w", err)
	default:
	}
	if _, ok := l.mb.rd.TryRecv(l.buf); !ok {
		return 0, 0, false, nil
	}
	seq, ts, err = synth.Check(l.buf)
	if err != nil {
		return 0, 0, false, errors.Join(errors.New("bench: torn or corrupt echo"), err)
	}
	return seq, ts, true, nil
}

// pingPong runs the closed loop for d and returns the round trips.
func (r *rig) pingPong(tr string, size int, d time.Duration) (report.Latency, error) {
	defer r.reset()
	l, err := r.newLoop(tr, size)
	if err != nil {
		return report.Latency{}, err
	}
	if err := l.warmUp(300 * time.Millisecond); err != nil {
		return report.Latency{}, err
	}
	h := hist.New()
	for end := time.Now().Add(d); time.Now().Before(end); {
		rt, err := l.ping()
		if err != nil {
			return report.Latency{}, err
		}
		h.Record(rt)
	}
	return report.Latency{Name: tr, Lat: h.Percentiles()}, nil
}
