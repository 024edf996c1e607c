package replica

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ringfire/ringfire/replica/wire"
)

// readLoop reads the mirror's frames: NAKs, answered from the ring, and
// STATUS frames, applied to the table of mirrors.
func (ss *session) readLoop(ctx context.Context, br *bufio.Reader) error {
	defer ss.srv.guardRing(guard()) // NAKs are answered from the ring
	nf := newFeed(ss.srv.ring)
	buf := make([]byte, 0, tcpFrameMax+wire.HeaderSize)
	var answered uint64 // last record answered (DATA or GAP) on this connection
	maxLen := 64
	if ss.telemetry {
		maxLen = wire.StatusSize
		if ss.lines {
			maxLen = wire.StatusLinesSize // two lines' counters (status_lines.go)
		}
	}
	in := make([]byte, maxLen) // every frame's payload, in turn
	pace := ss.srv.repairPacer(ss.peer, false, ss.pause)
	defer pace.release()
	hs := ss.newHistSession(ctx, pace)
	for {
		h, p, err := readFrameInto(br, maxLen, in)
		if err != nil {
			if errors.Is(err, ErrPeerClosed) {
				return nil // the mirror hung up between frames
			}
			return err
		}
		if h.Kind == wire.KindStatus && ss.telemetry {
			if err := ss.status(h, p); err != nil {
				return err
			}
			ss.stopWake()
			continue
		}
		if h.Kind != wire.KindNak {
			return fmt.Errorf("%w: unexpected %v from a mirror", wire.ErrMalformed, h.Kind)
		}
		first, last, err := wire.ParseNak(h, p)
		if err != nil {
			return err
		}
		if sent := ss.maxSent(); last > sent {
			return fmt.Errorf("%w: NAK %d..%d for records never sent (last sent %d)", wire.ErrMalformed, first, last, sent)
		}
		if ss.shut.Load() {
			continue // a graceful stop closed our side: nothing can go out
		}
		ss.srv.st.naks.Add(1)
		// TCP delivers what was answered before, in order: a NAK repeated
		// while that answer is on its way only needs what lies beyond it.
		// The repair budget paces the answer; what it cannot pay for soon
		// is left for the mirror's repeat of the NAK.
		for seq := max(first, answered+1); seq <= last; {
			from := seq
			buf, seq, err = ss.sendPaced(nf, buf, seq, last, true, ss.writeFrames, pace, hs)
			if seq > from {
				answered = seq - 1
			}
			if errors.Is(err, errRepairLater) {
				break
			}
			if err != nil {
				return err
			}
		}
		pace.endNak()
		ss.stopWake()
	}
}

// pause waits d for the repair budget, or less if a graceful stop begins
// (the reader's pacer).
func (ss *session) pause(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ss.srv.stop.begun:
	}
}

// stopWake wakes the writer in a graceful stop after a NAK was answered or
// a STATUS applied: it may be done waiting.
func (ss *session) stopWake() {
	if ss.srv.stop.by.Load() != 0 {
		ss.poke()
	}
}

// live: the session is past its catch-up (it takes the datagram stream,
// or TCP carries its stream).
func (ss *session) live() bool { return ss.mode.Load() != modeCatchUp }

func (ss *session) maxSent() uint64 {
	sent := ss.sent.Load()
	if ss.mode.Load() != modeStream {
		sent = max(sent, ss.srv.lastSent.Load())
	}
	return sent
}

// status applies a STATUS frame from the session's mirror.
func (ss *session) status(h wire.Header, p []byte) error {
	st, err := wire.ParseStatusAfter(h, p, ss.lastStatus)
	if err != nil {
		return err
	}
	ss.lastStatus = st
	// A mirror applies only records it was sent (on this connection, or
	// before it, up to where it resumed): a STATUS claiming more is forged
	// (it would satisfy Server.AwaitApplied for records nobody has), and
	// ends the session like a NAK for records never sent.
	if sent := max(ss.maxSent(), ss.held); st.Applied > sent {
		return fmt.Errorf("%w: STATUS applied %d, past the last record sent (%d)", wire.ErrMalformed, st.Applied, sent)
	}
	storeMax(&ss.applied, st.Applied)
	ss.srv.tele.status(ss, st, ss.srv.ring.WriteSeq(), time.Now())
	return nil
}
