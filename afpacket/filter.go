package afpacket

import (
	"fmt"
	"net/netip"
	"os"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// UDPFilter is a classic BPF socket filter passing the untagged IPv4 UDP
// datagrams to port, and when dst is valid only those to address dst;
// fragments (which a datagram parser rejects anyway) are dropped. The
// kernel runs it on each frame before copying it to the ring, so frames it
// drops cost no ring space.
//
//	ldh [12]; jne #0x0800, drop      EtherType IPv4
//	ldb [23]; jne #17, drop          protocol UDP
//	ldh [20]; jset #0x3fff, drop     MF or a fragment offset
//	ld [30]; jne #dst, drop          (when dst is valid)
//	ldxb 4*([14]&0xf)                X = IP header length
//	ldh [x+16]; jne #port, drop      UDP destination port
//	ret #262144
//	drop: ret #0
func UDPFilter(dst netip.Addr, port uint16) ([]bpf.RawInstruction, error) {
	const drop = ^uint8(0) // placeholder: patched to jump to the last instruction
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 12, Size: 2},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.ETH_P_IP, SkipTrue: drop},
		bpf.LoadAbsolute{Off: 23, Size: 1},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.IPPROTO_UDP, SkipTrue: drop},
		bpf.LoadAbsolute{Off: 20, Size: 2},
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: 0x3fff, SkipTrue: drop},
	}
	if dst.IsValid() {
		if !dst.Unmap().Is4() {
			return nil, fmt.Errorf("afpacket: filter for %v: not an IPv4 address", dst)
		}
		a := dst.Unmap().As4()
		prog = append(prog,
			bpf.LoadAbsolute{Off: 30, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3]), SkipTrue: drop})
	}
	prog = append(prog,
		bpf.LoadMemShift{Off: 14},
		bpf.LoadIndirect{Off: 16, Size: 2},
		bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: uint32(port), SkipTrue: drop},
		bpf.RetConstant{Val: 1 << 18},
		bpf.RetConstant{Val: 0})
	last := len(prog) - 1
	for i, in := range prog {
		if j, ok := in.(bpf.JumpIf); ok && j.SkipTrue == drop {
			j.SkipTrue = uint8(last - i - 1)
			prog[i] = j
		}
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("afpacket: filter: %w", err)
	}
	return raw, nil
}

// DropAll is a socket filter that passes nothing: attached to a kernel
// socket that only holds a port (or a multicast membership), it keeps the
// socket's receive queue empty while an AF_PACKET ring takes the traffic.
func DropAll() []bpf.RawInstruction {
	ret, _ := bpf.RetConstant{Val: 0}.Assemble() // never fails
	return []bpf.RawInstruction{ret}
}

// SetFilter attaches a classic BPF program to the socket fd
// (SO_ATTACH_FILTER), replacing any filter it had.
func SetFilter(fd int, prog []bpf.RawInstruction) error {
	if len(prog) == 0 || len(prog) > maxFilter {
		return fmt.Errorf("afpacket: filter of %d instructions: need 1 to %d", len(prog), maxFilter)
	}
	ins := make([]unix.SockFilter, len(prog))
	for i, r := range prog {
		ins[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	fp := unix.SockFprog{Len: uint16(len(ins)), Filter: &ins[0]}
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &fp); err != nil {
		return os.NewSyscallError("setsockopt SO_ATTACH_FILTER", err)
	}
	return nil
}
