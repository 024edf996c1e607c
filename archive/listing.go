package archive

import (
	"os"
	"sync"
	"syscall"
	"time"
)

// listing keeps a Reader's last listing of its directory, so that a seek
// costs a stat of the directory and not a read of it: the listing is
// used again while the directory's modification time is the one it was
// made under. The kernel stamps that time from a clock that ticks every
// few milliseconds, so a change in the same tick as the listing would
// leave the time as it was: a listing made within racyWindow of the time
// it saw is not kept.
type listing struct {
	mu    sync.Mutex
	mtime syscall.Timespec
	segs  []segment // nil: none kept
}

const racyWindow = 50 * time.Millisecond

// segments returns the segments of dir, listed again only when the
// directory changed (or might have).
func (l *listing) segments(dir string) ([]segment, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: dir, Err: err}
	}
	l.mu.Lock()
	if l.segs != nil && st.Mtim == l.mtime {
		segs := l.segs
		l.mu.Unlock()
		return segs, nil
	}
	l.mu.Unlock()
	segs, err := listSegments(dir)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if time.Since(time.Unix(st.Mtim.Unix())) > racyWindow {
		l.mtime, l.segs = st.Mtim, segs
	} else {
		l.segs = nil
	}
	return segs, nil
}
