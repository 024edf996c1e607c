package main

import (
	"flag"
	"strings"

	"github.com/ringfire/ringfire/replica"
)

// waitFlags are the hot-loop options of serve (its datagram sender) and
// mirror (its receive loop): --wait, --cpu and --spin (an alias of --wait
// spin).
type waitFlags struct {
	mode string
	cpu  int
	spin bool
}

func (w *waitFlags) add(fs *flag.FlagSet, loop string) {
	fs.StringVar(&w.mode, "wait", "adaptive", "how the "+loop+" waits when idle: `mode` "+strings.Join(replica.WaitModes(), ", ")+
		" (adaptive: no spinning; poll and sched_yield for a short while after the last work"+
		" (mirror: 200 µs, serve: 200 polls), then sleep in the kernel; block: sleep in the kernel"+
		" (mirror: ppoll on its sockets; serve: the ring's futex, after 16 polls);"+
		" yield: poll and sched_yield, never sleep; spin: poll without pause, one core per loop)")
	fs.IntVar(&w.cpu, "cpu", -1, "pin the "+loop+"'s thread to CPU `N` (-1: no pinning)")
	fs.BoolVar(&w.spin, "spin", false, "same as --wait spin")
}

// check validates the flags (after parsing).
func (w *waitFlags) check() (replica.WaitMode, replica.Pin, error) {
	mode, err := replica.ParseWaitMode(w.mode)
	if err != nil {
		return 0, replica.Pin{}, usagef("--wait: %v", err)
	}
	if w.spin {
		if mode != replica.WaitSpin && w.mode != "adaptive" {
			return 0, replica.Pin{}, usagef("--spin is --wait spin; it contradicts --wait %s", w.mode)
		}
		mode = replica.WaitSpin
	}
	if w.cpu < -1 {
		return 0, replica.Pin{}, usagef("--cpu %d: want a CPU number, or -1", w.cpu)
	}
	return mode, replica.Pin{On: w.cpu >= 0, CPU: w.cpu}, nil
}
