// Package neigh finds the link-layer next hop for frames that ringfire's
// AF_XDP and AF_PACKET transports put on the wire themselves, and describes
// network interfaces.
//
// A frame built for raw TX needs the link to send it on, a source address
// and the destination MAC of the next hop:
//
//	+-----------+-----------+---------+     Resolve(dst):
//	| dst MAC   | src MAC   | 0x0800  |       1. RTM_GETROUTE dst -> link, preferred
//	+-----------+-----------+---------+          source, gateway (if not on-link)
//	| IPv4: src address -> dst address|       2. next hop = gateway or dst
//	+---------------------------------+       3. dst MAC = multicast map (224/4),
//	| UDP ...                         |          ff:ff:ff:ff:ff:ff (broadcast), or
//	+---------------------------------+          the neighbour table entry (ARP)
//
// # Namespaces
//
// Everything is read from the network namespace of the calling OS thread,
// through netlink sockets created on that thread; /sys/class/net is never
// read (it shows the namespace sysfs was mounted in, not the thread's).
// Callers that enter a namespace with setns must call these functions from
// the same locked goroutine (runtime.LockOSThread). A Cache is bound to the
// namespace of the threads that fill it.
//
// # Resolution
//
// Neighbour entries in state REACHABLE, STALE, DELAY, PROBE, PERMANENT or
// NOARP are used as they are (the kernel revalidates STALE entries itself
// when it sends). When the entry is missing, INCOMPLETE or FAILED, Resolve
// makes the kernel resolve it by sending one empty UDP datagram with a
// kernel socket to the next hop's discard port (9), then polls the
// neighbour table every few milliseconds until the context's deadline
// (DefaultTimeout when the context has none). Frames sent by AF_XDP or
// AF_PACKET bypass the kernel's neighbour machinery and never trigger ARP
// themselves.
//
// The package never logs; errors wrap one of its sentinel errors.
package neigh
