package shm

// Regression tests for the load-order race of a reader that finds a slot
// being written: on rings that never wrap, neither a following reader
// (plain or sparse) nor the raw slot API may take a record still being
// written for an overwritten one or a hole.

import (
	"fmt"
	"testing"
	"time"
)

// TestHeadFollowerNeverSpuriouslyLapped: a reader that keeps up with the
// producer of a ring that never wraps (capacity 2^20 > records pushed, so
// no slot is ever overwritten) can never legitimately be lapped. compat.md
// §1: "s1 == u64::MAX or s1 < c: nothing yet". The failure it guards
// against: a reader that takes a slot marked u64::MAX for an overwritten
// one when write_seq >= c, with write_seq loaded after the slot, skips a
// record the producer completed between the two loads and counts it
// lapped (fixed in commit febf503). Up to 3 rounds, failing on the first
// that shows it.
func TestHeadFollowerNeverSpuriouslyLapped(t *testing.T) {
	raceFollowRounds(t, false, func(round int, n, received, lapped uint64, jumps []string) {
		t.Fatalf("round %d: a reader of a ring that never wrapped received %d of %d records, lapped %d (jumps %v): "+
			"a record being written (slot = u64::MAX) was taken for an overwritten one: after loading write_seq "+
			"the reader must look at the slot again before calling it a lap", round, received, n, lapped, jumps)
	})
}

// TestReadSlotBeingWrittenIsNotOverwritten: on a ring that never wraps
// nothing is ever overwritten and there are no holes, so the raw slot API
// must answer NotYet or Ready for the record the producer is writing.
// A ReadSlot that loads write_seq after the slot word reports a record
// written between the two loads Overwritten (slot was u64::MAX) or Hole
// (slot still held the previous lap), even on a ring without the SPARSE
// flag. Up to 5 rounds, failing on the first that shows it.
func TestReadSlotBeingWrittenIsNotOverwritten(t *testing.T) {
	n := uint64(raceNeverWrapCap - 1)
	if testing.Short() || raceDetectorOn() {
		n = 1 << 18 // 3 spinning pollers starve the producer under -race
	}
	for round := 1; round <= 5; round++ {
		bad, sample := raceReadSlotRound(t, n)
		if bad != 0 {
			t.Fatalf("round %d: ReadSlot reported %d records of a ring that never wrapped as overwritten or hole (first %v): "+
				"a record written between ReadSlot's slot load and its write_seq load must not pass for an "+
				"Overwritten (slot was u64::MAX) or Hole (slot held the previous lap) record", round, bad, sample)
		}
	}
}

// TestSparseFollowerNeverSkipsPublished: a mirror ring (SPARSE) written
// the way a mirror writes it, Store then Publish, record after record with
// no gap, in a ring that never wraps. A reader following it must get every
// record. Regression test for the hole branch of the same load-order race:
// a reader that saw slot c hold an older sequence and then loaded write_seq
// >= c must re-read slot c before calling c a hole (skipping holes starts
// after c). It fails on a library that fixes only the u64::MAX branch.
func TestSparseFollowerNeverSkipsPublished(t *testing.T) {
	raceFollowRounds(t, true, func(round int, n, received, lapped uint64, jumps []string) {
		t.Fatalf("round %d: a reader of a sparse ring written without a gap received %d of %d, lapped %d (jumps %v): "+
			"records stored and published between the reader's slot load and its write_seq load were skipped as holes",
			round, received, n, lapped, jumps)
	})
}

// raceFollowRounds runs up to 3 rounds of raceFollowRound over a ring's
// worth of records (2^18 with -short) and calls fail with the first round in
// which the reader missed a record or counted one lapped.
func raceFollowRounds(t *testing.T, mirror bool, fail func(round int, n, received, lapped uint64, jumps []string)) {
	t.Helper()
	n := uint64(raceNeverWrapCap - 1)
	if testing.Short() {
		n = 1 << 18
	}
	for round := 1; round <= 3; round++ {
		if received, lapped, jumps := raceFollowRound(t, n, mirror); lapped != 0 || received != n {
			fail(round, n, received, lapped, jumps)
			return
		}
	}
}

