// SPDX-License-Identifier: GPL-2.0

//go:build ignore

// steer: the XDP program that sends selected UDP flows to AF_XDP sockets.
//
// Decision path (see doc.go for the full picture):
//
//   packet -> parse Ethernet [+ one 802.1Q/802.1ad tag] -> IPv4 -> UDP
//          -> flows[{daddr, dport}]  miss -> XDP_PASS
//          -> fault                  hit  -> XDP_DROP
//          -> xsks[rx_queue_index]   none -> XDP_PASS (no_socket)
//          -> XDP_REDIRECT into the AF_XDP socket
//
// Anything the parser does not understand (ARP, IPv6, ICMP, TCP, QinQ,
// non-first fragments, truncated headers) is passed to the kernel.

#include <linux/types.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define MAX_QUEUES 64
#define MAX_FLOWS 1024

// IP_OFFSET masks the fragment offset in iphdr.frag_off (host order).
#define IP_OFFSET_MASK 0x1fff

// Counter indexes in the per-CPU counters map. Every run counts seen and
// exactly one of redirected, passed, dropped; no_socket is a subset of
// passed.
enum counter {
	CNT_SEEN = 0,
	CNT_REDIRECTED = 1,
	CNT_PASSED = 2,
	CNT_DROPPED = 3,
	CNT_NO_SOCKET = 4,
	CNT_MAX = 5,
};

// flow_key is a destination: an IPv4 unicast address or multicast group and
// a UDP port, both in network byte order.
struct flow_key {
	__be32 addr;
	__be16 port;
	__u16 pad; // must be zero
};

// fault is the loss injected on steered packets; all zero = off.
struct fault {
	__u32 drop_every; // drop every Nth steered packet (global sequence)
	__u32 drop_ratio; // drop with probability drop_ratio/(2^32-1)
};

struct vlan_hdr {
	__be16 tci;
	__be16 proto;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_FLOWS);
	__type(key, struct flow_key);
	__type(value, __u32); // owner pid (0: the Program that loaded it); ignored here
} flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, MAX_QUEUES);
	__type(key, __u32);   // RX queue index
	__type(value, __u32); // AF_XDP socket fd (write only)
} xsks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fault);
} fault SEC(".maps");

// fault_seq holds the global sequence number of steered packets seen while
// drop_every is set. It is shared by all CPUs and advanced with an atomic
// fetch-and-add, so "every Nth" is exact across CPUs.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} fault_seq SEC(".maps");

static __always_inline void count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	if (v)
		*v += 1; // per-CPU slot: no atomics needed
}

static __always_inline int pass(void)
{
	count(CNT_PASSED);
	return XDP_PASS;
}

// faulty reports whether the fault map says to drop this steered packet.
static __always_inline int faulty(void)
{
	__u32 zero = 0;
	struct fault *f = bpf_map_lookup_elem(&fault, &zero);

	if (!f)
		return 0;
	__u32 every = f->drop_every;
	__u32 ratio = f->drop_ratio;
	if (every) {
		__u64 *seq = bpf_map_lookup_elem(&fault_seq, &zero);
		if (seq) {
			__u64 n = __sync_fetch_and_add(seq, 1) + 1;
			if (n % every == 0)
				return 1;
		}
	}
	if (ratio) {
		if (ratio == 0xffffffff || bpf_get_prandom_u32() < ratio)
			return 1;
	}
	return 0;
}

SEC("xdp")
int steer(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;

	count(CNT_SEEN);

	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > data_end)
		return pass();
	__be16 proto = eth->h_proto;
	void *l3 = eth + 1;

	if (proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD)) {
		struct vlan_hdr *vh = l3;
		if ((void *)(vh + 1) > data_end)
			return pass();
		proto = vh->proto;
		l3 = vh + 1;
	}
	if (proto != bpf_htons(ETH_P_IP))
		return pass(); // ARP, IPv6, a second VLAN tag, ...

	struct iphdr *iph = l3;
	if ((void *)(iph + 1) > data_end)
		return pass();
	if (iph->version != 4 || iph->ihl < 5 || iph->protocol != IPPROTO_UDP)
		return pass();
	if (iph->frag_off & bpf_htons(IP_OFFSET_MASK))
		return pass(); // non-first fragment: no UDP header

	struct udphdr *udp = l3 + iph->ihl * 4;
	if ((void *)(udp + 1) > data_end)
		return pass();

	struct flow_key key = {
		.addr = iph->daddr,
		.port = udp->dest,
		.pad = 0,
	};
	if (!bpf_map_lookup_elem(&flows, &key))
		return pass();

	if (faulty()) {
		count(CNT_DROPPED);
		return XDP_DROP;
	}

	// bpf_redirect_map looks the slot up now: it returns XDP_REDIRECT when a
	// socket is registered at this queue and the default action (the low
	// bits of flags, XDP_PASS) when the slot is empty or out of range.
	long act = bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
	if (act == XDP_REDIRECT) {
		count(CNT_REDIRECTED);
		return XDP_REDIRECT;
	}
	count(CNT_NO_SOCKET);
	return pass();
}

char __license[] SEC("license") = "GPL";
