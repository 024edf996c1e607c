package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/archive"
	"github.com/ringfire/ringfire/internal/testenv"
	"github.com/ringfire/ringfire/shm"
)

// TestServeArchive: a ring of 4,096 slots held 50,000 records, all in its
// archive. `serve --archive` gives a mirror started with --from 1 every
// one of them (45,904 from the archive, then the ring's), the ring's last
// records byte-identical; a mirror with --no-history starts at the
// ring's oldest record, as without an archive.
func TestServeArchive(t *testing.T) {
	dir := shmDir(t)
	src, arch, sock := filepath.Join(dir, "src"), filepath.Join(dir, "archive"), filepath.Join(dir, "sock")
	recordRing(t, src, arch, 4096, 50000)
	const n, lost = 50000, 50000 - 4096

	serve := startChild(t, "serve", "serve", src, "--bind", "127.0.0.1:0", "--unix", sock, "--archive", arch)
	serve.waitLog(t, "msg=serving")
	for _, c := range []struct {
		name    string
		flags   []string
		records uint64
	}{{"mirror", nil, n}, {"mirror --no-history", []string{"--no-history"}, n - lost}} {
		dst := filepath.Join(dir, strings.ReplaceAll(c.name, " ", ""))
		m := startChild(t, c.name, append([]string{"mirror", "unix:" + sock, dst, "--from", "1"}, c.flags...)...)
		testenv.Until(t, 60*time.Second, c.name+" to reach the last record", func() bool { return writeSeq(dst) == n })
		m.stop(t)
		wantContains(t, c.name+"'s counters", m.logs(), fmt.Sprintf("records %d (catch-up %d, retransmitted 0), gaps 0", c.records, c.records))
		sameRecords(t, src, dst, n-4095, n)
	}
	serve.stop(t)
	wantContains(t, "serve's counters", serve.logs(), fmt.Sprintf("archive: records %d,", lost))
}

// recordRing makes a ring of capacity slots at path, records it into the
// archive arch from its first record on while it writes n records (in
// bursts the recorder is let catch up with: it never falls behind), and
// checks the archive holds every one.
func recordRing(t *testing.T, path, arch string, capacity, n uint64) {
	t.Helper()
	pw, err := shm.Create(path, shm.RingConfig{PayloadSize: 56, Capacity: capacity}, shm.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	w, err := archive.OpenWriter(arch, archive.Options{SegmentSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := archive.NewRecorder(w, archive.RecorderConfig{Ring: path, Start: archive.StartOldest})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	recorded := make(chan error, 1)
	go func() { recorded <- rec.Run(ctx) }()
	testenv.Until(t, 10*time.Second, "the recorder to attach", func() bool { return rec.Stats().Epoch != 0 })
	p := make([]byte, 56)
	for seq := uint64(1); seq <= n; seq++ {
		binary.LittleEndian.PutUint64(p, seq)
		if _, err := pw.Push(p); err != nil {
			t.Fatal(err)
		}
		if seq%(capacity/2) == 0 || seq == n {
			testenv.Until(t, 10*time.Second, "the recorder to catch up", func() bool { return rec.Stats().Next > seq })
		}
	}
	cancel()
	if err := <-recorded; err != nil {
		t.Fatal(err)
	}
	if st := rec.Stats(); st.Gaps != 0 || st.Records != n {
		t.Fatalf("recorder: %+v", st)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// sameRecords fails unless rings a and b hold the same bytes for records
// from..to.
func sameRecords(t *testing.T, a, b string, from, to uint64) {
	t.Helper()
	ra, err := shm.Open(a, shm.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Close()
	rb, err := shm.Open(b, shm.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	pa, pb := make([]byte, ra.Layout().PayloadSize()), make([]byte, rb.Layout().PayloadSize())
	for s := from; s <= to; s++ {
		sa, _ := ra.ReadSlot(s, pa)
		sb, _ := rb.ReadSlot(s, pb)
		if sa != shm.SlotReady || sb != shm.SlotReady || !bytes.Equal(pa, pb) {
			t.Fatalf("record %d: %v %x, %v %x", s, sa, pa, sb, pb)
		}
	}
}
