package auth

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

func testKey(t testing.TB) *Key {
	t.Helper()
	k, err := NewKey(bytes.Repeat([]byte{7}, MinSecret))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func frame(n int) []byte {
	b := make([]byte, 16+n, 16+n+Overhead)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

func TestSealOpen(t *testing.T) {
	k := testKey(t)
	inc := NewIncarnation()
	for _, enc := range []bool{false, true} {
		s, mk, err := k.Datagrams(inc, enc)
		if err != nil {
			t.Fatal(err)
		}
		o := mk()
		want := frame(100)
		sealed := s.Seal(bytes.Clone(want))
		if len(sealed) != len(want)+Overhead {
			t.Fatalf("sealed %d bytes, want %d", len(sealed), len(want)+Overhead)
		}
		if enc == bytes.Equal(sealed[16:116], want[16:]) {
			t.Fatalf("encrypt %v: payload in the clear %v", enc, !enc)
		}
		got, err := o.Open(bytes.Clone(sealed))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("encrypt %v: open: %v, equal %v", enc, err, bytes.Equal(got, want))
		}
		if _, err := o.Open(bytes.Clone(sealed)); !errors.Is(err, ErrReplay) {
			t.Fatalf("encrypt %v: replay: %v, want ErrReplay", enc, err)
		}
		for _, at := range []int{0, 1, 8, 20, len(sealed) - 20, len(sealed) - 1} {
			bad := s.Seal(bytes.Clone(want))
			bad[at] ^= 1
			if _, err := o.Open(bad); err == nil {
				t.Fatalf("encrypt %v: a flipped byte at %d passed", enc, at)
			}
		}
	}
}

// TestOtherIncarnation: a datagram of another source incarnation, or made
// with another secret, fails its tag.
func TestOtherIncarnation(t *testing.T) {
	k := testKey(t)
	s1, _, _ := k.Datagrams(NewIncarnation(), false)
	_, mk2, _ := k.Datagrams(NewIncarnation(), false)
	if _, err := mk2().Open(s1.Seal(frame(10))); !errors.Is(err, ErrTag) {
		t.Fatalf("another incarnation: %v, want ErrTag", err)
	}
	other, _ := NewKey(bytes.Repeat([]byte{8}, MinSecret))
	inc := NewIncarnation()
	s3, _, _ := other.Datagrams(inc, false)
	_, mk4, _ := k.Datagrams(inc, false)
	if _, err := mk4().Open(s3.Seal(frame(10))); !errors.Is(err, ErrTag) {
		t.Fatalf("another secret: %v, want ErrTag", err)
	}
}

// TestWindow: out-of-order counters within the window are accepted once;
// one that fell behind the window is refused.
func TestWindow(t *testing.T) {
	k := testKey(t)
	s, mk, _ := k.Datagrams(NewIncarnation(), false)
	o := mk()
	var all [][]byte
	for range 2000 {
		all = append(all, s.Seal(frame(8)))
	}
	order := []int{5, 3, 4, 1, 2, 1500, 400, 1499, 1000}
	want := []error{nil, nil, nil, nil, nil, nil, ErrReplay, nil, nil}
	for i, k := range order {
		_, err := o.Open(bytes.Clone(all[k]))
		if !errors.Is(err, want[i]) {
			t.Fatalf("datagram %d (counter %d): %v, want %v", i, k+1, err, want[i])
		}
	}
	if _, err := o.Open(bytes.Clone(all[1000])); !errors.Is(err, ErrReplay) {
		t.Fatalf("second 1001: %v", err)
	}
}

func TestSealAllocs(t *testing.T) {
	k := testKey(t)
	for _, enc := range []bool{false, true} {
		s, mk, _ := k.Datagrams(NewIncarnation(), enc)
		o := mk()
		buf := frame(1400)
		n := testing.AllocsPerRun(100, func() {
			b := s.Seal(buf[:16+1400])
			if _, err := o.Open(b); err != nil {
				t.Fatal(err)
			}
		})
		if n != 0 {
			t.Fatalf("encrypt %v: %v allocations per seal and open", enc, n)
		}
	}
}

func BenchmarkSeal(b *testing.B) {
	k := testKey(b)
	for _, size := range []int{64, 1440} {
		for _, enc := range []bool{false, true} {
			name := fmt.Sprintf("auth/%dB", size)
			if enc {
				name = fmt.Sprintf("encrypt/%dB", size)
			}
			b.Run(name, func(b *testing.B) {
				s, mk, _ := k.Datagrams(NewIncarnation(), enc)
				o := mk()
				buf := frame(size)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := o.Open(s.Seal(buf[:16+size])); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func FuzzOpen(f *testing.F) {
	k := testKey(f)
	inc := bytes.Repeat([]byte{1}, IncarnationSize)
	s, _, _ := k.Datagrams(inc, false)
	f.Add(s.Seal(frame(20)), false)
	se, _, _ := k.Datagrams(inc, true)
	f.Add(se.Seal(frame(20)), true)
	f.Add([]byte{}, false)
	f.Fuzz(func(t *testing.T, b []byte, enc bool) {
		_, mk, _ := k.Datagrams(inc, enc)
		o := mk()
		got, err := o.Open(bytes.Clone(b))
		if err == nil && len(got) != len(b)-Overhead {
			t.Fatalf("opened %d bytes of %d", len(got), len(b))
		}
	})
}
