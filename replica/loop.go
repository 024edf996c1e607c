package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringfire/ringfire/internal/idle"
	"github.com/ringfire/ringfire/shm"
)

// ErrLoopRunning is returned by a second Run of a Loop, by Run after
// Close, and by Close during Run or after Close.
var ErrLoopRunning = errors.New("replica: loop already running")

// LoopConfig configures a Loop.
type LoopConfig struct {
	// Wait is how the loop waits after a turn in which no member found
	// work (default WaitAdaptive): the same modes as a single server's or
	// mirror's loop, with a mirror's thresholds (idle.Strategy) and every
	// mirror member's descriptors.
	Wait WaitMode
	// Pin binds the loop's thread to a CPU.
	Pin Pin
}

// LoopStats count what a Loop did.
type LoopStats struct {
	Members int    // servers and mirror connections in the loop now
	Turns   uint64 // turns: every member polled once
	Busy    uint64 // turns in which a member found work
	Wait    idle.Stats
}

// A Loop is a duty cycle: one locked OS thread that runs the hot loops of
// any number of Servers (their datagram senders) and Mirrors (their
// receive loops), given it in ServerConfig.Loop and MirrorConfig.Loop, in
// turns. Each turn polls every member once — a sender's ring and pending
// frames, a mirror's TCP frames and transport — and only a turn in which
// none found work waits, once, as LoopConfig.Wait says. A process with
// many rings then has one polling thread instead of two per ring, so
// polling threads do not outnumber the cores: what a media driver does
// for all its streams.
//
//	           +------------- Loop.Run (one locked thread) --------------+
//	ring A --> | serverMember A: sender round --> Transport.SendBatch     |
//	ring B --> | serverMember B: sender round --> Transport.SendBatch     |
//	socket --> | mirrorMember C: step (TCP frames, RecvBatch(0), publish) | --> ring C'
//	           | none found work: idle.Idler.Idle (sched_yield, or ppoll  |
//	           | on every mirror's descriptors and the loop's Waker)      |
//	           +---------------------------------------------------------+
//
// Who wakes a sleeping loop (Wait block, or adaptive's last phase): a
// datagram for a mirror (its transport's descriptors, which the loop
// polls in ppoll), a TCP frame or a shared AF_XDP socket's datagram (the
// mirror's reader or transport notifies the loop's Waker), a record in a
// served ring (the server's ring watcher, armed when the loop sleeps,
// sleeps on the ring's futex and notifies the Waker: one wake-up more
// than a server's own loop, in this phase only), a member added or
// removed, and the end of Run's context.
//
// Run must run while the Loop has members: a member's Serve or Run does
// not send or receive datagrams without it.
type Loop struct {
	cfg   LoopConfig
	waker *idle.Waker
	idler *idle.Idler // Run's goroutine only
	// set is the members the loop turns through: a fresh slice on every
	// change, stored by add and remove under mu, loaded by Run at every
	// turn (under turnMu).
	set atomic.Pointer[[]member]
	mu  sync.Mutex
	// turnMu is held by Run for each turn; remove takes it once after
	// storing the new set, so that when remove returns no turn of the
	// removed member is under way, nor will one be.
	turnMu  sync.Mutex
	running atomic.Bool
	// sleeping is what Run arms before it sleeps: the members of the
	// set it last turned through that watch something no descriptor
	// shows (Run's goroutine only).
	sleeping []member
	turns    atomic.Uint64
	busy     atomic.Uint64
	// wait is a copy of the Idler's counts, refreshed by Run's goroutine
	// (publishWait) before each sleep and every waitStatsEvery turns, read
	// by Stats; under waitMu (a copy, not a fresh pointer: a sleep
	// allocates nothing).
	waitMu sync.Mutex
	wait   idle.Stats
}

// waitStatsEvery is how many turns apart a loop that never sleeps (yield,
// spin) refreshes the wait counts Stats reads; a sleep refreshes them too.
const waitStatsEvery = 1024

// member is a server's sender or a mirror connection's receive loop, run
// by a Loop's thread.
type member interface {
	// turn polls once, without waiting, and reports whether it found
	// work (then the loop turns again at once).
	turn(now time.Time) bool
	// due is the longest the loop may sleep for this member.
	due(now time.Time) time.Duration
	// fds are descriptors whose readability is work (nil: none).
	fds() []int
	// sleep is called before the loop sleeps for at most max (Run's
	// goroutine).
	sleep(max time.Duration)
	// pending reports work that no descriptor shows and whoever queued
	// it wakes the loop for (a mirror's queued TCP frame): just before
	// the loop sleeps (it turns again instead), and after a sleep that
	// ran to its bound (a lost wake-up: idle.Stats.PendingSleeps).
	pending() bool
}

