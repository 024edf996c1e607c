//go:build linux

package bpf

import (
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// ownersName is the map, created by Load next to the program's own maps,
// that records who registered the socket of each queue: XSKMAP entries
// cannot be read back from user space (lookups from a syscall are
// EOPNOTSUPP, and BPF_MAP_GET_NEXT_KEY walks every index, filled or not).
const ownersName = "xsk_owners"

// socketOwner is a value of xsk_owners; all zero = no registration.
type socketOwner struct {
	PID uint32 // the registering process
	Pad uint32
	Ino uint64 // the socket's inode (socket:[ino] in /proc/PID/fd)
}

func ownersSpec() *ebpf.MapSpec {
	return &ebpf.MapSpec{
		Name: ownersName, Type: ebpf.Array,
		KeySize: 4, ValueSize: 16, MaxEntries: MaxQueues,
	}
}

// ownerOf describes the socket fd of this process.
func ownerOf(fd int) socketOwner {
	o := socketOwner{PID: uint32(os.Getpid())}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) == nil {
		o.Ino = st.Ino
	}
	return o
}

// SocketOwner is a registration of an AF_XDP socket, as recorded by the
// SetSocket of whichever process registered it.
type SocketOwner struct {
	Queue int
	PID   int    // the process that registered it
	Ino   uint64 // the socket's inode: socket:[Ino] among /proc/PID/fd
}

// SocketOwners returns the registrations recorded by every process using
// the program, in queue order. A process that died without ClearSocket
// leaves its record behind (the kernel removed its socket from the
// XSKMAP): check that PID still holds socket Ino.
func (p *Program) SocketOwners() ([]SocketOwner, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := p.maps("socket owners"); err != nil {
		return nil, err
	}
	var out []SocketOwner
	for q := range MaxQueues {
		var o socketOwner
		if err := p.owners.Lookup(uint32(q), &o); err != nil {
			return nil, fmt.Errorf("bpf: socket owners: queue %d: %w", q, err)
		}
		if o.PID != 0 {
			out = append(out, SocketOwner{Queue: q, PID: int(o.PID), Ino: o.Ino})
		}
	}
	return out, nil
}

// FlowEntry is a steered flow and who added it.
type FlowEntry struct {
	Flow
	// Owner is the process that added the flow through a Program loaded
	// from pins, 0 for a flow of the Program that loaded the program
	// (for a pinned program: xdpctl attach).
	Owner int
}

// FlowEntries returns the steered flows with their owners, sorted by
// address, then port.
func (p *Program) FlowEntries() ([]FlowEntry, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m, err := p.maps("flows")
	if err != nil {
		return nil, err
	}
	var (
		out []FlowEntry
		k   steerFlowKey
		v   uint32
	)
	it := m.Flows.Iterate()
	for it.Next(&k, &v) {
		out = append(out, FlowEntry{Flow: flowOf(k), Owner: int(v)})
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("bpf: flows: %w", err)
	}
	slices.SortFunc(out, func(a, b FlowEntry) int { return compareFlows(a.Flow, b.Flow) })
	return out, nil
}

func compareFlows(a, b Flow) int {
	if c := a.Addr.Compare(b.Addr); c != 0 {
		return c
	}
	return int(a.Port) - int(b.Port)
}

// removeOwn removes the flows and socket registrations this Program added
// (a guest's Close). Callers hold p.mu.
func (p *Program) removeOwn() error {
	m := &p.objs.steerMaps
	var errs []error
	for f := range p.added {
		if err := m.Flows.Delete(flowKey(f)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			errs = append(errs, fmt.Errorf("bpf: close: remove flow %v: %w", f, err))
		}
	}
	clear(p.added)
	for q, own := range p.regs {
		errs = append(errs, p.clearSocket(m, q, own))
	}
	clear(p.sockets)
	clear(p.regs)
	return errors.Join(errs...)
}
