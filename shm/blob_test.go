package shm

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

type blobMeta struct {
	Symbol uint32
	Seq    uint32
}

func newBlobRing(t testing.TB, capa, arena uint64) (*BlobProducer[blobMeta], string) {
	t.Helper()
	path := ringPath(t)
	return blobProducer[blobMeta](t, path, BlobOptions{Capacity: capa, ArenaSize: arena}), path
}

// blobBytes is the deterministic content of blob i.
func blobBytes(i int) []byte {
	return bytes.Repeat([]byte{byte(i), byte(i >> 8), 0xA5}, 1+i%50)
}

func TestBlobRoundTrip(t *testing.T) {
	p, path := newBlobRing(t, 16, 4096)
	c := blobConsumer[blobMeta](t, path, ReadOptions{Start: StartOldest})
	for i := range 10 {
		if _, err := p.PushFlags(&blobMeta{Symbol: 42, Seq: uint32(i)}, blobBytes(i), uint32(i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Push(&blobMeta{Seq: 10}, nil); err != nil { // empty blobs are allowed
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	var m blobMeta
	for i := range 10 {
		n, ok, err := c.TryRecv(&m, buf)
		if err != nil || !ok || m.Seq != uint32(i) || m.Symbol != 42 || !bytes.Equal(buf[:n], blobBytes(i)) {
			t.Fatalf("blob %d: n=%d ok=%v err=%v meta=%+v", i, n, ok, err, m)
		}
	}
	if n, ok, err := c.TryRecv(&m, buf); !ok || err != nil || n != 0 || m.Seq != 10 {
		t.Fatalf("empty blob: %d %v %v", n, ok, err)
	}
	if _, ok, _ := c.TryRecv(&m, buf); ok {
		t.Fatal("record from nowhere")
	}
	if _, err := p.Push(&m, make([]byte, 4097)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("blob larger than the arena: %v", err)
	}
}

func TestBlobShortBufferKeepsRecord(t *testing.T) {
	p, path := newBlobRing(t, 16, 4096)
	c := blobConsumer[blobMeta](t, path, ReadOptions{Start: StartOldest})
	p.Push(&blobMeta{Seq: 1}, bytes.Repeat([]byte{7}, 100))
	var m blobMeta
	n, ok, err := c.TryRecv(&m, make([]byte, 10))
	if !errors.Is(err, ErrShortBuffer) || ok || n != 100 {
		t.Fatalf("short buffer: %d %v %v", n, ok, err)
	}
	n, ok, err = c.TryRecv(&m, make([]byte, 100))
	if err != nil || !ok || n != 100 || c.Seq() != 1 {
		t.Fatalf("retry: %d %v %v", n, ok, err)
	}
}

func TestBlobOverwrittenSkipped(t *testing.T) {
	// 64 slots but an arena of only 8 blobs of 128 bytes: the arena laps
	// long before the descriptor ring does.
	p, path := newBlobRing(t, 64, 1024)
	c := blobConsumer[blobMeta](t, path, ReadOptions{Start: StartOldest})
	for i := range 20 {
		p.Push(&blobMeta{Seq: uint32(i)}, bytes.Repeat([]byte{byte(i)}, 100))
	}
	buf := make([]byte, 1024)
	var m blobMeta
	var got []uint32
	for {
		n, ok, err := c.TryRecv(&m, buf)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if !bytes.Equal(buf[:n], bytes.Repeat([]byte{byte(m.Seq)}, 100)) {
			t.Fatalf("torn blob %d", m.Seq)
		}
		got = append(got, m.Seq)
	}
	if len(got) != 8 || got[0] != 12 || c.Lapped() != 12 {
		t.Fatalf("got %v lapped %d", got, c.Lapped())
	}
}

func TestBlobWrapsToLapBoundary(t *testing.T) {
	p, path := newBlobRing(t, 64, 1024)
	c := blobConsumer[blobMeta](t, path, ReadOptions{Start: StartOldest})
	// 3 × 320 = 960 bytes, then a 128-byte blob cannot fit the last 64
	// bytes and starts at the next lap.
	for i := range 3 {
		p.Push(&blobMeta{Seq: uint32(i)}, bytes.Repeat([]byte{byte(i)}, 300))
	}
	p.Push(&blobMeta{Seq: 3}, bytes.Repeat([]byte{3}, 128))
	r := c.Reader().Ring()
	payload := make([]byte, r.Layout().PayloadSize())
	if st, _ := r.ReadSlot(4, payload); st != SlotReady {
		t.Fatal(st)
	}
	if d := DecodeDescriptor(payload); d.Offset != 1024 || d.Len != 128 {
		t.Fatalf("descriptor %+v", d)
	}
	buf := make([]byte, 1024)
	var m blobMeta
	var got []uint32
	for {
		_, ok, _ := c.TryRecv(&m, buf)
		if !ok {
			break
		}
		got = append(got, m.Seq)
	}
	// The wrapped blob overwrote the first blob's bytes (offset 0..127).
	if fmt.Sprint(got) != "[1 2 3]" || c.Lapped() != 1 {
		t.Fatalf("got %v lapped %d", got, c.Lapped())
	}
}

func TestBlobView(t *testing.T) {
	p, path := newBlobRing(t, 16, 1024)
	c := blobConsumer[blobMeta](t, path, ReadOptions{Start: StartOldest})
	p.Push(&blobMeta{Symbol: 7}, []byte("hello"))
	p.Push(&blobMeta{Symbol: 8}, []byte("world!"))
	sum, ok, err := View(c, func(m *blobMeta, b []byte) string { return fmt.Sprintf("%d:%s", m.Symbol, b) })
	if err != nil || !ok || sum != "7:hello" {
		t.Fatalf("view: %q %v %v", sum, ok, err)
	}
	// The arena laps while the callback runs: the result is discarded and
	// View moves on to the next record.
	calls := 0
	res, ok, err := View(c, func(m *blobMeta, b []byte) int {
		calls++
		if calls == 1 {
			for i := range 20 {
				p.Push(&blobMeta{Symbol: uint32(100 + i)}, make([]byte, 100))
			}
		}
		return int(m.Symbol)
	})
	if err != nil || !ok || res == 8 || calls < 2 || c.Lapped() == 0 {
		t.Fatalf("view during lap: res %d ok %v calls %d lapped %d", res, ok, calls, c.Lapped())
	}
}

func TestBlobConcurrentNeverTorn(t *testing.T) {
	p, path := newBlobRing(t, 256, 8192)
	const n = 100000
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for r := range 2 {
		c := blobConsumer[blobMeta](t, path, ReadOptions{Start: StartOldest})
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 8192)
			var m blobMeta
			deadline := time.Now().Add(20 * time.Second)
			for time.Now().Before(deadline) {
				k, ok, err := c.TryRecv(&m, buf)
				if err != nil {
					errs <- err
					return
				}
				if !ok {
					continue
				}
				if want := blobBytes(int(m.Seq)); !bytes.Equal(buf[:k], want) {
					errs <- fmt.Errorf("reader %d: torn blob %d", r, m.Seq)
					return
				}
				if m.Seq == n-1 {
					return
				}
			}
			errs <- fmt.Errorf("reader %d timed out", r)
		}()
	}
	for i := range n {
		if _, err := p.Push(&blobMeta{Seq: uint32(i)}, blobBytes(i)); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
