package shm

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCreateRefusesLiveProducer(t *testing.T) {
	_, path := newTickRing(t, ProducerOptions{Capacity: 8})
	_, err := NewProducer[tick](path, ProducerOptions{Capacity: 8})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second producer: %v", err)
	}
	if _, err := OpenWriter(path); !errors.Is(err, ErrLocked) {
		t.Fatalf("OpenWriter on a held ring: %v", err)
	}
}

func TestCreateOverStaleRing(t *testing.T) {
	path := ringPath(t)
	p, err := NewProducer[tick](path, ProducerOptions{Capacity: 8})
	if err != nil {
		t.Fatal(err)
	}
	pushTicks(t, p, 1, 5)
	old := openRing(t, path, OpenOptions{}) // an old reader's mapping
	p.Close()

	// Same geometry: replaced by a fresh inode; the old mapping is untouched.
	p2, err := NewProducer[tick](path, ProducerOptions{Capacity: 8})
	if err != nil {
		t.Fatal(err)
	}
	if p2.Writer().Ring().WriteSeq() != 0 || old.WriteSeq() != 5 {
		t.Fatalf("write_seq new %d old %d", p2.Writer().Ring().WriteSeq(), old.WriteSeq())
	}
	p2.Close()

	// Another geometry is refused unless asked to replace.
	_, err = NewProducer[tick](path, ProducerOptions{Capacity: 16})
	if !errors.Is(err, ErrGeometry) {
		t.Fatalf("other geometry: %v", err)
	}
	_, err = NewProducer[[8]uint64](path, ProducerOptions{Capacity: 8})
	if !errors.Is(err, ErrGeometry) {
		t.Fatalf("other element size: %v", err)
	}
	p3, err := NewProducer[tick](path, ProducerOptions{Capacity: 16, Replace: true})
	if err != nil {
		t.Fatal(err)
	}
	p3.Close()

	// A file that is not a ring is refused too, and kept.
	junk := filepath.Join(t.TempDir(), "junk")
	os.WriteFile(junk, []byte("precious data"), 0o644)
	if _, err := NewProducer[tick](junk, ProducerOptions{Capacity: 8}); !errors.Is(err, ErrGeometry) {
		t.Fatalf("over a non-ring: %v", err)
	}
	if b, _ := os.ReadFile(junk); string(b) != "precious data" {
		t.Fatal("non-ring file damaged")
	}
}

func TestOpenWriterContinues(t *testing.T) {
	path := ringPath(t)
	p, err := NewProducer[tick](path, ProducerOptions{Capacity: 8, Sparse: true})
	if err != nil {
		t.Fatal(err)
	}
	pushTicks(t, p, 1, 5)
	p.Close()
	w := openWriter(t, path)
	v := tick{Seq: 6, Value: 18}
	if s, err := w.Push(bytesOf(&v)); err != nil || s != 6 {
		t.Fatalf("push after reopen: %d %v", s, err)
	}
}

func TestCreateInvalidConfig(t *testing.T) {
	path := ringPath(t)
	for _, cfg := range []RingConfig{
		{PayloadSize: 56, Capacity: 12},
		{PayloadSize: 56, Capacity: 0},
		{PayloadSize: 0, Capacity: 8},
		{PayloadSize: 56, Capacity: 8, Flags: 0x8000},
		{PayloadSize: 56, Capacity: 8, ArenaSize: 1000},
		{PayloadSize: 56, Capacity: 8, Readers: -1},
		{PayloadSize: 56, Capacity: 8, Flags: FlagMPMC},
	} {
		if _, err := Create(path, cfg, CreateOptions{}); !errors.Is(err, ErrInvalid) {
			t.Errorf("Create(%+v) = %v, want ErrInvalid", cfg, err)
		}
	}
}

func TestPointerTypesRefused(t *testing.T) {
	path := ringPath(t)
	type withSlice struct {
		A uint64
		B []byte
	}
	type nested struct {
		A [2]struct{ P *int }
	}
	check := func(err error, what string) {
		t.Helper()
		if !errors.Is(err, ErrType) || !strings.Contains(err.Error(), what) {
			t.Errorf("err = %v, want ErrType naming %q", err, what)
		}
	}
	_, err := NewProducer[withSlice](path, ProducerOptions{Capacity: 8})
	check(err, "field B: slice")
	_, err = NewProducer[nested](path, ProducerOptions{Capacity: 8})
	check(err, "ptr")
	_, err = NewProducer[string](path, ProducerOptions{Capacity: 8})
	check(err, "string")
	_, err = NewConsumer[map[int]int](path, ReadOptions{})
	check(err, "map")
	_, err = NewBlobProducer[any](path, BlobOptions{Capacity: 8, ArenaSize: 4096})
	check(err, "interface")
	_, err = NewProducer[struct{}](path, ProducerOptions{Capacity: 8})
	check(err, "size 0")
}

func TestConsumerTypeMismatch(t *testing.T) {
	_, path := newTickRing(t, ProducerOptions{Capacity: 8})
	if _, err := NewConsumer[[2]uint64](path, ReadOptions{}); !errors.Is(err, ErrType) {
		t.Fatalf("mismatched consumer: %v", err)
	}
	if _, err := NewBlobConsumer[uint32](path, ReadOptions{}); !errors.Is(err, ErrType) {
		t.Fatalf("blob consumer on a fixed ring: %v", err)
	}
}

func TestClosedObjects(t *testing.T) {
	p, path := newTickRing(t, ProducerOptions{Capacity: 8})
	c := consumer[tick](t, path, ReadOptions{})
	r, err := Open(path, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	c.Close()
	r.Close()
	v := tick{}
	if _, err := p.Push(&v); !errors.Is(err, ErrClosed) {
		t.Errorf("push after close: %v", err)
	}
	if c.TryRecv(&v) || c.RecvBatch(make([]tick, 4)) != 0 {
		t.Error("receive after close")
	}
	if err := c.Recv(&v, 0); !errors.Is(err, ErrClosed) {
		t.Errorf("Recv after close: %v", err)
	}
	if _, err := r.ReadSlot(1, make([]byte, 8)); !errors.Is(err, ErrClosed) {
		t.Errorf("ReadSlot after close: %v", err)
	}
	if _, err := r.Header(); !errors.Is(err, ErrClosed) {
		t.Errorf("Header after close: %v", err)
	}
	if r.WriteSeq() != 0 || r.Close() != nil {
		t.Error("closed ring")
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "missing"), OpenOptions{}); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := Open(t.TempDir(), OpenOptions{}); err == nil {
		t.Fatal("opened a directory")
	}
}
