package shm

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"
)

// setInFlightTimeout shortens InFlightTimeout for one test.
func setInFlightTimeout(t *testing.T, d time.Duration) {
	old := InFlightTimeout
	InFlightTimeout = d
	t.Cleanup(func() { InFlightTimeout = old })
}

func mpmcProducer(tb testing.TB, path string, capacity uint64) *MpmcProducer[tick] {
	tb.Helper()
	p, err := NewMpmcProducer[tick](path, MpmcOptions{Capacity: capacity})
	return closeAtEnd(tb, p, err)
}

func attachProducer(tb testing.TB, path string) *MpmcProducer[tick] {
	tb.Helper()
	p, err := AttachMpmcProducer[tick](path)
	return closeAtEnd(tb, p, err)
}

func queueConsumer(tb testing.TB, path string, opts QueueOptions) *MpmcQueueConsumer[tick] {
	tb.Helper()
	c, err := NewMpmcQueueConsumer[tick](path, opts)
	return closeAtEnd(tb, c, err)
}

// TestMpmcLayoutBytes checks an MPMC ring's header and slots at the
// offsets compat.md documents, read from the file, not through the library.
func TestMpmcLayoutBytes(t *testing.T) {
	path := ringPath(t)
	p1 := mpmcProducer(t, path, 8)
	p2 := attachProducer(t, path)
	for i, p := range []*MpmcProducer[tick]{p1, p2, p1} {
		v := tick{Seq: uint64(i + 1), Value: 100 + uint64(i)}
		if seq, err := p.Push(&v); err != nil || seq != uint64(i+1) {
			t.Fatalf("push %d = %d, %v", i, seq, err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 128+8*64 {
		t.Fatalf("file size %d, want %d", len(b), 128+8*64)
	}
	for _, f := range []struct {
		name      string
		off, size int
		want      uint64
	}{
		{"magic", 0, 8, 0x5249_4E47_4649_5245}, {"version", 8, 4, 2}, {"element_size", 12, 4, 64},
		{"capacity", 16, 8, 8}, {"mask", 24, 8, 7}, {"write_seq", 32, 8, 3}, {"claim_seq", 40, 8, 4},
		{"flags", 48, 4, 0x21}, {"read_seq", 64, 8, 1}, {"registry_count", 100, 4, 0}, {"slots_offset", 104, 8, 128},
	} {
		var got uint64
		if f.size == 4 {
			got = uint64(le.Uint32(b[f.off:]))
		} else {
			got = le.Uint64(b[f.off:])
		}
		if got != f.want {
			t.Errorf("%s @%d = %#x, want %#x", f.name, f.off, got, f.want)
		}
	}
	for seq := uint64(1); seq <= 3; seq++ {
		off := 128 + seq*64 // slot seq & 7
		if s := le.Uint64(b[off:]); s != seq {
			t.Errorf("slot %d sequence = %d, want %d", seq, s, seq)
		}
		if v := le.Uint64(b[off+16:]); v != 100+seq-1 {
			t.Errorf("slot %d value = %d, want %d", seq, v, 100+seq-1)
		}
	}
	if s := le.Uint64(b[128:]); s != 0 {
		t.Errorf("slot 0 sequence = %d, want 0 (empty)", s)
	}
}

// TestMpmcSpecBuiltRing builds an MPMC ring byte by byte from compat.md —
// records 1..5 published, ticket 4 left mid-write by a "dead" producer,
// ticket 6 claimed and never written, queue consumers at 3 — and reads it
// with a queue consumer and a broadcast consumer.
func TestMpmcSpecBuiltRing(t *testing.T) {
	setInFlightTimeout(t, 20*time.Millisecond)
	s := specRing{capacity: 8, payload: 56, flags: 0x21, writeSeq: 5,
		slots: map[uint64]uint64{1: 1, 2: 2, 3: 3, 4: ^uint64(0), 5: 5}}
	b := s.bytes()
	le.PutUint64(b[40:], 7) // claim_seq: tickets 1..6 claimed
	le.PutUint64(b[64:], 3) // read_seq: 1 and 2 consumed already
	path := writeRing(t, t.TempDir(), b)

	q := queueConsumer(t, path, QueueOptions{})
	rd := unregisteredReader(t, path, ReadOptions{Start: StartOldest})
	var got []uint64
	var v tick
	start := time.Now()
	for time.Since(start) < 2*time.Second && len(got) < 2 {
		if q.TryRecv(&v) {
			if v.Seq != q.Seq() || v.Value != 7*v.Seq {
				t.Fatalf("queue record %+v at ticket %d", v, q.Seq())
			}
			got = append(got, v.Seq)
		}
	}
	if len(got) != 2 || got[0] != 3 || got[1] != 5 || q.Dropped() != 1 {
		t.Fatalf("queue consumer got %v, dropped %d; want [3 5], 1 (ticket 4 stuck mid-write)", got, q.Dropped())
	}
	// Ticket 6 is claimed, never written: waiting for it ends, dropped.
	if q.TryRecv(&v) {
		t.Fatalf("ticket 6 returned %+v", v)
	}
	if err := q.RecvTimeout(&v, 200*time.Millisecond); !errors.Is(err, ErrTimeout) || q.Dropped() != 2 {
		t.Fatalf("recv past the last ticket = %v, dropped %d; want ErrTimeout, 2", err, q.Dropped())
	}
	if rs := q.Reader().Ring().ReadSeq(); rs != 7 {
		t.Errorf("read_seq = %d, want 7", rs)
	}
	var seqs []uint64
	buf := make([]byte, 56)
	for time.Since(start) < 4*time.Second && len(seqs) < 4 {
		if seq, ok := rd.TryRecv(buf); ok {
			seqs = append(seqs, seq)
		}
	}
	if want := []uint64{1, 2, 3, 5}; !equalSeqs(seqs, want) || rd.Dropped() != 1 || rd.Lapped() != 0 {
		t.Fatalf("broadcast reader got %v, dropped %d, lapped %d; want %v, 1, 0", seqs, rd.Dropped(), rd.Lapped(), want)
	}
}

func equalSeqs(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestMpmcDeadProducerHangsNobody: a producer takes a ticket, marks its
// slot mid-write and dies. The other producers keep publishing laps over
// that slot (each landing on it drops its own record after
// InFlightTimeout), queue and broadcast consumers skip it, counting it
// dropped; nobody waits longer than the bound.
func TestMpmcDeadProducerHangsNobody(t *testing.T) {
	setInFlightTimeout(t, 5*time.Millisecond)
	path := ringPath(t)
	p := mpmcProducer(t, path, 8)
	r := p.Writer().Ring()
	v := tick{Value: 1}
	if _, err := p.Push(&v); err != nil {
		t.Fatal(err)
	}
	dead := r.claimSeq.Add(1) - 1 // ticket 2: claimed, marked, never written
	r.slotSeq(dead).Store(SlotWriting)
	q := queueConsumer(t, path, QueueOptions{})
	rd := unregisteredReader(t, path, ReadOptions{Start: StartOldest})

	const total = 40
	var dropped int
	for range total {
		if _, err := p.Push(&v); errors.Is(err, ErrDropped) {
			dropped++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if st := p.Writer().Stats(); dropped == 0 || st.Dropped != uint64(dropped) || st.Published != total+1-uint64(dropped) {
		t.Fatalf("dropped %d pushes, stats %+v: the laps over the stuck slot must drop theirs", dropped, st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var qn, bn int
	for r.ReadSeq() < r.ClaimSeq() || q.Reader().pending != 0 {
		if q.TryRecv(&v) {
			qn++
		}
		if ctx.Err() != nil {
			t.Fatalf("queue consumer stuck at read_seq %d of %d", r.ReadSeq(), r.ClaimSeq())
		}
	}
	if uint64(qn)+q.Dropped() != total+2 {
		t.Fatalf("queue: %d received + %d dropped, want %d tickets", qn, q.Dropped(), total+2)
	}
	buf := make([]byte, 56)
	for rd.Next() <= r.WriteSeq() {
		if _, ok := rd.TryRecv(buf); ok {
			bn++
		}
		if ctx.Err() != nil {
			t.Fatalf("broadcast reader stuck at %d (write_seq %d)", rd.Next(), r.WriteSeq())
		}
	}
	// The stuck slot's last tickets are either in flight (dropped after
	// the bound) or already claimed by a later lap (lapped).
	if bn == 0 || rd.Dropped()+rd.Lapped() == 0 || uint64(bn)+rd.Dropped()+rd.Lapped() != r.WriteSeq() {
		t.Fatalf("broadcast: %d received, %d dropped, %d lapped, write_seq %d", bn, rd.Dropped(), rd.Lapped(), r.WriteSeq())
	}
}

// TestMpmcGoroutines: 4 producers × 4 competing consumers in one process
// (each with its own mapping); every record arrives whole exactly once or
// is counted dropped.
func TestMpmcGoroutines(t *testing.T) {
	path := ringPath(t)
	mpmcProducer(t, path, 64)
	const producers, consumers, each = 4, 4, 3000
	var wg sync.WaitGroup
	var pushed [producers]int
	for i := range producers {
		p := attachProducer(t, path)
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 56)
			for n := range each {
				mpEncode(buf, uint64(i)<<40|uint64(n), 0)
				if _, err := p.Writer().Push(buf); err == nil {
					pushed[i]++
				}
			}
		}()
	}
	seen := make([]map[uint64]bool, consumers)
	var cwg sync.WaitGroup
	stop := make(chan struct{})
	qs := make([]*QueueReader, consumers)
	var torn [consumers]int
	for c := range consumers {
		ws := FutexWait(64)
		qs[c] = queueConsumer(t, path, QueueOptions{Wait: &ws}).Reader()
		seen[c] = map[uint64]bool{}
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			q, buf := qs[c], make([]byte, 56)
			for {
				if recvWithin(20*time.Millisecond, q.RecvContext, buf) {
					key, _, ok := mpCheck(buf)
					if !ok {
						torn[c]++
					}
					seen[c][key] = true
					continue
				}
				select {
				case <-stop:
					if q.pending == 0 && q.r.ReadSeq() >= q.r.ClaimSeq() {
						return
					}
				default:
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	cwg.Wait()
	all := map[uint64]bool{}
	var recv, dropped uint64
	for c := range consumers {
		recv += qs[c].Received()
		dropped += qs[c].Dropped()
		if torn[c] != 0 {
			t.Errorf("consumer %d: %d torn records", c, torn[c])
		}
		for k := range seen[c] {
			if all[k] {
				t.Errorf("record %#x delivered twice", k)
			}
			all[k] = true
		}
	}
	if uint64(len(all)) != recv {
		t.Errorf("%d distinct records, %d received: duplicates", len(all), recv)
	}
	if recv+dropped != producers*each {
		t.Fatalf("%d received + %d dropped != %d tickets", recv, dropped, producers*each)
	}
	t.Logf("received %d, dropped %d", recv, dropped)
}

// TestReadSlotInFlight: the stateless slot read (serve's) waits for an
// in-flight record at most InFlightTimeout, then reports a hole; a record
// whose slot the producers have claimed again is overwritten at once.
func TestReadSlotInFlight(t *testing.T) {
	setInFlightTimeout(t, 20*time.Millisecond)
	s := specRing{capacity: 8, payload: 56, flags: 0x21, writeSeq: 5,
		slots: map[uint64]uint64{3: 3, 4: ^uint64(0), 5: 5}}
	b := s.bytes()
	le.PutUint64(b[40:], 7)
	r := openRing(t, writeRing(t, t.TempDir(), b), OpenOptions{})
	buf := make([]byte, 56)
	start := time.Now()
	if st, err := r.ReadSlot(4, buf); err != nil || st != SlotHole {
		t.Fatalf("ReadSlot(in flight) = %v, %v; want a hole", st, err)
	}
	if d := time.Since(start); d < InFlightTimeout {
		t.Fatalf("in-flight record given up after %v, before InFlightTimeout", d)
	}
	for seq, want := range map[uint64]SlotState{5: SlotReady, 6: SlotNotYet, 3: SlotReady} {
		if st, _ := r.ReadSlot(seq, buf); st != want {
			t.Errorf("ReadSlot(%d) = %v, want %v", seq, st, want)
		}
	}
	b = s.bytes()
	le.PutUint64(b[40:], 13) // ticket 12 (slot 4, next lap) claimed
	r = openRing(t, writeRing(t, t.TempDir(), b), OpenOptions{})
	if st, _ := r.ReadSlot(4, buf); st != SlotOverwritten {
		t.Errorf("ReadSlot of a slot claimed again = %v, want overwritten", st)
	}
}

// TestInFlightBoundsSleeps: a consumer whose strategy sleeps up to 5 s,
// waiting on a record whose producer died mid-write, gives it up after
// InFlightTimeout and returns the next record long before its sleep bound.
func TestInFlightBoundsSleeps(t *testing.T) {
	setInFlightTimeout(t, 20*time.Millisecond)
	s := specRing{capacity: 8, payload: 56, flags: 0x21, writeSeq: 2,
		slots: map[uint64]uint64{1: ^uint64(0), 2: 2}}
	b := s.bytes()
	le.PutUint64(b[40:], 3)
	le.PutUint64(b[64:], 1)
	path := writeRing(t, t.TempDir(), b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	q := queueConsumer(t, path, QueueOptions{Wait: sleepy()})
	c := consumer[tick](t, path, ReadOptions{Start: StartOldest, Wait: sleepy()})
	m := newMux(t, RoundRobin, sleepy(), c)
	for name, recv := range map[string]func(*tick) error{
		"queue consumer": func(v *tick) error { return q.Recv(ctx, v) },
		"consumer":       func(v *tick) error { return c.RecvContext(ctx, v) },
	} {
		start := time.Now()
		var v tick
		if err := recv(&v); err != nil || v.Seq != 2 {
			t.Fatalf("%s: %+v, %v; want record 2", name, v, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s returned after %v: it slept out its bound on the dead record", name, d)
		}
	}
	if q.Dropped() != 1 || c.Dropped() != 1 {
		t.Fatalf("dropped: queue %d, consumer %d; want 1 each", q.Dropped(), c.Dropped())
	}
	// The multiplexer's sleeps are bounded the same way.
	c2 := consumer[tick](t, path, ReadOptions{Start: StartOldest, Wait: sleepy()})
	m = newMux(t, RoundRobin, sleepy(), c2)
	start := time.Now()
	var v tick
	if o, err := m.Recv(ctx, &v); err != nil || o.Seq != 2 || time.Since(start) > 2*time.Second {
		t.Fatalf("multiplexer: %+v, %v after %v", o, err, time.Since(start))
	}
}
