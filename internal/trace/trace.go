package trace

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// Stage names a point of a record's way.
type Stage uint8

// The stages.
const (
	Push      Stage = iota + 1 // a producer published the record (bench roles)
	Picked                     // the sender saw it (serve)
	Sent                       // the sender's sendmmsg returned with it (serve)
	Recv                       // the mirror took its datagram (mirror)
	Published                  // the mirror published it in its ring (mirror)
	Read                       // a reader got it (bench roles)
	Sending                    // the sender calls sendmmsg with it (serve)
)

var stageNames = [...]string{"", "push", "picked", "sent", "recv", "published", "read", "sending"}

func (s Stage) String() string {
	if int(s) < len(stageNames) {
		return stageNames[s]
	}
	return fmt.Sprintf("Stage(%d)", int(s))
}

// Env is the environment variable that turns tracing on.
const Env = "RINGFIRE_TRACE"

type entry struct {
	stage Stage
	seq   uint64
	ns    int64
}

// maxEntries bounds the memory of a trace (24 MB).
const maxEntries = 1 << 20

var (
	// on is written once by Start, before any goroutine stamps; read by
	// every Stamp.
	on atomic.Bool
	// next counts stamps taken: Stamp's atomic Add reserves entry next-1.
	next    atomic.Uint64
	entries []entry
	dir     string
	once    sync.Once
	// base and baseMono are one instant read by both clocks (within the
	// time of a clock_gettime call): stamps are time.Since(base) plus
	// baseMono, CLOCK_MONOTONIC through the vDSO-fast time.Now.
	base, baseMono = startClock()
)

// Start turns tracing on if RINGFIRE_TRACE is set (call it at the start
// of main).
func Start() {
	once.Do(func() {
		if dir = os.Getenv(Env); dir != "" {
			entries = make([]entry, maxEntries)
			on.Store(true)
		}
	})
}

// On reports whether stamps are kept.
func On() bool { return on.Load() }

// Stamp notes that record seq reached stage now.
func Stamp(stage Stage, seq uint64) {
	if !on.Load() {
		return
	}
	i := next.Add(1) - 1
	if i < maxEntries {
		entries[i] = entry{stage, seq, monotonic()}
	}
}

// monotonic is CLOCK_MONOTONIC in nanoseconds (time.Since of a time taken
// at start adds that time's own reading, which is CLOCK_MONOTONIC).
func monotonic() int64 { return int64(time.Since(base)) + baseMono }

// Flush writes the stamps to RINGFIRE_TRACE/<name>-<pid>.trace, one
// "stage seq ns" line each; call it when the process is done (goroutines
// that stamp have stopped).
func Flush(name string) error {
	if !on.Load() {
		return nil
	}
	n := min(next.Load(), maxEntries)
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d.trace", name, os.Getpid())))
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, e := range entries[:n] {
		fmt.Fprintf(w, "%s %d %d\n", e.stage, e.seq, e.ns)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
