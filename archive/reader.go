package archive

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"sync"
)

// Reader reads an archive, also while a Writer (in this process or
// another) appends to it: each call sees the segments as they are then.
// Its methods are safe for concurrent use; a Cursor is one goroutine's.
type Reader struct {
	dir string
	st  readStats

	list listing // the directory's segments, as last listed

	mu     sync.Mutex
	sealed map[string]*index // sealed segments' indexes, by base
	active map[string]*index // the indexes of unsealed segments, as far as scanned
}

// Open opens the archive in dir for reading.
func Open(dir string) (*Reader, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("archive: %s is not a directory", dir)
	}
	return &Reader{dir: dir, sealed: map[string]*index{}, active: map[string]*index{}}, nil
}

// Dir is the archive's directory.
func (r *Reader) Dir() string { return r.dir }

// dataFile is a segment's data, plain or decompressed block by block.
type dataFile interface {
	io.ReaderAt
	io.Closer
}

// openData opens the data of s. A plain file that went (compressed as
// it was sealed) is looked for compressed.
func openData(s segment, x *index, st *readStats) (dataFile, error) {
	if !s.compressed {
		f, err := os.Open(s.base + dataExt)
		if !errors.Is(err, fs.ErrNotExist) {
			return f, err
		}
	}
	if x == nil || x.blockSize == 0 { // the index a compressed segment was sealed with
		var err error
		if x, err = readIndex(s); err != nil {
			return nil, err
		}
		if x.blockSize == 0 {
			return nil, fmt.Errorf("%w: %s has no block index", ErrCorrupt, s.data())
		}
	}
	s.compressed = true
	return openZst(s, x, st)
}

// index returns the index of s: a sealed segment's from its file (kept),
// an unsealed one's by scanning what was not scanned yet.
func (r *Reader) index(s segment) (*index, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if x := r.sealed[s.base]; x != nil && (x.blockSize > 0 || !s.compressed) {
		return x, nil // (a plain index kept for a segment compressed since is read again)
	}
	if s.sealed {
		x, err := readIndex(s)
		if err != nil {
			return nil, err
		}
		delete(r.active, s.base)
		r.sealed[s.base] = x
		return x, nil
	}
	return r.scanActive(s)
}

// scanActive extends the index of the unsealed segment s over the whole
// entries written since it was last scanned (r.mu held).
func (r *Reader) scanActive(s segment) (*index, error) {
	d, err := openData(s, nil, &r.st)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	h, err := readHeader(d)
	if err != nil {
		return nil, err
	}
	// A copy: cursors may be reading the index kept, without the lock.
	x := &index{size: headerSize, last: h.First - 1}
	if old := r.active[s.base]; old != nil {
		*x = *old
		x.points = append([]point(nil), old.points...)
	}
	sc := newScanner(d, h.Source.Geometry, x.size)
	for {
		e, off, err := sc.next()
		if err != nil { // the end, or an entry being written
			break
		}
		x.add(e, off, sc.off)
	}
	r.active[s.base] = x
	return x, nil
}

// segmentAt returns the segment of epoch that starts at first, looked
// for by its name; ok is false when it does not exist (yet).
func (r *Reader) segmentAt(epoch, first uint64) (segment, bool) {
	s := segment{epoch: epoch, first: first, base: segBase(r.dir, epoch, first)}
	// The index first: a segment sealed then is whole, whichever data
	// file is there when it is opened (openData falls back to the
	// compressed one). Compressing writes the ".rfa.zst", then the index,
	// then removes the ".rfa": a ".rfa.zst" found means the ".rfa" is
	// there (looked for again: it may have been made since the first
	// look) or gone, and then the index is there.
	s.sealed = fileExists(s.base + idxExt)
	switch {
	case fileExists(s.base + dataExt):
	case !fileExists(s.base + zstExt):
		return s, false
	case fileExists(s.base + dataExt):
		s.sealed = s.sealed || fileExists(s.base+idxExt)
	default:
		s.compressed, s.sealed = true, fileExists(s.base+idxExt)
	}
	return s, true
}

// epochSegments lists the segments of epoch, in order.
func (r *Reader) epochSegments(epoch uint64) ([]segment, error) {
	segs, err := r.list.segments(r.dir)
	if err != nil {
		return nil, err
	}
	var out []segment
	for _, s := range segs {
		if s.epoch == epoch {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: epoch %d in %s", ErrNotFound, epoch, r.dir)
	}
	return out, nil
}

// Seek returns a cursor whose first entry is the one holding sequence seq
// of epoch (a record, or a gap over it), or the epoch's first entry when
// seq is before it. A seek reads one index and at most 64 KiB of data.
func (r *Reader) Seek(epoch, seq uint64) (*Cursor, error) {
	segs, err := r.epochSegments(epoch)
	if err != nil {
		return nil, err
	}
	i := max(sort.Search(len(segs), func(i int) bool { return segs[i].first > seq })-1, 0)
	x, err := r.index(segs[i])
	if err != nil {
		return nil, err
	}
	c := &Cursor{r: r, epoch: epoch, skipSeq: seq}
	return c, c.open(segs[i], x.bySeq(seq), false)
}

// SeekTime returns a cursor whose first entry is epoch's first entry seen
// at or after t (unix ns).
func (r *Reader) SeekTime(epoch uint64, t int64) (*Cursor, error) {
	segs, err := r.epochSegments(epoch)
	if err != nil {
		return nil, err
	}
	var serr error
	i := max(sort.Search(len(segs), func(i int) bool {
		x, err := r.index(segs[i])
		if err != nil {
			serr = err
			return true
		}
		return len(x.points) > 0 && x.points[0].Time >= t
	})-1, 0)
	if serr != nil {
		return nil, serr
	}
	x, err := r.index(segs[i])
	if err != nil {
		return nil, err
	}
	c := &Cursor{r: r, epoch: epoch, skipTime: t}
	off := int64(headerSize)
	if len(x.points) > 0 {
		off = x.byTime(t)
	}
	return c, c.open(segs[i], off, false)
}

// Close releases what the reader keeps.
func (r *Reader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.sealed)
	clear(r.active)
	return nil
}
