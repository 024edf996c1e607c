package shm

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestLosslessBackpressure(t *testing.T) {
	p, path := newTickRing(t, ProducerOptions{Capacity: 8, Lossless: true})
	c := consumer[tick](t, path, ReadOptions{Start: StartOldest, Name: "slow"})
	if !c.Reader().Registered() {
		t.Fatal("reader did not register")
	}
	pushTicks(t, p, 1, 8)
	v := tick{Seq: 9}
	if _, err := p.TryPush(&v); !errors.Is(err, ErrBackpressure) {
		t.Fatalf("TryPush on a full ring: %v", err)
	}
	if got := drain(t, c)[:3]; !slices.Equal(got, seqs(1, 3)) {
		t.Fatalf("got %v", got)
	}
	// Having read 8, the reader frees the whole ring.
	pushTicks(t, p, 9, 16)
	if _, err := p.TryPush(&v); !errors.Is(err, ErrBackpressure) {
		t.Fatalf("second TryPush: %v", err)
	}

	// Push waits for the reader instead of overwriting.
	done := make(chan error, 1)
	go func() {
		defer close(done)
		for i := uint64(17); i <= 100; i++ {
			v := tick{Seq: i, Value: 3 * i}
			if _, err := p.Push(&v); err != nil {
				done <- err
				return
			}
		}
	}()
	var got []uint64
	deadline := time.Now().Add(10 * time.Second)
	var rv tick
	for len(got) < 92 && time.Now().Before(deadline) {
		if err := c.Recv(&rv, time.Second); err != nil {
			t.Fatal(err)
		}
		if rv.Value != 3*rv.Seq {
			t.Fatalf("torn %+v", rv)
		}
		got = append(got, rv.Seq)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, seqs(9, 100)) || c.Lapped() != 0 {
		t.Fatalf("lossless reader got %d records (%v...), lapped %d", len(got), got[:min(5, len(got))], c.Lapped())
	}
	if p.Writer().Stats().Backpressure == 0 {
		t.Fatal("producer never waited")
	}
}

// deadPID returns the pid of a process that has exited.
func deadPID(t *testing.T) uint32 {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return uint32(cmd.Process.Pid)
}

// plantReader writes a registry entry by hand, as a crashed reader leaves it.
func plantReader(t *testing.T, path string, i int, pid uint32, cursor uint64) {
	var e [RegistryEntry]byte
	le.PutUint32(e[regPID:], pid)
	le.PutUint32(e[regActive:], 1)
	le.PutUint64(e[regCursor:], cursor)
	copy(e[regName:], "crashed")
	if err := pokeFile(path, int64(RegistryOffset+RegistryEntry*i), e[:]); err != nil {
		t.Fatal(err)
	}
}

func TestLosslessPrunesDeadReaders(t *testing.T) {
	p, path := newTickRing(t, ProducerOptions{Capacity: 8, Lossless: true, Readers: 4})
	plantReader(t, path, 2, deadPID(t), 1)
	// A dead reader at cursor 1 must not hold the producer: Push prunes it.
	done := make(chan struct{})
	go func() { defer close(done); pushTicks(t, p, 1, 40) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("producer blocked by a dead reader")
	}
	r := p.Writer().Ring()
	if rs, _ := r.Readers(); len(rs) != 0 || p.Writer().Stats().Pruned != 1 {
		t.Fatalf("dead reader still registered: %+v", rs)
	}
	// Prune on a fresh corpse, as the CLI does.
	plantReader(t, path, 1, deadPID(t), 30)
	plantReader(t, path, 3, uint32(os.Getpid()), 30)
	ro := openRing(t, path, OpenOptions{})
	if _, err := ro.Prune(); !errors.Is(err, ErrInvalid) {
		t.Fatalf("prune read-only: %v", err)
	}
	rw := openRing(t, path, OpenOptions{Writable: true})
	rs, _ := rw.Readers()
	if len(rs) != 2 || rs[0].Alive || rs[0].Name != "crashed" || !rs[1].Alive || rs[1].Cursor != 30 {
		t.Fatalf("readers %+v", rs)
	}
	if n, err := rw.Prune(); err != nil || n != 1 {
		t.Fatalf("prune: %d %v", n, err)
	}
}

func TestLosslessRegistryFull(t *testing.T) {
	_, path := newTickRing(t, ProducerOptions{Capacity: 8, Lossless: true, Readers: 2})
	consumer[tick](t, path, ReadOptions{})
	c2 := consumer[tick](t, path, ReadOptions{})
	_, err := NewConsumer[tick](path, ReadOptions{})
	if !errors.Is(err, ErrNoReaderSlots) || !strings.Contains(err.Error(), "no reader slots") {
		t.Fatalf("third reader: %v", err)
	}
	// A slot freed by Close is reusable; a dead reader's slot is reclaimed.
	c2.Close()
	consumer[tick](t, path, ReadOptions{})
	plantReader(t, path, 1, deadPID(t), 1)
	// entry 1 now belongs to a corpse; entry 0 to a live reader, so the next
	// registration must take the corpse's entry.
	plantReader(t, path, 0, uint32(os.Getpid()), 1)
	c4 := consumer[tick](t, path, ReadOptions{Name: "late"})
	rs, _ := c4.Reader().Ring().Readers()
	if len(rs) != 2 || rs[1].Name != "late" || !rs[1].Alive {
		t.Fatalf("readers %+v", rs)
	}
	// Unregistered readers are allowed and can be lapped.
	c5 := consumer[tick](t, path, ReadOptions{NoRegister: true})
	if c5.Reader().Registered() {
		t.Fatal("NoRegister reader registered")
	}
}

func TestLossyRingWithRegistryNeverBlocks(t *testing.T) {
	p, path := newTickRing(t, ProducerOptions{Capacity: 8, Readers: 1})
	c := consumer[tick](t, path, ReadOptions{Start: StartOldest})
	c2 := consumer[tick](t, path, ReadOptions{Start: StartOldest}) // registry full: unregistered on a lossy ring
	if !c.Reader().Registered() || c2.Reader().Registered() {
		t.Fatal("registration")
	}
	pushTicks(t, p, 1, 100)
	if got := drain(t, c); !slices.Equal(got, seqs(93, 100)) || c.Lapped() != 92 {
		t.Fatalf("got %v lapped %d", got, c.Lapped())
	}
}
