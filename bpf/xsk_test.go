package bpf

import (
	"bytes"
	"time"

	"github.com/ringfire/ringfire/xdp"
)

// testXSK is an AF_XDP socket of package xdp in copy mode that hands out
// copies of the frames it receives. Test code only.
type testXSK struct {
	*xdp.Socket
	poller *xdp.Poller
	frames [][]byte
}

// newTestXSK creates a socket bound to queue of ifindex; call it from the
// namespace of the interface.
func newTestXSK(ifindex, queue int) (*testXSK, error) {
	s, err := xdp.Open(ifindex, queue, xdp.Config{RingSize: 64, Bind: xdp.BindCopy})
	if err != nil {
		return nil, err
	}
	p, err := xdp.NewPoller(s)
	if err != nil {
		s.Close()
		return nil, err
	}
	return &testXSK{Socket: s, poller: p, frames: make([][]byte, 64)}, nil
}

// Recv returns copies of the frames received until want frames arrived or
// timeout passed, whichever is first.
func (s *testXSK) Recv(want int, timeout time.Duration) ([][]byte, error) {
	var out [][]byte
	deadline := time.Now().Add(timeout)
	for len(out) < want {
		k := s.Receive(s.frames[:min(len(s.frames), want-len(out))])
		for _, f := range s.frames[:k] {
			out = append(out, bytes.Clone(f))
		}
		s.Release()
		left := time.Until(deadline)
		if len(out) >= want || left <= 0 {
			break
		}
		if _, err := s.poller.Wait(min(left, 50*time.Millisecond)); err != nil {
			return out, err
		}
	}
	return out, nil
}

// Close closes the poller and the socket.
func (s *testXSK) Close() {
	s.poller.Close()
	s.Socket.Close()
}
