package role

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// speaker is a role run in this process: its stdin and its lines.
type speaker struct {
	in    *io.PipeWriter
	lines *bufio.Scanner
	done  chan error
}

func startRole(t *testing.T, s Spec) *speaker {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	sp := &speaker{in: inW, lines: bufio.NewScanner(outR), done: make(chan error, 1)}
	go func() {
		err := s.run(inR, outW)
		outW.CloseWithError(fmt.Errorf("role ended: %v", err))
		sp.done <- err
	}()
	t.Cleanup(func() {
		inW.Close()
		if err := <-sp.done; err != nil {
			t.Errorf("%s: %v", s.Role, err)
		}
	})
	return sp
}

// expect reads the role's next line, which must start with want; it
// returns the rest.
func (sp *speaker) expect(t *testing.T, want string) string {
	t.Helper()
	if !sp.lines.Scan() {
		t.Fatalf("no %q: %v", want, sp.lines.Err())
	}
	rest, ok := strings.CutPrefix(sp.lines.Text(), want)
	if !ok {
		t.Fatalf("said %q, want %q", sp.lines.Text(), want)
	}
	return rest
}

func (sp *speaker) send(t *testing.T, format string, args ...any) {
	t.Helper()
	if _, err := fmt.Fprintf(sp.in, format+"\n", args...); err != nil {
		t.Fatal(err)
	}
}

// The open-loop producer pushes a step's count of stamped records at its
// rate, and the reader times exactly the records of the step it is told:
// every one read, none lapped, a one-way latency each. Here the reader
// reads the producer's ring itself (no mirror between them).
func TestOpenProducerReader(t *testing.T) {
	ring := filepath.Join(t.TempDir(), "O01")
	prod := startRole(t, Spec{Role: OpenProducer, Ring: ring, Record: 64, Capacity: 1 << 14})
	prod.expect(t, LineReady)
	rd := startRole(t, Spec{Role: OpenReader, Read: ring, Wait: "yield", Record: 64})
	rd.expect(t, LineReady)
	first := uint64(1)
	for _, count := range []uint64{2000, 500} {
		rd.send(t, "%s%d %d %d", CmdRead, first, first+count-1, int64(10*time.Second))
		prod.send(t, "%s%d %d %d", CmdPush, 100_000, int64(10*time.Second), count)
		var pushed ProducerResult
		if err := json.Unmarshal([]byte(prod.expect(t, LineResult)), &pushed); err != nil {
			t.Fatal(err)
		}
		var read ReaderResult
		if err := json.Unmarshal([]byte(rd.expect(t, LineResult)), &read); err != nil {
			t.Fatal(err)
		}
		if pushed.Pushed != count || pushed.Last != first+count-1 {
			t.Errorf("pushed %+v, want %d records up to %d", pushed, count, first+count-1)
		}
		if !read.Done || read.Received != count || read.Lapped != 0 || read.Lat.Samples != int64(count) || read.Lat.P50 <= 0 || read.SpanNs <= 0 {
			t.Errorf("read %+v, want all %d records, none lapped, timed", read, count)
		}
		// At 100 k/s the step takes count/100k s at least: the producer paces.
		if least := time.Duration(count-100) * 10 * time.Microsecond; time.Duration(read.SpanNs) < least {
			t.Errorf("%d records read in %v, want at least %v at 100 k/s", count, time.Duration(read.SpanNs), least)
		}
		first = pushed.Last + 1
	}
}

// A reader told a command it does not take ends with an error naming it.
func TestOpenReaderBadCommand(t *testing.T) {
	ring := filepath.Join(t.TempDir(), "O01")
	w, err := createRing(ring, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	inR, inW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- Spec{Role: OpenReader, Read: ring, Wait: "yield", Record: 64}.run(inR, io.Discard) }()
	fmt.Fprintf(inW, "read 5 1 100\n")
	if err := <-done; err == nil || !strings.Contains(err.Error(), `"read 5 1 100"`) {
		t.Errorf("reader: %v, want an error naming the command", err)
	}
	inW.Close()
}
