package proc

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// userHZ is the unit of the CPU times of /proc/PID/stat (USER_HZ, 100 on
// every Linux ABI).
const userHZ = 100

// CPUTime is the CPU time (user and system, all threads) process pid has
// used so far, from /proc/PID/stat.
func CPUTime(pid int) (time.Duration, error) {
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
		return 0, fmt.Errorf("proc: /proc stat %q: no command name", stat)
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("proc: /proc stat: %d fields after the name, want at least 13", len(f))
	}
	var ticks uint64
	for _, s := range f[11:13] {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("proc: /proc stat: utime/stime %q: %w", s, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// Pin binds every thread of process pid to CPU cpu (sched_setaffinity on
// each task of /proc/PID/task). Threads the process makes later inherit
// the binding from the thread that makes them, all bound by then.
func Pin(pid, cpu int) error {
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return fmt.Errorf("proc: pin %d: %w", pid, err)
	}
	var set unix.CPUSet
	set.Set(cpu)
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("proc: pin thread %d of %d to CPU %d: %w", tid, pid, cpu, err)
		}
	}
	return nil
}
