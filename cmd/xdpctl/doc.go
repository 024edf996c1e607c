// Command xdpctl operates ringfire's XDP steering program (package bpf):
// it probes interfaces, attaches the program so that it outlives the
// command, and shows and tunes what it does. ringfire serve/mirror --xdp
// use the program xdpctl attached when there is one, adding their flows
// and sockets to it.
//
//	xdpctl probe  IFACE [--json] [--passive]
//	xdpctl attach IFACE [--mode native|generic|auto] [--port P]... [--group G]... [--addr A]...
//	xdpctl detach IFACE [--force]
//	xdpctl status [IFACE] [--json]
//	xdpctl stats  IFACE [--interval-ms N [--count N]] [--json]
//	xdpctl fault  IFACE [--drop-every N | --drop-ratio R | --off]
//
// Every command takes --netns NAME, to work on the interfaces of
// /run/netns/NAME (or of a namespace file such as /proc/PID/ns/net), and
// --bpffs DIR, the bpffs mount (default /sys/fs/bpf). Usage errors exit
// with status 2, other failures with 1; messages say what to do (run as
// root or with CAP_BPF and CAP_NET_ADMIN, mount bpffs, use --mode generic
// on a driver without native XDP, ...).
//
// # probe
//
// Driver (ETHTOOL_GDRVINFO), queues (combined channels, as AF_XDP sockets
// bind to them), MTU, the XDP program attached now (netlink), and support
// found by trying: native and generic XDP by attaching the steering program
// briefly in each mode (skipped while a program is attached), AF_XDP
// zero-copy by binding a zero-copy socket to queue 0 (no program needed).
// Some drivers reset their rings for that; --passive tries nothing.
//
// # attach and detach
//
// attach loads the program, attaches it through a BPF link (auto: native,
// else generic), steers each --port to each --group and --addr (to the
// interface's IPv4 addresses when neither is given; no --port: no flows,
// ringfire processes add theirs) and pins the link and maps, so the
// attachment outlives xdpctl. It mounts bpffs at --bpffs when none is
// there. An interface with an XDP program already is refused; stale pins
// (of a deleted interface) are removed first. detach removes the pins and
// detaches at once (BPF_LINK_DETACH), refusing while a ringfire process
// has sockets registered, unless --force.
//
// Pins live in a bpffs mount, which belongs to a mount namespace; the
// interface to a network namespace. The layout keys both:
//
//	<bpffs>/ringfire/<netns cookie>/<ifname>/
//	    link flows xsks counters fault fault_seq xsk_owners
//
// so two namespaces' "veth0" never collide. `ip netns exec` gives its
// command a mount namespace of its own with a fresh /sys, where a bpffs
// mounted by xdpctl (and the pins, and the attachment) would vanish when
// xdpctl exits: attach refuses that, and --netns NAME (which changes only
// the network namespace) is the way to reach another namespace.
//
// # Reuse by ringfire
//
// A ringfire AF_XDP transport opening an interface looks for the pins of
// that interface in its network namespace under /sys/fs/bpf. When they are
// there it adds its flows (tagged with its pid) and its sockets (recorded
// in xsk_owners with pid and socket inode) to the pinned program, keeps
// the attach mode xdpctl chose, and on close removes exactly those,
// leaving the program attached and the flows xdpctl added (even one on its
// own port) in place. Without pins it attaches a program of its own and
// detaches it on close; xdpctl status shows such a program as
// not pinned, and cannot read its maps. A ringfire started with `ip netns
// exec` cannot see the host's bpffs either: it then finds the interface
// busy and falls back to kernel UDP; start it with `nsenter
// --net=/run/netns/NAME` instead, which keeps the mount namespace.
//
// # status, stats, fault
//
// status shows the program (id, mode, pin directory), the flows with who
// added them (xdpctl attach, or a pid, marked when that process exited),
// the queues with a registered socket (pid and socket inode, marked live
// while the process still holds the socket: XSKMAP entries cannot be read
// back, so xsk_owners is the record), and the fault setting; without
// IFACE, every interface of the namespace with an XDP program or pins.
// stats prints the counters summed over the CPUs, once, or every
// --interval-ms with per-second rates, --count times or until SIGINT;
// --json prints one object per line. fault sets the loss injected into
// steered packets (drop every Nth, or a random ratio, or off), and shows
// it.
package main
