package replica

import (
	"context"
	"errors"
	"fmt"

	"github.com/ringfire/ringfire/replica/wire"
	"github.com/ringfire/ringfire/shm"
)

// History is where a server finds records its ring no longer holds: an
// archive of the same ring (same producer incarnation, same sequence
// numbers). Its methods are called from session goroutines, concurrently.
//
// A session serves from it only a mirror that announced HelloHistory
// (ServerConfig.History; the mirror's MirrorConfig.NoHistory turns the
// announcement off): where the ring lost records it sends what History
// holds, in order, over the session's TCP connection, in ordinary DATA
// frames, paid for by the repair budget, then goes back to the ring at
// the first sequence the ring still holds. Only records neither holds
// become a GAP.
type History interface {
	// Range returns the first and last sequences the history holds now for
	// the served ring (ok false when it holds none). last may grow while
	// serving (a recorder appends); first may grow (retention).
	Range() (first, last uint64, ok bool)
	// Read calls fn with each record from seq from on, in order, while fn
	// returns true and records are held, up to and including to: rec is the
	// record's wire bytes (the slot payload, then for blob rings the blob
	// bytes), valid only during the call. A hole in the history (a gap the
	// recorder itself saw) ends Read early. It returns the sequence after
	// the last record delivered (from when none was).
	//
	// The first record delivered is the first the history holds at or
	// after from: when from lies in a hole, Read starts after it (fn sees
	// the record's seq, and the session sends a GAP for exactly the
	// hole); a later hole ends Read.
	Read(ctx context.Context, from, to uint64, fn func(seq uint64, rec []byte) bool) (next uint64, err error)
}

// Errors of a History that the session counts (HistoryStats.Errors) before
// it falls back to a GAP.
var (
	// ErrHistoryRecord: History gave a record whose bytes are not a record
	// of the served ring's shape.
	ErrHistoryRecord = errors.New("replica: history record does not fit the ring")
	// ErrHistoryOrder: History gave a record out of order.
	ErrHistoryOrder = errors.New("replica: history record out of order")
)

// histSession is one session goroutine's way to the server's History:
// the writer's or the reader's (a hot thread has none, and leaves the
// history to the writer).
type histSession struct {
	h    History
	ctx  context.Context
	pace *pacer // the budget the history's frames are paid from (nil: none)
}

// newHistSession returns the goroutine's way to the history, nil when the
// session does not serve it.
func (ss *session) newHistSession(ctx context.Context, pace *pacer) *histSession {
	if !ss.history {
		return nil
	}
	return &histSession{h: ss.srv.cfg.History, ctx: ctx, pace: pace}
}

// historyStart is where a session that serves history starts when its
// mirror asked for want (a sequence, not newest or oldest) and the ring
// would start it at first, later: at want, or at the history's first
// record, when the history holds some of want..first−1.
func (s *Server) historyStart(want, first uint64) uint64 {
	if want == wire.StartNewest || want == wire.StartOldest || want >= first {
		return first
	}
	hf, hl, ok := s.cfg.History.Range()
	if !ok || hf >= first || hl < want || hl < hf {
		return first
	}
	return max(want, hf)
}

// histFrame is a DATA frame of history records being built.
type histFrame struct {
	ss    *session
	hs    *histSession
	buf   []byte // the frame: header, then records
	first uint64 // its first record
	count int
	nak   bool
	write func([]byte, bool) error
	next  uint64 // after the last record written
	sent  int    // bytes written
}

