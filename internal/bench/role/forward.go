package role

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ringfire/ringfire/internal/bench/delayline"
	"github.com/ringfire/ringfire/internal/bench/report"
)

// Forwarder is the lines section's delay line, a process in a middle
// namespace: it forwards every frame between In (the source's side) and
// Out (the mirror's), holding those to the mirror Delay and dropping each
// DATA frame to UDP port Port with probability Loss (package delayline);
// ready once its sockets are open; on "stop" it stops, writes the first
// sequence of every DATA frame it dropped to Log (one a line) and says
// its ForwardResult.
const Forwarder = "forwarder"

// CmdStop ends a forwarder's forwarding.
const CmdStop = "stop"

// ForwardSpec is a forwarder's part of a Spec.
type ForwardSpec struct {
	In    string          `json:"in"`
	Out   string          `json:"out"`
	Delay report.Duration `json:"delay"`
	Loss  float64         `json:"loss"`
	Seed  uint64          `json:"seed"`
	Port  uint16          `json:"port"`
	Log   string          `json:"log"` // where the dropped sequences go
	// Realtime runs its threads SCHED_FIFO (delayline.Config.Realtime).
	Realtime bool `json:"realtime,omitempty"`
}

// ForwardResult is a forwarder's counters.
type ForwardResult = delayline.Stats

// forwarder runs s.Forward until "stop" (or stdin's end).
func forwarder(s Spec, out *bufio.Writer, cmds <-chan string, gone <-chan struct{}) error {
	f := s.Forward
	if f == nil {
		return fmt.Errorf("role: %s without its forward spec", Forwarder)
	}
	l, err := delayline.Open(delayline.Config{In: f.In, Out: f.Out, Delay: time.Duration(f.Delay), Loss: f.Loss, Seed: f.Seed, Port: f.Port, Realtime: f.Realtime})
	if err != nil {
		return err
	}
	defer l.Close()
	stop, ran := make(chan struct{}), make(chan error, 1)
	go func() { ran <- l.Run(stop) }()
	cmd, err := readyForCmd(out, cmds, gone)
	close(stop)
	if rerr := <-ran; err == nil {
		err = rerr
	}
	if err != nil {
		return err
	}
	if cmd != CmdStop {
		return fmt.Errorf("role: forwarder command %q: want %s", cmd, CmdStop)
	}
	st := l.Stats()
	if err := writeSeqs(f.Log, st.Dropped); err != nil {
		return err
	}
	if err := sayResult(out, st); err != nil {
		return err
	}
	return awaitGone(gone)
}

// writeSeqs writes seqs to file, one a line.
func writeSeqs(file string, seqs []uint64) error {
	var b strings.Builder
	for _, s := range seqs {
		b.WriteString(strconv.FormatUint(s, 10))
		b.WriteByte('\n')
	}
	return os.WriteFile(file, []byte(b.String()), 0o644)
}

// ReadSeqs reads a forwarder's Log.
func ReadSeqs(file string) ([]uint64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var out []uint64
	for _, f := range strings.Fields(string(b)) {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("role: %s: %w", file, err)
		}
		out = append(out, v)
	}
	return out, nil
}
