//go:build linux

package bpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// Counter indexes in the per-CPU counters map (enum counter in steer.c).
const (
	cntSeen uint32 = iota
	cntRedirected
	cntPassed
	cntDropped
	cntNoSocket
	cntMax
)

// flowKey converts f (validated) to the map key: the address and port in
// network byte order in memory.
func flowKey(f Flow) steerFlowKey {
	a := f.Addr.As4()
	var port [2]byte
	binary.BigEndian.PutUint16(port[:], f.Port)
	return steerFlowKey{
		Addr: binary.NativeEndian.Uint32(a[:]),
		Port: binary.NativeEndian.Uint16(port[:]),
	}
}

func flowOf(k steerFlowKey) Flow {
	var a [4]byte
	var port [2]byte
	binary.NativeEndian.PutUint32(a[:], k.Addr)
	binary.NativeEndian.PutUint16(port[:], k.Port)
	return Flow{Addr: netip.AddrFrom4(a), Port: binary.BigEndian.Uint16(port[:])}
}

// AddFlow steers f. Adding a flow that is already steered is not an error.
// A Program loaded from pins (LoadPinned) adds f tagged with this
// process's id and leaves a flow someone else steered alone (it is then
// not this Program's to remove).
func (p *Program) AddFlow(f Flow) error {
	if err := f.validate(); err != nil {
		return fmt.Errorf("bpf: add flow: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	m, err := p.maps("add flow")
	if err != nil {
		return err
	}
	owner, flags := uint32(0), ebpf.UpdateAny
	if p.guest {
		owner, flags = uint32(os.Getpid()), ebpf.UpdateNoExist
	}
	if err := m.Flows.Update(flowKey(f), owner, flags); err != nil {
		switch {
		case errors.Is(err, ebpf.ErrKeyExist):
			return nil // steered by someone else: theirs
		case errors.Is(err, unix.E2BIG):
			return fmt.Errorf("bpf: add flow %v: table full (%d flows): %w", f, MaxFlows, err)
		}
		return fmt.Errorf("bpf: add flow %v: %w", f, err)
	}
	p.added[f] = true
	return nil
}

// RemoveFlow stops steering f; ErrNotFound if it was not steered, or, for
// a Program loaded from pins, if this Program did not add it.
func (p *Program) RemoveFlow(f Flow) error {
	if err := f.validate(); err != nil {
		return fmt.Errorf("bpf: remove flow: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	m, err := p.maps("remove flow")
	if err != nil {
		return err
	}
	if p.guest && !p.added[f] {
		return fmt.Errorf("bpf: remove flow %v: not added by this process: %w", f, ErrNotFound)
	}
	delete(p.added, f)
	if err := m.Flows.Delete(flowKey(f)); err != nil {
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("bpf: remove flow %v: %w", f, ErrNotFound)
		}
		return fmt.Errorf("bpf: remove flow %v: %w", f, err)
	}
	return nil
}

// Flows returns the steered flows sorted by address, then port.
func (p *Program) Flows() ([]Flow, error) {
	es, err := p.FlowEntries()
	if err != nil {
		return nil, err
	}
	out := make([]Flow, len(es))
	for i, e := range es {
		out[i] = e.Flow
	}
	return out, nil
}

// SetSocket registers the AF_XDP socket fd for RX queue queue: steered
// packets arriving on that queue are redirected to it. The socket must be
// bound to the same interface and queue, or the kernel drops the packets
// (counted in the socket's XDP_STATISTICS, not here). The kernel removes
// the entry by itself when the socket is closed.
func (p *Program) SetSocket(queue int, fd int) error {
	if queue < 0 || queue >= MaxQueues {
		return fmt.Errorf("bpf: set socket: queue %d not in [0, %d): %w", queue, MaxQueues, ErrInvalid)
	}
	if fd < 0 {
		return fmt.Errorf("bpf: set socket: fd %d: %w", fd, ErrInvalid)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	m, err := p.maps("set socket")
	if err != nil {
		return err
	}
	if err := m.Xsks.Put(uint32(queue), uint32(fd)); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOTSOCK) || errors.Is(err, unix.EBADF) {
			return fmt.Errorf("bpf: set socket: queue %d: fd %d is not an AF_XDP socket: %w: %w", queue, fd, ErrInvalid, err)
		}
		return fmt.Errorf("bpf: set socket: queue %d fd %d: %w", queue, fd, err)
	}
	p.sockets[queue] = fd
	own := ownerOf(fd)
	p.regs[queue] = own
	if err := p.owners.Put(uint32(queue), own); err != nil {
		return fmt.Errorf("bpf: set socket: queue %d: record owner: %w", queue, err)
	}
	return nil
}

// ClearSocket unregisters the socket of queue; ErrNotFound if SetSocket was
// not called for it. Clearing an entry the kernel already removed because
// its socket was closed succeeds.
func (p *Program) ClearSocket(queue int) error {
	if queue < 0 || queue >= MaxQueues {
		return fmt.Errorf("bpf: clear socket: queue %d not in [0, %d): %w", queue, MaxQueues, ErrInvalid)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	m, err := p.maps("clear socket")
	if err != nil {
		return err
	}
	if _, ok := p.sockets[queue]; !ok {
		return fmt.Errorf("bpf: clear socket: queue %d: %w", queue, ErrNotFound)
	}
	mine := p.regs[queue]
	delete(p.sockets, queue)
	delete(p.regs, queue)
	return p.clearSocket(m, queue, mine)
}

// clearSocket removes our registration at queue, unless another process
// registered its own socket there since. Callers hold p.mu.
func (p *Program) clearSocket(m *steerMaps, queue int, mine socketOwner) error {
	var cur socketOwner
	if err := p.owners.Lookup(uint32(queue), &cur); err != nil {
		return fmt.Errorf("bpf: clear socket: queue %d: %w", queue, err)
	}
	if cur.PID != 0 && cur != mine {
		return nil // taken over since: not ours to clear
	}
	if err := m.Xsks.Delete(uint32(queue)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("bpf: clear socket: queue %d: %w", queue, err)
	}
	if err := p.owners.Put(uint32(queue), socketOwner{}); err != nil {
		return fmt.Errorf("bpf: clear socket: queue %d: %w", queue, err)
	}
	return nil
}

// Sockets returns the queues that have a socket registered through
// SetSocket and not cleared, in ascending order. XSKMAP entries cannot be
// read back from user space, so this is this Program's own record: a queue
// whose socket was closed stays listed until ClearSocket.
func (p *Program) Sockets() ([]int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := p.maps("sockets"); err != nil {
		return nil, err
	}
	out := make([]int, 0, len(p.sockets))
	for q := range p.sockets {
		out = append(out, q)
	}
	slices.Sort(out)
	return out, nil
}

// Counters returns the counters summed over all CPUs. The per-CPU values
// are read one counter at a time while packets may be flowing, so the sums
// are not a single snapshot.
func (p *Program) Counters() (Counters, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m, err := p.maps("counters")
	if err != nil {
		return Counters{}, err
	}
	var sums [cntMax]uint64
	var per []uint64
	for i := range cntMax {
		if err := m.Counters.Lookup(i, &per); err != nil {
			return Counters{}, fmt.Errorf("bpf: counters: index %d: %w", i, err)
		}
		for _, v := range per {
			sums[i] += v
		}
	}
	return Counters{
		Seen:       sums[cntSeen],
		Redirected: sums[cntRedirected],
		Passed:     sums[cntPassed],
		Dropped:    sums[cntDropped],
		NoSocket:   sums[cntNoSocket],
	}, nil
}

// SetFault sets the loss injected into steered packets; Fault{} turns it
// off. It restarts the DropEvery sequence, so the DropEvery-th steered
// packet after SetFault is the first one dropped.
func (p *Program) SetFault(f Fault) error {
	if err := f.validate(); err != nil {
		return fmt.Errorf("bpf: set fault: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	m, err := p.maps("set fault")
	if err != nil {
		return err
	}
	// Off first, then restart the sequence, then the new setting: packets
	// in between are not dropped rather than dropped out of sequence.
	if err := m.Fault.Put(uint32(0), steerFault{}); err != nil {
		return fmt.Errorf("bpf: set fault: %w", err)
	}
	if err := m.FaultSeq.Put(uint32(0), uint64(0)); err != nil {
		return fmt.Errorf("bpf: set fault: reset sequence: %w", err)
	}
	v := steerFault{DropEvery: f.DropEvery, DropRatio: ratioToFixed(f.DropRatio)}
	if err := m.Fault.Put(uint32(0), v); err != nil {
		return fmt.Errorf("bpf: set fault: %w", err)
	}
	return nil
}

// Fault returns the current fault setting.
func (p *Program) Fault() (Fault, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m, err := p.maps("fault")
	if err != nil {
		return Fault{}, err
	}
	var v steerFault
	if err := m.Fault.Lookup(uint32(0), &v); err != nil {
		return Fault{}, fmt.Errorf("bpf: fault: %w", err)
	}
	return Fault{DropEvery: v.DropEvery, DropRatio: fixedToRatio(v.DropRatio)}, nil
}
