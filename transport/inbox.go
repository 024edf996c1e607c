package transport

import (
	"net/netip"
	"sync/atomic"

	"github.com/ringfire/ringfire/replica"
)

// inboxSize bounds the datagrams held for a transport that another
// transport of the same interface received for it.
const inboxSize = 1024

// inbox holds datagrams for a transport that arrived while another
// transport of its interface was draining the shared sockets. Its buffers
// exist only once an interface has two users. Guarded by the interface's
// rxMu, except pending.
type inbox struct {
	bufs    [][]byte
	lens    []int
	from    []netip.AddrPort
	head, n int
	pending atomic.Int32 // n, readable without the lock (WaitFor's check)
	drops   atomic.Uint64
}

// put copies a datagram in, or counts it dropped when full.
func (b *inbox) put(payload []byte, from netip.AddrPort) {
	if b.bufs == nil {
		b.bufs = make([][]byte, inboxSize)
		b.lens, b.from = make([]int, inboxSize), make([]netip.AddrPort, inboxSize)
	}
	if b.n == inboxSize {
		b.drops.Add(1)
		return
	}
	i := (b.head + b.n) % inboxSize
	if cap(b.bufs[i]) < len(payload) {
		b.bufs[i] = make([]byte, max(len(payload), 2048))
	}
	b.lens[i] = copy(b.bufs[i][:cap(b.bufs[i])], payload)
	b.from[i] = from
	b.n++
	b.pending.Store(int32(b.n))
}

// take moves held datagrams into ms and returns how many; a datagram
// larger than its Message's buffer is counted in truncated and dropped.
func (b *inbox) take(ms []replica.Message, truncated *atomic.Uint64) int {
	k := 0
	for b.n > 0 && k < len(ms) {
		i := b.head
		if b.lens[i] <= len(ms[k].Buf) {
			ms[k].N = copy(ms[k].Buf, b.bufs[i][:b.lens[i]])
			ms[k].Addr = b.from[i]
			k++
		} else {
			truncated.Add(1)
		}
		b.head = (b.head + 1) % inboxSize
		b.n--
	}
	b.pending.Store(int32(b.n))
	return k
}
