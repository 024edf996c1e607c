package shm

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// openMapped opens an existing file and maps all of it. minSize is the
// smallest size worth mapping (the header); a shorter file is refused
// before anything is mapped.
func openMapped(path string, writable bool, minSize int64) (*os.File, *mapping, error) {
	flag := os.O_RDONLY
	if writable {
		flag = os.O_RDWR
	}
	f, err := openRegular(path, flag)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if st.Size() < minSize {
		f.Close()
		return nil, nil, fieldErr(ErrTruncated, "file size", uint64(st.Size()), "shorter than the %d-byte header", minSize)
	}
	if st.Size() > 1<<46 {
		f.Close()
		return nil, nil, fieldErr(ErrCorrupt, "file size", uint64(st.Size()), "larger than 64 TiB")
	}
	m, err := mapFile(f, int(st.Size()), writable, false)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("map %s: %w", path, err)
	}
	return f, m, nil
}

// existing describes what lies at a path a producer wants to create.
type existing int

const (
	existingNone  existing = iota // no file
	existingStale                 // a file no producer holds
)

// lockExisting checks the file at path. A file whose flock another process
// holds belongs to a live producer: ErrLocked; anything but a regular file
// is ErrNotRegular. Otherwise it reports whether a stale file is there, and
// its size; inspect (if not nil) is called on the stale file so the caller
// can compare geometries before replacing it.
func lockExisting(path string, inspect func(f *os.File) error) (existing, int64, error) {
	f, err := openRegular(path, os.O_RDONLY)
	if errors.Is(err, os.ErrNotExist) {
		return existingNone, 0, nil
	}
	if err != nil {
		return existingNone, 0, err
	}
	defer f.Close()
	var size int64
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return existingStale, 0, fmt.Errorf("%w: %s (flock held)", ErrLocked, path)
		}
		return existingStale, 0, os.NewSyscallError("flock", err)
	}
	if inspect != nil {
		if err := inspect(f); err != nil {
			return existingStale, 0, err
		}
	}
	return existingStale, size, nil
}

// createLocked makes a fresh inode at path (unlinking a stale file first, so
// that old mappings never see the new bytes), takes an exclusive flock held
// for the producer's lifetime, allocates its storage and maps it
// read-write. A size above maxSize (see checkSize) or beyond the free space
// is refused before anything changes. The caller fills the header and
// stores the magic last.
func createLocked(path string, size, maxSize int64, inspect func(f *os.File) error) (*os.File, *mapping, error) {
	ex, stale, err := lockExisting(path, inspect)
	if err != nil {
		return nil, nil, err
	}
	if err := checkSize(path, size, maxSize, stale); err != nil {
		return nil, nil, err
	}
	if ex == existingStale {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, nil, err
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (*os.File, *mapping, error) {
		f.Close()
		os.Remove(path)
		return nil, nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return fail(os.NewSyscallError("flock", err))
	}
	if err := allocate(f, size); err != nil {
		return fail(err)
	}
	m, err := mapFile(f, int(size), true, true)
	if err != nil {
		return fail(fmt.Errorf("map %s: %w", path, err))
	}
	return f, m, nil
}
