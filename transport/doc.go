// Package transport wires the kernel-bypass data paths (AF_XDP sockets
// steered by the bpf program; AF_PACKET rings, package afpacket) to
// replica.Transport, and chooses among them and kernel UDP for a program
// embedding replica.Server or replica.Mirror. replica defines the
// interface and never imports xdp, bpf or afpacket; they know nothing of
// replica; this package is the wiring (cmd/ringfire's too).
//
// Config is the choice: a Kind (udp, xdp, afpacket, or auto: AF_XDP, else
// AF_PACKET, else kernel UDP), the interface, whether falling back to
// kernel UDP is allowed, and the base configurations of NewXDP and
// NewAFPacket. Its ServerFactory and MirrorFactory are the NewTransport
// of replica.ServerConfig and replica.MirrorConfig; each transport they
// open comes with a Choice (what carries the datagrams, why the others
// were refused) handed to a report function: the package never logs.
// OpenServer and OpenMirror make one choice directly. The pairs of the
// two kernel-bypass transports are named alike: NewXDP/NewAFPacket,
// XDPConfig/AFPacketConfig, XDPForServer/AFPacketForServer,
// XDPForMirror/AFPacketForMirror, XDPStats/AFPacketStats,
// ErrXDPUnavailable/ErrAFPacketUnavailable.
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
//
// An interface takes one XDP program, and each of its queues one UMEM, so
// the AF_XDP transports of a process on one interface share them (an iface:
// the program, one socket per queue, a neighbour resolver in the
// interface's namespace). Each transport adds its flow to the program and
// receives the datagrams to its port: whichever transport drains the
// shared sockets copies the others' datagrams into their inboxes and wakes
// their pollers. A transport whose user watches the sockets itself (it
// set OnArrival: a mirror's loop polls them, or sleeps in ppoll on them)
// is a watcher; while one is, the others' waiting receives (a server's
// PUNCH receiver) leave the sockets out of Go's poller and wait for the
// watcher to hand their datagrams over: a hub's mirror and server on one
// interface, and the mirror's datagrams wake no thread of the process
// inside the sender's system call, which would otherwise run that wake-up
// before it returns and so lengthen every send to a hub. Sends go through the first queue's socket under one lock.
// Another process cannot open the interface while this one holds it (the
// program is attached, the queues bound) and falls back to kernel UDP.
//
//	iface (veth0, netns cookie)            XDP (port 7401)   XDP (port 7404)
//	┌──────────────────────────────┐        ┌──────────┐      ┌──────────┐
//	│ bpf.Program  flows: 7401,7404│◀──add──│ flow     │      │ flow     │──add─┐
//	│ xdp.Socket q0 (TX, RX)       │        │ poller   │      │ poller   │      │
//	│ xdp.Socket q1 (RX)           │─drain─▶│ inbox    │◀────▶│ inbox    │      │
//	└──────────────────────────────┘        └──────────┘      └──────────┘      │
//	               ▲──────────────────────────────────────────────────────────────┘
//
// An AF_PACKET transport (AFPacket) needs no XDP program and shares
// nothing: each has its own receive ring (TPACKET_V2 frames, handed over
// one by one, by default) behind a socket filter matching its flow, and
// its own TPACKET_V2 transmit ring. Frames are
// built and parsed by internal/pkt, next hops resolved by internal/neigh,
// headers cached per destination exactly as for AF_XDP (routes). AF_PACKET
// taps rather than steers, so the kernel UDP socket that holds its port
// also gets every datagram: a drop-all socket filter keeps its queue
// empty.
//
//	replica ── Message ──▶ AFPacket.SendBatch: pkt.Template → TX ring → sendto
//	NIC ─▶ stack ─┬─▶ AF_PACKET tap: filter (addr, port)? ─▶ RX ring block
//	              │     AFPacket.RecvBatch: pkt.Parse → copy into Message.Buf
//	              └─▶ UDP socket on the port: filter drops all (port held, IGMP)
package transport
