package synth

import (
	"errors"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	for _, size := range []int{MinSize, 33, 39, 40, 64, 100, 4096} {
		buf := make([]byte, size)
		Fill(buf, 42, 1_700_000_000_123_456_789)
		seq, ts, err := Check(buf)
		if err != nil || seq != 42 || ts != 1_700_000_000_123_456_789 {
			t.Fatalf("size %d: Check = %d, %d, %v", size, seq, ts, err)
		}
	}
}

func TestDeterministic(t *testing.T) {
	a, b := make([]byte, 64), make([]byte, 64)
	Fill(a, 7, 9)
	Fill(b, 7, 9)
	if string(a) != string(b) {
		t.Fatal("same seq and timestamp gave different records")
	}
	Fill(b, 8, 9)
	if string(a[offFiller:]) == string(b[offFiller:]) {
		t.Fatal("filler does not depend on seq")
	}
}

// A record read as a whole slot payload (zero-padded to a multiple of 8)
// still checks.
func TestZeroPadding(t *testing.T) {
	for _, size := range []int{33, 37, 45, 63} {
		slot := make([]byte, (size+7)&^7)
		Fill(slot[:size], 5, 6)
		if seq, _, err := Check(slot); err != nil || seq != 5 {
			t.Fatalf("size %d padded to %d: %d, %v", size, len(slot), seq, err)
		}
	}
}

func TestBitFlipDetected(t *testing.T) {
	for _, size := range []int{MinSize, 33, 64, 71} {
		buf := make([]byte, size)
		for bit := range size * 8 {
			Fill(buf, 1234, 5678)
			buf[bit/8] ^= 1 << (bit % 8)
			if _, _, err := Check(buf); !errors.Is(err, ErrChecksum) {
				t.Fatalf("size %d: flipped bit %d not detected: %v", size, bit, err)
			}
		}
	}
}

func TestWordDamageDetected(t *testing.T) {
	buf := make([]byte, 64)
	for w := 0; w < 8; w++ {
		Fill(buf, 99, 100)
		for i := range 8 {
			buf[w*8+i] ^= 0xa5
		}
		if _, _, err := Check(buf); !errors.Is(err, ErrChecksum) {
			t.Fatalf("damaged word %d not detected: %v", w, err)
		}
	}
}

func TestShort(t *testing.T) {
	for _, n := range []int{0, 1, 8, MinSize - 1} {
		if _, _, err := Check(make([]byte, n)); !errors.Is(err, ErrShort) {
			t.Fatalf("%d bytes: %v, want ErrShort", n, err)
		}
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Fill of a short buffer did not panic")
		}
	}()
	Fill(make([]byte, MinSize-1), 1, 1)
}

func TestZeroRecordFails(t *testing.T) {
	if _, _, err := Check(make([]byte, 64)); !errors.Is(err, ErrChecksum) {
		t.Fatalf("all-zero record: %v, want ErrChecksum", err)
	}
}

func TestNoAllocs(t *testing.T) {
	buf := make([]byte, 256)
	var seq uint64
	allocs := testing.AllocsPerRun(100, func() {
		seq++
		Fill(buf, seq, seq*3)
		if _, _, err := Check(buf); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Fill+Check allocate %v times per run", allocs)
	}
}

func FuzzCheck(f *testing.F) {
	rec := make([]byte, 64)
	Fill(rec, 1, 2)
	f.Add(rec)
	f.Add(rec[:33])
	f.Add([]byte{})
	f.Add(make([]byte, MinSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		seq, ts, err := Check(b)
		switch {
		case len(b) < MinSize:
			if !errors.Is(err, ErrShort) {
				t.Fatalf("%d bytes: %v, want ErrShort", len(b), err)
			}
		case err == nil:
			if seq != le.Uint64(b) || ts != le.Uint64(b[8:]) {
				t.Fatalf("Check returned %d, %d, record holds %x", seq, ts, b[:16])
			}
		case !errors.Is(err, ErrChecksum):
			t.Fatalf("unexpected error %v", err)
		}
	})
}

func BenchmarkFillCheck64(b *testing.B) {
	buf := make([]byte, 64)
	b.SetBytes(64)
	for i := range b.N {
		Fill(buf, uint64(i), 0)
		if _, _, err := Check(buf); err != nil {
			b.Fatal(err)
		}
	}
}
