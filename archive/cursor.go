package archive

import (
	"errors"
	"fmt"
	"io"
	"runtime/debug"
)

// Cursor iterates over the entries of one epoch, in sequence order, from
// where a seek put it. At the end of what is written, Next returns io.EOF
// and keeps its place: a later Next returns what a writer appended since
// (also across the segments it starts).
//
// It goes from one segment to the next by name (the next one's first
// sequence follows the last entry read), never by listing the directory:
// a listing made while the writer creates and renames files may miss one.
type Cursor struct {
	r     *Reader
	epoch uint64
	seg   segment // the segment being read; sealed as last seen
	last  uint64  // the Last of the last entry read in seg (seg.first-1 before one)
	d     dataFile
	sc    *scanner
	// mapped is d when it is a mapping (a sealed plain segment), nil
	// otherwise.
	mapped *mappedFile
	// The seek's target: entries before it are skipped.
	skipSeq  uint64
	skipTime int64
	// reread is set while the end of an unsealed segment is read again
	// (advance), before its index is looked for.
	reread bool
}

// Epoch is the epoch the cursor reads.
func (c *Cursor) Epoch() uint64 { return c.epoch }

// open starts reading segment s at data offset off; whole asks for a
// mapping (see openData).
func (c *Cursor) open(s segment, off int64, whole bool) error {
	if c.d != nil {
		c.d.Close()
		c.d = nil
	}
	var x *index
	if s.sealed {
		var err error
		if x, err = c.r.index(s); err != nil {
			return err
		}
	}
	d, err := c.openData(s, x, whole)
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	h, err := readHeader(d)
	if err != nil {
		d.Close()
		return fmt.Errorf("archive: %s: %w", s.data(), err)
	}
	c.seg, c.last = s, s.first-1
	if c.sc != nil {
		c.sc.release()
	}
	c.d, c.sc = d, newScanner(d, h.Source.Geometry, off)
	return nil
}

// openData opens the data of s: mapped when s is sealed and plain (it
// changes no more) and the cursor reads it whole, from its start on (a
// cursor that went on from the segment before); read through a buffer
// otherwise. A seek reads at most 64 KiB and an entry of a segment: a
// read(2) of that size reads no more than that ahead, where the first
// fault in a mapping reads the disk's whole read-ahead window around it
// (read_ahead_kb, 8 MiB on this machine kind's disk: a cold seek took
// 10 ms at p99 in the bench's archive section that way).
func (c *Cursor) openData(s segment, x *index, whole bool) (dataFile, error) {
	c.mapped = nil
	if whole && s.sealed && !s.compressed && x != nil && x.blockSize == 0 {
		if m, err := mapSegment(s); err == nil {
			c.mapped = m
			return m, nil
		}
	}
	return openData(s, x, &c.r.st)
}

// Next returns the next entry: e.Rec is valid until the next call.
// io.EOF: nothing more is written yet. An error wrapping ErrCorrupt names
// the segment and offset of bytes no writer made, or a segment file cut
// under the cursor's mapping.
func (c *Cursor) Next() (e Entry, err error) {
	if c.sc == nil {
		return Entry{}, ErrClosed
	}
	if c.mapped != nil {
		defer c.guard(debug.SetPanicOnFault(true), &err)
	}
	for {
		e, _, err := c.sc.next()
		if err == nil {
			c.reread, c.last = false, e.Last
			if e.Last < c.skipSeq || e.Time < c.skipTime {
				continue
			}
			e.Epoch = c.epoch
			return *e, nil
		}
		if !errors.Is(err, io.EOF) && !errors.Is(err, errTorn) {
			return Entry{}, err
		}
		more, rerr := c.advance(err)
		if rerr != nil || !more {
			return Entry{}, rerr
		}
	}
}

// advance handles the end of the segment's data (end: clean, or torn).
// An unsealed segment may be being written: its end is read once more
// (written since?); then, still without an index, io.EOF, the place
// kept; sealed since, its end is read again, whole now. A sealed
// segment is finished: torn is corruption, a clean end moves on to the
// segment that starts after its last entry, if there is one yet.
func (c *Cursor) advance(end error) (bool, error) {
	c.sc.drop()
	if !c.seg.sealed {
		if !c.reread {
			c.reread = true
			return true, nil
		}
		c.reread = false
		if !fileExists(c.seg.base + idxExt) {
			if !fileExists(c.seg.base+dataExt) && !fileExists(c.seg.base+zstExt) {
				return false, fmt.Errorf("%w: segment %s went while read (retention)", ErrNotFound, c.seg.data())
			}
			return false, io.EOF
		}
		c.seg.sealed = true // finished: read its end once more
		return true, nil
	}
	if errors.Is(end, errTorn) {
		c.r.st.corrupt.Add(1)
		return false, fmt.Errorf("%w: %s: %w", ErrCorrupt, c.seg.data(), end)
	}
	next, ok := c.r.segmentAt(c.epoch, c.last+1)
	if !ok {
		return false, io.EOF
	}
	return true, c.open(next, headerSize, true)
}

// guard, deferred by Next while it reads a mapping, turns a fault in that
// mapping (its file cut by something outside the archive) into an error,
// where the runtime would otherwise kill the process; any other panic
// goes on. It restores the goroutine's fault setting.
func (c *Cursor) guard(old bool, err *error) {
	p := recover()
	debug.SetPanicOnFault(old)
	if p == nil {
		return
	}
	if fa, ok := p.(interface{ Addr() uintptr }); ok && c.mapped != nil && c.mapped.holds(fa.Addr()) {
		c.r.st.corrupt.Add(1)
		*err = fmt.Errorf("%w: %s was cut while mapped", ErrCorrupt, c.mapped.name)
		return
	}
	panic(p)
}

// Close releases the cursor's file.
func (c *Cursor) Close() error {
	if c.sc != nil {
		c.sc.release()
	}
	c.sc = nil
	if c.d == nil {
		return nil
	}
	err := c.d.Close()
	c.d, c.mapped = nil, nil
	return err
}
