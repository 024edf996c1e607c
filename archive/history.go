package archive

import (
	"context"
	"errors"
	"io"
	"sync"
)

// History is the archive's records of one ring, for a server to answer
// with what its ring no longer holds (replica.History: serve --archive).
// It reads the epoch whose Source is the served ring's; until the
// recorder has begun one, it holds nothing. Safe for concurrent use.
type History struct {
	r   *Reader
	src Source

	mu    sync.Mutex
	epoch uint64 // 0: not found yet
}

// History returns the archive's history of the ring src.
func (r *Reader) History(src Source) *History { return &History{r: r, src: src} }

// find returns the epoch recording src (0 when there is none yet). An
// epoch's source never changes, so once found it is kept.
func (h *History) find() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.epoch != 0 {
		return h.epoch
	}
	eps, err := h.r.Epochs()
	if err != nil {
		return 0
	}
	for i := len(eps) - 1; i >= 0; i-- {
		if eps[i].Source.Same(h.src) {
			h.epoch = eps[i].Epoch
			break
		}
	}
	return h.epoch
}

// Range returns the first and last sequences held for the ring now.
func (h *History) Range() (first, last uint64, ok bool) {
	ep := h.find()
	if ep == 0 {
		return 0, 0, false
	}
	segs, err := h.r.epochSegments(ep)
	if err != nil {
		return 0, 0, false
	}
	x, err := h.r.index(segs[len(segs)-1])
	if err != nil || x.last < segs[0].first {
		return 0, 0, false
	}
	return segs[0].first, x.last, true
}

// Read calls fn with each record from sequence from on, in order, up to
// and including to, while fn returns true: rec is valid only during the
// call. The first record delivered is the first held at or after from
// (past a gap, or what retention removed, that from falls in); a later
// gap, or the end of what is written, ends it. It returns the sequence
// after the last record delivered (from when none was).
func (h *History) Read(ctx context.Context, from, to uint64, fn func(seq uint64, rec []byte) bool) (uint64, error) {
	ep := h.find()
	if ep == 0 || from > to {
		return from, nil
	}
	c, err := h.r.Seek(ep, from)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return from, nil
		}
		return from, err
	}
	defer c.Close()
	next, started := from, false
	for ctx.Err() == nil {
		e, err := c.Next()
		switch {
		case errors.Is(err, io.EOF):
			return next, nil
		case err != nil:
			return next, err
		case e.Kind == KindGap && !started:
			continue // the hole from falls in: start after it
		case e.Kind == KindGap, started && e.Seq != next, e.Seq > to:
			return next, nil
		}
		if !fn(e.Seq, e.Rec) {
			return next, nil
		}
		next, started = e.Seq+1, true
	}
	return next, ctx.Err()
}