// NewLoop makes a Loop; it polls nothing until Run.
func NewLoop(cfg LoopConfig) (*Loop, error) {
	if err := cfg.Pin.check(); err != nil {
		return nil, err
	}
	w, err := idle.NewWaker()
	if err != nil {
		return nil, fmt.Errorf("replica: loop: %w", err)
	}
	l := &Loop{cfg: cfg, waker: w}
	l.idler = idle.NewIdler(idle.Strategy{Mode: cfg.Wait}, w)
	l.idler.OnSleep(l.armSleepers)
	l.idler.OnPending(l.pending)
	l.set.Store(new([]member))
	return l, nil
}

// Stats returns the loop's counts (any goroutine).
func (l *Loop) Stats() LoopStats {
	l.waitMu.Lock()
	w := l.wait
	l.waitMu.Unlock()
	return LoopStats{Members: len(*l.set.Load()), Turns: l.turns.Load(), Busy: l.busy.Load(), Wait: w}
}

// Run turns until ctx is done, on a locked OS thread (pinned with Pin). A
// Loop runs once at a time: a second Run returns ErrLoopRunning.
func (l *Loop) Run(ctx context.Context) (err error) {
	defer shm.Recover(shm.Guard(), &err) // a member's ring cut: the loop ends, the process lives
	if !l.running.CompareAndSwap(false, true) {
		return ErrLoopRunning
	}
	defer l.running.Store(false)
	unlock, err := idle.LockThread(l.cfg.Pin.cpu())
	if err != nil {
		return err
	}
	defer unlock()
	defer context.AfterFunc(ctx, l.waker.Notify)()
	var watched *[]member
	for ctx.Err() == nil {
		l.idler.Round()
		busy, d, now := l.turn(&watched)
		if busy {
			l.idler.Busy(now)
			continue
		}
		l.idler.IdleAt(now, d) // the turn's clock: no second read
		if l.turns.Load()%waitStatsEvery == 0 {
			l.publishWait()
		}
	}
	l.publishWait()
	return nil
}

// turn polls every member once (under turnMu), pointing the Idler at a
// changed set first (watched is the set it watches). It reports whether
// a member found work and, if none did, the longest the loop may sleep,
// and the time it read as it began. Allocation-free unless the set
// changed.
func (l *Loop) turn(watched **[]member) (busy bool, d time.Duration, now time.Time) {
	l.turnMu.Lock()
	defer l.turnMu.Unlock()
	set := l.set.Load()
	if set != *watched {
		l.watch(*set)
		*watched = set
	}
	now = time.Now()
	for _, m := range *set {
		if m.turn(now) {
			busy = true
		}
	}
	l.turns.Add(1)
	if busy {
		l.busy.Add(1)
		return true, 0, now
	}
	d = idleBound
	for _, m := range *set {
		d = min(d, m.due(now))
	}
	return false, max(d, time.Microsecond), now
}

// watch points the Idler at the descriptors of set and remembers the
// members to arm before a sleep.
func (l *Loop) watch(set []member) {
	var fds []int
	l.sleeping = l.sleeping[:0]
	for _, m := range set {
		for _, fd := range m.fds() {
			if !slices.Contains(fds, fd) { // an interface's AF_XDP sockets serve all its mirrors
				fds = append(fds, fd)
			}
		}
		l.sleeping = append(l.sleeping, m)
	}
	l.idler.Watch(fds...)
}

// armSleepers is the Idler's OnSleep: every member prepares for the
// loop's sleep (a server arms its ring watcher).
func (l *Loop) armSleepers(max time.Duration) {
	for _, m := range l.sleeping {
		m.sleep(max)
	}
	l.publishWait()
}

// pending is the Idler's OnPending: a member of the set the loop last
// turned through has work no descriptor shows.
func (l *Loop) pending() bool {
	for _, m := range l.sleeping {
		if m.pending() {
			return true
		}
	}
	return false
}

// publishWait copies the Idler's counts for Stats (Run's goroutine).
func (l *Loop) publishWait() {
	st := l.idler.Stats()
	l.waitMu.Lock()
	l.wait = st
	l.waitMu.Unlock()
}

// add puts m in the loop's set.
func (l *Loop) add(m member) {
	l.mu.Lock()
	set := append(slices.Clone(*l.set.Load()), m)
	l.set.Store(&set)
	l.mu.Unlock()
	l.waker.Notify()
}

// remove takes m out of the set and returns once no turn of it is under
// way: from then on the loop's thread never touches m.
func (l *Loop) remove(m member) {
	l.mu.Lock()
	set := slices.DeleteFunc(slices.Clone(*l.set.Load()), func(x member) bool { return x == m })
	l.set.Store(&set)
	l.mu.Unlock()
	l.waker.Notify()
	l.turnMu.Lock()
	l.turnMu.Unlock()
}

// Close releases the Loop's eventfd, once Run has returned; a member's
// late notification then does nothing. A closed Loop does not run again.
func (l *Loop) Close() error {
	if !l.running.CompareAndSwap(false, true) { // Run is under way, or Close was called
		return ErrLoopRunning
	}
	return l.waker.Close()
}

// notify wakes the loop if it sleeps (a mirror's TCP reader, a shared
// transport's arrival, a ring watcher).
func (l *Loop) notify() { l.waker.Notify() }
