package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/archive"
	"github.com/ringfire/ringfire/internal/testenv"
	"github.com/ringfire/ringfire/shm"
)

// Issue 39, the command side: record, replay and archive as child
// processes (this test binary as the CLI), on real rings in /dev/shm and
// real directories.

// archiveEnd is the number of epochs of the archive in dir and the last
// sequence its last epoch holds (0, 0 when it holds nothing yet).
func archiveEnd(t *testing.T, dir string) (epochs int, last uint64) {
	t.Helper()
	r, err := archive.Open(dir)
	if err != nil {
		return 0, 0
	}
	defer r.Close()
	eps, err := r.Epochs()
	if err != nil || len(eps) == 0 {
		return 0, 0
	}
	return len(eps), eps[len(eps)-1].Last
}

// awaitArchived waits until the archive's last epoch holds seq.
func awaitArchived(t *testing.T, dir string, seq uint64) {
	t.Helper()
	testenv.Until(t, 30*time.Second, fmt.Sprintf("%s to hold %d", dir, seq), func() bool { _, last := archiveEnd(t, dir); return last >= seq })
}

// exitedOK waits for the child to exit on its own with status 0.
func (c *child) exitedOK(t *testing.T) {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("%s still runs:\n%s", c.name, c.logs())
	}
	if c.noFault(t); c.err != nil {
		t.Fatalf("%s exited with %v:\n%s", c.name, c.err, c.logs())
	}
}

// ringSlots reads records first..last of the ring at path ("" for a
// hole or a record overwritten).
func ringSlots(t *testing.T, path string, first, last uint64) [][]byte {
	t.Helper()
	r, err := shm.Open(path, shm.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out [][]byte
	for seq := first; seq <= last; seq++ {
		buf := make([]byte, r.Layout().PayloadSize())
		st, err := r.ReadSlot(seq, buf)
		if err != nil {
			t.Fatal(err)
		}
		if st != shm.SlotReady {
			buf = nil
		}
		out = append(out, buf)
	}
	return out
}

// checkHistory checks that epoch ep of the archive in dir holds the
// ring's records first..last, each once, in order, as records (no gap),
// byte for byte as the ring holds them.
func checkHistory(t *testing.T, dir, ring string, ep, first, last uint64) {
	t.Helper()
	want := ringSlots(t, ring, first, last)
	r, err := archive.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c, err := r.Seek(ep, first)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	next := first
	for {
		e, err := c.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case e.Kind != archive.KindRecord:
			t.Fatalf("epoch %d: a %s over %d..%d, want only records", ep, e.Kind, e.Seq, e.Last)
		case e.Seq != next:
			t.Fatalf("epoch %d: record %d after %d (a duplicate or a hole)", ep, e.Seq, next-1)
		case e.Seq > last:
			t.Fatalf("epoch %d: record %d past the ring's last, %d", ep, e.Seq, last)
		case !bytes.Equal(e.Rec, want[e.Seq-first]):
			t.Fatalf("epoch %d: record %d differs from the ring's", ep, e.Seq)
		}
		next++
	}
	if next != last+1 {
		t.Fatalf("epoch %d holds %d..%d, want %d..%d", ep, first, next-1, first, last)
	}
}

