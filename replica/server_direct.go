package replica

import (
	"context"
	"errors"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/internal/trace"
)

// A TCP-only (stream) session's writer, once caught up, hands its stream
// to the hot threads that see records come (the sender, Handoff, a Loop's
// server member) while it sleeps: they write the new records' frames on
// the connection themselves (sendDirect), with a non-blocking write(2),
// and the writer is not woken. That removes the relay's and the writer's
// wake-ups from a same-host mirror's path. Only a plain TCP or Unix
// stream connection can be written so (a TLS one needs its goroutine).
//
// owner says who owns the stream state (cursor, feed, buf): stored and
// compared-and-swapped by the writer and the senders (sync/atomic, which
// orders the plain fields it hands over).
//
//	ownerWriter  the writer goroutine (its loop runs)
//	ownerParked  the writer sleeps: a sender may take it (CAS to ownerSender)
//	ownerSender  a sender writes frames; it stores ownerParked when done
//	ownerGone    the writer has returned: nobody sends
const (
	ownerWriter uint32 = iota
	ownerParked
	ownerSender
	ownerGone
)

// errDeferred stops a direct send: what is left goes to the writer.
var errDeferred = errors.New("replica: left to the session writer")

// directConn prepares ss for direct sends when its connection is plain
// TCP or a Unix stream (raw is a socket under the prefix reader).
func (ss *session) directConn() {
	tc, ok := plainSocket(ss.raw)
	if _, plain := ss.tcp.(*prefixConn); !ok || !plain {
		return
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return
	}
	ss.rawc = rc
	ss.rawWrite = func(fd uintptr) bool {
		for {
			ss.wn, ss.werr = unix.Write(int(fd), ss.wdata)
			if ss.werr != unix.EINTR {
				return true
			}
		}
	}
}

// directPasses bounds how many sends one sendDirect makes for records
// that keep coming while it sends; past it, the writer is woken.
const directPasses = 4

// sendDirect sends a parked stream writer's new records from the calling
// hot thread, never waiting, and reports whether the writer must run:
// records are left (more than a burst, a frame larger than bw's room, or
// still coming after directPasses), bw holds what the socket did not
// take, or the lock was held.
func (ss *session) sendDirect() (writerNeeded bool) {
	if !ss.take() {
		return false // the writer runs, or another sender holds the stream
	}
	return ss.giveBack(ss.sendHeld(), directPasses-1)
}

// take takes a parked writer's stream (ownerParked to ownerSender).
func (ss *session) take() bool {
	return ss.owner.Load() == ownerParked && ss.owner.CompareAndSwap(ownerParked, ownerSender)
}

// giveBack returns a taken stream after a send (need: the writer must
// run). Another sender that found the stream taken returned without
// sending, so unless the writer is needed giveBack looks at write_seq
// again and, for records that came meanwhile, takes the stream and sends
// again, at most passes more times. That sender stored write_seq before it
// loaded owner, and this one stores owner before it loads write_seq: one of
// them sees the other.
func (ss *session) giveBack(need bool, passes int) bool {
	next := ss.cursor // read while it is ours: once given back, the writer may take it
	ss.owner.Store(ownerParked)
	switch {
	case need || ss.srv.ring.WriteSeq() < next:
		return need
	case passes == 0:
		return true
	case !ss.take():
		return false // the writer took it: it sends them
	}
	return ss.giveBack(ss.sendHeld(), passes-1)
}

// sendHeld sends with the stream taken (ownerSender).
func (ss *session) sendHeld() (writerNeeded bool) {
	if !ss.mu.TryLock() {
		return true
	}
	defer ss.mu.Unlock()
	w := ss.srv.ring.WriteSeq()
	if ss.cursor > w {
		return ss.bw.Buffered() > 0
	}
	from := ss.cursor
	trace.Stamp(trace.Sending, from)
	var err error
	ss.buf, ss.cursor, err = ss.sendRange(ss.feed, ss.buf, ss.cursor, w, false, ss.writeDirectFrames)
	if ss.cursor > from {
		ss.srv.directSends.Add(1)
		trace.Stamp(trace.Sent, ss.cursor-1)
	}
	return err != nil || ss.cursor <= w || ss.bw.Buffered() > 0
}

// writeDirect is sendRange's write for sendDirect (under mu): frames go to
// the socket with one non-blocking write(2); what it does not take goes
// into bw, for the writer to flush. It never writes past bytes already in
// bw, and never starts a frame that bw could not hold the rest of.
func (ss *session) writeDirect(frames []byte, _ bool) error {
	if len(frames) == 0 {
		return nil // a flush: nothing is held back but what bw holds
	}
	if ss.bw.Buffered() > 0 || len(frames) > ss.bw.Available() {
		return errDeferred
	}
	ss.wdata = frames
	err := ss.rawc.Write(ss.rawWrite)
	ss.wdata = nil
	if err != nil {
		return err // closed
	}
	if h := ss.srv.afterDirectWrite; h != nil {
		h()
	}
	switch {
	case ss.werr == unix.EAGAIN:
		ss.wn = 0
	case ss.werr != nil:
		return os.NewSyscallError("write", ss.werr)
	}
	if ss.wn < len(frames) {
		ss.bw.Write(frames[ss.wn:]) // fits: checked above, so bw makes no call
	}
	ss.lastWrite.Store(time.Now().UnixNano())
	return nil
}

// park hands the stream to the senders while the writer sleeps up to d
// (unless records came after seen), takes it back, and flushes what a
// sender left in bw.
func (ss *session) park(ctx context.Context, d time.Duration, seen uint64) error {
	ss.owner.Store(ownerParked)
	if ss.srv.ring.WriteSeq() == seen {
		ss.sleep(ctx, d, true)
	}
	for !ss.owner.CompareAndSwap(ownerParked, ownerWriter) {
		runtime.Gosched() // a sender is writing frames: non-blocking write(2)s, never a wait
	}
	ss.mu.Lock()
	n := ss.bw.Buffered()
	ss.mu.Unlock()
	if n == 0 {
		return nil
	}
	return ss.write(nil, true)
}

// directWrites is a parked writer's part of wakeSessions: every direct
// session's new records go out from the caller's thread. It reports
// whether some writer must be woken.
func (s *Server) directWrites() bool {
	need := false
	for _, ss := range *s.streams.Load() {
		if ss.sendDirect() {
			need = true
		}
	}
	return need
}
