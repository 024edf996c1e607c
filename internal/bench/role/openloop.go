package role

import (
	"bufio"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ringfire/ringfire/internal/bench/hist"
	"github.com/ringfire/ringfire/internal/bench/report"
	"github.com/ringfire/ringfire/internal/synth"
	"github.com/ringfire/ringfire/shm"
)

// The openloop section's roles, each a process of its own:
//
//	producer  creates Ring (Capacity records of Record bytes), ready; on
//	          each "push RATE NS COUNT" pushes RATE records/s, one record
//	          at a time, each stamped with the time as it is pushed, for
//	          NS nanoseconds or COUNT records; ProducerResult each time
//	reader    opens Read (a mirror ring, once the mirror made it) from its
//	          oldest record, ready; on each "read FIRST LAST NS" reads,
//	          waiting as Wait says, until it has read or lost record LAST
//	          or NS nanoseconds passed, recording the one-way latency of
//	          records FIRST to LAST; ReaderResult each time
//
// The producer and the reader are in two namespaces of one host: they
// share the clock, so a record's stamp and the time it is read are one
// clock's readings.
const (
	OpenProducer = "open-producer"
	OpenReader   = "open-reader"
)

// CmdRead is the reader's command, followed by the first and last
// sequence and the bound in nanoseconds.
const CmdRead = "read "

// ReaderResult is what the reader read of one "read" command.
type ReaderResult struct {
	Received uint64             `json:"received"` // records FIRST..LAST read
	Lapped   uint64             `json:"lapped"`   // records the reader never saw: overwritten, or holes
	Done     bool               `json:"done"`     // it got to LAST within the bound
	SpanNs   int64              `json:"span_ns"`  // the command to the last record read
	Lat      report.Percentiles `json:"one_way"`
}

// stamp is a record's stamp: the wall clock, in nanoseconds, which every
// process of the host reads alike (time.Now, through the vDSO).
func stamp() uint64 { return uint64(time.Now().UnixNano()) }

// openProducer pushes stamped records on each "push" command.
func openProducer(s Spec, out *bufio.Writer, cmds <-chan string, gone <-chan struct{}) error {
	w, err := shm.Create(s.Ring, shm.RingConfig{PayloadSize: s.Record, Capacity: s.Capacity}, shm.CreateOptions{Replace: true})
	if err != nil {
		return err
	}
	defer w.Close()
	cmd, err := readyForCmd(out, cmds, gone)
	if err != nil {
		return err
	}
	rec := make([]byte, s.Record)
	return pushes(cmd, out, cmds, gone, func(rate uint64, d time.Duration, count uint64) (ProducerResult, error) {
		return smoothPush(rate, d, count, func() (uint64, error) {
			synth.Fill(rec, w.Next(), stamp())
			return w.Push(rec)
		})
	})
}

// openReader answers "read" commands until stdin closes.
func openReader(s Spec, out *bufio.Writer, cmds <-chan string, gone <-chan struct{}) error {
	rd, err := openRingWhenReady(s.Read, roleWait(s.Wait))
	if err != nil {
		return err
	}
	defer rd.Close()
	cmd, err := readyForCmd(out, cmds, gone)
	if err != nil {
		return err
	}
	buf := make([]byte, s.Record)
	return commands(cmd, cmds, gone, func(cmd string) error {
		var first, last uint64
		var ns int64
		arg, ok := strings.CutPrefix(cmd, CmdRead)
		if _, err := fmt.Sscan(arg, &first, &last, &ns); !ok || err != nil || first == 0 || last < first {
			return fmt.Errorf("role: reader command %q: want read FIRST LAST NS", cmd)
		}
		res, err := readSpan(rd, buf, first, last, time.Duration(ns))
		if err != nil {
			return err
		}
		return sayResult(out, res)
	})
}

// readSpan reads until record last is read or lost, or bound passes,
// recording the one-way latency of records first..last.
func readSpan(rd *shm.Reader, buf []byte, first, last uint64, bound time.Duration) (ReaderResult, error) {
	var res ReaderResult
	h := hist.New()
	start := time.Now()
	deadline := start.Add(bound)
	lapped := rd.Lapped()
	var lastAt time.Time
	for rd.Next() <= last {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		if _, err := rd.Recv(buf, left); err != nil {
			if errors.Is(err, shm.ErrTimeout) {
				break
			}
			return res, err
		}
		now := time.Now()
		seq, ts, err := synth.Check(buf)
		if err != nil {
			return res, fmt.Errorf("role: torn or corrupt record %d: %w", rd.Seq(), err)
		}
		if seq < first || seq > last {
			continue
		}
		h.Record(time.Duration(now.UnixNano() - int64(ts)))
		res.Received++
		lastAt = now
	}
	res.Done, res.Lapped, res.Lat = rd.Next() > last, rd.Lapped()-lapped, h.Percentiles()
	if !lastAt.IsZero() {
		res.SpanNs = int64(lastAt.Sub(start))
	}
	return res, nil
}
