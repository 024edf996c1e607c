// Package transport wires the kernel-bypass data paths (AF_XDP sockets
// steered by the bpf program; AF_PACKET later) to replica.Transport, and
// chooses among them with a fallback to kernel UDP. replica defines the
// interface and never imports xdp or bpf; xdp and bpf know nothing of
// replica; this package is the wiring cmd/ringfire uses.
//
//	replica sender/mirror ── Message{Buf, Addr} ──▶ XDP.SendBatch
//	    pkt.Template per destination (MAC from neigh) → UMEM TX frame → kick
//	NIC ─▶ bpf steer: flow (addr, port) match? ─▶ XSKMAP[rx queue] ─▶ RX ring
//	    XDP.RecvBatch: pkt.Parse → copy the payload into Message.Buf
//	(no match: XDP_PASS, the kernel handles ARP, ICMP, TCP, other ports)
//
// A kernel UDP socket bound to the same address and port stays open beside
// the AF_XDP sockets: it reserves the port (nobody else binds it, and the
// kernel does not answer port-unreachable) and joins multicast groups so
// the host sends IGMP reports that snooping switches need.
package transport
