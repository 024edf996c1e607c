package transport

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/bpf"
	"github.com/ringfire/ringfire/internal/neigh"
	"github.com/ringfire/ringfire/internal/pkt"
	"github.com/ringfire/ringfire/xdp"
)

// ifaceKey names an interface of one network namespace.
type ifaceKey struct {
	netns uint64 // the namespace (netnsID)
	index int
}

// ifaces are the interfaces this process runs AF_XDP on. An interface
// takes one XDP program and one UMEM per queue, so every transport of the
// process on that interface shares them (a hub's mirror and server, for
// instance); another process gets ErrXDPUnavailable and falls back.
var ifaces = struct {
	sync.Mutex
	m map[ifaceKey]*iface
}{m: map[ifaceKey]*iface{}}

// iface is the AF_XDP machinery of one interface, shared by the process's
// transports on it.
type iface struct {
	key      ifaceKey
	refs     int // transports using it, under ifaces' lock
	link     neigh.Link
	resolver *neigh.Resolver // next hops in the interface's namespace
	hops     neigh.Cache
	prog     *bpf.Program
	socks    []*xdp.Socket // one per queue; socks[0] sends
	busyPoll time.Duration // the sockets' SO_BUSY_POLL (0: off), set by open

	txMu      sync.Mutex     // the send side of socks[0]; every transport's sender
	refreshes sync.WaitGroup // next-hop resolutions running in the background

	rxMu   sync.Mutex // the receive side of the sockets, users, inboxes
	users  map[uint16]*XDP
	only   *XDP // the one user, when there is one
	frames [][]byte
	pkt    pkt.Packet
	st     ifaceCounters
	// watchers counts the users that watch the sockets themselves
	// (XDP.watching); watchGen moves each time it changes. Both are
	// stored under rxMu (watch), watchers first; RecvBatch loads watchGen,
	// then watchers, without the lock, and its wait ends when watchGen
	// moves (watch wakes every user's poller after storing it).
	watchers atomic.Int32
	watchGen atomic.Uint32
}

// acquire returns the interface's shared machinery, opening it on first
// use with cfg's attach mode and socket settings.
func acquire(cfg XDPConfig) (*iface, error) {
	link, err := neigh.LinkByName(cfg.Iface)
	if err != nil {
		return nil, err
	}
	ns, err := netnsID()
	if err != nil {
		return nil, err
	}
	key := ifaceKey{ns, link.Index}
	ifaces.Lock()
	defer ifaces.Unlock()
	if f := ifaces.m[key]; f != nil {
		f.refs++
		return f, nil
	}
	f := &iface{key: key, refs: 1, link: link, users: map[uint16]*XDP{}, frames: make([][]byte, 64)}
	if err := f.open(cfg); err != nil {
		f.close()
		return nil, err
	}
	f.hops.Resolver = f.resolver
	ifaces.m[key] = f
	return f, nil
}

// sharedBusyPollGap spaces the busy-poll syscalls of an interface's
// sockets, which every transport of the interface drains (a Loop polls
// each in turn): with many mirrors of one ringfire run on one interface,
// a busy-poll syscall per mirror and turn would cost more than the frames
// it brings sooner, since one syscall already drains the queue for all of
// them. The gap is about one Loop turn over many mirrors, and short
// against a round trip, so a lone transport polling between sched_yield
// calls kicks at most that much later.
const sharedBusyPollGap = 5 * time.Microsecond

// busyPolls reports whether busy polling can bring a frame to link's
// sockets sooner. Not on a veth: the sending peer's system call runs the
// receive path (the XDP program, the copy into the RX ring) before it
// returns, so a busy poll finds nothing the RX ring does not show, and
// costs a system call per empty poll: every hop gets longer by it.
func busyPolls(l neigh.Link) bool { return l.Kind != "veth" }

func (f *iface) open(cfg XDPConfig) error {
	var err error
	if f.resolver, err = neigh.NewResolver(); err != nil {
		return err
	}
	if f.prog, err = program(f.link, cfg.Mode); err != nil {
		return err
	}
	queues, err := xdp.Queues(f.link.Name)
	if err != nil {
		return err
	}
	sc := cfg.Socket
	if cfg.BusyPollAuto && !busyPolls(f.link) {
		sc.BusyPoll = 0
	}
	f.busyPoll = sc.BusyPoll
	if sc.BusyPoll > 0 && sc.BusyPollGap == 0 {
		sc.BusyPollGap = sharedBusyPollGap
	}
	for q := range queues {
		s, err := xdp.Open(f.link.Index, q, sc)
		if err != nil {
			return err
		}
		f.socks = append(f.socks, s)
		if err := f.prog.SetSocket(q, s.FD()); err != nil {
			return err
		}
	}
	return nil
}

