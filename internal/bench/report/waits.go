package report

import (
	"strconv"
	"strings"
)

// LoopWait parses a loop's bench wait name: "loop-yield" runs every serve
// and mirror of a run process on one Loop waiting as yield, "loop2-yield"
// on two (ok false: not a loop's name).
func LoopWait(wait string) (loops int, mode string, ok bool) {
	head, mode, found := strings.Cut(wait, "-")
	n, isLoop := strings.CutPrefix(head, "loop")
	if !found || !isLoop {
		return 0, "", false
	}
	if n == "" {
		return 1, mode, true
	}
	loops, err := strconv.Atoi(n)
	return loops, mode, err == nil && loops > 0
}

// ModeOf is the wait a bench wait name's pinger, echo and relays poll in:
// a loop's mode (loop-yield: yield), else the name itself.
func ModeOf(wait string) string {
	if _, mode, ok := LoopWait(wait); ok {
		return mode
	}
	return wait
}

// ZeroLossWait is a ZeroLoss's Wait for a bench wait name: "default" (and
// the empty Wait of reports before waits were swept) is adaptive.
func ZeroLossWait(wait string) string {
	if wait == "" || wait == "default" {
		return "adaptive"
	}
	return wait
}
