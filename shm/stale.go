package shm

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// StaleRing is a ring file that no producer holds, opened with the
// producer lock taken, so that whoever removes it knows no producer writes
// it and none starts on it meanwhile.
//
// A producer holds a flock on its ring file for its lifetime: a single
// producer (and a mirror, which is its ring's producer) an exclusive one,
// the producers of a multi-producer ring shared ones. OpenStaleRing takes
// the exclusive lock without waiting, which succeeds only when no producer
// holds either kind. While it is held, a producer creating a ring at the
// path fails with ErrLocked instead of replacing a file about to be
// removed; Close releases it.
//
// Readers hold no lock. Registered readers are listed by Readers (Alive
// says which still run); readers outside the registry (a ring without
// one, NoRegister, another implementation's reader) are not seen here.
type StaleRing struct {
	r *Ring
}

// OpenStaleRing opens the ring file at path read-only and takes its
// producer lock without waiting. A file whose lock a producer holds fails
// with ErrLocked; a file that is not a ring (or a ring its creator has not
// finished) fails as Open does (ErrMagic, ErrTruncated, ErrNotRegular, ...).
func OpenStaleRing(path string) (*StaleRing, error) {
	r, err := Open(path, OpenOptions{})
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(r.f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		r.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s (flock held)", ErrLocked, path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, os.NewSyscallError("flock", err))
	}
	return &StaleRing{r: r}, nil
}

// Ring is the stale ring, mapped read-only.
func (s *StaleRing) Ring() *Ring { return s.r }

// Readers lists the claimed entries of the ring's reader registry, as
// Ring.Readers does; a ring without a registry has none.
func (s *StaleRing) Readers() ([]ReaderInfo, error) { return s.r.Readers() }

// Remove unlinks the ring file, if its path still names the file that was
// opened. Mappings of it (a reader that has not noticed) stay valid until
// unmapped; the memory is freed with the last of them.
func (s *StaleRing) Remove() error {
	if s.r.closed {
		return ErrClosed
	}
	st, err := os.Lstat(s.r.path)
	if err != nil {
		return fmt.Errorf("remove %s: %w", s.r.path, err)
	}
	if !os.SameFile(st, statOrNil(s.r.f)) {
		return fmt.Errorf("remove %s: %w: the path names another file now (a producer replaced the ring)", s.r.path, ErrLocked)
	}
	if err := os.Remove(s.r.path); err != nil {
		return fmt.Errorf("remove %s: %w", s.r.path, err)
	}
	return nil
}

// Close unmaps the ring and releases the producer lock.
func (s *StaleRing) Close() error { return s.r.Close() }