// record + gen + replay: the replayed ring holds the original records,
// byte for byte, at their sequence numbers; with --compress too, which
// readers do not notice.
func TestRecordReplayIdentical(t *testing.T) {
	for _, compress := range []bool{false, true} {
		t.Run(fmt.Sprintf("compress=%v", compress), func(t *testing.T) {
			dir := shmDir(t)
			ring, arch, copy := filepath.Join(dir, "ring"), filepath.Join(dir, "arch"), filepath.Join(dir, "copy")
			const n = 30000
			gen := startChild(t, "gen", "gen", ring, "--rate", "30000", "--count", fmt.Sprint(n), "--capacity", "65536")
			args := []string{"record", ring, arch, "--from", "oldest", "--segment-size", "64K"}
			if compress {
				args = append(args, "--compress")
			}
			rec := startChild(t, "record", args...)
			rec.waitLog(t, "msg=recording")
			gen.exitedOK(t)
			awaitArchived(t, arch, n)
			rec.stop(t)
			wantContains(t, "record's log", rec.logs(), "msg=\"new epoch\"", "msg=\"stopped recording\"", "records 30000, gaps 0")

			startChild(t, "replay", "replay", arch, copy).exitedOK(t)
			if writeSeq(copy) != n {
				t.Fatalf("the replayed ring's write_seq %d, want %d", writeSeq(copy), n)
			}
			orig, got := ringSlots(t, ring, 1, n), ringSlots(t, copy, 1, n)
			for i := range orig {
				if orig[i] == nil || !bytes.Equal(orig[i], got[i]) {
					t.Fatalf("record %d: replayed %x, original %x", i+1, got[i], orig[i])
				}
			}
			a, b := mustRun(t, "dump", ring, "--tail", "100", "--hex"), mustRun(t, "dump", copy, "--tail", "100", "--hex")
			_, a, _ = strings.Cut(a, "\n") // the first line names the ring
			_, b, _ = strings.Cut(b, "\n")
			if a != b {
				t.Fatalf("ringfire dump differs:\n%s\n---\n%s", a, b)
			}
			stat := mustRun(t, "archive", "stat", arch)
			wantContains(t, "archive stat", stat, "1 epochs", "epoch 1: ring of 65536 slots, 64-byte payloads", "sequences 1..30000", "records 30000, gaps 0 (0 records)", "sealed")
			if compress {
				wantContains(t, "archive stat", stat, ".rfa.zst", "zstd")
			}
			wantContains(t, "archive verify", mustRun(t, "archive", "verify", arch), "records 30000", "ok")
			dump := mustRun(t, "archive", "dump", arch, "--tail", "3")
			if strings.Count(dump, ": record, seen ") != 3 || !strings.Contains(dump, "seq 30000: record") {
				t.Fatalf("archive dump --tail 3:\n%s", dump)
			}
			dump = mustRun(t, "archive", "dump", arch, "--from", "7", "--count", "2", "--hex")
			if !strings.Contains(dump, "seq 7: record") || !strings.Contains(dump, "seq 8: record") || strings.Contains(dump, "seq 9:") || !strings.Contains(dump, "00000000  07 00 00 00") {
				t.Fatalf("archive dump --from 7 --count 2 --hex:\n%s", dump)
			}
		})
	}
}

// kill -9 of the recorder at random points, 20 times, every other one
// followed by a power cut (the segment being written truncated at a
// random byte), each followed by record --from resume: the archive then
// holds exactly the ring's history, every sequence once, none missing,
// as one epoch.
func TestRecordKill9(t *testing.T) {
	dir := shmDir(t)
	ring, arch := filepath.Join(dir, "ring"), filepath.Join(dir, "arch")
	const n = 80000
	gen := startChild(t, "gen", "gen", ring, "--rate", "10000", "--count", fmt.Sprint(n), "--capacity", "131072")
	testenv.Until(t, 10*time.Second, "gen's ring", func() bool { return writeSeq(ring) > 0 })
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 39))
	torn := 0
	for i := range 20 {
		rec := startChild(t, fmt.Sprintf("record %d", i), "record", ring, arch, "--from", "resume", "--segment-size", "16K", "--flush-delay", "1ms")
		rec.waitLog(t, "msg=recording")
		_, last := archiveEnd(t, arch)
		// The kill point: a random number of records further on.
		target := min(last+uint64(rnd.IntN(3000)), n)
		testenv.Until(t, 30*time.Second, fmt.Sprintf("record %d to reach %d", i, target), func() bool {
			rec.alive(t)
			_, l := archiveEnd(t, arch)
			return l >= target
		})
		rec.cmd.Process.Kill()
		<-rec.done
		if strings.Contains(rec.logs(), "cut the torn tail") {
			torn++
		}
		if i%2 == 1 {
			cutTail(t, arch, rnd) // a power cut: the segment being written ends anywhere
		}
	}
	rec := startChild(t, "record", "record", ring, arch, "--from", "resume", "--segment-size", "16K")
	gen.exitedOK(t)
	awaitArchived(t, arch, n)
	rec.stop(t)
	epochs, last := archiveEnd(t, arch)
	if epochs != 1 || last != n {
		t.Fatalf("the archive holds %d epochs to %d, want 1 to %d", epochs, last, n)
	}
	checkHistory(t, arch, ring, 1, 1, n)
	wantContains(t, "archive verify", mustRun(t, "archive", "verify", arch), "records 80000, gaps 0", "ok")
	if torn == 0 {
		t.Error("no restart cut a torn tail: the power cuts did not reach the recorder")
	}
	t.Logf("20 kills, 10 power cuts; %d of the restarts cut a torn tail", torn)
}

