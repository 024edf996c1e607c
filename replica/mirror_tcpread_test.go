package replica

// The direct TCP reader against the goroutine reader's readFrameFrom: the
// same frames and the same ending, however the stream arrives.

import (
	"bufio"
	"bytes"
	"io"
	"testing"

	"github.com/ringfire/ringfire/replica/wire"
)

// chunkSource hands out data in chunks (sizes cycles through them, each
// 1..256 bytes; empty: all at once), answering errAgain between two
// chunks, then io.EOF.
type chunkSource struct {
	data, sizes []byte
	i           int
	again       bool
}

func (s *chunkSource) read(p []byte) (int, error) {
	if len(s.data) == 0 {
		return 0, io.EOF
	}
	if s.again {
		s.again = false
		return 0, errAgain
	}
	s.again = true
	n := len(s.data)
	if len(s.sizes) > 0 {
		n = min(n, int(s.sizes[s.i%len(s.sizes)])+1)
		s.i++
	}
	n = copy(p, s.data[:n])
	s.data = s.data[n:]
	return n, nil
}

type fzFrame struct {
	h wire.Header
	p string
}

// refFrames is what the goroutine reader makes of stream.
func refFrames(stream []byte, maxLen int) ([]fzFrame, error) {
	br := bufio.NewReader(bytes.NewReader(stream))
	var out []fzFrame
	for {
		h, p, err := readFrameFrom(br, maxLen)
		if err != nil {
			return out, err
		}
		out = append(out, fzFrame{h, string(p)})
	}
}

// directFrames is what a tcpReader with a buffer of buf bytes makes of
// stream, pre of it read ahead.
func directFrames(t *testing.T, stream, sizes []byte, pre, maxLen, buf int) ([]fzFrame, error) {
	pre = min(pre, len(stream))
	src := &chunkSource{data: stream[pre:], sizes: sizes}
	tr := newTCPReader(src.read, -1, maxLen, buf, stream[:pre])
	var out []fzFrame
	for range 4*len(stream) + 8 {
		h, p, ok, err := tr.next()
		if err != nil {
			return out, err
		}
		if ok {
			out = append(out, fzFrame{h, string(p)})
		}
	}
	t.Fatalf("the reader did not end a stream of %d bytes", len(stream))
	return nil, nil
}

func FuzzTCPReader(f *testing.F) {
	var b []byte
	b = append(b, dataFrameOf(1, 3)...)
	var hb [wire.HeaderSize]byte
	wire.Header{Kind: wire.KindHeartbeat, Seq: 3}.Put(hb[:])
	b = append(b, hb[:]...)
	f.Add(b, []byte{0, 7, 200}, uint8(5), uint8(0))
	f.Add(b[:len(b)-3], []byte{}, uint8(0), uint8(3))
	f.Add(append(bytes.Clone(b), 0xFF, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), []byte{15}, uint8(40), uint8(255))
	f.Fuzz(func(t *testing.T, stream, sizes []byte, pre, buf uint8) {
		const maxLen = 1024
		want, wantErr := refFrames(stream, maxLen)
		// A buffer of 16..526 bytes: frames that grow it, and frames that
		// run past its end and move to the front.
		got, gotErr := directFrames(t, stream, sizes, int(pre), maxLen, wire.HeaderSize+2*int(buf))
		if len(got) != len(want) {
			t.Fatalf("%d frames, the goroutine reader %d", len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("frame %d: %+v, the goroutine reader %+v", i, got[i], want[i])
			}
		}
		if gotErr.Error() != wantErr.Error() {
			t.Fatalf("ended with %v, the goroutine reader with %v", gotErr, wantErr)
		}
	})
}

// dataFrameOf is a DATA frame of n 8-byte records from first.
func dataFrameOf(first uint64, n int) []byte {
	b := make([]byte, wire.HeaderSize+8*n)
	wire.Header{Kind: wire.KindData, Count: uint16(n), Len: uint32(8 * n), Seq: first}.Put(b)
	return b
}

// A frame larger than the buffer grows it, and is whole once it arrived.
func TestTCPReaderLargeFrame(t *testing.T) {
	big := dataFrameOf(1, tcpReadBuf/8+100)
	got, err := directFrames(t, append(big, dataFrameOf(1+tcpReadBuf/8+100, 2)...), nil, 0, len(big), tcpReadBuf)
	if len(got) != 2 || err != ErrPeerClosed {
		t.Fatalf("%d frames, %v; want 2 and ErrPeerClosed", len(got), err)
	}
}

// Reading frames allocates nothing once the buffer is there.
func TestTCPReaderAllocs(t *testing.T) {
	frame := dataFrameOf(1, 4)
	src := func(p []byte) (int, error) { return copy(p, frame), nil }
	tr := newTCPReader(src, -1, 1024, tcpReadBuf, nil)
	if n := testing.AllocsPerRun(1000, func() {
		if _, _, ok, err := tr.next(); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}); n != 0 {
		t.Fatalf("next allocates %v times", n)
	}
}
