//go:build linux

package bpf

import (
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"
)

// Program is the loaded steering program and its maps. It is safe for
// concurrent use.
type Program struct {
	mu      sync.Mutex
	objs    *steerObjects // nil once closed
	owners  *ebpf.Map     // xsk_owners: who registered each queue's socket
	link    link.Link     // nil while detached
	mode    Mode
	ifindex int
	sockets map[int]int         // queue -> fd, as set through SetSocket
	regs    map[int]socketOwner // queue -> our record in owners
	// guest: loaded from pins (LoadPinned); Close leaves the program
	// attached and removes only the flows and sockets this Program added.
	guest  bool
	pinDir string        // where Pin pinned it, or LoadPinned loaded it from
	added  map[Flow]bool // flows added through this Program
}

// Load loads the program and creates its maps. It removes the memlock
// rlimit first (needed on kernels before 5.11). The kernel refusing to load
// (no permission, BPF disabled) is reported as ErrNotSupported wrapping the
// cause.
func Load() (*Program, error) {
	if err := rlimit.RemoveMemlock(); err != nil {
		// An unprivileged process can neither probe nor raise the limit.
		return nil, loadError(fmt.Errorf("remove memlock rlimit: %w", err))
	}
	objs := new(steerObjects)
	if err := loadSteerObjects(objs, nil); err != nil {
		return nil, loadError(err)
	}
	owners, err := ebpf.NewMap(ownersSpec())
	if err != nil {
		objs.Close()
		return nil, loadError(fmt.Errorf("create %s map: %w", ownersName, err))
	}
	return newProgram(objs, owners), nil
}

// newProgram wraps loaded objects, from the embedded ELF (Load) or from
// pins (LoadPinned).
func newProgram(objs *steerObjects, owners *ebpf.Map) *Program {
	return &Program{objs: objs, owners: owners, sockets: make(map[int]int), regs: make(map[int]socketOwner), added: make(map[Flow]bool)}
}

func loadError(err error) error {
	switch {
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		return fmt.Errorf("bpf: load: needs root or CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN: %w: %w", ErrNotSupported, err)
	case errors.Is(err, ebpf.ErrNotSupported), errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS):
		return fmt.Errorf("bpf: load: kernel refused the program: %w: %w", ErrNotSupported, err)
	}
	return fmt.Errorf("bpf: load: %w", err)
}

// Attach attaches the program to the interface with index ifindex through
// a BPF link. ModeAuto tries native mode and falls back to generic mode only
// when the interface has no native XDP support; Mode reports the mode used.
// An interface that already has an XDP program gives ErrBusy, an interface
// without native XDP support asked for ModeNative gives ErrNotSupported, an
// unknown ifindex ErrNotFound. ifindex is looked up in the network
// namespace of the calling thread; the attachment stays with the interface.
func (p *Program) Attach(ifindex int, mode Mode) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.objs == nil {
		return fmt.Errorf("bpf: attach: %w", ErrClosed)
	}
	if p.link != nil {
		return fmt.Errorf("bpf: attach: already attached to ifindex %d: %w", p.ifindex, ErrBusy)
	}
	if ifindex <= 0 {
		return fmt.Errorf("bpf: attach: ifindex %d: %w", ifindex, ErrInvalid)
	}
	var tries []Mode
	switch mode {
	case ModeAuto:
		tries = []Mode{ModeNative, ModeGeneric}
	case ModeNative, ModeGeneric:
		tries = []Mode{mode}
	default:
		return fmt.Errorf("bpf: attach: %v: %w", mode, ErrInvalid)
	}
	var err error
	for _, m := range tries {
		var l link.Link
		l, err = p.attach(ifindex, m)
		if err == nil {
			p.link, p.mode, p.ifindex = l, m, ifindex
			return nil
		}
		if !errors.Is(err, ErrNotSupported) {
			break // busy or gone: another mode would not help
		}
	}
	return err
}

