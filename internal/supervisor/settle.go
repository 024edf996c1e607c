package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/ringfire/ringfire/internal/idle"
)

// ErrUnsettled is returned by Settle.Read for a file that kept changing
// for Settle.Max.
var ErrUnsettled = errors.New("the file kept changing")

// Settle reads a file only once it has stopped changing. A file rewritten
// in place can be read half-written, and a cut that still parses would be
// applied: the units it no longer names stopped, a cut value taken. Renaming
// a complete file into place is the safe way to write one; Settle covers
// the writers that do not.
//
// A file is settled when its state (device, inode, size, modification and
// change times) has not changed for Quiet: its change time is Quiet old,
// or Settle saw the same state Quiet apart (a change time in the future).
// The read is kept only if the state after it is the one before it.
type Settle struct {
	Quiet time.Duration // how long the file must not have changed
	Max   time.Duration // how long to wait at most: then ErrUnsettled
	// Waiting, when set, is called each time the file is found changed
	// less than Quiet ago, with how long ago, before the wait.
	Waiting func(age time.Duration)

	now   func() time.Time                                // time.Now (tests move a clock)
	sleep func(ctx context.Context, d time.Duration) bool // idle.Sleep
}

// fileState is what changes when a file is written, truncated, replaced
// or touched.
type fileState struct {
	dev, ino     uint64
	size         int64
	mtime, ctime time.Time
}

func stateOf(path string) (fileState, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileState{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileState{size: fi.Size(), mtime: fi.ModTime(), ctime: fi.ModTime()}, nil
	}
	return fileState{dev: st.Dev, ino: st.Ino, size: st.Size,
		mtime: time.Unix(st.Mtim.Unix()), ctime: time.Unix(st.Ctim.Unix())}, nil
}

// Read calls read once path has settled, and again if path changed while
// read ran. It returns read's error; ErrUnsettled if path has not settled
// within Max; ctx's error if ctx ends first; the error of stat(2) on path.
func (s *Settle) Read(ctx context.Context, path string, read func() error) error {
	now, sleep := s.now, s.sleep
	if now == nil {
		now = time.Now
	}
	if sleep == nil {
		sleep = idle.Sleep
	}
	deadline := now().Add(s.Max)
	var seen fileState
	var seenAt time.Time // when seen was first seen
	for {
		st, err := stateOf(path)
		if err != nil {
			return err
		}
		t := now()
		if st != seen {
			seen, seenAt = st, t
		}
		quiet := max(t.Sub(st.ctime), t.Sub(seenAt))
		if quiet >= s.Quiet {
			err := read()
			if after, serr := stateOf(path); serr != nil || after == st {
				return err
			}
			quiet = 0 // changed while read: settle again
		}
		wait := s.Quiet - quiet
		if t.Add(wait).After(deadline) {
			return fmt.Errorf("%s: %w for %v", path, ErrUnsettled, s.Max)
		}
		if s.Waiting != nil {
			s.Waiting(t.Sub(st.ctime))
		}
		if !sleep(ctx, wait) {
			return ctx.Err()
		}
	}
}
