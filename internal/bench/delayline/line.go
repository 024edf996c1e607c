package delayline

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// ErrConfig is a Config the line refuses.
var ErrConfig = errors.New("delayline: bad config")

// Config is one line's fault.
type Config struct {
	In, Out string        // interfaces: In faces the source, Out the mirror
	Delay   time.Duration // how long each frame In → Out is held (0: none)
	Loss    float64       // probability a DATA frame In → Out is dropped
	Seed    uint64        // the drops' PRNG seed
	Port    uint16        // UDP port of the DATA frames that may drop (0: any)
	// Realtime runs the line's threads SCHED_FIFO (priority 1): a frame
	// is forwarded when it comes, not when the host's busy threads let it.
	Realtime bool
}

// Stats is what a line did.
type Stats struct {
	Forward        uint64   `json:"forward"`         // frames In → Out sent on
	Back           uint64   `json:"back"`            // frames Out → In sent on
	Data           uint64   `json:"data"`            // DATA frames seen In → Out
	DataDropped    uint64   `json:"data_dropped"`    // of them, dropped for Loss
	Records        uint64   `json:"records"`         // records in the DATA frames seen
	RecordsDropped uint64   `json:"records_dropped"` // records in the dropped ones
	Overflow       uint64   `json:"overflow"`        // frames dropped for a full queue
	MaxLateNs      int64    `json:"max_late_ns"`     // worst send past a frame's due time
	Dropped        []uint64 `json:"-"`               // each dropped DATA frame's first sequence, in order
}

// maxDropLog bounds Stats.Dropped; drops past it are counted only.
const maxDropLog = 1 << 22

// queueLen is the delayed frames a line holds at most.
const queueLen = 1 << 14

// frameMax is the longest frame the line carries (MTU 1500 and more).
const frameMax = 9216

// Line forwards frames between its two interfaces.
type Line struct {
	cfg     Config
	in, out *packetSocket
	rng     *rand.Rand
	slots   [][frameMax]byte
	free    chan int
	due     chan queued
	mu      sync.Mutex // Stats, read while Run runs
	st      Stats
}

type queued struct {
	slot, n int
	due     int64
}

// Open checks cfg and opens the line's sockets in the calling thread's
// network namespace.
func Open(cfg Config) (*Line, error) {
	switch {
	case cfg.In == "" || cfg.Out == "" || cfg.In == cfg.Out:
		return nil, fmt.Errorf("%w: interfaces %q and %q: want two", ErrConfig, cfg.In, cfg.Out)
	case cfg.Delay < 0 || cfg.Delay > time.Second:
		return nil, fmt.Errorf("%w: delay %v: want 0..1s", ErrConfig, cfg.Delay)
	case !(cfg.Loss >= 0 && cfg.Loss < 1):
		return nil, fmt.Errorf("%w: loss %v: want 0 ≤ p < 1", ErrConfig, cfg.Loss)
	}
	l := &Line{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))}
	var err error
	if l.in, err = openSocket(cfg.In); err != nil {
		return nil, err
	}
	if l.out, err = openSocket(cfg.Out); err != nil {
		l.in.close()
		return nil, err
	}
	if cfg.Delay > 0 {
		l.slots = make([][frameMax]byte, queueLen)
		l.free, l.due = make(chan int, queueLen), make(chan queued, queueLen)
		for i := range queueLen {
			l.free <- i
		}
	}
	return l, nil
}

// Close closes the sockets (after Run returned).
func (l *Line) Close() {
	l.in.close()
	l.out.close()
}

// Stats is what the line did so far.
func (l *Line) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.st
	st.Dropped = append([]uint64(nil), l.st.Dropped...)
	return st
}

