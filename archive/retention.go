package archive

import (
	"os"
	"time"
)

// retain removes the oldest sealed segments, whole, while the sealed
// segments take more than Options.MaxBytes, and those whose last entry
// is older than Options.MaxAge. The segment being written (unsealed)
// is never removed, nor counted.
func (w *Writer) retain(now time.Time) error {
	if w.opts.MaxBytes == 0 && w.opts.MaxAge == 0 {
		return nil
	}
	segs, err := listSegments(w.dir)
	if err != nil {
		return err
	}
	var sealed []segment
	var total int64
	for _, s := range segs {
		if s.sealed {
			sealed = append(sealed, s)
			total += s.size + fileSize(s.base+idxExt)
		}
	}
	for _, s := range sealed {
		over := w.opts.MaxBytes > 0 && total > w.opts.MaxBytes
		if !over && !w.expired(s, now) {
			break
		}
		n := s.size + fileSize(s.base+idxExt)
		if w.comp == nil || w.comp.remove(s.base) { // else the compressor removes it when done with it
			if err := removeSegment(s); err != nil {
				return w.fail(err)
			}
		}
		total -= n
		w.st.removed.Add(1)
	}
	return nil
}

// expired reports whether s's last entry is older than MaxAge.
func (w *Writer) expired(s segment, now time.Time) bool {
	if w.opts.MaxAge == 0 {
		return false
	}
	x, err := readIndex(s)
	return err == nil && now.Sub(time.Unix(0, x.lastTime)) > w.opts.MaxAge
}

func fileSize(p string) int64 {
	if fi, err := os.Stat(p); err == nil {
		return fi.Size()
	}
	return 0
}