func (p *Program) attach(ifindex int, m Mode) (link.Link, error) {
	flags := link.XDPDriverMode
	if m == ModeGeneric {
		flags = link.XDPGenericMode
	}
	l, err := link.AttachXDP(link.XDPOptions{Program: p.objs.Steer, Interface: ifindex, Flags: flags})
	if err == nil {
		return l, nil
	}
	switch {
	case errors.Is(err, unix.EBUSY), errors.Is(err, unix.EEXIST):
		return nil, fmt.Errorf("bpf: attach %s to ifindex %d: interface already has an XDP program: %w: %w", m, ifindex, ErrBusy, err)
	case errors.Is(err, unix.ENODEV), errors.Is(err, unix.EINVAL) && !ifaceExists(ifindex):
		// The kernel says EINVAL for an unknown ifindex.
		return nil, fmt.Errorf("bpf: attach %s: no interface with index %d in this network namespace: %w: %w", m, ifindex, ErrNotFound, err)
	case errors.Is(err, unix.EOPNOTSUPP):
		return nil, fmt.Errorf("bpf: attach %s to ifindex %d: interface has no %s XDP support: %w: %w", m, ifindex, m, ErrNotSupported, err)
	case errors.Is(err, unix.EPERM):
		return nil, fmt.Errorf("bpf: attach %s to ifindex %d: needs CAP_NET_ADMIN: %w: %w", m, ifindex, ErrNotSupported, err)
	case errors.Is(err, ebpf.ErrNotSupported):
		return nil, fmt.Errorf("bpf: attach %s to ifindex %d: kernel lacks XDP links: %w: %w", m, ifindex, ErrNotSupported, err)
	}
	return nil, fmt.Errorf("bpf: attach %s to ifindex %d: %w", m, ifindex, err)
}

// ifaceExists reports whether ifindex names an interface in the calling
// thread's network namespace.
func ifaceExists(ifindex int) bool {
	_, err := net.InterfaceByIndex(ifindex)
	return err == nil
}

// Detach detaches the program from its interface; the maps stay, so the
// program can be attached again. A pinned link is detached too (the pins
// then name a defunct link: Unpin them), even when another process holds
// it.
func (p *Program) Detach() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.objs == nil {
		return fmt.Errorf("bpf: detach: %w", ErrClosed)
	}
	if p.link == nil {
		return fmt.Errorf("bpf: detach: %w", ErrNotAttached)
	}
	return p.detach(true)
}

// detach drops the link: force detaches it even if it is pinned or held
// by another process; otherwise closing the descriptor detaches only an
// unpinned link nobody else holds.
func (p *Program) detach(force bool) error {
	var err error
	if force {
		if err = p.link.Detach(); errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOLINK) {
			err = nil // already defunct: the interface is gone
		}
	}
	err = errors.Join(err, p.link.Close())
	p.link, p.mode, p.ifindex = nil, ModeAuto, 0
	if err != nil {
		return fmt.Errorf("bpf: detach: %w", err)
	}
	return nil
}

// Mode reports the mode the program is attached in (ModeNative or
// ModeGeneric), or ModeAuto when it is not attached.
func (p *Program) Mode() Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// Ifindex reports the interface the program is attached to, 0 when it is
// not attached.
func (p *Program) Ifindex() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ifindex
}

// Close detaches the program and frees the program and its maps. The
// AF_XDP sockets themselves belong to the caller. A pinned program stays
// attached: Close of a Program loaded with LoadPinned first removes the
// flows and sockets it added, and Close of a Program that Pin pinned
// leaves everything to the pins. Close is idempotent.
func (p *Program) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.objs == nil {
		return nil
	}
	var errs []error
	if p.guest {
		errs = append(errs, p.removeOwn())
	}
	if p.link != nil {
		errs = append(errs, p.detach(false))
	}
	if err := p.objs.Close(); err != nil {
		errs = append(errs, fmt.Errorf("bpf: close: %w", err))
	}
	if err := p.owners.Close(); err != nil {
		errs = append(errs, fmt.Errorf("bpf: close: %w", err))
	}
	p.objs, p.owners, p.sockets, p.regs, p.added = nil, nil, nil, nil, nil
	return errors.Join(errs...)
}

// maps returns the loaded maps, or ErrClosed. Callers hold p.mu.
func (p *Program) maps(op string) (*steerMaps, error) {
	if p.objs == nil {
		return nil, fmt.Errorf("bpf: %s: %w", op, ErrClosed)
	}
	return &p.objs.steerMaps, nil
}

// ProgramID is the kernel's id of the loaded program (as `ip link` and
// bpftool show it), 0 if it cannot be told.
func (p *Program) ProgramID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.objs == nil {
		return 0
	}
	if p.link != nil {
		if info, err := p.link.Info(); err == nil {
			return int(info.Program)
		}
	}
	if p.objs.Steer != nil {
		if info, err := p.objs.Steer.Info(); err == nil {
			if id, ok := info.ID(); ok {
				return int(id)
			}
		}
	}
	return 0
}
