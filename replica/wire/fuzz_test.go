package wire

// Fuzz targets of the frame codec and the DATA payload checks.

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/ringfire/ringfire/shm"
)

// fzCodecErr reports whether err is one of the codec's errors.
func fzCodecErr(err error) bool {
	return errors.Is(err, ErrMalformed) || errors.Is(err, ErrMagic) || errors.Is(err, ErrVersion) || errors.Is(err, ErrTooLarge)
}

func FuzzParseHeader(f *testing.F) {
	f.Add(AppendHello(nil, 1, Hello{Flags: 1}), uint32(64))
	f.Add(AppendNak(nil, 1, 2), uint32(8))
	f.Add(AppendEmpty(nil, KindPunch, 3, 4), uint32(0))
	f.Add([]byte{3, 0, 1, 0, 56, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0}, uint32(56))
	f.Add([]byte{9, 0, 0, 0}, ^uint32(0))
	// maxLen is never negative in the package (a negative limit accepts
	// any length: see the report), so the fuzzer draws it from uint32.
	f.Fuzz(func(t *testing.T, b []byte, limit uint32) {
		maxLen := int(limit)
		h, err := ParseHeader(b, maxLen)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error %v wraps no codec error", err)
			}
			return
		}
		if h.Kind < KindHello || h.Kind > kindLast || int64(h.Len) > int64(maxLen) {
			t.Fatalf("accepted %+v with limit %d", h, maxLen)
		}
		if want, fixed := fixedLen(h.Kind); fixed && int(h.Len) != want {
			t.Fatalf("accepted %v of %d bytes", h.Kind, h.Len)
		}
		var out [HeaderSize]byte
		h.Put(out[:])
		if !bytes.Equal(out[:], b[:HeaderSize]) {
			t.Fatalf("round trip % x -> %+v -> % x", b[:HeaderSize], h, out)
		}
	})
}

// fzFixed and fzBlob are the DATA shapes FuzzDecodeFrames checks against.
var (
	fzFixed = Shape{Payload: 56}
	fzBlob  = Shape{Payload: 24, Arena: 1 << 12}
)

func FuzzDecodeFrames(f *testing.F) {
	var seed []byte
	seed = AppendHello(seed, StartOldest, Hello{Flags: HelloUDP})
	seed = AppendGeometry(seed, 1, GeometryMulticast, Geometry{Capacity: 64, ElementSize: 64, SlotsOffset: 128})
	seed = AppendMulticast(seed, Multicast{Group: [4]byte{239, 0, 0, 1}, Port: 9, MTU: DefaultMTU})
	seed = append(seed, 3, 0, 2, 0, 112, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0)
	seed = append(seed, make([]byte, 112)...)
	seed = AppendEmpty(seed, KindGap, 0, 5)
	seed = AppendNak(seed, 5, 9)
	f.Add(seed)
	f.Add(AppendGeometry(nil, 1, 0, ftBlobGeometry()))
	f.Add(append(AppendHello(nil, 0, Hello{}), 0xFF))
	f.Fuzz(func(t *testing.T, b []byte) {
		for len(b) > 0 {
			h, err := ParseHeader(b, 1<<16)
			if err != nil {
				if !fzCodecErr(err) {
					t.Fatalf("header: %v", err)
				}
				return
			}
			if len(b)-HeaderSize < int(h.Len) {
				return // truncated stream
			}
			frame, p := b[:HeaderSize+int(h.Len)], b[HeaderSize:HeaderSize+int(h.Len)]
			b = b[len(frame):]
			if err := fzDecodePayload(h, frame, p); err != nil {
				if !fzCodecErr(err) {
					t.Fatalf("%v: %v", h.Kind, err)
				}
				if h.Kind != KindData {
					return // a peer closes the connection here
				}
			}
		}
	})
}

