package replica_test

// Scenario tests (part B2): load — catching up under a producer at full
// speed, sixteen unicast mirrors, a NAK for a large hole.

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/faulty"
	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/synth"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/replica/wire"
	"github.com/ringfire/ringfire/shm"
)

// flood pushes synthetic records into w without pause until stop is
// closed, d has passed or record last is written, and returns how many it
// pushed.
func flood(w *shm.Writer, stop <-chan struct{}, d time.Duration, last uint64) (int, error) {
	rec := make([]byte, w.Ring().Layout().PayloadSize())
	deadline := time.Now().Add(d)
	for i := 0; ; i++ {
		if i&1023 == 0 {
			select {
			case <-stop:
				return i, nil
			default:
			}
			if time.Now().After(deadline) {
				return i, nil
			}
		}
		if w.Next() > last {
			return i, nil
		}
		if i&255 == 0 {
			synth.Fill(rec, w.Next(), uint64(i)) // fresh filler now and then
		}
		binary.LittleEndian.PutUint64(rec, w.Next())
		if _, err := w.Push(rec); err != nil {
			return i, err
		}
	}
}

// sameRing is sameSlots for big rings: it checks the geometry and
// write_seq, then compares the whole slot region of the two files, sequence
// words included. Every slot holds a record the source retains (the ring
// is full) or is empty in both (it is not), so they must be equal.
func sameRing(t *testing.T, src, dst string) {
	t.Helper()
	openMirrored(t, src, dst, func(a, _ *shm.Ring, _ uint64) {
		t.Helper()
		l := a.Layout()
		fa, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		fb, err := os.ReadFile(dst)
		if err != nil {
			t.Fatal(err)
		}
		stride, end := uint64(l.ElementSize), l.SlotsOffset+l.Capacity*uint64(l.ElementSize)
		if bytes.Equal(fa[l.SlotsOffset:end], fb[l.SlotsOffset:end]) {
			return
		}
		for i := range l.Capacity {
			o := l.SlotsOffset + i*stride
			if !bytes.Equal(fa[o:o+stride], fb[o:o+stride]) {
				t.Fatalf("slot %d: source holds %d, mirror %d, payloads differ", i,
					binary.LittleEndian.Uint64(fa[o:]), binary.LittleEndian.Uint64(fb[o:]))
			}
		}
	})
}

// TestCatchUpUnderFullSpeed: a mirror that joins from the oldest record
// while the producer writes as fast as it can catches up on one connection
// and one ring (no resync loop, the lesson of seed 002) and ends
// byte-identical. The flood stops before the ring laps, so every record is
// retained at the source and a gap would be a bug.
func TestCatchUpUnderFullSpeed(t *testing.T) {
	eachMode(t, []string{"multicast", "tcp"}, func(t *testing.T, mode string) {
		p := netns.NewPair(t)
		const capacity = 1 << 20
		dir := shmDir(t) // 64 MiB rings: keep them off the disk
		src := newSourceAt(t, p.A, p.AAddr, capacity, filepath.Join(dir, "source"))
		src.push(20000)
		scfg, mcfg := transportConfigs(mode)
		src.serve(scfg)
		type result struct {
			n   int
			err error
		}
		stop, done := make(chan struct{}), make(chan result, 1)
		go func() {
			n, err := flood(src.w, stop, 2*time.Second, capacity) // never laps
			done <- result{n, err}
		}()
		var res result
		received := false
		defer func() {
			close(stop)
			if !received {
				<-done
			}
		}()
		time.Sleep(700 * time.Millisecond) // join with a backlog, mid-flood
		mcfg.From = fromOldest
		mcfg.Ring = filepath.Join(dir, "mirror")
		joined := src.w.Ring().WriteSeq()
		mr := startMirror(t, p.B, p.BAddr, src, mcfg, nil)
		res, received = <-done, true
		if res.err != nil {
			t.Fatal(res.err)
		}
		last := src.w.Ring().WriteSeq()
		mid := mr.m.Stats()
		start := time.Now()
		mr.waitFor(last, 15*time.Second)
		t.Logf("producer pushed %d records in 2 s (mirror joined after 0.7 s); mirror at %d when it stopped, caught up %v later", res.n, mid.Next, time.Since(start))
		sst, st := finish(t, src.srv, mr)
		if st.Connects != 1 || st.Resets != 1 {
			t.Fatalf("mirror connected %d times and started %d rings, want 1 and 1", st.Connects, st.Resets)
		}
		// The mirror started at record 1: every record since is written or a gap.
		if st.Records+st.Gaps != last || st.Next != last+1 {
			t.Fatalf("mirror wrote %d and skipped %d records, want %d in all", st.Records, st.Gaps, last)
		}
		if last <= capacity && st.Gaps != 0 {
			t.Fatalf("%d gaps although the ring of %d never lapped (%d records)", st.Gaps, uint64(capacity), last)
		}
		sameRing(t, src.path, mr.path)
		// Over multicast, TCP carries the history the datagram stream
		// sent before the mirror joined (and NAK answers), not the flood
		// that followed: the catch-up ends once it meets the datagrams,
		// whether or not the producer ever pauses.
		if history := sst.TCPRecord - sst.Retransmitted; baseMode(mode) == "multicast" && history > joined+50_000 {
			t.Fatalf("TCP catch-up sent %d records; the mirror joined at %d of %d: it chased the producer instead of handing over to multicast (mirror stale TCP frames %d, datagrams dropped %d)",
				history, joined, last, st.Stale, st.Overflow)
		}
	})
}

