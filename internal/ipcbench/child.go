package ipcbench

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Child is an echo child process started by StartChild.
type Child struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // cmd.Wait's result, set before done is closed

	mu     sync.Mutex
	out    *os.File // the child's stdout and stderr (unlinked); nil once read for good
	output string   // what out held when Stop closed it
}

// StartChild starts args[0] with arguments args[1:], this process's
// environment plus env ("KEY=value" entries, which win over inherited
// ones), and files as descriptors 3, 4... The child's standard output and
// error go to an unlinked temporary file (see Output) rather than the
// parent's, so benchmark output stays parseable; being a file, it needs no
// copying goroutine (which would allocate while a benchmark runs). A
// goroutine reaps the child as soon as it exits.
func StartChild(args []string, env []string, files []*os.File) (*Child, error) {
	if len(args) == 0 {
		return nil, errors.New("ipcbench: StartChild: no command")
	}
	out, err := os.CreateTemp("", "ipcbench-child-*.log")
	if err != nil {
		return nil, fmt.Errorf("ipcbench: echo child output: %w", err)
	}
	os.Remove(out.Name()) // the descriptors keep it while needed
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.ExtraFiles = files
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("ipcbench: start echo child: %w", err)
	}
	c := &Child{cmd: cmd, done: make(chan struct{}), out: out}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// Pid is the child's process id.
func (c *Child) Pid() int { return c.cmd.Process.Pid }

// Done is closed once the child has exited and been reaped.
func (c *Child) Done() <-chan struct{} { return c.done }

// CtxSwitches is the number of context switches (voluntary and
// involuntary, all threads) of the child over its whole life; ok is false
// until it has exited and been reaped.
func (c *Child) CtxSwitches() (n int64, ok bool) {
	select {
	case <-c.done:
	default:
		return 0, false
	}
	if c.cmd.ProcessState == nil {
		return 0, false
	}
	ru, ok := c.cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok || ru == nil {
		return 0, false
	}
	return ru.Nvcsw + ru.Nivcsw, true
}

// CtxSwitchesSelf is the number of context switches of this process so far
// (voluntary and involuntary, all threads).
func CtxSwitchesSelf() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Nvcsw + ru.Nivcsw
}

// Output is what the child has written to its standard output and error
// so far (at most the first 64 KiB).
func (c *Child) Output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.out == nil {
		return c.output
	}
	buf := make([]byte, 64<<10)
	n, _ := c.out.ReadAt(buf, 0)
	return string(buf[:n])
}

// closeOutput keeps the output in memory and closes its file.
func (c *Child) closeOutput() {
	out := c.Output()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.out != nil {
		c.out.Close()
		c.out, c.output = nil, out
	}
}

// Stop ends the child: it gives it grace to exit by itself (after the
// parent closed its link or sent a stop message), then kills it, and waits
// for it to be reaped (at most 10 s after the kill). It returns nil when
// the child exited by itself with status 0, and otherwise an error carrying
// the child's output. Stop may be called more than once.
func (c *Child) Stop(grace time.Duration) error {
	exited := true
	select {
	case <-c.done:
	default:
		timer := time.NewTimer(grace)
		select {
		case <-c.done:
		case <-timer.C:
			exited = false
		}
		timer.Stop()
	}
	// Kill even after a voluntary exit: os.Process refuses to signal a
	// reaped process, so this never hits a recycled pid.
	if err := c.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("ipcbench: kill echo child %d: %w", c.Pid(), err)
	}
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("ipcbench: echo child %d not reaped 10s after SIGKILL", c.Pid())
	}
	c.closeOutput()
	if !exited {
		return fmt.Errorf("ipcbench: echo child %d did not exit within %v and was killed; output:\n%s", c.Pid(), grace, c.Output())
	}
	if c.err != nil {
		return fmt.Errorf("ipcbench: echo child %d: %w; output:\n%s", c.Pid(), c.err, c.Output())
	}
	return nil
}

// Watchdog makes this (child) process exit when its parent changes, that
// is when the process that started it with pid parent has died, or when
// limit has passed, whichever comes first; it checks every 100 ms. It keeps
// an echo child from outliving its benchmark however the parent ends.
func Watchdog(parent int, limit time.Duration) {
	deadline := time.Now().Add(limit)
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for range tick.C {
			if pp := os.Getppid(); pp != parent {
				fmt.Fprintf(os.Stderr, "ipcbench: echo child %d: parent %d is gone (ppid now %d), exiting\n", os.Getpid(), parent, pp)
				os.Exit(3)
			}
			if time.Now().After(deadline) {
				fmt.Fprintf(os.Stderr, "ipcbench: echo child %d: time limit %v reached, exiting\n", os.Getpid(), limit)
				os.Exit(4)
			}
		}
	}()
}
