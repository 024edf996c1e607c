package replica

import (
	"context"
	"errors"
	"time"

	"github.com/ringfire/ringfire/internal/trace"
	"github.com/ringfire/ringfire/replica/wire"
)

// sendRange sends records from..to over the session's TCP connection in
// DATA frames of up to 64 KiB (a larger single blob gets a frame of its
// own), at most about burstBytes per call, and returns the next sequence
// to send. Records the ring no longer holds become a GAP frame naming the
// next record that will come. nak marks the answer to a NAK. write sends
// frames (ss.write; sendDirect's writeDirect).
func (ss *session) sendRange(f *feed, buf []byte, from, to uint64, nak bool, write func([]byte, bool) error) ([]byte, uint64, error) {
	return ss.sendPaced(f, buf, from, to, nak, write, nil, nil)
}

// sendPaced is sendRange with the DATA frames paid for by p, the repair
// budget (nil: not paced). When the budget cannot pay for the next frame
// soon enough, it flushes what went before and returns errRepairLater
// with the sequence that frame would have started at. Records the ring
// lost come from the history when the session serves it (history.go),
// through hs, the calling goroutine's way to it (nil on a hot thread: it
// returns errDeferred there, for the writer).
func (ss *session) sendPaced(f *feed, buf []byte, from, to uint64, nak bool, write func([]byte, bool) error, p *pacer, hs *histSession) ([]byte, uint64, error) {
	s := ss.srv
	seq, sentBytes := from, 0
	for seq <= to && sentBytes < burstBytes {
		var count int
		var why stop
		buf, count, why = f.fill(buf[:0], seq, to, tcpFrameMax+wire.HeaderSize, 0xFFFF)
		if why == stopTooBig {
			buf, count, why = f.fill(buf[:0], seq, to, f.recordSize(seq)+wire.HeaderSize, 1)
		}
		if count > 0 {
			if !p.take(len(buf)) {
				if err := write(nil, true); err != nil {
					return buf, seq, err
				}
				return buf, seq, errRepairLater
			}
			// sent first: the mirror may apply the frame and report it in
			// a STATUS (checked against sent) before write returns.
			storeMax(&ss.sent, seq+uint64(count)-1)
			if err := write(buf, false); err != nil {
				return buf, seq, err
			}
			p.sent(len(buf))
			seq += uint64(count)
			sentBytes += len(buf)
			s.st.tcpFrames.Add(1)
			s.st.tcpRecords.Add(uint64(count))
			if nak {
				s.st.retrans.Add(uint64(count))
			}
		}
		switch why {
		case stopCaughtUp:
			return buf, seq, write(nil, true)
		case stopLost:
			// Name the next record of this range, never one past it:
			// what lies beyond was not asked for, and a mirror may hold it.
			next := min(f.skipLost(seq, to), to+1)
			if ss.history && next > seq {
				var n int
				var err error
				buf, seq, next, n, err = ss.fromHistory(hs, f, buf, seq, next, nak, write, burstBytes-sentBytes)
				sentBytes += n
				if err != nil || seq == next {
					if err != nil {
						return buf, seq, err
					}
					continue // the ring, or the history, goes on from seq
				}
			}
			var b [wire.HeaderSize]byte
			wire.Header{Kind: wire.KindGap, Seq: next}.Put(b[:])
			storeMax(&ss.sent, next-1) // before the write, as for DATA
			if err := write(b[:], false); err != nil {
				return buf, seq, err
			}
			s.st.gaps.Add(1)
			s.st.gapRecords.Add(next - seq)
			seq = next
		}
	}
	return buf, seq, write(nil, true)
}

// writeLoop streams the catch-up and live records over TCP as the mode asks,
// and keeps the connection alive with heartbeats; in a graceful stop it
// finishes the session (finish).
func (ss *session) writeLoop(ctx context.Context) error {
	s := ss.srv
	defer ss.owner.Store(ownerGone) // from ownerWriter: no sender holds it
	// The catch-up, the records the ring holds now, is paid for by the
	// repair budget; what comes after is live, never paced.
	histEnd := s.ring.WriteSeq()
	hist := s.repairPacer(ss.peer, true, func(d time.Duration) { ss.sleep(ctx, d, false) })
	defer hist.release()
	// Records from the History are repair wherever they fall: the catch-up's budget.
	ss.hist = ss.newHistSession(ctx, hist)
	for ctx.Err() == nil {
		select {
		case <-s.stop.begun:
			return ss.finish(ctx)
		default:
		}
		if err := ss.reportIfAsked(); err != nil {
			return err
		}
		mode := ss.mode.Load()
		if mode == modeLive {
			ss.sleep(ctx, max(time.Until(time.Unix(0, ss.lastWrite.Load()).Add(tcpHeartbeat)), time.Millisecond), false)
			if err := ss.heartbeatIfIdle(s.sentDone.Load()); err != nil {
				return err
			}
			continue
		}
		w := s.ring.WriteSeq()
		seen := w
		if e := ss.catchUpEnd.Load(); mode == modeCatchUp && e != 0 {
			w = min(w, e-1) // the history ends where the datagrams took over
		}
		if ss.cursor <= w {
			to, p := w, (*pacer)(nil)
			if ss.cursor <= histEnd {
				to, p = min(w, histEnd), hist
			}
			trace.Stamp(trace.Sending, ss.cursor)
			var err error
			ss.buf, ss.cursor, err = ss.sendPaced(ss.feed, ss.buf, ss.cursor, to, false, ss.writeFrames, p, ss.hist)
			if errors.Is(err, errRepairLater) {
				ss.sleep(ctx, repairQueue, false) // the budget refills; the mirror hears a heartbeat
				err = ss.heartbeatIfIdle(ss.sent.Load())
			} else if err == nil {
				trace.Stamp(trace.Sent, ss.cursor-1)
			}
			if err != nil && (ctx.Err() == nil || !errors.Is(err, ctx.Err())) {
				return err // a history read the session's end cut short ends the loop below
			}
			continue
		}
		if mode == modeCatchUp && ss.catchUpDone() {
			continue
		}
		if err := ss.heartbeatIfIdle(ss.sent.Load()); err != nil {
			return err
		}
		wait := tcpHeartbeat
		if mode == modeCatchUp {
			wait = time.Millisecond
		}
		if mode == modeStream && ss.rawc != nil {
			if err := ss.park(ctx, wait, seen); err != nil {
				return err
			}
			continue
		}
		ss.sleepFor(ctx, wait, seen)
	}
	return nil
}

