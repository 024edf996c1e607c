package replica

import (
	"fmt"
	"time"

	"github.com/ringfire/ringfire/internal/idle"
)

// The mirror's hot loop (Run) waits with an idle.Idler when a step found
// nothing, as MirrorConfig.Wait says: spin polls again, yield calls
// sched_yield between polls, block parks in ppoll on the transport's
// descriptors (Pollable) and the mirror's Waker, and adaptive yields for
// idle.DefaultYieldFor after the last work, then parks (it does not
// spin: idle.DefaultSpinFor is 0). Who wakes a parked loop:
//
//	a datagram         the kernel makes a transport descriptor readable
//	a TCP frame        conn.readLoop queues it, then notify (Waker.Notify);
//	                   direct (tcpReader): the kernel makes the socket
//	                   readable
//	a shared AF_XDP    the transport that drained it queues it in ours,
//	  socket's frame   then calls what OnArrival gave it (Waker.Notify)
//	ctx done           context.AfterFunc calls Waker.Notify
//	a deadline         the sleep's bound (nextDue: NAK repeat, punch,
//	                   STATUS)

// idleBound is the longest sleep when nothing is due: the loop then
// refreshes its statistics and looks again.
const idleBound = 100 * time.Millisecond

// newWaiting makes the Waker and the Idler of Run's loop (NewMirror):
// fixed for the mirror's life, so the TCP reader and the transports may
// notify from the first connection on, whether or not Run drives it.
func (m *Mirror) newWaiting() error {
	if l := m.cfg.Loop; l != nil { // the Loop waits: wake it
		m.waker = l.waker
		m.idler = idle.NewIdler(idle.Strategy{Mode: l.cfg.Wait}, nil) // never sleeps: Run steps non-Pollable transports in RecvBatch
		return nil
	}
	w, err := idle.NewWaker()
	if err != nil {
		return fmt.Errorf("replica: mirror: %w", err)
	}
	m.waker = w
	m.idler = idle.NewIdler(idle.Strategy{Mode: m.cfg.Wait}, w)
	m.idler.OnPending(m.queued)
	return nil
}

// queued reports whether the TCP reader has queued a frame, which no
// descriptor of the loop shows (the reader notifies the Waker after
// queueing): the Idler's OnPending. A sleep that ran to its bound with
// one queued lost its wake-up (WaitStats.PendingSleeps). The reader's
// error is not counted: drainTCP keeps it in errc once handled, so it
// stays there while the connection ends, and is no work to wake for.
func (m *Mirror) queued() bool {
	c := m.c
	return c != nil && len(c.frames) > 0
}

// notify wakes Run's loop (a no-op while it does not sleep).
func (m *Mirror) notify() { m.waker.Notify() }

// watch points Run's waiting at connection c: its transport's descriptors
// (none without datagrams), or, for a transport that is not Pollable,
// nothing: steps then wait in RecvBatch (pollable false).
func (m *Mirror) watch(c *conn) {
	m.pollable = true
	if c.udp == nil {
		if c.direct != nil {
			m.idler.Watch(c.direct.fd)
		} else {
			m.idler.Watch()
		}
		return
	}
	p, ok := c.udp.(Pollable)
	if !ok {
		m.pollable = false
		return
	}
	m.idler.Watch(p.PollFDs()...)
}

// nextDue bounds a sleep of the loop by the next thing it must do without
// anything arriving: repeat an unanswered NAK, punch, report STATUS.
func (m *Mirror) nextDue(c *conn, now time.Time) time.Duration {
	d := idleBound
	if m.seq != nil && (m.seq.nakOut || len(m.seq.held) > 0) {
		d = min(d, NakRepeat)
	}
	if m.seq != nil {
		d = min(d, m.seq.windowLeft(now)) // a hole's NAK after the line window
	}
	if c.udp != nil && c.mc.Unicast() {
		interval := punchEvery
		if m.stats.Datagrams == 0 {
			interval = punchEarly
		}
		d = min(d, m.lastPunch.Add(interval).Sub(now))
	}
	if c.telemetry {
		d = min(d, c.lastStatus.Add(m.cfg.StatusInterval).Sub(now))
	}
	return max(d, time.Microsecond)
}

// idleRound is one round of Run's loop on connection c: step without
// waiting, then, if nothing came, wait as the strategy says.
func (m *Mirror) idleRound(c *conn) error {
	if !m.pollable {
		_, _, err := m.step(m.recvWait())
		return err
	}
	m.idler.Round()
	n, now, err := m.step(0)
	if err != nil {
		return err
	}
	if n > 0 {
		m.idler.Busy(now)
		m.dirty = true
		return nil
	}
	if m.dirty { // the burst is over: make its counters visible before sleeping
		m.publishStats(now)
		m.dirty = false
	}
	m.idler.IdleAt(now, m.nextDue(c, now))
	return nil
}

// recvWait is how long a step waits in RecvBatch for a transport that
// is not Pollable.
func (m *Mirror) recvWait() time.Duration {
	if m.cfg.Wait == WaitSpin || m.cfg.Wait == WaitYield {
		return 0
	}
	return time.Millisecond
}
