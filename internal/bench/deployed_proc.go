package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/trace"
)

// launcher starts processes from one OS thread that stays in a namespace
// for the launcher's whole life (netns.NS.Go): a child forked there
// inherits the namespace, and its Pdeathsig, which the kernel sends when
// the thread that forked it exits, fires only when the launcher closes or
// this process dies, never because the runtime retired a thread.
type launcher struct {
	reqs chan launchReq
	done <-chan struct{}
}

type launchReq struct {
	cmd *exec.Cmd
	err chan error
}

func newLauncher(ns *netns.NS) *launcher {
	l := &launcher{reqs: make(chan launchReq)}
	l.done = ns.Go(func() {
		for q := range l.reqs {
			q.err <- q.cmd.Start()
		}
	})
	return l
}

// start starts cmd in the launcher's namespace.
func (l *launcher) start(cmd *exec.Cmd) error {
	q := launchReq{cmd: cmd, err: make(chan error, 1)}
	select {
	case l.reqs <- q:
		return <-q.err
	case <-l.done:
		return errors.New("bench: launcher thread is gone (entering the namespace failed)")
	}
}

// close ends the launcher's thread (after its children are stopped).
func (l *launcher) close() {
	close(l.reqs)
	<-l.done
}

// proc is one child process of a deployed measurement: a ringfire serve
// or mirror, or a role of this binary (pinger, echo), in a process group
// of its own.
type proc struct {
	role   string
	cmd    *exec.Cmd
	stdin  *os.File      // role: closing it tells the child to exit
	lines  chan string   // role: its stdout, line by line; closed at EOF
	out    *tailBuffer   // stderr (and a ringfire's stdout)
	exited chan struct{} // closed once reaped
	werr   error         // cmd.Wait's result, set before exited closes
}

// startProc starts argv in l's namespace with env added. A role (lines
// true) speaks on stdout and watches stdin; a ringfire process writes
// both streams to the tail buffer.
func startProc(l *launcher, role string, argv, env []string, lines bool) (*proc, error) {
	p := &proc{role: role, out: &tailBuffer{max: 8 << 10}, exited: make(chan struct{})}
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
		return nil, fmt.Errorf("bench: start %s: %w", role, err)
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

// expect waits at most d for the role's next line, which must start with
// want; it returns the rest of the line.
func (p *proc) expect(want string, d time.Duration) (string, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case line, ok := <-p.lines:
		if !ok {
			<-p.exited
			return "", p.failed(fmt.Sprintf("exited before %q", want))
		}
		rest, found := strings.CutPrefix(line, want)
		if !found {
			return "", p.failed(fmt.Sprintf("said %q, want %q", line, want))
		}
		return strings.TrimSpace(rest), nil
	case <-t.C:
		return "", p.failed(fmt.Sprintf("no %q within %v", want, d))
	}
}

// alive fails if the process has exited.
func (p *proc) alive() error {
	select {
	case <-p.exited:
		return p.failed("exited")
	default:
		return nil
	}
}

func (p *proc) failed(what string) error {
	msg := fmt.Sprintf("bench: %s (pid %d) %s", p.role, p.cmd.Process.Pid, what)
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

// terminate asks the process to end (SIGTERM) and reports whether it
// exited within termWait.
func (p *proc) terminate() bool {
	syscall.Kill(p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.exited:
		return true
	case <-time.After(termWait):
		return false
	}
}

// stop kills the process group and waits (at most 10 s) for the process
// to be reaped.
func (p *proc) stop() error {
	if p.stdin != nil {
		p.stdin.Close()
	}
	if os.Getenv(trace.Env) != "" { // let it write its stamps: roles end when stdin closes, ringfire on SIGTERM
		select {
		case <-p.exited:
		case <-time.After(termWait):
			p.terminate()
		}
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.exited:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("bench: %s (pid %d) not reaped 10 s after SIGKILL", p.role, p.cmd.Process.Pid)
	}
}

// userHZ is the unit of the CPU times of /proc/PID/stat (USER_HZ, 100 on
// every Linux ABI).
const userHZ = 100

// cpuTime is the CPU time (user and system, all threads) process pid has
// used so far, from /proc/PID/stat.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseStatCPU(string(b))
}

// parseStatCPU reads utime and stime (fields 14 and 15) of a
// /proc/PID/stat line; the command name (field 2) may hold spaces and
// parentheses, so fields are counted after its last ')'.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("bench: /proc stat %q: no command name", stat)
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("bench: /proc stat: %d fields after the name, want at least 13", len(f))
	}
	var ticks uint64
	for _, s := range f[11:13] {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bench: /proc stat: utime/stime %q: %w", s, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

var _ io.Writer = (*tailBuffer)(nil)
