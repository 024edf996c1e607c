package shm

// TestFutexWaitReadOnlyReader and its child process (role
// "futex-readonly" of mpChildMain).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestFutexWaitReadOnlyReader: a NoRegister reader with the FutexWait
// strategy must wait and time out like any other. Regression test: the ring
// was mapped read-only for NoRegister and the futex wait incremented the
// header's waiting_consumers word through that mapping: SIGSEGV, killing
// the process. The reader runs in a child process so a fault cannot take
// the test binary down.
func TestFutexWaitReadOnlyReader(t *testing.T) {
	args := reexecArgs(t, 0)
	w, path := createRing(t, RingConfig{PayloadSize: 56, Capacity: 16})
	p := make([]byte, mpPayload)
	mpEncode(p, 1, 0)
	if _, err := w.Push(p); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(os.Environ(), mpEnvRole+"=futex-readonly", mpEnvRing+"="+path)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		first := stderr.String()
		if i := strings.Index(first, "\n\ngoroutine"); i > 0 {
			first = first[:i]
		}
		t.Fatalf("a NoRegister reader with FutexWait crashed in Recv (%v):\n%s\n%s", err, stdout.String(), first)
	}
	var res mpReaderResult
	mpParse(t, &mpProc{name: "futex-readonly reader", stdout: stdout, stderr: stderr}, &res)
	if res.Err != "" {
		t.Fatal(res.Err)
	}
}

// mpFutexReadOnly is the child of TestFutexWaitReadOnlyReader: it receives
// record 1, then waits for a record that never comes and must time out.
func mpFutexReadOnly() (mpReaderResult, error) {
	var res mpReaderResult
	ws := FutexWait(0)
	rd, err := OpenReader(os.Getenv(mpEnvRing), ReadOptions{Start: StartOldest, NoRegister: true, Wait: &ws})
	if err != nil {
		return res, err
	}
	defer rd.Close()
	buf := make([]byte, mpPayload)
	if seq, err := rd.Recv(buf, time.Second); err != nil || seq != 1 {
		res.Err = fmt.Sprintf("first Recv: %d %v", seq, err)
		return res, nil
	}
	if seq, err := rd.Recv(buf, 20*time.Millisecond); !errors.Is(err, ErrTimeout) {
		res.Err = fmt.Sprintf("second Recv: %d %v, want ErrTimeout", seq, err)
	}
	return res, nil
}