func TestSixteenUnicastMirrors(t *testing.T) {
	p, src := pairSource(t, 8192)
	src.push(1000)
	src.serve(replica.ServerConfig{UDPPort: 7403})
	var mrs []*mirror
	for range 16 {
		mrs = append(mrs, startMirror(t, p.B, p.BAddr, src, replica.MirrorConfig{Unicast: true, From: fromOldest}, nil))
	}
	waitDatagrams(t, mrs...) // all 16 punched: every frame goes to all
	src.pushPaced(4000, 50, 200*time.Microsecond)
	const last = 5000
	sst := finishAll(t, src, mrs, last, "udp unicast")
	if sst.Mirrors != 16 || sst.Frames == 0 || sst.Records < 4000*9/10 {
		t.Fatalf("the live stream did not go by UDP to 16 mirrors: %+v", sst)
	}
	// Every frame went to all 16 mirrors, 64 datagrams per sendmmsg call.
	if sst.Datagrams < 16*sst.Frames {
		t.Fatalf("%d datagrams for %d frames to 16 mirrors", sst.Datagrams, sst.Frames)
	}
	if sst.Syscalls > sst.Frames || sst.Syscalls*4 > sst.Datagrams {
		t.Fatalf("%d sendmmsg calls for %d frames (%d datagrams) to 16 mirrors: no fan-out batching", sst.Syscalls, sst.Frames, sst.Datagrams)
	}
}

// TestLargeNakAnsweredOnce: a multicast mirror loses a long run of
// datagrams and NAKs the hole (60,000 records, within one NAK). The answer
// streams over TCP for longer than NakRepeat; while it arrives the hole is
// being filled, so the NAK must not be repeated over and over, each repeat
// making the source send the rest of the hole again.
func TestLargeNakAnsweredOnce(t *testing.T) {
	p, src := pairSource(t, 1<<17)
	src.serve(replica.ServerConfig{Multicast: mcastGroup()})
	const lo, hi, last = 1001, 61000, 70000
	drop := func(k wire.Kind, seq, _ uint64) bool { return k == wire.KindData && seq >= lo && seq <= hi }
	mr := startMirror(t, p.B, p.BAddr, src, replica.MirrorConfig{From: fromOldest}, &faulty.Faults{Drop: drop})
	waitDatagrams(t, mr)
	src.push(last)
	mr.waitFor(last, 15*time.Second)
	sst, st := finish(t, src.srv, mr)
	sameSlots(t, src.path, mr.path, 1)
	wantAll(t, st, last, "")
	if st.Retransmitted < (hi-lo)*9/10 {
		t.Fatalf("mirror stats %+v", st)
	}
	if sst.Retransmitted > (hi-lo+1)*3/2 {
		t.Fatalf("source retransmitted %d records in answer to %d NAKs for a hole of %d: the NAK was repeated while its answer arrived",
			sst.Retransmitted, sst.NaksAnswered, hi-lo+1)
	}
}