// sleepFor is sleep with the sender's wake-up, for records after seen
// (write_seq when the writer last looked): it counts itself in
// s.listening, so that the sender kicks the relay, then returns at once
// if records came before the count could tell the sender.
func (ss *session) sleepFor(ctx context.Context, d time.Duration, seen uint64) {
	s := ss.srv
	s.listening.Add(1)
	defer s.listening.Add(-1)
	if s.ring.WriteSeq() != seen {
		return
	}
	ss.sleep(ctx, d, true)
}

// sleep waits at most d: for the wake channel (with wake: the sender's
// wake-up, or in a graceful stop the reader's), ctx, or the beginning of a
// graceful stop. Sessions never block in a futex system call: that would
// hold an OS thread per mirror.
func (ss *session) sleep(ctx context.Context, d time.Duration, wake bool) {
	var w, stop <-chan struct{}
	if wake {
		w = ss.wake
	}
	if !ss.finishing {
		stop = ss.srv.stop.begun
	}
	if ss.timer == nil {
		ss.timer = time.NewTimer(d)
	} else {
		ss.timer.Reset(d)
	}
	select {
	case <-w:
	case <-ss.ask:
	case <-ss.timer.C:
	case <-ctx.Done():
	case <-stop:
	}
	ss.timer.Stop()
}

// reportIfAsked sends REPORT when an AwaitApplied asked for a later
// sequence than the last REPORT did (writer goroutine).
func (ss *session) reportIfAsked() error {
	seq := ss.askFor.Load()
	if seq <= ss.asked {
		return nil
	}
	ss.asked = seq
	var b [wire.HeaderSize]byte
	return ss.write(wire.AppendReport(b[:0], seq), true)
}

// askReport asks the session's mirror, if it reports on ask, for a STATUS
// once seq is applied (any goroutine; the writer sends the REPORT).
func (ss *session) askReport(seq uint64) {
	if !ss.reportOnAsk || seq <= ss.askFor.Load() {
		return // asked already: not every change an AwaitApplied wakes for wakes the writer
	}
	storeMax(&ss.askFor, seq)
	select {
	case ss.ask <- struct{}{}:
	default:
	}
}

// catchUpDone ends the catch-up once TCP has covered everything the
// datagram stream sent before this mirror was in it; a unicast mirror that
// never punched is served over TCP instead.
func (ss *session) catchUpDone() bool {
	s := ss.srv
	if ss.unicast.Load() && ss.punched.Load() == nil {
		if time.Since(ss.born) > s.cfg.PunchTimeout {
			ss.mode.Store(modeStream)
			ss.wentLive()
			s.event(EventNoPunch, ss.tcp, nil)
		}
		return false
	}
	end := s.lastSent.Load()
	if e := ss.catchUpEnd.Load(); e != 0 {
		end = e - 1
	}
	if ss.cursor <= end {
		return false
	}
	ss.mode.Store(modeLive)
	ss.wentLive()
	ss.heartbeat(ss.cursor - 1)
	return true
}

func (ss *session) heartbeatIfIdle(seq uint64) error {
	if time.Since(time.Unix(0, ss.lastWrite.Load())) < tcpHeartbeat {
		return nil
	}
	return ss.heartbeat(seq)
}

func (ss *session) heartbeat(seq uint64) error {
	var b [wire.HeaderSize]byte
	wire.Header{Kind: wire.KindHeartbeat, Seq: seq}.Put(b[:])
	ss.srv.st.heartbeats.Add(1)
	return ss.write(b[:], true)
}

// write sends one or more whole frames, flushing when asked. A write
// waits at most writeTimeout, and never past a graceful stop's deadline.
func (ss *session) write(frames []byte, flush bool) error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	dl := time.Now().Add(writeTimeout)
	if by := ss.srv.stop.deadline(); !by.IsZero() && by.Before(dl) {
		dl = by
	}
	ss.tcp.SetWriteDeadline(dl)
	if _, err := ss.bw.Write(frames); err != nil {
		return err
	}
	ss.lastWrite.Store(time.Now().UnixNano())
	if flush {
		return ss.bw.Flush()
	}
	return nil
}
