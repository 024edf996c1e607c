package archive

import (
	"errors"
	"fmt"
	"io"
)

// errTorn: the data ends inside an entry, or an entry fails its checks.
// At the end of the segment the writer appends to, that is a write under
// way (a reader waits for it) or a crash's torn tail (recovery cuts it);
// anywhere else it is corruption.
var errTorn = errors.New("archive: torn entry")

// scanner reads a segment's entries in order through a buffer, in reads
// of at least scanChunk bytes: one entry's bytes are a slice of the
// buffer, valid until the next call.
type scanner struct {
	r      io.ReaderAt
	geo    Geometry
	buf    []byte
	bufOff int64 // the data offset of buf[0]
	off    int64 // the next entry's offset
}

const scanChunk = 256 << 10

func newScanner(r io.ReaderAt, geo Geometry, off int64) *scanner {
	return &scanner{r: r, geo: geo, off: off, buf: make([]byte, 0, scanChunk)}
}

// drop forgets the buffer's bytes: the next read reads the data again.
func (s *scanner) drop() { s.buf = s.buf[:0] }

// seek makes off the next entry's offset.
func (s *scanner) seek(off int64) { s.off = off }

// next returns the next entry and its offset; io.EOF where the data ends
// cleanly, and an error wrapping errTorn (and ErrCorrupt when the bytes
// are whole but wrong) where it does not.
func (s *scanner) next() (Entry, int64, error) {
	off := s.off
	head, err := s.bytes(off, 8)
	if err != nil {
		return Entry{}, off, err
	}
	n, ok := bodyLen(head)
	if !ok || n > s.geo.maxBody() {
		return Entry{}, off, fmt.Errorf("%w: %w: entry length %d at offset %d", errTorn, ErrCorrupt, n, off)
	}
	b, err := s.bytes(off, 8+n)
	if err != nil {
		if err == io.EOF {
			err = fmt.Errorf("%w: entry of %d bytes at offset %d cut short", errTorn, 8+n, off)
		}
		return Entry{}, off, err
	}
	e, err := parseEntry(b, s.geo)
	if err != nil {
		return Entry{}, off, fmt.Errorf("%w: at offset %d: %w", errTorn, off, err)
	}
	s.off = off + int64(len(b))
	return e, off, nil
}

// bytes returns the n data bytes at off, reading when the buffer does not
// hold them. io.EOF: none is there; errTorn: only some are.
func (s *scanner) bytes(off int64, n int) ([]byte, error) {
	if off >= s.bufOff && off+int64(n) <= s.bufOff+int64(len(s.buf)) {
		i := off - s.bufOff
		return s.buf[i : i+int64(n)], nil
	}
	want := max(n, scanChunk)
	if n > scanChunk { // allocate for a large entry only once its last byte is there
		if _, err := s.r.ReadAt(make([]byte, 1), off+int64(n)-1); err != nil {
			if err == io.EOF {
				return nil, fmt.Errorf("%w: %d bytes at offset %d past the end", errTorn, n, off)
			}
			return nil, err
		}
	}
	if cap(s.buf) < want {
		s.buf = make([]byte, 0, want)
	}
	got, err := s.r.ReadAt(s.buf[:want], off)
	s.buf, s.bufOff = s.buf[:got], off
	switch {
	case got >= n:
		return s.buf[:n], nil
	case err != nil && err != io.EOF:
		return nil, err
	case got == 0:
		return nil, io.EOF
	}
	return nil, fmt.Errorf("%w: %d of %d bytes at offset %d", errTorn, got, n, off)
}

// readHeader reads and decodes a segment's header.
func readHeader(r io.ReaderAt) (header, error) {
	b := make([]byte, headerSize)
	n, err := r.ReadAt(b, 0)
	if n < headerSize {
		if err == nil || err == io.EOF {
			err = fmt.Errorf("%w: header of %d bytes", errTorn, n)
		}
		return header{}, err
	}
	return parseHeader(b)
}

// scanAll reads a segment's entries from its header on, building its
// index. It returns where the whole entries end, and the error that ended
// the scan: nil at a clean end.
func scanAll(r io.ReaderAt, h header) (*index, int64, error) {
	x := &index{size: headerSize, last: h.First - 1}
	s := newScanner(r, h.Source.Geometry, headerSize)
	for {
		e, off, err := s.next()
		if err == io.EOF {
			return x, s.off, nil
		}
		if err != nil {
			return x, off, err
		}
		if e.Seq != x.last+1 {
			return x, off, fmt.Errorf("%w: %w: entry %d at offset %d follows %d", errTorn, ErrCorrupt, e.Seq, off, x.last)
		}
		x.add(e, off, s.off)
	}
}
