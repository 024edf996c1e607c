package archive

import (
	"errors"
	"fmt"
	"io"
)

// Cursor iterates over the entries of one epoch, in sequence order, from
// where a seek put it. At the end of what is written, Next returns io.EOF
// and keeps its place: a later Next returns what a writer appended since
// (also across the segments it starts).
type Cursor struct {
	r     *Reader
	epoch uint64
	segs  []segment // the epoch's segments as last listed
	i     int       // the segment being read
	d     dataFile
	sc    *scanner
	// The seek's target: entries before it are skipped.
	skipSeq  uint64
	skipTime int64
	// reread is set while the end of an unsealed segment is read again
	// (advance), before the segments are listed again.
	reread bool
}

// Epoch is the epoch the cursor reads.
func (c *Cursor) Epoch() uint64 { return c.epoch }

// open starts reading segment i at data offset off.
func (c *Cursor) open(off int64) error {
	if c.d != nil {
		c.d.Close()
		c.d = nil
	}
	s := c.segs[c.i]
	var x *index
	if s.sealed {
		var err error
		if x, err = c.r.index(s); err != nil {
			return err
		}
	}
	d, err := openData(s, x, &c.r.st)
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	h, err := readHeader(d)
	if err != nil {
		d.Close()
		return fmt.Errorf("archive: %s: %w", s.data(), err)
	}
	c.d, c.sc = d, newScanner(d, h.Source.Geometry, off)
	return nil
}

// Next returns the next entry: e.Rec is valid until the next call.
// io.EOF: nothing more is written yet. An error wrapping ErrCorrupt names
// the segment and offset of bytes no writer made.
func (c *Cursor) Next() (Entry, error) {
	if c.sc == nil {
		return Entry{}, ErrClosed
	}
	for {
		e, off, err := c.sc.next()
		if err == nil {
			c.reread = false
			if e.Last < c.skipSeq || e.Time < c.skipTime {
				continue
			}
			e.Epoch = c.epoch
			return *e, nil
		}
		if !errors.Is(err, io.EOF) && !errors.Is(err, errTorn) {
			return Entry{}, err
		}
		more, rerr := c.advance(off, err)
		if rerr != nil || !more {
			return Entry{}, rerr
		}
	}
}

// advance handles the end of the segment's data at off (end: clean, or
// torn). A segment unsealed when listed may be being written: once it
// holds nothing more and is still the epoch's last and unsealed, io.EOF,
// the place kept; sealed since, its end is read again, whole now. A
// sealed segment is finished: torn is corruption, a clean end moves on
// to the next segment.
func (c *Cursor) advance(off int64, end error) (bool, error) {
	c.sc.drop()
	if !c.segs[c.i].sealed {
		if !c.reread { // written since the buffer was read? Read once more.
			c.reread = true
			return true, nil
		}
		c.reread = false
		if err := c.relist(); err != nil {
			return false, err
		}
		if !c.segs[c.i].sealed && c.i == len(c.segs)-1 {
			return false, io.EOF
		}
		c.segs[c.i].sealed = true // finished: read its end once more
		c.sc.drop()
		return true, nil
	}
	if errors.Is(end, errTorn) {
		c.r.st.corrupt.Add(1)
		return false, fmt.Errorf("%w: %s: %w", ErrCorrupt, c.segs[c.i].data(), end)
	}
	if c.i+1 >= len(c.segs) {
		if err := c.relist(); err != nil {
			return false, err
		}
		if c.i+1 >= len(c.segs) {
			return false, io.EOF
		}
	}
	c.i++
	return true, c.open(headerSize)
}

// relist lists the epoch's segments again, keeping the one being read.
func (c *Cursor) relist() error {
	base := c.segs[c.i].base
	segs, err := c.r.epochSegments(c.epoch)
	if err != nil {
		return err
	}
	for j, s := range segs {
		if s.base == base {
			c.segs, c.i = segs, j
			return nil
		}
	}
	return fmt.Errorf("%w: segment %s went while read (retention)", ErrNotFound, base)
}

// Close releases the cursor's file.
func (c *Cursor) Close() error {
	c.sc = nil
	if c.d == nil {
		return nil
	}
	err := c.d.Close()
	c.d = nil
	return err
}
