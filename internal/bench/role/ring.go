package role

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/ringfire/ringfire/internal/synth"
	"github.com/ringfire/ringfire/internal/trace"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/shm"
)

// ringCapacity is the capacity of the deployed rings, in records: one
// record is in flight at a time.
const ringCapacity = 1 << 12

// Bounds of the waits of the ring roles.
const (
	ringOpenWait  = 30 * time.Second // for a mirror to create the ring read
	FirstEchoWait = 15 * time.Second // first round trip: mirrors connecting, AF_XDP attaching
	EchoWait      = 5 * time.Second  // any later round trip (a lost datagram waits for its repair)
)

// roleWait is how a pinger or echo waits on its ring for a bench wait
// name: as serve's sender does in that mode (replica.RingWait: spin
// busy-polls, yield polls with sched_yield between polls, adaptive yields
// for about 200 polls, then sleeps on the ring's futex, block sleeps after
// a few polls); default, whose serve and mirror get no flag, sleeps on the
// futex after 32 polls (shm.FutexWait(32)).
func roleWait(wait string) shm.WaitStrategy {
	if m, err := replica.ParseWaitMode(wait); err == nil {
		return replica.RingWait(m)
	}
	return shm.FutexWait(32)
}

// createRing creates the ring a role writes.
func createRing(path string, size int) (*shm.Writer, error) {
	return shm.Create(path, shm.RingConfig{PayloadSize: size, Capacity: ringCapacity}, shm.CreateOptions{Replace: true})
}

// openRingWhenReady opens a reader of the ring at path from its oldest
// record, polling until a mirror has created it (bounded).
func openRingWhenReady(path string, ws shm.WaitStrategy) (*shm.Reader, error) {
	deadline := time.Now().Add(ringOpenWait)
	for {
		rd, err := shm.OpenReader(path, shm.ReadOptions{Start: shm.StartOldest, NoRegister: true, Wait: &ws})
		if err == nil {
			return rd, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("role: ring %s not there within %v: %w", path, ringOpenWait, err)
		}
		time.Sleep(time.Millisecond)
	}
}

// ringEnds are a ring role's rings: it creates the ring it writes, says
// ready, and opens the ring it reads once a mirror has made it.
func ringEnds(s Spec, out *bufio.Writer) (*shm.Writer, *shm.Reader, error) {
	w, err := createRing(s.Ring, s.Record)
	if err != nil {
		return nil, nil, err
	}
	if err := say(out, LineReady); err != nil {
		w.Close()
		return nil, nil, err
	}
	rd, err := openRingWhenReady(s.Read, roleWait(s.Wait))
	if err != nil {
		w.Close()
		return nil, nil, err
	}
	return w, rd, nil
}

// ringPinger pushes a stamped record into ring A and waits on B' for its
// echo, one record in flight. It keeps its own thread, as serve's and
// mirror's hot loops do, and so does ringEcho: a reader that moved
// between threads would wait for the Go scheduler as well as the
// kernel's, and the deployed section's scheduler trace (--trace) follows
// one thread per process.
func ringPinger(s Spec, out *bufio.Writer, gone <-chan struct{}) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	w, rd, err := ringEnds(s, out)
	if err != nil {
		return err
	}
	defer trace.Flush("pinger")
	defer w.Close()
	defer rd.Close()
	rec, buf := make([]byte, s.Record), make([]byte, s.Record)
	base := time.Now()
	ping := func(first bool) (time.Duration, error) {
		seq := w.Next()
		synth.Fill(rec, seq, uint64(time.Since(base)))
		if _, err := w.Push(rec); err != nil {
			return 0, err
		}
		trace.Stamp(trace.Push, seq)
		wait := EchoWait
		if first {
			wait = FirstEchoWait
		}
		return awaitEcho(rd, buf, seq, base, time.Now().Add(wait))
	}
	return pingLoop(s, out, gone, ping)
}

// awaitEcho reads B' until the echo of seq, skipping older records,
// before deadline; the round trip is the time since the echo's stamp.
func awaitEcho(rd *shm.Reader, buf []byte, seq uint64, base time.Time, deadline time.Time) (time.Duration, error) {
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return 0, fmt.Errorf("no echo of record %d", seq)
		}
		if _, err := rd.Recv(buf, left); err != nil {
			if errors.Is(err, shm.ErrTimeout) {
				return 0, fmt.Errorf("no echo of record %d: %w", seq, err)
			}
			return 0, err
		}
		got, ts, err := synth.Check(buf)
		switch {
		case err != nil:
			return 0, fmt.Errorf("torn or corrupt echo: %w", err)
		case got == seq:
			trace.Stamp(trace.Read, seq)
			return time.Since(base) - time.Duration(ts), nil
		case got > seq:
			return 0, fmt.Errorf("waiting for the echo of %d, got %d", seq, got)
		}
	}
}

// ringEcho copies every record of A' into ring B until stdin closes.
func ringEcho(s Spec, out *bufio.Writer, gone <-chan struct{}) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	w, rd, err := ringEnds(s, out)
	if err != nil {
		return err
	}
	defer trace.Flush("echo")
	defer w.Close()
	defer rd.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-gone; cancel() }()
	buf := make([]byte, s.Record)
	for {
		if _, err := rd.RecvContext(ctx, buf); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		trace.Stamp(trace.Read, rd.Seq())
		seq, err := w.Push(buf)
		if err != nil {
			return err
		}
		trace.Stamp(trace.Push, seq)
	}
}