// program reuses the steering program pinned for the interface (by xdpctl
// attach, under bpf.DefaultFS, for this network namespace) when there is
// one it may read: the transports add their flows and sockets to it and, on close,
// remove only those, leaving it attached (mode is then what xdpctl chose).
// Otherwise the process loads and attaches a program of its own in mode,
// detached again by close. Stale pins (the interface was re-created) are
// left to xdpctl.
func program(link neigh.Link, mode bpf.Mode) (*bpf.Program, error) {
	p, err := bpf.OpenPinned(bpf.DefaultFS, link.Name)
	switch {
	case err == nil:
		return p, nil
	case errors.Is(err, fs.ErrPermission):
		// A bpffs this user may not read (systemd mounts it for root
		// only): no pin is visible. If xdpctl did attach one, the attach
		// below says the interface has a program already.
	case !errors.Is(err, bpf.ErrNotFound) && !errors.Is(err, bpf.ErrStale):
		return nil, err
	}
	if p, err = bpf.Load(); err != nil {
		return nil, err
	}
	if err := p.Attach(link.Index, mode); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// release drops a transport's reference; the last one closes everything.
func (f *iface) release() error {
	ifaces.Lock()
	defer ifaces.Unlock()
	if f.refs--; f.refs > 0 {
		return nil
	}
	delete(ifaces.m, f.key)
	return f.close()
}

func (f *iface) close() error {
	var errs []error
	if f.prog != nil {
		errs = append(errs, f.prog.Close()) // stops redirecting first
	}
	f.txMu.Lock()
	f.rxMu.Lock()
	for _, s := range f.socks {
		errs = append(errs, s.Close())
	}
	f.socks = nil
	f.rxMu.Unlock()
	f.txMu.Unlock()
	f.refreshes.Wait() // they use the resolver (for at most resolveWait)
	if f.resolver != nil {
		errs = append(errs, f.resolver.Close())
	}
	return errors.Join(errs...)
}

// join makes x the receiver of datagrams to its port.
func (f *iface) join(x *XDP) error {
	f.rxMu.Lock()
	defer f.rxMu.Unlock()
	port := x.local.Port()
	if other := f.users[port]; other != nil {
		return fmt.Errorf("port %d of %s already has an AF_XDP transport in this process", port, f.link.Name)
	}
	f.users[port] = x
	f.setOnly()
	return nil
}

// leave stops delivering to x.
func (f *iface) leave(x *XDP) {
	f.rxMu.Lock()
	defer f.rxMu.Unlock()
	if f.users[x.local.Port()] == x {
		delete(f.users, x.local.Port())
		if x.watching.Load() {
			f.watch(false)
		}
	}
	f.setOnly()
}

// watch counts a watcher in (on) or out, and wakes every user's waiting
// RecvBatch to choose its wait again (under rxMu).
func (f *iface) watch(on bool) {
	if on {
		f.watchers.Add(1)
	} else {
		f.watchers.Add(-1)
	}
	f.watchGen.Add(1)
	for _, u := range f.users {
		u.poller.Wake()
	}
}

// watchedFor reports whether a user other than x watches the sockets: it
// drains them and hands x its datagrams (its inbox, then x's poller's
// Wake).
func (f *iface) watchedFor(x *XDP) bool {
	n := f.watchers.Load()
	if x.watching.Load() {
		n--
	}
	return n > 0
}

func (f *iface) setOnly() {
	f.only = nil
	if len(f.users) == 1 {
		for _, x := range f.users {
			f.only = x
		}
	}
}

// netnsID identifies the calling thread's network namespace by its cookie
// (SO_NETNS_COOKIE, never reused), or by its inode on kernels before 5.14
// (an inode can be reused once a namespace is gone).
func netnsID() (uint64, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, os.NewSyscallError("socket", err)
	}
	defer unix.Close(fd)
	if c, err := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_NETNS_COOKIE); err == nil {
		return c, nil
	}
	fi, err := os.Stat("/proc/thread-self/ns/net")
	if err != nil {
		return 0, fmt.Errorf("network namespace: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, errors.New("network namespace: no inode")
	}
	return st.Ino, nil
}
