package shm

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// DefaultMaxSize is the size limit of a new ring or blackboard file when
// CreateOptions.MaxSize is zero: 64 GiB, far above any ring a host's
// memory holds for long, far below what a mistyped capacity asks for.
const DefaultMaxSize int64 = 64 << 30

// openRegular opens path with flag (O_RDONLY or O_RDWR) without blocking,
// whatever lies there, and refuses anything but a regular file: a FIFO
// would block an ordinary open until a writer came, a device or directory
// is no ring.
func openRegular(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		if errors.Is(err, unix.EISDIR) {
			return nil, fmt.Errorf("%w: %s is a directory", ErrNotRegular, path)
		}
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%w: %s is a %s", ErrNotRegular, path, fileKind(st.Mode()))
	}
	return f, nil
}

// fileKind names the type of a file that is not regular.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&os.ModeNamedPipe != 0:
		return "FIFO"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeCharDevice != 0:
		return "character device"
	case m&os.ModeDevice != 0:
		return "block device"
	case m&os.ModeSymlink != 0:
		return "symbolic link"
	}
	return "special file " + m.Type().String()
}

// checkSize refuses a new file of size bytes at path before anything is
// created: larger than max (0: DefaultMaxSize; negative: no limit), or
// larger than the filesystem's free space plus reclaim (the bytes of the
// stale file the new one replaces).
func checkSize(path string, size, max, reclaim int64) error {
	if max == 0 {
		max = DefaultMaxSize
	}
	if max > 0 && size > max {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, size, max)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(filepath.Dir(path), &st); err != nil {
		return os.NewSyscallError("statfs", err)
	}
	if free := int64(st.Bavail)*st.Bsize + reclaim; size > free {
		return fmt.Errorf("%w: %d bytes, %d free on %s", ErrNoSpace, size, free, filepath.Dir(path))
	}
	return nil
}

// allocChunk is the most one fallocate call reserves. tmpfs gives up a
// whole call's pages when a signal arrives (EINTR, never restarted: a
// child's SIGCHLD, the runtime's SIGURG, a profiler's SIGPROF), so a big
// ring in one call could fail, or never finish under frequent signals.
// A call of 1 MiB takes well under a millisecond; an interrupted one is
// retried at half the size, down to allocMin, then up to allocEINTR times:
// the reservation progresses as long as signals are further apart than
// one allocMin call.
const (
	allocChunk = 1 << 20
	allocMin   = 64 << 10
	allocEINTR = 1000
)

// allocate gives f size bytes of storage: fallocate reserves every block,
// so a full filesystem is ErrNoSpace here and never a SIGBUS when the
// mapping is first written. Filesystems without fallocate get the size
// and then zeros written through, which allocates as well.
func allocate(f *os.File, size int64) error {
	err := fallocate(int(f.Fd()), size)
	if err == nil {
		return nil
	}
	if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) {
		return fmt.Errorf("%w: %d bytes: %v", ErrNoSpace, size, os.NewSyscallError("fallocate", err))
	}
	if !errors.Is(err, unix.EOPNOTSUPP) {
		return os.NewSyscallError("fallocate", err)
	}
	if err := f.Truncate(size); err != nil {
		return err
	}
	return writeZeros(f, size)
}

// fallocate reserves size bytes of fd from offset 0, in calls of at most
// allocChunk, shrunk and retried when interrupted (see allocChunk).
func fallocate(fd int, size int64) error {
	chunk, tries := int64(allocChunk), 0
	for off := int64(0); off < size; {
		n := min(chunk, size-off)
		err := unix.Fallocate(fd, 0, off, n)
		switch {
		case err == nil:
			off += n
		case err != unix.EINTR:
			return err
		case chunk > allocMin:
			chunk /= 2
		case tries == allocEINTR:
			return err
		default:
			tries++
		}
	}
	return nil
}

// writeZeros writes size zero bytes at the start of f.
func writeZeros(f *os.File, size int64) error {
	zeros := make([]byte, 1<<20)
	for off := int64(0); off < size; {
		n := min(int64(len(zeros)), size-off)
		if _, err := f.WriteAt(zeros[:n], off); err != nil {
			if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) {
				return fmt.Errorf("%w: %d bytes: %v", ErrNoSpace, size, err)
			}
			return err
		}
		off += n
	}
	_, err := f.Seek(0, io.SeekStart)
	return err
}