// cutTail truncates the archive's last segment, when it is being written
// (not sealed), at a random byte: what a power cut may leave.
func cutTail(t *testing.T, dir string, rnd *rand.Rand) {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, "*.rfa"))
	if err != nil || len(segs) == 0 {
		return
	}
	last := segs[len(segs)-1]
	if _, err := os.Stat(strings.TrimSuffix(last, ".rfa") + ".rfi"); err == nil {
		return // sealed
	}
	fi, err := os.Stat(last)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(last, rnd.Int64N(fi.Size()+1)); err != nil {
		t.Fatal(err)
	}
}

// A producer restart under the recorder (gen --replace: a new ring file
// at the path) begins a new epoch, which archive stat shows.
func TestRecordProducerRestart(t *testing.T) {
	dir := shmDir(t)
	ring, arch := filepath.Join(dir, "ring"), filepath.Join(dir, "arch")
	mustRun(t, "gen", ring, "--count", "1000", "--capacity", "4096")
	rec := startChild(t, "record", "record", ring, arch, "--from", "oldest", "--segment-size", "16K")
	awaitArchived(t, arch, 1000)
	mustRun(t, "gen", ring, "--replace", "--count", "500", "--capacity", "8192")
	testenv.Until(t, 30*time.Second, "a second epoch holding 500 records", func() bool {
		epochs, last := archiveEnd(t, arch)
		return epochs == 2 && last == 500
	})
	rec.stop(t)
	wantContains(t, "record's log", rec.logs(), "epochs_begun=2", "replaced_rings=1")
	stat := mustRun(t, "archive", "stat", arch)
	wantContains(t, "archive stat", stat, "2 epochs", "epoch 1: ring of 4096 slots", "sequences 1..1000", "epoch 2: ring of 8192 slots", "sequences 1..500")
	checkHistory(t, arch, ring, 2, 1, 500)
	// replay takes the last epoch by default, --epoch another.
	copy := filepath.Join(dir, "copy")
	wantContains(t, "replay --epoch 1", mustRun(t, "replay", arch, copy, "--epoch", "1", "--from", "101", "--to", "200"), "records 100", "sequences 101..200")
	if writeSeq(copy) != 200 {
		t.Fatalf("replay --epoch 1 --to 200: write_seq %d", writeSeq(copy))
	}
}

// archive verify catches a byte flipped in a sealed segment, plain or
// compressed: status 1, the file named.
func TestArchiveVerifyFlippedByte(t *testing.T) {
	for _, compress := range []bool{false, true} {
		t.Run(fmt.Sprintf("compress=%v", compress), func(t *testing.T) { verifyFlippedByte(t, compress) })
	}
}