// fromHistory serves records the ring lost, from seq, out of the history,
// toward ringNext (the first the ring held whole when it looked). It
// returns the buffer, the sequence after the last record sent, where a
// GAP from there must lead (that sequence itself when none is due:
// records were sent, and the caller looks at the ring again) and the
// bytes written. errDeferred: a hot thread (hs nil) leaves it to the
// writer; errRepairLater: the budget could not pay.
func (ss *session) fromHistory(hs *histSession, f *feed, buf []byte, seq, ringNext uint64, nak bool,
	write func([]byte, bool) error, budget int) ([]byte, uint64, uint64, int, error) {
	if hs == nil {
		return buf, seq, seq, 0, flushThen(write, errDeferred)
	}
	st := &ss.srv.st
	fr := &histFrame{ss: ss, hs: hs, buf: buf[:0], nak: nak, write: write, next: seq}
	var ferr error
	expect := seq
	fn := func(n uint64, rec []byte) bool {
		switch {
		case n > ringNext-1:
			return false
		case n < expect:
			ferr = fmt.Errorf("%w: %d after %d", ErrHistoryOrder, n, expect-1)
			return false
		case !f.wireRecord(rec):
			ferr = fmt.Errorf("%w: record %d of %d bytes", ErrHistoryRecord, n, len(rec))
			return false
		case n > expect: // a hole in the history: GAP for exactly it
			if ferr = fr.flush(); ferr == nil {
				ferr = fr.gap(n)
			}
			if ferr != nil {
				return false
			}
		}
		if fr.count > 0 && (len(fr.buf)+len(rec) > tcpFrameMax+wire.HeaderSize || fr.count == 0xFFFF) {
			if ferr = fr.flush(); ferr != nil {
				return false
			}
		}
		fr.add(n, rec)
		expect = n + 1
		return fr.sent < budget
	}
	_, err := hs.h.Read(hs.ctx, seq, ringNext-1, fn)
	st.histReads.Add(1)
	bad := errors.Is(ferr, ErrHistoryOrder) || errors.Is(ferr, ErrHistoryRecord)
	if ferr == nil || bad { // what was read before goes out
		if e := fr.flush(); e != nil {
			ferr, bad = e, false
		}
	}
	switch {
	case ferr != nil && !bad:
		return fr.buf, fr.next, fr.next, fr.sent, flushThen(write, ferr) // the connection's, or the budget's
	case hs.ctx.Err() != nil:
		return fr.buf, fr.next, fr.next, fr.sent, hs.ctx.Err()
	case bad || err != nil:
		st.histErrors.Add(1) // GAP what is left: the ring's records come next
		return fr.buf, fr.next, ringNext, fr.sent, nil
	case fr.next > seq:
		return fr.buf, fr.next, fr.next, fr.sent, nil
	}
	return fr.buf, seq, hs.resume(seq, ringNext), 0, nil
}

// resume is where a GAP from seq leads when the history gave nothing at
// seq: its first record, when retention moved it past seq and the ring
// does not hold it, else ringNext.
func (hs *histSession) resume(seq, ringNext uint64) uint64 {
	if hf, hl, ok := hs.h.Range(); ok && hf > seq && hf < ringNext && hl >= hf {
		return hf
	}
	return ringNext
}

// flushThen flushes what write holds, then returns err (the flush's error
// if it failed).
func flushThen(write func([]byte, bool) error, err error) error {
	if ferr := write(nil, true); ferr != nil {
		return ferr
	}
	return err
}

// noHeader is the room a frame's header takes until flush writes it.
var noHeader [wire.HeaderSize]byte

// add appends record n to the frame (its first when empty).
func (fr *histFrame) add(n uint64, rec []byte) {
	if fr.count == 0 {
		fr.first = n
		fr.buf = append(fr.buf[:0], noHeader[:]...)
	}
	fr.buf = append(fr.buf, rec...)
	fr.count++
}

// flush writes the frame built, paid for by the budget.
func (fr *histFrame) flush() error {
	if fr.count == 0 {
		return nil
	}
	ss, n := fr.ss, len(fr.buf)
	wire.Header{Kind: wire.KindData, Count: uint16(fr.count), Len: uint32(n - wire.HeaderSize), Seq: fr.first}.Put(fr.buf)
	if !fr.hs.pace.take(n) {
		return errRepairLater
	}
	last := fr.first + uint64(fr.count) - 1
	storeMax(&ss.sent, last) // before the write, as sendPaced does
	if err := fr.write(fr.buf, false); err != nil {
		return err
	}
	fr.hs.pace.sent(n)
	st := &ss.srv.st
	st.tcpFrames.Add(1)
	st.tcpRecords.Add(uint64(fr.count))
	st.histRecords.Add(uint64(fr.count))
	st.histBytes.Add(uint64(n))
	if fr.nak {
		st.retrans.Add(uint64(fr.count))
	}
	fr.next, fr.sent, fr.count = last+1, fr.sent+n, 0
	fr.buf = fr.buf[:0]
	return nil
}

// gap sends a GAP from fr.next to n: a hole of the history.
func (fr *histFrame) gap(n uint64) error {
	var b [wire.HeaderSize]byte
	wire.Header{Kind: wire.KindGap, Seq: n}.Put(b[:])
	storeMax(&fr.ss.sent, n-1)
	if err := fr.write(b[:], false); err != nil {
		return err
	}
	st := &fr.ss.srv.st
	st.gaps.Add(1)
	st.gapRecords.Add(n - fr.next)
	fr.next = n
	return nil
}

// wireRecord reports whether rec is one record of the ring's shape on the
// wire: the slot payload, then exactly the blob bytes its descriptor
// announces (never more than the arena).
func (f *feed) wireRecord(rec []byte) bool {
	sh := f.shape
	if !sh.Blob() {
		return len(rec) == sh.Payload
	}
	if len(rec) < sh.Payload {
		return false
	}
	n := uint64(shm.DecodeDescriptor(rec[:sh.Payload]).Len)
	return n <= sh.Arena && n == uint64(len(rec)-sh.Payload)
}