const raceNeverWrapCap = 1 << 20

// raceRing creates a ring of 8-byte records that the test never wraps; the
// caller closes it.
func raceRing(t *testing.T, flags Flags) (*Writer, string) {
	t.Helper()
	path := ringPath(t)
	w, err := Create(path, RingConfig{PayloadSize: 8, Capacity: raceNeverWrapCap, Flags: flags}, CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return w, path
}

// raceWrite writes records 1..n, each holding its sequence: pushed, or as
// a mirror writes them, Store then Publish, record after record.
func raceWrite(t *testing.T, w *Writer, n uint64, mirror bool) {
	t.Helper()
	p := make([]byte, 8)
	for seq := uint64(1); seq <= n; seq++ {
		le.PutUint64(p, seq)
		var err error
		if mirror {
			if err = w.Store(seq, p); err == nil {
				err = w.Publish(seq)
			}
		} else {
			_, err = w.Push(p)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// raceFollowRound writes records 1..n to a fresh ring that never wraps
// while an unregistered head reader follows it with TryRecv, and returns
// what the reader received and counted lapped, and its first 5 jumps. A
// mirror ring is SPARSE and written with Store then Publish; otherwise the
// records are pushed and the reader also checks that each holds its
// sequence.
func raceFollowRound(t *testing.T, n uint64, mirror bool) (received, lapped uint64, jumps []string) {
	var flags Flags
	if mirror {
		flags = FlagSparse
	}
	w, path := raceRing(t, flags)
	defer w.Close()
	rd, err := OpenReader(path, ReadOptions{Start: StartHead, NoRegister: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	errc := make(chan error, 1)
	go func() {
		buf := make([]byte, 8)
		var prev uint64
		deadline := time.Now().Add(60 * time.Second)
		for prev < n {
			seq, ok := rd.TryRecv(buf)
			if !ok {
				if time.Now().After(deadline) {
					errc <- fmt.Errorf("reader stuck after %d", prev)
					return
				}
				continue
			}
			if got := le.Uint64(buf); !mirror && got != seq {
				errc <- fmt.Errorf("record %d holds %d", seq, got)
				return
			}
			if seq != prev+1 && len(jumps) < 5 {
				jumps = append(jumps, fmt.Sprintf("%d->%d", prev, seq))
			}
			prev = seq
		}
		errc <- nil
	}()
	raceWrite(t, w, n, mirror)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	return rd.Received(), rd.Lapped(), jumps
}

func raceReadSlotRound(t *testing.T, n uint64) (bad uint64, sample []uint64) {
	w, path := raceRing(t, 0)
	defer w.Close()
	r, err := Open(path, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// Several pollers, as several replica sessions would: more chances to
	// land a poll in the window.
	const pollers = 3
	type result struct {
		bad    uint64
		sample []uint64
		err    error
	}
	results := make(chan result, pollers)
	for range pollers {
		go func() {
			var res result
			buf := make([]byte, 8)
			deadline := time.Now().Add(60 * time.Second)
			for seq := uint64(1); seq <= n && res.err == nil; {
				st, err := r.ReadSlot(seq, buf)
				switch {
				case err != nil:
					res.err = err
				case st == SlotReady:
					if got := le.Uint64(buf); got != seq {
						res.err = fmt.Errorf("record %d holds %d", seq, got)
					}
					seq++
				case st == SlotOverwritten || st == SlotHole:
					res.bad++
					if len(res.sample) < 5 {
						res.sample = append(res.sample, seq)
					}
					seq++ // what a replica server would do: report a gap, move on
				case time.Now().After(deadline):
					res.err = fmt.Errorf("stuck at %d", seq)
				}
			}
			results <- res
		}()
	}
	raceWrite(t, w, n, false)
	for range pollers {
		res := <-results
		if res.err != nil {
			t.Fatal(res.err)
		}
		bad += res.bad
		if sample == nil {
			sample = res.sample
		}
	}
	return bad, sample
}
