package replica

import (
	"fmt"
	"runtime/debug"
	"time"

	"github.com/ringfire/ringfire/shm"
)

// mirrorRing writes records into the mirror's ring at the source's
// sequence numbers, rewriting blob descriptors to point into its own arena.
// It implements recordSink for the sequencer; the mirror shows write_seq
// after each datagram and publishes (shows, and tells onPublish) once per
// step.
type mirrorRing struct {
	w         *shm.Writer
	blob      bool
	slot      []byte // scratch slot payload for blob rings
	stored    uint64 // last sequence stored
	published uint64 // last sequence published
	told      uint64 // last sequence onPublish was called with
	// onPublish is called by publish with the last sequence published
	// when it moved since the last call (MirrorConfig.Published; nil:
	// nothing to tell).
	onPublish func(uint64)
}

func newMirrorRing(w *shm.Writer, onPublish func(uint64)) *mirrorRing {
	l := w.Ring().Layout()
	m := &mirrorRing{w: w, blob: l.Flags&shm.FlagArena != 0, slot: make([]byte, l.PayloadSize()), onPublish: onPublish}
	m.stored = w.Ring().WriteSeq()
	m.published, m.told = m.stored, m.stored
	return m
}

func (m *mirrorRing) write(seq uint64, slot, blob []byte) error {
	if !m.blob {
		if err := m.w.Store(seq, slot); err != nil {
			return fmt.Errorf("mirror ring: %w", err)
		}
		m.stored = seq
		return nil
	}
	off, err := m.w.AppendBlob(blob)
	if err != nil {
		return fmt.Errorf("mirror ring: %w", err)
	}
	copy(m.slot, slot)
	d := shm.DecodeDescriptor(m.slot)
	d.Offset = off
	d.Encode(m.slot)
	if err := m.w.Store(seq, m.slot); err != nil {
		return fmt.Errorf("mirror ring: %w", err)
	}
	m.stored = seq
	return nil
}

// skip needs nothing: the ring is SPARSE and readers step over holes once
// write_seq passes them.
func (m *mirrorRing) skip(uint64) {}

// show makes everything stored visible to the mirror's readers, without
// telling onPublish.
func (m *mirrorRing) show() error {
	if m.stored == m.published {
		return nil
	}
	m.published = m.stored
	return m.w.Publish(m.stored)
}

// publish shows what is stored, then tells onPublish of everything shown
// since it last did.
func (m *mirrorRing) publish() error {
	if err := m.show(); err != nil {
		return err
	}
	if m.onPublish != nil && m.told != m.published {
		m.told = m.published
		m.onPublish(m.published)
	}
	return nil
}

func (m *mirrorRing) close() error {
	m.publish()
	return m.w.Close()
}

// guardRun, deferred at the top of Run with shm.Guard's result, makes a
// fault on the mirror ring (its file cut under it by another process)
// the end of that ring's session, not of the process: the connection
// closes (MirrorDisconnected with the error), the ring is unmapped
// without another access, and Run returns the fault's error, wrapping
// shm.ErrTruncated and naming the file. The next Run (or Connect) creates
// a fresh ring at the path. Any other panic goes on.
func (m *Mirror) guardRun(old bool, err *error) {
	r := recover()
	debug.SetPanicOnFault(old)
	if r == nil {
		return
	}
	fe := shm.Fault(r)
	if fe == nil {
		panic(r)
	}
	*err = m.dropRing(fe)
	m.disconnect(fe)
	m.publishStats(time.Now()) // Run's own deferred publish ran before the cut was counted
}

// recoverRing, deferred by a Loop member's steps (Loop.Run set the
// goroutine's fault guard), turns a fault on the mirror ring into the
// error that ends this session, as guardRun does on a thread of the
// mirror's own: Run returns it, and the next Run creates a fresh ring.
func (m *Mirror) recoverRing(err *error) {
	r := recover()
	if r == nil {
		return
	}
	fe := shm.Fault(r)
	if fe == nil {
		panic(r)
	}
	*err = m.dropRing(fe)
}

// dropRing unmaps a mirror ring whose file was cut, without another
// access (no publish: the mapping is cut), counts the cut, and returns
// the session's error, wrapping fe (and so shm.ErrTruncated).
func (m *Mirror) dropRing(fe error) error {
	m.stats.RingCuts++
	if m.ring != nil {
		m.ring.w.Close()
		m.ring, m.seq = nil, nil
	}
	return fmt.Errorf("mirror into %s: %w", m.cfg.Ring, fe)
}
