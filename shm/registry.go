package shm

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The reader registry (WITH_REGISTRY) holds one 64-byte entry per reader at
// offset 128. Shared words of entry i:
//
//	pid    u32 @0  claimed by a reader with CompareAndSwap(0 or a dead pid →
//	               its pid); cleared with Store(0) by the reader on Close or by
//	               whoever prunes a dead reader. Liveness = kill(pid, 0).
//	active u32 @4  Store(1) by the reader after cursor and name are written
//	               (publishes them); Store(0) before the pid is released.
//	cursor u64 @8  the next sequence the reader wants. Store by the reader
//	               after each copy (or batch); Load by the producer when it
//	               rescans its gate.
//	heartbeat u64 @16, name [32]u8 @24: informational, plain bytes.

type regEntry struct {
	pid    *atomic.Uint32
	active *atomic.Uint32
	cursor *atomic.Uint64
	off    uint64
}

func (r *Ring) entry(i int) regEntry {
	off := uint64(RegistryOffset + RegistryEntry*i)
	return regEntry{pid: r.m.u32(off + regPID), active: r.m.u32(off + regActive), cursor: r.m.u64(off + regCursor), off: off}
}

// pidAlive reports whether a process exists; EPERM (exists, not ours) counts
// as alive.
func pidAlive(pid uint32) bool {
	if pid == 0 || pid > 1<<22 {
		return false
	}
	err := unix.Kill(int(pid), 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// register claims a registry entry for this process, publishing cursor and
// name before setting active. It returns the entry index or -1 when the
// registry is full.
func (r *Ring) register(cursor uint64, name string) int {
	me := uint32(os.Getpid())
	for i := range int(r.layout.RegistryCount) {
		e := r.entry(i)
		pid := e.pid.Load()
		if pid != 0 && (pid == me || pidAlive(pid)) {
			continue
		}
		if !e.pid.CompareAndSwap(pid, me) {
			continue
		}
		e.active.Store(0)
		e.cursor.Store(cursor)
		var nb [regNameLen]byte
		copy(nb[:], name)
		r.m.storeBytes(e.off+regName, nb[:])
		e.active.Store(1)
		return i
	}
	return -1
}

// unregister releases entry i if this process still owns it. A ring cut
// under its mapping has no registry left to release: the fault is
// skipped, and the reader's Close unmaps the ring.
func (r *Ring) unregister(i int) {
	defer skipFault(Guard())
	e := r.entry(i)
	e.active.Store(0)
	e.pid.CompareAndSwap(uint32(os.Getpid()), 0)
}

// minCursor scans the live registered readers and returns the smallest
// cursor (ok false when there is none) and how many dead readers it
// released: readers whose cursor is below limit (those holding the producer
// back) are checked for liveness.
func (r *Ring) minCursor(limit uint64) (minc uint64, ok bool, pruned int) {
	minc = ^uint64(0)
	for i := range int(r.layout.RegistryCount) {
		e := r.entry(i)
		pid := e.pid.Load()
		if pid == 0 || e.active.Load() != 1 {
			continue
		}
		c := e.cursor.Load()
		if c < limit && !pidAlive(pid) {
			if r.releaseDead(e, pid) {
				pruned++
			}
			continue
		}
		if c < minc {
			minc, ok = c, true
		}
	}
	return minc, ok, pruned
}

func (r *Ring) releaseDead(e regEntry, pid uint32) bool {
	if e.pid.Load() != pid {
		return false
	}
	e.active.Store(0)
	return e.pid.CompareAndSwap(pid, 0)
}

// ReaderInfo describes one registry entry.
type ReaderInfo struct {
	Index  int
	PID    uint32
	Active bool
	Alive  bool
	Cursor uint64 // next sequence the reader wants
	Name   string
}

// Readers lists the claimed registry entries.
func (r *Ring) Readers() ([]ReaderInfo, error) {
	if r.closed {
		return nil, ErrClosed
	}
	var out []ReaderInfo
	for i := range int(r.layout.RegistryCount) {
		e := r.entry(i)
		pid := e.pid.Load()
		if pid == 0 {
			continue
		}
		var nb [regNameLen]byte
		r.m.loadWords(nb[:], e.off+regName)
		n := 0
		for n < len(nb) && nb[n] != 0 {
			n++
		}
		out = append(out, ReaderInfo{Index: i, PID: pid, Active: e.active.Load() == 1,
			Alive: pidAlive(pid), Cursor: e.cursor.Load(), Name: string(nb[:n])})
	}
	return out, nil
}

// Prune releases the registry entries of dead readers and returns how many
// it released. The ring must be open writable.
func (r *Ring) Prune() (int, error) {
	if r.closed {
		return 0, ErrClosed
	}
	if !r.m.writable {
		return 0, fmt.Errorf("prune %s: %w: ring opened read-only", r.path, ErrInvalid)
	}
	n := 0
	for i := range int(r.layout.RegistryCount) {
		e := r.entry(i)
		if pid := e.pid.Load(); pid != 0 && !pidAlive(pid) && r.releaseDead(e, pid) {
			n++
		}
	}
	return n, nil
}
