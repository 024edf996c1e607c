package deployed

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// tracefs is where the kernel's tracing file system is mounted.
const tracefs = "/sys/kernel/tracing"

// schedTrace records the scheduler's switches to and from the threads of
// some processes, and their wake-ups, while a round trip is measured: an
// ftrace instance of its own (the global one is left alone), on the
// mono clock (CLOCK_MONOTONIC, the stamps' clock; its text has
// microseconds), in a buffer that stops rather than overwrites when full
// (so what it holds is a whole window from the start).
type schedTrace struct {
	dir  string
	tids map[int]int // thread → its process
}

// schedBufferKB is each CPU's trace buffer: at about 60 bytes an event,
// a million events per CPU, seconds of a round trip whose threads yield.
const schedBufferKB = 65536

// startSched starts recording the threads of pids (as /proc lists them
// now).
func startSched(pids []int) (*schedTrace, error) {
	tids := threadsOf(pids)
	if len(tids) == 0 {
		return nil, errors.New("deployed: sched trace: no threads")
	}
	s := &schedTrace{dir: filepath.Join(tracefs, "instances", fmt.Sprintf("ringfire-bench-%d", os.Getpid())), tids: tids}
	if err := os.Mkdir(s.dir, 0o755); err != nil {
		return nil, fmt.Errorf("deployed: sched trace: %w", err)
	}
	list := make([]string, 0, len(tids))
	for tid := range tids {
		list = append(list, strconv.Itoa(tid))
	}
	for _, kv := range [][2]string{
		{"tracing_on", "0"}, {"trace_clock", "mono"}, {"buffer_size_kb", strconv.Itoa(schedBufferKB)},
		{"options/overwrite", "0"}, {"set_event_pid", strings.Join(list, " ")},
		{"events/sched/sched_switch/enable", "1"}, {"events/sched/sched_wakeup/enable", "1"}, {"tracing_on", "1"},
	} {
		if err := os.WriteFile(filepath.Join(s.dir, kv[0]), []byte(kv[1]), 0); err != nil {
			s.close()
			return nil, fmt.Errorf("deployed: sched trace: %w", err)
		}
	}
	return s, nil
}

// threadsOf maps every thread of pids to its process.
func threadsOf(pids []int) map[int]int {
	tids := map[int]int{}
	for _, pid := range pids {
		ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		for _, e := range ents {
			if tid, err := strconv.Atoi(e.Name()); err == nil {
				tids[tid] = pid
			}
		}
	}
	return tids
}

// stop ends the recording and reads it.
func (s *schedTrace) stop() (*schedLog, error) {
	defer s.close()
	if err := os.WriteFile(filepath.Join(s.dir, "tracing_on"), []byte("0"), 0); err != nil {
		return nil, fmt.Errorf("deployed: sched trace: %w", err)
	}
	f, err := os.Open(filepath.Join(s.dir, "trace"))
	if err != nil {
		return nil, fmt.Errorf("deployed: sched trace: %w", err)
	}
	defer f.Close()
	l, err := parseSched(f, s.tids)
	if err != nil {
		return nil, err
	}
	l.dropped = s.dropped()
	return l, nil
}

// dropped reports whether a CPU's buffer filled (events were lost).
func (s *schedTrace) dropped() bool {
	cpus, _ := filepath.Glob(filepath.Join(s.dir, "per_cpu", "cpu*", "stats"))
	for _, c := range cpus {
		b, _ := os.ReadFile(c)
		for _, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if ok && (k == "overrun" || k == "dropped events") && strings.TrimSpace(v) != "0" {
				return true
			}
		}
	}
	return false
}

// close disables the events and removes the instance.
func (s *schedTrace) close() {
	for _, ev := range []string{"sched_switch", "sched_wakeup"} {
		os.WriteFile(filepath.Join(s.dir, "events/sched", ev, "enable"), []byte("0"), 0)
	}
	os.Remove(s.dir)
}

// A thread's state, as the scheduler's events tell it.
const (
	stRunning  = 'X' // on a CPU
	stRunnable = 'R' // woken, or switched out still runnable (preempted, yielded), and not on a CPU
	stSleeping = 'S' // switched out to wait (a futex, poll, a sleep)
)

type transition struct {
	t     int64 // ns, CLOCK_MONOTONIC (microsecond resolution)
	state byte
}

// schedLog is each recorded thread's states over time.
type schedLog struct {
	threads map[int][]transition // in time order
	procs   map[int]int          // thread → process
	last    int64                // the last event's time
	cpuLast map[int]int64        // the last event's time on each CPU
	dropped bool                 // a buffer filled: the trace covers no more than until end()
	hot     map[int]int          // hotThread's answers, by process
}

// end is the time until which the trace is whole: its last event, or
// with a buffer that filled, the earliest last event of a CPU.
func (l *schedLog) end() int64 {
	if !l.dropped {
		return l.last
	}
	end := l.last
	for _, t := range l.cpuLast {
		end = min(end, t)
	}
	return end
}

