package shm

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
)

// A file cut under its mapping. Nothing stops another process from
// truncating a ring file that this one maps (truncate -s 0, a tool run
// on the wrong path): the pages past the new end are gone, and the next
// access to one raises SIGBUS, which kills a Go program ("fatal error:
// fault") whichever goroutine touched the page. Guard and Recover make
// that fault an error of the ring instead: Guard sets
// runtime/debug.SetPanicOnFault on the calling goroutine, so the runtime
// panics in it instead of crashing, and Recover, deferred at the top of
// that goroutine, stops the panic and hands back an error wrapping
// ErrTruncated that names the file. The accesses themselves are not
// checked (the hot paths cost nothing more); the price is one deferred
// call per guarded function.
//
// A fault anywhere else (memory that is no mapping of this package) is
// not ours to hide: Recover panics again with it.
//
// A system call handed a word of a cut page (futex, futex_waitv) gets
// EFAULT instead of a signal; the waits here ignore it, and the next load
// of the word faults in the guarded goroutine.

// registry is every live mapping of the process, for Fault to name the
// file an address belongs to, and the last few unmapped ones whose file
// had been cut: a guarded function's deferred Close may unmap the ring
// before the fault reaches Recover.
var registry struct {
	mu   sync.Mutex
	maps map[*mapping]string // the mapping's path
	cut  [8]cutSpan          // unmapped after a cut, a ring buffer (next)
	next int
}

// cutSpan is an unmapped mapping whose file was shorter than it.
type cutSpan struct {
	start, end uintptr
	path       string
}

// goneCut, for Fault, is the unmapped cut mapping holding addr.
func goneCut(addr uintptr) (cutSpan, bool) {
	for _, c := range registry.cut {
		if c.end != 0 && addr >= c.start && addr < c.end {
			return c, true
		}
	}
	return cutSpan{}, false
}

// forgetCut drops the cut spans that overlap [start, end), an address
// range mapped again.
func forgetCut(start, end uintptr) {
	for i, c := range registry.cut {
		if c.end > start && c.start < end {
			registry.cut[i] = cutSpan{}
		}
	}
}

// register records m as a mapping of path.
func register(m *mapping, path string) {
	registry.mu.Lock()
	if registry.maps == nil {
		registry.maps = map[*mapping]string{}
	}
	registry.maps[m] = path
	forgetCut(m.span())
	registry.mu.Unlock()
}

// unregister forgets m (before it is unmapped), keeping its span among
// the cut ones when its file is now shorter than it.
func unregister(m *mapping) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	path, ok := registry.maps[m]
	if !ok {
		return
	}
	delete(registry.maps, m)
	if st, err := os.Stat(path); err == nil && st.Size() < int64(len(m.data)) {
		start, end := m.span()
		registry.cut[registry.next] = cutSpan{start: start, end: end, path: path}
		registry.next = (registry.next + 1) % len(registry.cut)
	}
}

// Guard makes a fault in a mapping (a ring file truncated under it) panic
// in the calling goroutine instead of killing the process, and returns
// the goroutine's previous setting, for Recover. Use it as
//
//	defer shm.Recover(shm.Guard(), &err)
//
// at the top of each goroutine that reads or writes a ring.
func Guard() bool { return debug.SetPanicOnFault(true) }

// Recover, deferred with Guard's result, turns a fault in a mapping into
// an error wrapping ErrTruncated naming the file, stored in *err (when
// err is not nil), and restores the goroutine's fault setting. Any other
// panic goes on.
func Recover(old bool, err *error) {
	r := recover()
	debug.SetPanicOnFault(old)
	if r == nil {
		return
	}
	e := Fault(r)
	if e == nil {
		panic(r)
	}
	if err != nil {
		*err = e
	}
}

// Protect runs f in the calling goroutine with the fault guard: a fault in
// a mapping is returned as Recover makes it.
func Protect(f func() error) (err error) {
	defer Recover(Guard(), &err)
	return f()
}

// FaultError is a fault in a mapping: its file was cut under it.
type FaultError struct {
	Path   string // the mapped file
	Offset uint64 // where in the mapping the access faulted
	Mapped uint64 // the mapping's length
	Size   int64  // the file's size after the fault (-1: unknown)
}

func (e *FaultError) Error() string {
	now := "its size is unknown"
	if e.Size >= 0 {
		now = fmt.Sprintf("now %d bytes", e.Size)
	}
	return fmt.Sprintf("%v: %s was cut under its mapping: an access %d bytes into its %d mapped bytes faulted (%s)",
		ErrTruncated, e.Path, e.Offset, e.Mapped, now)
}

func (e *FaultError) Unwrap() error { return ErrTruncated }

// Fault returns the error of a recovered panic value r when r is a fault
// at an address of one of this process's mappings (a *FaultError), nil
// for any other value.
func Fault(r any) error {
	fa, ok := r.(interface{ Addr() uintptr })
	if !ok {
		return nil
	}
	if _, ok := r.(error); !ok {
		return nil
	}
	addr := fa.Addr()
	registry.mu.Lock()
	defer registry.mu.Unlock()
	for m, path := range registry.maps {
		if start, end := m.span(); addr >= start && addr < end {
			return faultAt(path, addr, start, end)
		}
	}
	if c, ok := goneCut(addr); ok {
		return faultAt(c.path, addr, c.start, c.end)
	}
	return nil
}

func faultAt(path string, addr, start, end uintptr) *FaultError {
	e := &FaultError{Path: path, Offset: uint64(addr - start), Mapped: uint64(end - start), Size: -1}
	if st, err := os.Stat(path); err == nil {
		e.Size = st.Size()
	}
	return e
}

// IsFault reports whether err is a fault in a mapping.
func IsFault(err error) bool {
	var fe *FaultError
	return errors.As(err, &fe)
}

// skipFault, deferred with Guard's result, stops a fault in a mapping and
// restores the goroutine's setting; any other panic goes on.
func skipFault(old bool) {
	p := recover()
	debug.SetPanicOnFault(old)
	if p != nil && Fault(p) == nil {
		panic(p)
	}
}
