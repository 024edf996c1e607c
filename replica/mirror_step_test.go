package replica_test

// Mirrors driven by hand (Connect, then Step): bounded steps, and what a
// failing Step or a closing source leaves published.

import (
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/replica/wire"
	"github.com/ringfire/ringfire/shm"
)

// stStepLimit is the documented bound of one Step (mirror_step.go).
const stStepLimit = 32

// TestStepBounded runs a mirror by hand: Connect in the mirror namespace,
// then Step from the test goroutine while a big burst is queued. No Step
// handles more than 32 frames and datagrams, and the mirror catches up.
func TestStepBounded(t *testing.T) {
	eachMode(t, []string{"tcp", "multicast"}, func(t *testing.T, mode string) {
		p, src := pairSource(t, 1<<18)
		src.push(1000)
		scfg, mcfg := transportConfigs(mode)
		src.serve(scfg)
		mcfg.Ring = filepath.Join(t.TempDir(), "mirror")
		mcfg.From = fromOldest
		m := newMirrorOf(t, src, p.BAddr, mcfg)
		defer m.Close()
		connectIn(t, p.B, m)
		// A burst queues up (TCP frames, datagrams) while nobody steps.
		src.push(150000)
		last := src.w.Next() - 1
		time.Sleep(300 * time.Millisecond)

		steps, full, most := 0, 0, 0
		deadline := time.Now().Add(60 * time.Second)
		for m.Stats().Next <= last {
			n, err := m.Step()
			if err != nil {
				t.Fatalf("step %d: %v", steps, err)
			}
			if n > stStepLimit {
				t.Fatalf("step %d handled %d frames and datagrams, limit %d", steps, n, stStepLimit)
			}
			steps++
			most = max(most, n)
			if n == stStepLimit {
				full++
			}
			if n == 0 {
				time.Sleep(50 * time.Microsecond)
			}
			if time.Now().After(deadline) {
				t.Fatalf("mirror stuck after %d steps: %+v", steps, m.Stats())
			}
		}
		st := m.Stats()
		t.Logf("%d steps, %d full, stats %+v", steps, full, st)
		if most != stStepLimit {
			t.Errorf("no Step found a full batch waiting (most %d): the burst never queued", most)
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		sameSlots(t, src.path, mcfg.Ring, 1)
	})
}

// TestStepErrorPublishes: a Step that stores good records and then meets
// a bad frame still publishes what it stored, so local readers see every
// record the mirror accepted, not only those of earlier Steps.
func TestStepErrorPublishes(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	geom := fakeGeometry(t)
	more := make(chan struct{})
	stepped := make(chan struct{}) // the failing Step returned
	bad := dataFrame(0, 31, 2, 1)
	bad[4] = 1 // a length that disagrees with the count
	bad = bad[:wire.HeaderSize+1]
	f := newFakeSource(t, p.A, p.AAddr, func(c net.Conn, _ uint64) error {
		b := wire.AppendGeometry(nil, 1, 0, geom)
		b = append(b, dataFrame(0, 1, 10, 1)...)
		if _, err := c.Write(b); err != nil {
			return err
		}
		<-more
		b = append(append(dataFrame(0, 11, 10, 1), dataFrame(0, 21, 10, 1)...), bad...)
		if _, err := c.Write(b); err != nil {
			return err
		}
		// Stay connected until the test has seen the failing Step: a close
		// now could reset the connection before the mirror read it all.
		select {
		case <-stepped:
		case <-time.After(10 * time.Second):
		}
		return nil
	})
	m, ring := f.mirror(t, replica.MirrorConfig{})
	connectIn(t, p.B, m)
	for deadline := time.Now().Add(5 * time.Second); m.Stats().Next != 11; time.Sleep(time.Millisecond) {
		if _, err := m.Step(); err != nil || time.Now().After(deadline) {
			t.Fatalf("first records: %v, %+v", err, m.Stats())
		}
	}
	close(more)
	// One Step must meet the three frames: wait until the mirror's reader
	// has queued them all.
	waitUntil(t, 5*time.Second, "the three frames queued", func() bool { return replica.QueuedFrames(m) == 3 })
	_, err := m.Step()
	close(stepped)
	if !errors.Is(err, wire.ErrMalformed) {
		t.Fatalf("Step: %v, want ErrMalformed", err)
	}
	seqs, _ := readAll(t, ring)
	if len(seqs) != 30 {
		t.Errorf("after the failing Step readers see %d records, the mirror stored 30", len(seqs))
	}
	// Readers that poll slots see them; write_seq (what blocking readers
	// and lag monitors wait on) must say so too.
	r, err := shm.Open(ring, shm.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ws := r.WriteSeq(); ws != 30 {
		t.Errorf("after the failing Step write_seq is %d, the mirror stored 1..30", ws)
	}
	r.Close()
	m.Close()
	if seqs, _ = readAll(t, ring); len(seqs) != 30 || seqs[29] != 30 {
		t.Errorf("after Close the ring holds %d records", len(seqs))
	}
	if ferr := <-f.errc; ferr != nil {
		t.Fatal(ferr)
	}
}

// TestStepFramesBeforeClose: a source that sends its last frames and then
// closes cleanly (shutting down) gets every one of them mirrored: frames
// the reader queued before the end of the stream come before the end.
func TestStepFramesBeforeClose(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	geom := fakeGeometry(t)
	const frames = 200
	f := newFakeSource(t, p.A, p.AAddr, func(c net.Conn, _ uint64) error {
		b := wire.AppendGeometry(nil, 1, 0, geom)
		for i := range frames {
			b = append(b, dataFrame(0, uint64(1+i), 1, 1)...)
		}
		_, err := c.Write(b)
		return err // then close
	})
	m, _ := f.mirror(t, replica.MirrorConfig{Once: true})
	err := runIn(p.B, m, 10*time.Second)
	if ferr := <-f.errc; ferr != nil {
		t.Fatal(ferr)
	}
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if st := m.Stats(); st.Next != frames+1 {
		t.Errorf("source sent records 1..%d and closed; the mirror wrote up to %d: %+v", frames, st.Next-1, st)
	}
}
