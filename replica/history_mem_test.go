package replica_test

// memHistory: an in-memory replica.History for the tests, filled by a
// recorder hooked on the source's pushes.

import (
	"bufio"
	"context"
	"errors"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/synth"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/replica/wire"
)

// memHistory holds records by sequence, first..last with the holes the
// test cut (skip); Range grows as the recorder adds.
type memHistory struct {
	mu          sync.Mutex
	recs        map[uint64][]byte
	first, last uint64 // 0: none
	skip        func(seq uint64) bool
	// failAt (0: never): Read fails once it would deliver record failAt;
	// fails counts those failures.
	failAt uint64
	fails  int
	reads  int
	// badAt (0: never): record badAt is delivered one byte short.
	badAt uint64
	// strict: a Read from a sequence not held delivers nothing, where
	// replica.History asks it to start at the next record held (the
	// session must cope with both).
	strict bool
	// readers: the goroutines Read ran on (their ids).
	readers map[uint64]bool
}

var errHistoryBroken = errors.New("test history: disk on fire")

func newMemHistory() *memHistory { return &memHistory{recs: map[uint64][]byte{}} }

// add records seq (unless the test cut it out).
func (h *memHistory) add(seq uint64, rec []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.skip != nil && h.skip(seq) {
		return
	}
	h.recs[seq] = append([]byte(nil), rec...)
	if h.first == 0 {
		h.first = seq
	}
	h.last = max(h.last, seq)
}

// get returns record seq, if held.
func (h *memHistory) get(seq uint64) ([]byte, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, ok := h.recs[seq]
	return r, ok
}

func (h *memHistory) Range() (uint64, uint64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.first, h.last, h.first != 0
}

// Read delivers the run of records from the first held at or after from,
// as replica.History says; fn runs without the lock.
func (h *memHistory) Read(ctx context.Context, from, to uint64, fn func(uint64, []byte) bool) (uint64, error) {
	h.mu.Lock()
	h.reads++
	if h.readers == nil {
		h.readers = map[uint64]bool{}
	}
	h.readers[goroutineID()] = true
	seq, last := max(from, h.first), h.last
	if h.strict {
		seq = from // nothing held there: nothing delivered
	}
	for seq <= min(to, last) && h.recs[seq] == nil && !h.strict {
		seq++ // from lies in a hole: start after it
	}
	h.mu.Unlock()
	next := from
	for ; seq <= to; seq++ {
		if err := ctx.Err(); err != nil {
			return next, err
		}
		h.mu.Lock()
		rec, ok := h.recs[seq]
		fail := h.failAt != 0 && seq == h.failAt
		if fail {
			h.failAt, h.fails = 0, h.fails+1
		}
		h.mu.Unlock()
		if fail {
			return next, errHistoryBroken
		}
		if !ok {
			break // a hole ends the read
		}
		if seq == h.badAt {
			rec = rec[:len(rec)-1]
		}
		next = seq + 1
		if !fn(seq, rec) {
			break
		}
	}
	return next, nil
}

// retain drops the records before first (retention).
func (h *memHistory) retain(first uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for seq := h.first; seq < first; seq++ {
		delete(h.recs, seq)
	}
	h.first = max(h.first, first)
}

// readOn reports whether Read ran on goroutine id.
func (h *memHistory) readOn(id uint64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.readers[id]
}

// goroutineID is the calling goroutine's id, from its stack's header.
func goroutineID() uint64 {
	var b [64]byte
	s := strings.TrimPrefix(string(b[:runtime.Stack(b[:], false)]), "goroutine ")
	id, _ := strconv.ParseUint(s[:strings.IndexByte(s, ' ')], 10, 64)
	return id
}

// recordInto makes src's pushes go into h too, as a recorder following
// the ring would.
func recordInto(src *source, h *memHistory) {
	src.publish = func(seq uint64) error {
		synth.Fill(src.rec, seq, uint64(time.Now().UnixNano()))
		if _, err := src.w.Push(src.rec); err != nil {
			return err
		}
		h.add(seq, src.rec)
		return nil
	}
}

// withHistory is a ServerConfig tweak serving h.
func withHistory(h replica.History) func(*replica.ServerConfig) {
	return func(c *replica.ServerConfig) { c.History = h }
}

// rawFrames reads whole frames (header and payload) from a raw session.
type rawFrames struct {
	t  *testing.T
	br *bufio.Reader
}

func (r *rawFrames) next() (wire.Header, []byte) {
	r.t.Helper()
	var hb [wire.HeaderSize]byte
	if _, err := io.ReadFull(r.br, hb[:]); err != nil {
		r.t.Fatal(err)
	}
	h, err := wire.ParseHeader(hb[:], 1<<20)
	if err != nil {
		r.t.Fatal(err)
	}
	p := make([]byte, h.Len)
	if _, err := io.ReadFull(r.br, p); err != nil {
		r.t.Fatal(err)
	}
	return h, p
}

// dataUpTo reads the stream's frames until a DATA frame carrying last,
// skipping heartbeats and GAPs (a version-1 stream the ring lapped); any
// other frame fails the test.
func (r *rawFrames) dataUpTo(last uint64) {
	r.t.Helper()
	for {
		h, _ := r.next()
		switch {
		case h.Kind == wire.KindHeartbeat, h.Kind == wire.KindGap:
		case h.Kind == wire.KindData && h.Seq+uint64(h.Count)-1 >= last:
			return
		case h.Kind != wire.KindData:
			r.t.Fatalf("stream: unexpected %+v", h)
		}
	}
}
