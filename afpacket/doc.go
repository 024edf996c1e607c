// Package afpacket is AF_PACKET sockets with mmap'd rings on
// golang.org/x/sys/unix: a receive ring fed through a classic BPF socket
// filter, a TPACKET_V2 frame ring by default (or a TPACKET_V3 block ring,
// Config.RX), and a TPACKET_V2 transmit ring that bypasses the qdisc.
// Like package xdp it moves Ethernet frames and knows nothing of what they
// carry; unlike AF_XDP it needs no XDP program and works on any interface,
// but it taps the stack rather than steering: the kernel still receives
// every frame the ring receives.
//
// A Socket is two kernel sockets on one interface: the receiving one is
// bound to ETH_P_IP (so it never sees outgoing frames) with the filter
// attached before it is bound; the sending one is bound with protocol 0
// (so it receives nothing).
//
//	RX frame ring (TPACKET_V2, FrameRing, the default):
//	Blocks × BlockSize bytes cut into frames of RXFrameSize
//	┌ tpacket2_hdr{status,len,snaplen,mac} ... frame[snaplen] at +mac ┐ ┌ frame 1 ┐ ... ┌ frame N-1 ┐
//	kernel: writes frame i, then status TP_STATUS_USER (smp_wmb, store),
//	wakes the socket ──▶ Receive: loads status (atomic, acquire), hands
//	out the frame ──▶ Release: stores TP_STATUS_KERNEL (atomic) ──▶ the
//	kernel may refill it. Frame by frame: nothing waits for a block.
//	All frames held by user space: frames are dropped (Stats.Drops).
//
//	RX block ring (TPACKET_V3, BlockRing): Blocks × BlockSize bytes
//	┌─────────────── block 0 ────────────────┐┌── block 1 ──┐ ... ┌─ block N-1 ─┐
//	│hdr_v1{status,num_pkts,off_first} pkt pkt││             │     │             │
//	└─────────────────────────────────────────┘└─────────────┘     └─────────────┘
//	pkt: tpacket3_hdr{next_offset, snaplen, mac} ... frame[snaplen] at +mac
//
//	kernel fills the open block; closes it when full or BlockTimeout after
//	its first packet: block status TP_STATUS_USER ──▶ Receive hands out
//	its frames ──▶ Release stores TP_STATUS_KERNEL ──▶ the kernel may
//	refill it. All blocks held by user space: the queue freezes, frames
//	are dropped.
//
//	TX ring (TPACKET_V2): TXFrames × FrameSize bytes
//	┌ tpacket2_hdr{status,len} (32 B) │ frame ... ┐ ┌ frame 1 ┐ ... ┌ frame N-1 ┐
//	status TP_STATUS_AVAILABLE ──▶ ReserveTX/TXFrame: we write a frame ──▶
//	SubmitTX: TP_STATUS_SEND_REQUEST, sendto(MSG_DONTWAIT) ──▶ the kernel
//	sends it and stores TP_STATUS_AVAILABLE when the skb is freed.
//
// Every ring is used strictly in order by both sides, so each side keeps
// only its own index. Ownership passes through the status word of a frame
// or block, and through nothing else:
//
//	word                       written by                read by
//	frame status (RX, V2)      kernel: USER (store)      Receive, Readable: atomic load
//	                           Release: KERNEL (atomic)  kernel: READ_ONCE
//	block status (RX, V3)      kernel: USER (store)      Receive, Readable, Filling: atomic load
//	                           Release: KERNEL (atomic)  kernel: READ_ONCE
//	block num_pkts, seq_num    kernel, while filling     Filling: atomic load, compared only
//	frame status (TX)          SubmitTX: SEND_REQUEST    kernel: READ_ONCE
//	                           (atomic); kernel:         ReserveTX, TXPending: atomic load
//	                           AVAILABLE (store)
//
// Whoever hands an entry over writes its contents first and then stores
// the status (our atomic store is a release); whoever receives it loads
// the status atomically (acquire) before touching the contents. The kernel
// pairs those with smp_wmb/smp_rmb around its own status accesses.
//
// Latency: a frame ring hands each frame over as soon as the kernel has
// written it and signals the socket readable for each, as kernel UDP
// signals each datagram; the default. A block ring hands a block over
// when it is full or when its retire timer (BlockTimeout, millisecond
// resolution, 1 ms by default) fires, so at low rates a frame waits up to
// about a millisecond; at high rates blocks fill and it delivers in large
// batches, and it packs small frames densely (a frame ring's slots are
// RXFrameSize each). Filling tells a reader that found a block ring empty
// that the open block already holds frames (a protocol that repairs holes
// waits for them instead of asking for them again); a frame ring
// withholds nothing.
//
// A Socket is not safe for concurrent use, except that its receive side
// (Receive, Release, Readable) and its send side (ReserveTX, TXFrame,
// SubmitTX, Kick) touch disjoint state and may run in two goroutines;
// Stats may be called from any goroutine. A Poller parks a goroutine in
// Go's network poller until the receive ring hands a frame or block over;
// UDPFilter builds the socket filter of one UDP flow, DropAll one that
// passes nothing.
package afpacket
