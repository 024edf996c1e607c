package archive

import "errors"

var (
	// ErrCorrupt: bytes on disk that no writer makes (a CRC that fails in a
	// sealed segment, a length out of range, a header that does not parse).
	ErrCorrupt = errors.New("archive: corrupt")
	// ErrVersion: a segment of a format version this package does not read.
	ErrVersion = errors.New("archive: unknown format version")
	// ErrOrder: an append out of sequence order (the writer holds every
	// sequence of an epoch once, in order, gaps included).
	ErrOrder = errors.New("archive: out of order")
	// ErrLocked: another writer has the archive open.
	ErrLocked = errors.New("archive: another writer holds the archive")
	// ErrClosed: the writer or reader was closed.
	ErrClosed = errors.New("archive: closed")
	// ErrNotFound: the archive holds no such epoch, sequence or time.
	ErrNotFound = errors.New("archive: not found")
	// ErrBroken: an earlier write failed (a full disk); the writer takes no
	// more. Reopen it: the torn tail is cut and recording resumes.
	ErrBroken = errors.New("archive: writer broken by an earlier error")
)
