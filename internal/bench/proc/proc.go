package proc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/ringfire/ringfire/internal/trace"
)

// Proc is one child process of a deployed measurement: a ringfire serve
// or mirror, or a role of this binary (pinger, echo), in a process group
// of its own.
type Proc struct {
	role   string
	cmd    *exec.Cmd
	stdin  *os.File      // role: closing it tells the child to exit
	lines  chan string   // role: its stdout, line by line; closed at EOF
	out    *tailBuffer   // stderr (and a ringfire's stdout)
	exited chan struct{} // closed once reaped
	werr   error         // cmd.Wait's result, set before exited closes
}

// Start starts argv in l's namespace with env added. A role (lines
// true) speaks on stdout and watches stdin; a ringfire process writes
// both streams to the tail buffer.
func Start(l *Launcher, role string, argv, env []string, lines bool) (*Proc, error) {
	p := &Proc{role: role, out: &tailBuffer{max: 8 << 10}, exited: make(chan struct{})}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var childIn, childOut *os.File
	if lines {
		var err error
		if childIn, p.stdin, err = os.Pipe(); err != nil {
			return nil, err
		}
		var r *os.File
		if r, childOut, err = os.Pipe(); err != nil {
			childIn.Close()
			p.stdin.Close()
			return nil, err
		}
		p.cmd.Stdin, p.cmd.Stdout = childIn, childOut
		p.lines = make(chan string, 16)
		go scanLines(r, p.lines)
	}
	err := l.start(p.cmd)
	if lines {
		childIn.Close()
		childOut.Close() // the read end sees EOF once the child is gone
	}
	if err != nil {
		if p.stdin != nil {
			p.stdin.Close()
		}
		return nil, fmt.Errorf("proc: start %s: %w", role, err)
	}
	go func() { p.werr = p.cmd.Wait(); close(p.exited) }()
	return p, nil
}

func scanLines(r *os.File, out chan<- string) {
	defer close(out)
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		out <- sc.Text()
	}
}

// Expect waits at most d for the role's next line, which must start with
// want; it returns the rest of the line.
func (p *Proc) Expect(want string, d time.Duration) (string, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case line, ok := <-p.lines:
		if !ok {
			<-p.exited
			return "", p.Failed(fmt.Sprintf("exited before %q", want))
		}
		rest, found := strings.CutPrefix(line, want)
		if !found {
			return "", p.Failed(fmt.Sprintf("said %q, want %q", line, want))
		}
		return strings.TrimSpace(rest), nil
	case <-t.C:
		return "", p.Failed(fmt.Sprintf("no %q within %v", want, d))
	}
}

// Alive fails if the process has exited.
func (p *Proc) Alive() error {
	select {
	case <-p.exited:
		return p.Failed("exited")
	default:
		return nil
	}
}

func (p *Proc) Failed(what string) error {
	msg := fmt.Sprintf("proc: %s (pid %d) %s", p.role, p.cmd.Process.Pid, what)
	select {
	case <-p.exited:
		msg += fmt.Sprintf(" (%v)", p.werr)
	default:
	}
	if tail := strings.TrimSpace(p.out.String()); tail != "" {
		msg += ": " + tail
	}
	return errors.New(msg)
}

// termWait bounds how long terminate waits for a process to exit.
const termWait = 2 * time.Second

// Terminate asks the process to end (SIGTERM) and reports whether it
// exited within termWait.
func (p *Proc) Terminate() bool {
	syscall.Kill(p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.exited:
		return true
	case <-time.After(termWait):
		return false
	}
}

// Stop kills the process group and waits (at most 10 s) for the process
// to be reaped.
func (p *Proc) Stop() error {
	if p.stdin != nil {
		p.stdin.Close()
	}
	if os.Getenv(trace.Env) != "" { // let it write its stamps: roles end when stdin closes, ringfire on SIGTERM
		select {
		case <-p.exited:
		case <-time.After(termWait):
			p.Terminate()
		}
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.exited:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("proc: %s (pid %d) not reaped 10 s after SIGKILL", p.role, p.cmd.Process.Pid)
	}
}

// Role is the name p was started under (pinger, serve A, run 1...).
func (p *Proc) Role() string { return p.role }

// Pid is p's process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Speaks reports whether p is a role of this binary, which speaks on
// stdout and watches stdin, rather than a ringfire process.
func (p *Proc) Speaks() bool { return p.lines != nil }

// Output is the tail of what p wrote on stderr (and, a ringfire
// process, on stdout).
func (p *Proc) Output() string { return p.out.String() }

// Send writes one line to a role's stdin (a command its protocol takes,
// such as go).
func (p *Proc) Send(line string) error {
	if p.stdin == nil {
		return fmt.Errorf("proc: %s takes no commands", p.role)
	}
	if _, err := p.stdin.WriteString(line + "\n"); err != nil {
		return errors.Join(fmt.Errorf("proc: %s: %w", p.role, err), p.Alive())
	}
	return nil
}
