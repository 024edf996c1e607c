// Package caps reads the capability sets of the calling thread (capget(2),
// version 3: two 32-bit words per set) and says by name which of the
// capabilities an operation needs are missing:
//
//	AF_XDP on eth1 needs CAP_BPF; running with CAP_NET_RAW, CAP_NET_ADMIN
//
// lists what is missing, then what is held among the capabilities that
// matter to the operation (or "running with none"). Root normally holds
// every capability, so nothing is missing for it.
//
// What ringfire's data paths need, found on Linux 6.x by running them as
// an unprivileged user with one capability dropped at a time:
//
//	AF_PACKET  CAP_NET_RAW (socket(AF_PACKET))
//	AF_XDP     CAP_NET_RAW    socket(AF_XDP)
//	           CAP_NET_ADMIN  XSKMAP creation, loading an XDP program, attaching it
//	           CAP_BPF        the other maps, the program (bpf(2) at all)
//	           CAP_PERFMON    the verifier: the steering program's packet
//	                          pointer arithmetic is "prohibited for !root"
//	                          without it
//	           CAP_IPC_LOCK   UMEM registration, unless RLIMIT_MEMLOCK covers
//	                          the UMEMs (16 MiB a queue by default; the
//	                          usual limit is 8 MiB): ENOBUFS otherwise
//
// CAP_SYS_ADMIN stands in for CAP_BPF and CAP_PERFMON, as the kernel
// accepts it for either (Set.Covers). Capabilities held in a user
// namespace other than the initial one do not count for BPF; this package
// reads the sets as capget reports them and does not look at namespaces.
package caps
