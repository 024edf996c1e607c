package ipcbench

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/testenv"
)

const testRounds = 500

// serveInProcess runs the echo side of l in a goroutine and returns the
// connected client and a function that closes it and returns what the echo
// goroutine returned.
func serveInProcess(t *testing.T, l *Link) (*Client, func() (uint64, error)) {
	t.Helper()
	// Serve duplicates its files, but Connect may close the originals before
	// the goroutine gets to them: hand it duplicates of its own.
	var files []*os.File
	for _, f := range l.ChildFiles() {
		d, err := pollable(f)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, d)
	}
	type result struct {
		n   uint64
		err error
	}
	res := make(chan result, 1)
	addr := l.Addr()
	go func() {
		n, err := Serve(l.Transport(), files, addr, time.Now().Add(30*time.Second))
		for _, f := range files {
			f.Close()
		}
		res <- result{n, err}
	}()
	c, err := l.Connect(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	return c, func() (uint64, error) {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
		select {
		case r := <-res:
			return r.n, r.err
		case <-time.After(10 * time.Second):
			t.Fatal("echo goroutine did not stop 10 s after the client closed")
			return 0, nil
		}
	}
}

func TestPingPongInProcess(t *testing.T) {
	for _, tr := range Transports() {
		t.Run(string(tr), func(t *testing.T) {
			l, err := NewLink(tr)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			c, stop := serveInProcess(t, l)
			for range testRounds {
				if err := c.RoundTrip(); err != nil {
					t.Fatal(err)
				}
			}
			if a := testing.AllocsPerRun(100, func() {
				if err := c.RoundTrip(); err != nil {
					t.Fatal(err)
				}
			}); a != 0 {
				t.Errorf("RoundTrip over %s: %v allocations, want 0", tr, a)
			}
			sent := c.Seq()
			n, err := stop()
			if err != nil || n != sent {
				t.Fatalf("echo returned %d, %v; want %d, nil", n, err, sent)
			}
		})
	}
}

func TestPingPongMismatch(t *testing.T) {
	l, err := NewLink(Pipe)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r, w := l.ChildFiles()[0], l.ChildFiles()[1]
	rd, err := pollable(r)
	if err != nil {
		t.Fatal(err)
	}
	wd, err := pollable(w)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	defer wd.Close()
	rd.SetDeadline(time.Now().Add(10 * time.Second))
	wd.SetDeadline(time.Now().Add(10 * time.Second))
	go func() { // a faulty echo: the second message comes back with one bit flipped
		var buf [MsgSize]byte
		for i := 0; ; i++ {
			if _, err := io.ReadFull(rd, buf[:]); err != nil {
				return
			}
			if i == 1 {
				buf[MsgSize/2] ^= 1
			}
			if _, err := wd.Write(buf[:]); err != nil {
				return
			}
		}
	}()
	c, err := l.Connect(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.RoundTrip(); err != nil {
		t.Fatal(err)
	}
	err = c.RoundTrip()
	var me *MismatchError
	if !errors.As(err, &me) || me.Seq != 2 || me.Got[MsgSize/2] == me.Sent[MsgSize/2] {
		t.Fatalf("corrupted echo: got %v, want a MismatchError for message 2", err)
	}
}

const childEnv = "IPCBENCH_TEST_CHILD" // "transport parent-pid addr"

// TestMain runs the echo child of TestPingPongChild instead of the tests
// when childEnv is set (TestPingPongChild re-executes the test binary with
// it), exiting with status 0 when the echo ended cleanly and 1 otherwise.
func TestMain(m *testing.M) {
	if v := os.Getenv(childEnv); v != "" {
		if err := echoChildMain(v); err != nil {
			fmt.Fprintf(os.Stderr, "echo child (%s): FAIL: %v\n", childEnv, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// echoChildMain is the echo child of TestPingPongChild; v is childEnv's
// value. The watchdog bounds its life (60 s, or until the parent dies).
func echoChildMain(v string) error {
	tr, rest, _ := strings.Cut(v, " ")
	ppid, addr, _ := strings.Cut(rest, " ")
	parent, err := strconv.Atoi(ppid)
	if err != nil {
		return fmt.Errorf("%s=%q: parent pid: %w", childEnv, v, err)
	}
	Watchdog(parent, 60*time.Second)
	_, err = ServeChild(Transport(tr), addr, time.Now().Add(60*time.Second))
	return err
}

func TestPingPongChild(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range Transports() {
		t.Run(string(tr), func(t *testing.T) {
			l, err := NewLink(tr)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			env := childEnv + "=" + string(tr) + " " + strconv.Itoa(os.Getpid()) + " " + l.Addr()
			// The child runs no test: childEnv makes TestMain echo, and
			// the watchdog (60 s) bounds it.
			child, err := StartChild([]string{exe, "-test.run=^$"},
				[]string{env}, l.ChildFiles())
			if err != nil {
				t.Fatal(err)
			}
			defer child.Stop(0)
			c, err := l.Connect(10 * time.Second)
			if err != nil {
				t.Fatalf("%v; child output:\n%s", err, child.Output())
			}
			c.SetDeadline(time.Now().Add(30 * time.Second))
			for range testRounds {
				if err := c.RoundTrip(); err != nil {
					t.Fatalf("%v; child output:\n%s", err, child.Output())
				}
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if err := child.Stop(10 * time.Second); err != nil {
				t.Fatal(err)
			}
			// The child blocked on every message at least once: it woke up.
			if n, ok := child.CtxSwitches(); !ok || n < 1 {
				t.Errorf("child context switches = %d, %v; want some after %d blocking reads", n, ok, testRounds)
			}
		})
	}
}

func TestStartChildStopKills(t *testing.T) {
	child, err := StartChild([]string{"sleep", "30"}, nil, nil)
	if err != nil {
		testenv.Skipf(t, "no sleep command: %v", err)
	}
	start := time.Now()
	if err := child.Stop(10 * time.Millisecond); err == nil {
		t.Fatal("Stop of a child that had to be killed returned nil")
	}
	select {
	case <-child.Done():
	default:
		t.Fatal("child not reaped after Stop")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Stop took %v", d)
	}
}