// Run forwards until stop is closed or a socket fails: the first error.
func (l *Line) Run(stop <-chan struct{}) error {
	errs := make(chan error, 3)
	var wg sync.WaitGroup
	run := func(f func(<-chan struct{}) error) {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- f(stop) }()
	}
	quit := make(chan struct{}) // the first error stops the others
	stopped := make(chan struct{})
	go func(outer <-chan struct{}) {
		select {
		case <-outer:
		case <-quit:
		}
		close(stopped)
	}(stop)
	stop = stopped
	run(l.back)
	run(l.forward)
	if l.cfg.Delay > 0 {
		run(l.sender)
	}
	var first error
	for range 2 + btoi(l.cfg.Delay > 0) {
		if err := <-errs; err != nil && first == nil {
			first = err
			close(quit)
		}
	}
	wg.Wait()
	return first
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// back passes every frame Out → In at once.
func (l *Line) back(stop <-chan struct{}) error {
	if l.cfg.Realtime {
		if err := lockThread(false, true); err != nil {
			return err
		}
	}
	var b [frameMax]byte
	for !done(stop) {
		n, err := l.out.read(b[:])
		if err != nil {
			return err
		}
		if n == 0 {
			continue
		}
		if err := l.in.write(b[:n]); err != nil {
			return err
		}
		l.count(func(st *Stats) { st.Back++ })
	}
	return nil
}

// forward reads In: drops a DATA frame with probability Loss, sends the
// others on Out at once or queues them for the sender, due Delay after
// they were read.
func (l *Line) forward(stop <-chan struct{}) error {
	if l.cfg.Realtime {
		if err := lockThread(false, true); err != nil {
			return err
		}
	}
	var b [frameMax]byte
	for !done(stop) {
		n, err := l.in.read(b[:])
		if err != nil {
			return err
		}
		if n == 0 {
			continue
		}
		at := now()
		if l.drop(b[:n]) {
			continue
		}
		if l.cfg.Delay == 0 {
			if err := l.out.write(b[:n]); err != nil {
				return err
			}
			l.count(func(st *Stats) { st.Forward++ })
			continue
		}
		select {
		case i := <-l.free:
			copy(l.slots[i][:], b[:n])
			l.due <- queued{slot: i, n: n, due: at + l.cfg.Delay.Nanoseconds()}
		default:
			l.count(func(st *Stats) { st.Overflow++ })
		}
	}
	return nil
}

// drop counts a DATA frame and says whether Loss drops it.
func (l *Line) drop(f []byte) bool {
	seq, count, ok := dataFrame(f, l.cfg.Port)
	if !ok {
		return false
	}
	lost := l.cfg.Loss > 0 && l.rng.Float64() < l.cfg.Loss
	l.count(func(st *Stats) {
		st.Data++
		st.Records += uint64(count)
		if lost {
			st.DataDropped++
			st.RecordsDropped += uint64(count)
			if len(st.Dropped) < maxDropLog {
				st.Dropped = append(st.Dropped, seq)
			}
		}
	})
	return lost
}

// sender sends each queued frame when it is due, sleeping on a thread of
// its own with a timer slack of 1 ns (SCHED_FIFO with Realtime).
func (l *Line) sender(stop <-chan struct{}) error {
	if err := lockThread(true, l.cfg.Realtime); err != nil {
		return err
	}
	tick := time.NewTicker(readTimeout)
	defer tick.Stop()
	for {
		var q queued
		select {
		case q = <-l.due:
		case <-stop:
			return nil
		case <-tick.C: // bound the wait: stop is checked at least this often
			continue
		}
		if now() < q.due {
			sleepUntil(q.due)
		}
		late := now() - q.due
		err := l.out.write(l.slots[q.slot][:q.n])
		l.free <- q.slot
		if err != nil {
			return err
		}
		l.count(func(st *Stats) { st.Forward++; st.MaxLateNs = max(st.MaxLateNs, late) })
	}
}

func (l *Line) count(f func(*Stats)) {
	l.mu.Lock()
	f(&l.st)
	l.mu.Unlock()
}

func done(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}
