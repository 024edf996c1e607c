package archive

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// use makes f, the data file at path holding size bytes, the segment
// being written. Unless Options.PageCache says otherwise it opens the
// file again with O_DIRECT; a filesystem that refuses it (tmpfs, some
// network and FUSE ones) is written through the page cache instead. A
// direct writer's buffer then begins at the last block boundary with the
// bytes the file already holds after it.
func (w *Writer) use(f *os.File, path string, size int64) error {
	w.f, w.df, w.size = f, nil, size
	w.buf = w.buf[:0]
	w.bufOff, w.inFile, w.bufTime = size, 0, 0
	w.st.direct.Store(false)
	if w.opts.PageCache {
		return nil
	}
	df, err := openDirect(path)
	if err != nil {
		return nil
	}
	keep := size & (blockAlign - 1)
	w.buf = w.buf[:keep]
	if _, err := f.ReadAt(w.buf, size-keep); err != nil {
		df.Close()
		w.buf = w.buf[:0]
		return fmt.Errorf("%s: %w", path, err)
	}
	w.df, w.bufOff, w.inFile = df, size-keep, int(keep)
	w.st.direct.Store(true)
	return nil
}

// openDirect opens path for O_DIRECT writes, or fails where the
// filesystem does not take them (EINVAL).
func openDirect(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|unix.O_DIRECT, 0)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) && errors.Is(pe.Err, unix.EINVAL) {
			return nil, fmt.Errorf("archive: %s: no O_DIRECT here: %w", path, err)
		}
		return nil, err
	}
	return f, nil
}

// closeSegment closes the segment's files; the writer has none after.
func (w *Writer) closeSegment() {
	if w.df != nil {
		w.df.Close()
		w.df = nil
	}
	w.f.Close()
	w.f = nil
	w.buf = w.buf[:0]
	w.inFile, w.bufTime = 0, 0
}