func verifyFlippedByte(t *testing.T, compress bool) {
	dir := t.TempDir()
	w, err := archive.OpenWriter(dir, archive.Options{SegmentSize: 16 << 10, Compress: compress})
	if err != nil {
		t.Fatal(err)
	}
	src := archive.Source{Geometry: archive.Geometry{PayloadSize: 64, Capacity: 1024}, Dev: 1, Ino: 2}
	if _, err := w.Begin(src, 1, 1); err != nil {
		t.Fatal(err)
	}
	rec := make([]byte, 64)
	for seq := uint64(1); seq <= 2000; seq++ {
		rec[0] = byte(seq)
		if err := w.Append(seq, int64(seq)*1000, rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	wantContains(t, "verify of a whole archive", mustRun(t, "archive", "verify", dir), "records 2000", "ok")
	ext := "*.rfa"
	if compress {
		ext = "*.rfa.zst"
	}
	segs, _ := filepath.Glob(filepath.Join(dir, ext))
	if len(segs) < 2 {
		t.Fatalf("sealed segments %v, want at least 2", segs)
	}
	victim := segs[1] // sealed: only the last segment is being written
	b, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x40
	writeFile(t, victim, string(b))
	out, _, err := runCmd(t, "archive", "verify", dir)
	if err == nil || exitCode(err, io.Discard) != 1 {
		t.Fatalf("verify of a flipped byte: %v, want exit status 1", err)
	}
	wantContains(t, "verify's output", out, "PROBLEM: "+victim)
	if strings.Count(out, "PROBLEM") != 1 {
		t.Errorf("one flipped byte, %d problems:\n%s", strings.Count(out, "PROBLEM"), out)
	}
}

// A full filesystem stops record with status 1 and an error naming its
// directory; the producer and a serve of the same ring (and its mirror)
// go on untouched.
func TestRecordFullDisk(t *testing.T) {
	full := filepath.Join(testenv.Tmpfs(t, "512k"), "arch")
	dir := shmDir(t)
	ring, sock, copy := filepath.Join(dir, "ring"), filepath.Join(dir, "sock"), filepath.Join(dir, "copy")
	gen := startChild(t, "gen", "gen", ring, "--rate", "50000", "--capacity", "65536")
	testenv.Until(t, 10*time.Second, "gen's ring", func() bool { return writeSeq(ring) > 0 })
	serve := startChild(t, "serve", "serve", ring, "--bind", "127.0.0.1:0", "--unix", sock)
	serve.waitLog(t, "msg=serving")
	mirror := startChild(t, "mirror", "mirror", "unix:"+sock, copy)
	growing(t, copy)
	rec := startChild(t, "record", "record", ring, full, "--from", "oldest", "--segment-size", "64K")
	rec.exitedWithError(t)
	wantContains(t, "record's output", rec.logs(), "record into "+full+": its filesystem is full", "no space left on device", "level=ERROR")
	growing(t, ring)
	growing(t, copy)
	gen.alive(t)
	serve.alive(t)
	mirror.alive(t)
	// What it wrote before the disk filled is whole: the torn tail is the
	// next writer's to cut.
	out, _, err := runCmd(t, "archive", "verify", full)
	if err != nil {
		t.Fatalf("verify after a full disk: %v\n%s", err, out)
	}
}

// replay --follow goes on with what the recorder still appends: its ring
// grows with the producer's until SIGTERM, which ends it with status 0.
func TestReplayFollow(t *testing.T) {
	dir := shmDir(t)
	ring, arch, copy := filepath.Join(dir, "ring"), filepath.Join(dir, "arch"), filepath.Join(dir, "copy")
	startChild(t, "gen", "gen", ring, "--rate", "20000", "--capacity", "65536")
	testenv.Until(t, 10*time.Second, "gen's ring", func() bool { return writeSeq(ring) > 0 })
	rec := startChild(t, "record", "record", ring, arch, "--segment-size", "64K")
	_, first := archiveEnd(t, arch)
	awaitArchived(t, arch, first+1000)
	replay := startChild(t, "replay", "replay", arch, copy, "--follow")
	testenv.Until(t, 20*time.Second, "the replayed ring", func() bool { return writeSeq(copy) > 0 })
	growingBy(t, copy, 5000)
	replay.stop(t)
	rec.stop(t)
	wantContains(t, "replay's output", replay.logs(), "replay: records ")
}
