package archive

import (
	"errors"
	"fmt"
	"io"
	"sync"
)

// errTorn: the data ends inside an entry, or an entry fails its checks.
// At the end of the segment the writer appends to, that is a write under
// way (a reader waits for it) or a crash's torn tail (recovery cuts it);
// anywhere else it is corruption.
var errTorn = errors.New("archive: torn entry")

// scanner reads a segment's entries in order through a buffer: one
// entry's bytes are a slice of the buffer, valid until the next call. Its
// reads start at firstChunk bytes (a seek reads no more than its index
// point's span and an entry) and double up to scanChunk as it reads on.
type scanner struct {
	r      io.ReaderAt
	m      *mappedFile // r, when it is a mapping: bytes are read in place
	sh     shape
	e      Entry // the entry next returns
	buf    []byte
	bufOff int64 // the data offset of buf[0]
	off    int64 // the next entry's offset
	chunk  int   // the next read's size
}

const (
	firstChunk = indexEvery + 4<<10
	scanChunk  = 256 << 10
)

func newScanner(r io.ReaderAt, geo Geometry, off int64) *scanner {
	if m, ok := r.(*mappedFile); ok {
		return &scanner{r: r, m: m, sh: geo.shape(), off: off}
	}
	return &scanner{r: r, sh: geo.shape(), off: off, chunk: firstChunk, buf: bufs.Get().([]byte)[:0]}
}

// bufs keeps scanners' buffers between cursors (a seek makes one).
var bufs = sync.Pool{New: func() any { return make([]byte, 0, scanChunk) }}

// release gives the buffer back; the scanner is not used again.
func (s *scanner) release() {
	if cap(s.buf) == scanChunk {
		bufs.Put(s.buf[:0])
	}
	s.buf = nil
}

// drop forgets the buffer's bytes: the next read reads the data again.
func (s *scanner) drop() { s.buf = s.buf[:0] }

// seek makes off the next entry's offset.
func (s *scanner) seek(off int64) { s.off = off }

// next returns the next entry (the scanner's own: valid until the next
// call) and its offset; io.EOF where the data ends cleanly, and an error
// wrapping errTorn (and ErrCorrupt when the bytes are whole but wrong)
// where it does not.
func (s *scanner) next() (*Entry, int64, error) {
	off := s.off
	head, err := s.bytes(off, 8)
	if err != nil {
		return nil, off, err
	}
	n, ok := bodyLen(head)
	if !ok || n > s.sh.maxBody {
		return nil, off, fmt.Errorf("%w: %w: entry length %d at offset %d", errTorn, ErrCorrupt, n, off)
	}
	b, err := s.bytes(off, 8+n)
	if err != nil {
		if err == io.EOF {
			err = fmt.Errorf("%w: entry of %d bytes at offset %d cut short", errTorn, 8+n, off)
		}
		return nil, off, err
	}
	if err := parseEntry(b, &s.sh, &s.e); err != nil {
		return nil, off, fmt.Errorf("%w: at offset %d: %w", errTorn, off, err)
	}
	s.off = off + int64(len(b))
	return &s.e, off, nil
}

// bytes returns the n data bytes at off, reading when the buffer does not
// hold them. io.EOF: none is there; errTorn: only some are.
func (s *scanner) bytes(off int64, n int) ([]byte, error) {
	if s.m != nil {
		return s.m.view(off, n)
	}
	if off >= s.bufOff && off+int64(n) <= s.bufOff+int64(len(s.buf)) {
		i := off - s.bufOff
		return s.buf[i : i+int64(n)], nil
	}
	want := max(n, s.chunk)
	s.chunk = min(2*s.chunk, scanChunk)
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
