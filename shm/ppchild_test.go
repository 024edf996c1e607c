package shm

// The echo child of the ping-pong benchmarks and of TestPingPongRoundTrips
// (pingpong_test.go): its entry point, the ring echo, and the CPU pinning
// both sides of a busy-spinning ring ping-pong use.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/internal/ipcbench"
)

func ppWait(name string) (WaitStrategy, error) {
	switch name {
	case "spin":
		return BusySpin(), nil
	case "futex", "futex-ctx": // futex-ctx: receives with RecvContext
		return FutexWait(32), nil
	case "sched-yield":
		return SpinSchedYield(32), nil
	case "park":
		return ParkWait(32), nil
	}
	return WaitStrategy{}, fmt.Errorf("unknown wait mode %q", name)
}

// ppEchoMain is the echo child of the ping-pong benchmarks and of
// TestPingPongRoundTrips, run by TestMain when ppEnv is set; v is ppEnv's
// value.
func ppEchoMain(v string) error {
	var cfg ppConfig
	if err := json.Unmarshal([]byte(v), &cfg); err != nil {
		return fmt.Errorf("%s: %w", ppEnv, err)
	}
	if cfg.Limit <= 0 {
		cfg.Limit = time.Minute
	}
	ipcbench.Watchdog(cfg.Parent, cfg.Limit)
	deadline := time.Now().Add(cfg.Limit)
	switch cfg.Kind {
	case "ring":
		return ppEchoRing(cfg, deadline)
	case "drain": // drain_test.go
		return ppDrainRing(cfg, deadline)
	}
	_, err := ipcbench.ServeChild(ipcbench.Transport(cfg.Kind), cfg.Addr, deadline)
	return err
}

// ppPinned says whether the two sides of a ring ping-pong with this wait
// mode are pinned to distinct cores. Only busy-spinners are: sleeping
// waiters (futex, like the kernel transports) are left to the scheduler,
// which may run both ends on one core.
func ppPinned(wait string) bool { return wait == "spin" }

// ppPin locks the calling goroutine to its OS thread and binds that thread
// to the idx-th CPU the process may run on (the parent takes 0, the echo
// child 1), so that the two waiting sides of a ring ping-pong never share a
// core: two busy-spinners on one core hand over only at scheduler ticks
// (milliseconds). With fewer than two CPUs it only locks the thread. The
// returned function restores the thread's CPU mask and unlocks it. Spawn
// children before pinning: they inherit the forking thread's mask.
func ppPin(idx int) (undo func()) {
	runtime.LockOSThread()
	var old unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil || old.Count() < 2 {
		return runtime.UnlockOSThread
	}
	cpu, seen := -1, 0
	for c := range 1024 {
		if old.IsSet(c) {
			if seen == idx%old.Count() {
				cpu = c
				break
			}
			seen++
		}
	}
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return runtime.UnlockOSThread
	}
	return func() {
		unix.SchedSetaffinity(0, &old)
		runtime.UnlockOSThread()
	}
}

// ppEchoRing is the ring echo of the child: records from A go back on B.
func ppEchoRing(cfg ppConfig, deadline time.Time) error {
	ws, err := ppWait(cfg.Wait)
	if err != nil {
		return err
	}
	if ppPinned(cfg.Wait) {
		defer ppPin(1)()
	}
	c, err := NewConsumer[benchMsg](cfg.A, ReadOptions{Start: StartOldest, Wait: &ws, Name: "pingpong-echo"})
	if err != nil {
		return err
	}
	defer c.Close()
	p, err := NewProducer[benchMsg](cfg.B, ProducerOptions{Capacity: ppCap})
	if err != nil {
		return err
	}
	defer p.Close()
	var m benchMsg
	reported := uint64(0)
	recv := func() error { return c.Recv(&m, time.Second) }
	if cfg.Wait == "futex-ctx" {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		recv = func() error {
			if err := c.RecvContext(ctx, &m); err != nil {
				return fmt.Errorf("echo: no stop record before the deadline (%d echoed): %w", c.Reader().Received(), err)
			}
			return nil
		}
	}
	for {
		err := recv()
		if errors.Is(err, ErrTimeout) {
			if time.Now().After(deadline) {
				return fmt.Errorf("echo: no stop record before the deadline (%d echoed)", c.Reader().Received())
			}
			// Idle for a second: say where the reader stands, once per
			// position, for the parent's error message if it is waiting.
			if rd := c.Reader(); rd.Next() != reported {
				reported = rd.Next()
				fmt.Fprintf(os.Stderr, "echo child: idle 1s on ring A: received %d, lapped %d, next %d, A write_seq %d\n",
					rd.Received(), rd.Lapped(), rd.Next(), rd.Ring().WriteSeq())
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("echo: receive: %w", err)
		}
		if m.Seq == ppStopSeq {
			return nil
		}
		if _, err := p.Push(&m); err != nil {
			return fmt.Errorf("echo: push %d: %w", m.Seq, err)
		}
	}
}
