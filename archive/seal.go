package archive

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// seal finishes the segment being written, if any: its data is flushed
// (and synced unless SyncNone) and its index written, and it is queued
// for the compressor when Options.Compress says so; a segment without
// entries is removed instead. Retention then runs.
func (w *Writer) seal() error {
	if w.f == nil {
		return nil
	}
	if err := w.Flush(); err != nil {
		return err
	}
	durable := w.opts.Sync != SyncNone
	if durable {
		if err := w.sync(); err != nil {
			return err
		}
	}
	w.closeSegment()
	if err := sealSegment(w.seg, w.x, durable); err != nil {
		return w.fail(err)
	}
	w.queue(w.seg, w.x)
	if durable {
		if err := syncDir(w.dir); err != nil {
			return w.fail(err)
		}
	}
	if w.x.records+w.x.gapEntries > 0 {
		w.st.sealed.Add(1)
	}
	return w.retain(time.Now())
}

// sealSegment writes the index of the plain segment s, holding what x
// says; a segment without entries is removed.
func sealSegment(s segment, x *index, sync bool) error {
	if x.records+x.gapEntries == 0 {
		return removeSegment(s)
	}
	return writeFileAtomic(s.base+idxExt, x.encode(), sync)
}

// queue hands the sealed plain segment s to the compressor, if any.
func (w *Writer) queue(s segment, x *index) {
	if w.comp != nil && x.records+x.gapEntries > 0 {
		w.comp.add(s, x)
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// recover brings the archive to a state the writer can go on from: it
// removes temporary files, finishes what a crash interrupted (a segment
// left unsealed before the last one is sealed; a compressed segment
// whose plain data is still there loses the plain file), and cuts a torn
// tail off the last segment, which becomes the one being written.
func (w *Writer) recover() error {
	w.removeTemps()
	segs, err := listSegments(w.dir)
	if err != nil {
		return err
	}
	var prev segment // the last sealed segment
	var prevX *index
	for i, s := range segs {
		switch {
		case s.sealed:
			prev = s
			prevX, err = w.adoptSealed(s)
		case i == len(segs)-1:
			err = w.adoptLast(s)
		default:
			err = w.sealLeft(s)
		}
		if err != nil {
			return fmt.Errorf("segment %s: %w", s.data(), err)
		}
	}
	if w.begun || prevX == nil {
		return nil
	}
	// The archive ends with a sealed segment (or one whose torn header
	// held nothing and went): it tells where the archive ends.
	h, err := segHeader(prev, prevX)
	if err != nil {
		return fmt.Errorf("segment %s: %w", prev.data(), err)
	}
	w.epoch, w.src, w.last, w.lastTime, w.begun = h.Epoch, h.Source, prevX.last, prevX.lastTime, true
	w.shape = w.src.shape()
	w.st.epoch.Store(w.epoch)
	w.st.last.Store(w.last)
	return nil
}

func (w *Writer) removeTemps() {
	ents, _ := os.ReadDir(w.dir)
	for _, e := range ents {
		if n := e.Name(); len(n) > len(tmpExt) && n[len(n)-len(tmpExt):] == tmpExt {
			os.Remove(w.dir + "/" + n)
		}
	}
}

// adoptSealed takes a sealed segment as it is, and returns its index.
func (w *Writer) adoptSealed(s segment) (*index, error) {
	x, err := readIndex(s)
	if err != nil {
		return nil, err
	}
	switch {
	case x.blockSize > 0 && fileExists(s.base+dataExt):
		os.Remove(s.base + dataExt) // compressed, then cut before the plain file went
	case x.blockSize == 0:
		os.Remove(s.base + zstExt) // cut while compressing: the index is the plain one's
		w.queue(s, x)
	}
	return x, nil
}

// segHeader reads the header of a sealed segment.
func segHeader(s segment, x *index) (header, error) {
	d, err := openData(s, x, nil)
	if err != nil {
		return header{}, err
	}
	defer d.Close()
	return readHeader(d)
}

// sealLeft seals a segment a crash left unsealed behind a later one: its
// torn tail, if any, is cut first.
func (w *Writer) sealLeft(s segment) error {
	f, _, x, err := w.cutTail(s)
	if f == nil {
		return err
	}
	f.Close()
	if err != nil {
		return err
	}
	if err := sealSegment(s, x, w.opts.Sync != SyncNone); err != nil {
		return err
	}
	w.queue(s, x)
	return nil
}

// adoptLast makes the unsealed last segment the one being written, its
// torn tail cut.
func (w *Writer) adoptLast(s segment) error {
	f, h, x, err := w.cutTail(s)
	if f == nil {
		return err
	}
	if err != nil {
		f.Close()
		return err
	}
	if err := w.use(f, s.data(), x.size); err != nil {
		f.Close()
		return err
	}
	w.seg, w.x = s, x
	w.epoch, w.src, w.last, w.lastTime, w.begun = h.Epoch, h.Source, x.last, x.lastTime, true
	w.shape = w.src.shape()
	w.st.epoch.Store(w.epoch)
	w.st.last.Store(w.last)
	return nil
}

// cutTail opens an unsealed segment, scans it and truncates it after its
// last whole entry. A segment whose header is torn held nothing: it is
// removed, and f is nil with a nil error.
func (w *Writer) cutTail(s segment) (f *os.File, h header, x *index, err error) {
	f, err = os.OpenFile(s.base+dataExt, os.O_RDWR, 0)
	if err != nil {
		return nil, h, nil, err
	}
	h, err = readHeader(f)
	if errors.Is(err, errTorn) {
		f.Close()
		return nil, h, nil, removeSegment(s)
	}
	if err != nil {
		f.Close()
		return nil, h, nil, err
	}
	x, end, err := scanAll(f, h)
	if err != nil && !errors.Is(err, errTorn) {
		return f, h, x, err
	}
	fi, serr := f.Stat()
	if serr != nil {
		return f, h, x, serr
	}
	if fi.Size() > end {
		if err := f.Truncate(end); err != nil {
			return f, h, x, os.NewSyscallError("ftruncate", err)
		}
		w.st.tornBytes.Add(uint64(fi.Size() - end))
		if w.opts.Sync != SyncNone {
			if err := unix.Fdatasync(int(f.Fd())); err != nil {
				return f, h, x, os.NewSyscallError("fdatasync", err)
			}
		}
	}
	return f, h, x, nil
}