// parseSched reads the text of a trace of sched_switch and sched_wakeup
// events, keeping the threads of tids.
func parseSched(r io.Reader, tids map[int]int) (*schedLog, error) {
	l := &schedLog{threads: map[int][]transition{}, procs: tids, cpuLast: map[int]int64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		i := strings.Index(line, ": sched_")
		if i < 0 || strings.HasPrefix(line, "#") {
			continue
		}
		t, ok := traceTime(line[:i])
		if !ok {
			continue
		}
		l.last = t
		if cpu, ok := traceCPU(line[:i]); ok {
			l.cpuLast[cpu] = t
		}
		event, fields, _ := strings.Cut(line[i+2:], ": ")
		switch event {
		case "sched_switch":
			l.switched(t, fields)
		case "sched_wakeup":
			if tid, ok := field(fields, "pid="); ok {
				l.woken(t, tid)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("deployed: sched trace: %w", err)
	}
	return l, nil
}

// traceTime is the timestamp that ends s, a line's head ("comm-pid [cpu]
// flags 1234.567890"), in ns.
func traceTime(s string) (int64, bool) {
	s = s[strings.LastIndexByte(s, ' ')+1:]
	sec, frac, ok := strings.Cut(s, ".")
	if !ok || len(frac) != 6 {
		return 0, false
	}
	a, err1 := strconv.ParseInt(sec, 10, 64)
	b, err2 := strconv.ParseInt(frac, 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return a*1e9 + b*1e3, true
}

// traceCPU is the CPU of a line's head ("[001]").
func traceCPU(s string) (int, bool) {
	a := strings.IndexByte(s, '[')
	b := strings.IndexByte(s, ']')
	if a < 0 || b < a {
		return 0, false
	}
	n, err := strconv.Atoi(s[a+1 : b])
	return n, err == nil
}

// field is the integer after key (such as "pid=") in fields.
func field(fields, key string) (int, bool) {
	i := strings.Index(fields, key)
	if i < 0 || (i > 0 && fields[i-1] != ' ') {
		return 0, false
	}
	v := fields[i+len(key):]
	if j := strings.IndexByte(v, ' '); j >= 0 {
		v = v[:j]
	}
	n, err := strconv.Atoi(v)
	return n, err == nil
}

// switched notes a sched_switch: prev leaves the CPU (runnable when its
// state is R, R+: preempted or yielding), next takes it.
func (l *schedLog) switched(t int64, fields string) {
	if prev, ok := field(fields, "prev_pid="); ok {
		st := byte(stSleeping)
		if i := strings.Index(fields, "prev_state="); i >= 0 && strings.HasPrefix(fields[i+len("prev_state="):], "R") {
			st = stRunnable
		}
		l.note(prev, t, st)
	}
	if next, ok := field(fields, "next_pid="); ok {
		l.note(next, t, stRunning)
	}
}

// woken notes a sched_wakeup: a sleeping thread becomes runnable.
func (l *schedLog) woken(t int64, tid int) {
	if tr := l.threads[tid]; len(tr) == 0 || tr[len(tr)-1].state == stSleeping {
		l.note(tid, t, stRunnable)
	}
}

func (l *schedLog) note(tid int, t int64, st byte) {
	if _, ok := l.procs[tid]; ok {
		l.threads[tid] = append(l.threads[tid], transition{t, st})
	}
}

// spent is how long tid was running, runnable and sleeping between a and
// b; ok is false when the trace does not cover [a, b] (before the
// thread's first event, or past the end of a buffer that filled).
func (l *schedLog) spent(tid int, a, b int64) (run, wait, sleep int64, ok bool) {
	tr := l.threads[tid]
	if len(tr) == 0 || a < tr[0].t || b > l.end() || b < a {
		return 0, 0, 0, false
	}
	i := 0
	for i+1 < len(tr) && tr[i+1].t <= a {
		i++
	}
	for t := a; t < b; i++ {
		end := b
		if i+1 < len(tr) && tr[i+1].t < b {
			end = tr[i+1].t
		}
		switch tr[i].state {
		case stRunning:
			run += end - t
		case stRunnable:
			wait += end - t
		default:
			sleep += end - t
		}
		t = end
	}
	return run, wait, sleep, true
}

// hotThread is the thread of process pid that ran longest in the trace:
// a ringfire process's hot loop, on its locked thread.
func (l *schedLog) hotThread(pid int) (int, bool) {
	if tid, ok := l.hot[pid]; ok {
		return tid, tid != 0
	}
	best, most := 0, int64(-1)
	for tid, p := range l.procs {
		tr := l.threads[tid]
		if p != pid || len(tr) == 0 {
			continue
		}
		if run, _, _, ok := l.spent(tid, tr[0].t, l.end()); ok && run > most {
			best, most = tid, run
		}
	}
	if l.hot == nil {
		l.hot = map[int]int{}
	}
	l.hot[pid] = best
	return best, best != 0
}
