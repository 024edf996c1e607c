package caps

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Errors of the package.
var (
	// ErrMissing: an operation needs a capability the process does not
	// hold (a *MissingError says which).
	ErrMissing = errors.New("caps: missing capability")
	// ErrUnknown: a name that is no capability (Parse).
	ErrUnknown = errors.New("caps: unknown capability")
)

// Cap is a Linux capability by its number (CAP_NET_RAW is 13).
type Cap uint8

// The capabilities ringfire's data paths need, and CAP_SYS_ADMIN, which
// the kernel accepts instead of CAP_BPF and CAP_PERFMON.
const (
	NetAdmin Cap = unix.CAP_NET_ADMIN // XSKMAP, loading and attaching XDP programs
	NetRaw   Cap = unix.CAP_NET_RAW   // AF_XDP and AF_PACKET sockets
	IPCLock  Cap = unix.CAP_IPC_LOCK  // UMEM beyond RLIMIT_MEMLOCK
	SysAdmin Cap = unix.CAP_SYS_ADMIN // stands in for CAP_BPF and CAP_PERFMON
	PerfMon  Cap = unix.CAP_PERFMON   // the verifier's pointer arithmetic
	BPF      Cap = unix.CAP_BPF       // bpf(2): maps and programs
)

// names are the capabilities' names by number, as <linux/capability.h>
// spells them.
var names = [...]string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER",
	"CAP_FSETID", "CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP",
	"CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST",
	"CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK", "CAP_IPC_OWNER",
	"CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE",
	"CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE",
	"CAP_SYS_RESOURCE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD",
	"CAP_LEASE", "CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP",
	"CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM",
	"CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
}

// String is the capability's name, CAP_NET_RAW; one newer than this
// package knows is CAP_<number>.
func (c Cap) String() string {
	if int(c) < len(names) {
		return names[c]
	}
	return "CAP_" + strconv.Itoa(int(c))
}

// Parse returns the capability named s: CAP_NET_RAW, cap_net_raw or
// net_raw.
func Parse(s string) (Cap, error) {
	u := strings.ToUpper(s)
	if !strings.HasPrefix(u, "CAP_") {
		u = "CAP_" + u
	}
	for c, n := range names {
		if n == u {
			return Cap(c), nil
		}
	}
	return 0, fmt.Errorf("%w %q", ErrUnknown, s)
}

// Set is a set of capabilities: bit c holds Cap c.
type Set uint64

// Of is the set of cs.
func Of(cs ...Cap) Set {
	var s Set
	for _, c := range cs {
		s |= 1 << c
	}
	return s
}

// Has reports whether c is in s.
func (s Set) Has(c Cap) bool { return c < 64 && s&(1<<c) != 0 }

// standIns are the capabilities the kernel accepts instead of others
// (bpf_capable, perfmon_capable: CAP_SYS_ADMIN, for compatibility with
// kernels before 5.8).
var standIns = map[Cap]Cap{BPF: SysAdmin, PerfMon: SysAdmin}

// Covers reports whether s grants what c grants: c is in s, or a
// capability the kernel accepts instead of c (CAP_SYS_ADMIN for CAP_BPF
// and CAP_PERFMON).
func (s Set) Covers(c Cap) bool {
	if s.Has(c) {
		return true
	}
	alt, ok := standIns[c]
	return ok && s.Has(alt)
}

// Caps lists the capabilities of s in ascending order of number.
func (s Set) Caps() []Cap {
	var cs []Cap
	for c := range Cap(64) {
		if s.Has(c) {
			cs = append(cs, c)
		}
	}
	return cs
}

// String lists the capabilities of s by name, comma-separated, in
// ascending order of number, or says "none".
func (s Set) String() string { return join(s.Caps()) }

// join names cs, comma-separated, or says "none".
func join(cs []Cap) string {
	if len(cs) == 0 {
		return "none"
	}
	ns := make([]string, len(cs))
	for i, c := range cs {
		ns[i] = c.String()
	}
	return strings.Join(ns, ", ")
}

// Sets are the capability sets of a thread.
type Sets struct {
	Effective   Set // what the kernel checks
	Permitted   Set // what the thread may make effective
	Inheritable Set // what an execve may keep
}

// Current returns the capability sets of the calling thread (capget(2),
// _LINUX_CAPABILITY_VERSION_3). The threads of a Go process share them
// unless something changed one thread alone.
func Current() (Sets, error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData // version 3: two 32-bit words per set
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return Sets{}, fmt.Errorf("caps: capget: %w", err)
	}
	word := func(lo, hi uint32) Set { return Set(lo) | Set(hi)<<32 }
	return Sets{
		Effective:   word(data[0].Effective, data[1].Effective),
		Permitted:   word(data[0].Permitted, data[1].Permitted),
		Inheritable: word(data[0].Inheritable, data[1].Inheritable),
	}, nil
}

// MissingError says which capabilities an operation lacks. It matches
// ErrMissing (errors.Is).
type MissingError struct {
	What    string // the operation: "AF_XDP on eth1"
	Missing []Cap  // needed, neither held nor stood in for, in the order needed
	// Held are the capabilities held among those that matter to the
	// operation: the needed ones (in the order needed), then those
	// standing in for needed ones.
	Held []Cap
}

// Error reads "AF_XDP on eth1 needs CAP_BPF; running with CAP_NET_RAW,
// CAP_NET_ADMIN" (or "running with none").
func (e *MissingError) Error() string {
	return e.What + " needs " + join(e.Missing) + "; running with " + join(e.Held)
}

// Is makes a MissingError match ErrMissing.
func (e *MissingError) Is(target error) bool { return target == ErrMissing }

// Check returns a *MissingError naming what of need the set held lacks
// for the operation what, or nil when nothing is missing.
func Check(what string, held Set, need ...Cap) error {
	e := &MissingError{What: what}
	var seen Set
	add := func(c Cap) {
		if !seen.Has(c) {
			seen |= Of(c)
			e.Held = append(e.Held, c)
		}
	}
	for _, c := range need {
		switch {
		case held.Has(c):
			add(c)
		case !held.Covers(c):
			if !Of(e.Missing...).Has(c) {
				e.Missing = append(e.Missing, c)
			}
		}
	}
	for _, c := range need {
		if alt, ok := standIns[c]; ok && !held.Has(c) && held.Has(alt) {
			add(alt)
		}
	}
	if len(e.Missing) == 0 {
		return nil
	}
	return e
}

// CheckCurrent is Check with the calling thread's effective set; it
// returns Current's error when the sets cannot be read.
func CheckCurrent(what string, need ...Cap) error {
	s, err := Current()
	if err != nil {
		return err
	}
	return Check(what, s.Effective, need...)
}

// MemlockCovers reports whether RLIMIT_MEMLOCK lets a process without
// CAP_IPC_LOCK lock n bytes (the limit is infinite or at least n; the
// kernel counts what all of a user's processes locked against it).
func MemlockCovers(n uint64) (bool, error) {
	var l unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &l); err != nil {
		return false, fmt.Errorf("caps: getrlimit RLIMIT_MEMLOCK: %w", err)
	}
	return l.Cur == unix.RLIM_INFINITY || l.Cur >= n, nil
}