// fzDecodePayload runs the payload parser of h's kind, checking that what
// is accepted re-encodes to the same frame where the encoding is unique.
func fzDecodePayload(h Header, frame, p []byte) error {
	switch h.Kind {
	case KindHello:
		_, err := ParseHello(p)
		return err
	case KindGeometry:
		g, err := ParseGeometry(p)
		if err != nil {
			return err
		}
		if again := AppendGeometry(nil, h.Seq, h.Flags, g); h.Count == 0 && !bytes.Equal(again, frame) {
			panic(fmt.Sprintf("GEOMETRY round trip % x -> % x", frame, again))
		}
		if _, err := g.MirrorLayout(); err != nil && !errors.Is(err, ErrMalformed) {
			return fmt.Errorf("mirror layout: %v", err) // wraps nothing: fails the target
		}
		_ = ShapeOf(g).MaxRecord()
		return nil
	case KindMulticast:
		_, err := ParseMulticast(p)
		return err
	case KindReport:
		seq, err := ParseReport(h, p)
		if err == nil && !bytes.Equal(AppendReport(nil, seq), frame) {
			panic(fmt.Sprintf("REPORT round trip % x", frame))
		}
		return err
	case KindNak:
		first, last, err := ParseNak(h, p)
		if err == nil && (first == 0 || last < first || last-first >= MaxNakRecords) {
			panic(fmt.Sprintf("NAK %d..%d accepted", first, last))
		}
		return err
	case KindData:
		for _, s := range []Shape{fzFixed, fzBlob} {
			if err := s.CheckData(h, p); err != nil {
				if !fzCodecErr(err) {
					return fmt.Errorf("DATA: %v", err)
				}
				continue
			}
			fzWalk(h, p, s)
		}
	}
	return nil
}

// fzWalk iterates over an accepted DATA payload: exactly Count records,
// in sequence, together covering the payload byte for byte.
func fzWalk(h Header, p []byte, s Shape) {
	it := s.NewRecords(h, p)
	var cover []byte
	n := 0
	for ; n <= int(h.Count); n++ {
		seq, slot, blob, ok := it.Next()
		if !ok {
			break
		}
		if seq != h.Seq+uint64(n) || len(slot) != s.Payload || (!s.Blob() && blob != nil) || uint64(len(blob)) > s.Arena {
			panic(fmt.Sprintf("record %d: seq %d, %d+%d bytes, shape %+v", n, seq, len(slot), len(blob), s))
		}
		cover = append(append(cover, slot...), blob...)
	}
	if n != int(h.Count) || !bytes.Equal(cover, p) {
		panic(fmt.Sprintf("%d records covering %d bytes, header %+v, payload %d bytes", n, len(cover), h, len(p)))
	}
}

func FuzzCheckData(f *testing.F) {
	valid := ftBlobRecord(nil, Shape{Payload: 24, Arena: 1024}, 1, 10, 10)
	valid = ftBlobRecord(valid, Shape{Payload: 24, Arena: 1024}, 2, 0, 0)
	f.Add(true, uint8(1), uint8(4), uint16(2), uint64(1), valid)
	f.Add(false, uint8(6), uint8(0), uint16(2), uint64(9), make([]byte, 112))
	f.Add(false, uint8(0), uint8(0), uint16(3), uint64(1), make([]byte, 24))
	f.Add(true, uint8(0), uint8(0), uint16(1), ^uint64(0), make([]byte, 16))
	f.Fuzz(func(t *testing.T, blob bool, elem, arena uint8, count uint16, seq uint64, p []byte) {
		// Fixed payloads start at 8 bytes: a 0-byte payload is
		// TestRecordsZeroPayload's bug, kept out of the fuzzer's way.
		s := Shape{Payload: 8 * (1 + int(elem%32))}
		if blob {
			g := Geometry{Capacity: 1, ElementSize: 24 + 8*uint32(elem%8), RingFlags: uint32(shm.FlagArena),
				SlotsOffset: 128, ArenaOffset: 1 << 16, ArenaSize: 64 << (arena % 12)}
			if err := g.Validate(); err != nil {
				t.Fatalf("%+v: %v", g, err)
			}
			s = ShapeOf(g)
		}
		h := Header{Kind: KindData, Count: count, Len: uint32(len(p)), Seq: seq}
		if err := s.CheckData(h, p); err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		fzWalk(h, p, s)
	})
}
