package shm

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error this package returns wraps one of these, so
// callers test with errors.Is.
var (
	// ErrClosed is returned by any call on a ring, reader, writer or
	// blackboard after Close.
	ErrClosed = errors.New("shm: closed")
	// ErrCorrupt marks a file whose header or regions fail validation.
	ErrCorrupt = errors.New("shm: corrupt ring file")
	// ErrMagic marks a file that is not a ring (or not yet initialised:
	// the creator stores the magic last).
	ErrMagic = errors.New("shm: bad magic")
	// ErrVersion marks a ring of another layout version.
	ErrVersion = errors.New("shm: version mismatch")
	// ErrTruncated marks a file shorter than its header says.
	ErrTruncated = errors.New("shm: truncated file")
	// ErrGeometry is returned when creating over an existing ring of a
	// different geometry without asking to replace it.
	ErrGeometry = errors.New("shm: existing ring has another geometry")
	// ErrLocked is returned when another live producer holds the ring.
	ErrLocked = errors.New("shm: ring is held by another producer")
	// ErrBackpressure is returned by TryPush on a lossless ring whose
	// slowest live reader is a full ring behind.
	ErrBackpressure = errors.New("shm: backpressure: slowest reader is a full ring behind")
	// ErrNoReaderSlots is returned when attaching to a lossless ring whose
	// reader registry is full.
	ErrNoReaderSlots = errors.New("shm: no reader slots left in the registry")
	// ErrType is returned for element types that cannot live in shared
	// memory (they contain pointers) or do not fit the ring.
	ErrType = errors.New("shm: unsupported element type")
	// ErrInvalid is returned for invalid arguments (capacity not a power of
	// two, payload too large, sequence out of order...).
	ErrInvalid = errors.New("shm: invalid argument")
	// ErrShortBuffer is returned by blob receives whose buffer is too small;
	// the record is not consumed.
	ErrShortBuffer = errors.New("shm: buffer too small")
	// ErrStalledWriter is returned by a blackboard read that found a slot
	// held mid-write for longer than StallTimeout.
	ErrStalledWriter = errors.New("shm: writer stalled mid-write")
	// ErrDropped is returned by a multi-producer push whose record could
	// not be written without tearing another (MultiWriter.Push).
	ErrDropped = errors.New("shm: record dropped")
	// ErrTimeout is returned by blocking receives whose deadline passed.
	ErrTimeout = errors.New("shm: timed out")
	// ErrNotRegular is returned for a path that holds something other than
	// a regular file (a FIFO, a device, a directory, a socket): it is
	// refused without blocking.
	ErrNotRegular = errors.New("shm: not a regular file")
	// ErrNoSpace is returned when the filesystem cannot hold a new ring or
	// blackboard: refused (or its space reserved) before it is mapped, so a
	// full filesystem never becomes a SIGBUS on first write.
	ErrNoSpace = errors.New("shm: no space left for the file")
	// ErrTooLarge is returned when a new file would exceed the size limit
	// (CreateOptions.MaxSize, DefaultMaxSize).
	ErrTooLarge = errors.New("shm: file larger than the size limit")
)

// FieldError reports the header field or region that failed validation.
type FieldError struct {
	Field  string // header field or region name, e.g. "capacity"
	Value  uint64 // the offending value
	Reason string // what is wrong with it
	Err    error  // ErrCorrupt, ErrMagic, ErrVersion or ErrTruncated
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%v: field %s = %d (%#x): %s", e.Err, e.Field, e.Value, e.Value, e.Reason)
}

func (e *FieldError) Unwrap() error { return e.Err }

func fieldErr(err error, field string, v uint64, format string, args ...any) error {
	return &FieldError{Field: field, Value: v, Reason: fmt.Sprintf(format, args...), Err: err}
}
