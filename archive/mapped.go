package archive

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// mappedFile is a sealed plain segment mapped read-only: a cursor reads
// its entries in place, with no read(2) and no copy into a buffer (the
// copy and the calls took a quarter of a replay's CPU: BenchmarkReplay's
// profile). A sealed segment is never written again, so the bytes only
// change if something outside the archive cuts the file: a page past its
// new end then faults, which Cursor.Next turns into an error (see guard).
type mappedFile struct {
	data []byte
	name string
}

// mapSegment maps the data file of the sealed plain segment s.
func mapSegment(s segment) (*mappedFile, error) {
	f, err := os.Open(s.data())
	if err != nil {
		return nil, err
	}
	defer f.Close() // the mapping holds the file
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() < headerSize {
		return nil, fmt.Errorf("%w: %s: %d bytes", errTorn, s.data(), fi.Size())
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.data(), os.NewSyscallError("mmap", err))
	}
	// Advice only: read ahead, and drop pages behind, as a scan goes.
	unix.Madvise(b, unix.MADV_SEQUENTIAL)
	return &mappedFile{data: b, name: s.data()}, nil
}

// ReadAt copies from the mapping (io.ReaderAt).
func (m *mappedFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off >= int64(len(m.data)) {
		return 0, io.EOF
	}
	n := copy(p, m.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// view returns the n bytes at off in place: io.EOF when none is there,
// errTorn when only some are (as scanner.bytes).
func (m *mappedFile) view(off int64, n int) ([]byte, error) {
	end := off + int64(n)
	switch {
	case end <= int64(len(m.data)):
		return m.data[off:end], nil
	case off >= int64(len(m.data)):
		return nil, io.EOF
	}
	return nil, fmt.Errorf("%w: %d of %d bytes at offset %d", errTorn, int64(len(m.data))-off, n, off)
}

// Close unmaps the file.
func (m *mappedFile) Close() error {
	if m.data == nil {
		return nil
	}
	err := unix.Munmap(m.data)
	m.data = nil
	return err
}
