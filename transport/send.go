package transport

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/internal/pkt"
	"github.com/ringfire/ringfire/replica"
)

const txRoomWait = 20 * time.Millisecond // how long SendBatch waits for TX room

// txRing is a socket's transmit ring as the send loop uses it: an
// xdp.Socket's and an afpacket.Socket's alike.
type txRing interface {
	ReserveTX(n int) int       // reserve up to n frames; how many
	TXFrame(i int) []byte      // the i-th reserved frame
	SubmitTX(lens []int) error // queue the first len(lens) reserved frames
	Kick() error               // make the kernel transmit what is queued
}

// sendCounters count a transport's sends. The sender adds to them (Add,
// under the send lock); Stats loads them from any goroutine. They publish
// nothing but themselves.
type sendCounters struct {
	sent            atomic.Uint64 // datagrams queued for the wire
	noRoute, tooBig atomic.Uint64 // datagrams not sent
	waits           atomic.Uint64 // SendBatch calls that waited for TX room
}

// sender is a kernel-bypass transport's send side: a header per
// destination (routes), built into the frames of a TX ring. Its user
// holds routes.mu around send.
type sender struct {
	ring     txRing
	maxFrame int          // bytes of a TX frame the ring takes
	closed   *atomic.Bool // the transport's: Close stores true (Swap) before taking the send lock
	st       *sendCounters
	routes   routes
	lens     []int // of the frames fill built
	id       uint16
}

func newSender(ring txRing, maxFrame int, closed *atomic.Bool, st *sendCounters, rs routes) sender {
	return sender{ring: ring, maxFrame: maxFrame, closed: closed, st: st, routes: rs, lens: make([]int, 0, 64)}
}

// send builds one Ethernet/IPv4/UDP frame per message in the TX ring and
// kicks the kernel once per run of reserved frames. A datagram larger
// than the interface's MTU fails with EMSGSIZE (as kernel UDP does); one
// to a destination the interface cannot reach is dropped and counted.
func (s *sender) send(ms []replica.Message) (int, error) {
	if s.closed.Load() {
		return 0, replica.ErrClosed
	}
	now := time.Now()
	done, deadline := 0, time.Time{}
	for done < len(ms) {
		k := s.ring.ReserveTX(len(ms) - done)
		if k == 0 {
			if err := s.waitRoom(&deadline); err != nil {
				return done, err
			}
			continue
		}
		n, err := s.fill(ms[done:done+k], now)
		done += n
		serr := s.ring.SubmitTX(s.lens)
		s.st.sent.Add(uint64(len(s.lens)))
		if err == nil {
			err = serr
		}
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// fill writes a frame for each message into the reserved TX frames and
// returns how many messages it consumed (sent or dropped).
func (s *sender) fill(ms []replica.Message, now time.Time) (int, error) {
	s.lens = s.lens[:0]
	link := s.routes.link
	for i := range ms {
		m := &ms[i]
		r := s.routes.get(m.Addr, now)
		if r.tmpl == nil {
			s.st.noRoute.Add(1)
			continue
		}
		if len(m.Buf)+pkt.IPv4Len+pkt.UDPLen > link.MTU || len(m.Buf)+r.tmpl.Len() > s.maxFrame {
			s.st.tooBig.Add(1)
			return i, fmt.Errorf("transport: %d-byte datagram on %s (MTU %d): %w", len(m.Buf), link.Name, link.MTU, unix.EMSGSIZE)
		}
		s.id++
		s.lens = append(s.lens, r.tmpl.Build(s.ring.TXFrame(len(s.lens)), m.Buf, s.id))
	}
	return len(ms), nil
}

// waitRoom kicks the kernel and yields until a TX frame is free again, for
// at most txRoomWait per send.
func (s *sender) waitRoom(deadline *time.Time) error {
	now := time.Now()
	if deadline.IsZero() {
		*deadline = now.Add(txRoomWait)
		s.st.waits.Add(1)
	} else if now.After(*deadline) {
		return replica.ErrWouldBlock
	}
	if err := s.ring.Kick(); err != nil {
		return err
	}
	runtime.Gosched()
	return nil
}
