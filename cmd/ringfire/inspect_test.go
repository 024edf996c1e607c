package main

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ringfire/ringfire/internal/testenv"

	"github.com/ringfire/ringfire/shm"
)

func TestStat(t *testing.T) {
	path := genRing(t, "--count", "100", "--capacity", "64")
	out := mustRun(t, "stat", path)
	for _, re := range []string{
		`(?m)^element_size +72 \(payload 64 bytes\)$`,
		`(?m)^capacity +64$`,
		`(?m)^flags +0x11 LATEST_WINS\|MODE_SPMC$`,
		`(?m)^slots_offset +128$`,
		`(?m)^registry +0 entries$`,
		`(?m)^arena +none$`,
		`(?m)^write_seq +100$`,
		`(?m)^oldest +37 \(64 retained\)$`,
		`(?m)^readers +0$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("stat output does not match %s:\n%s", re, out)
		}
	}
}

func TestStatJSON(t *testing.T) {
	path := genRing(t, "--count", "10", "--capacity", "16", "--lossless", "--size", "40")
	rd, err := shm.OpenReader(path, shm.ReadOptions{Start: shm.StartOldest, Name: "probe"})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	buf := make([]byte, 40)
	for range 3 {
		if _, ok := rd.TryRecv(buf); !ok {
			t.Fatal("no record")
		}
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(mustRun(t, "stat", path, "--json")), &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"path", "element_size", "payload_size", "capacity", "flags", "flag_names",
		"slots_offset", "registry_count", "arena_offset", "arena_size", "schema_sig", "write_seq", "oldest", "retained", "readers"} {
		if _, ok := got[k]; !ok {
			t.Errorf("JSON has no %q: %v", k, got)
		}
	}
	want := map[string]any{"element_size": 48.0, "payload_size": 40.0, "capacity": 16.0, "slots_offset": 2176.0,
		"registry_count": 32.0, "write_seq": 10.0, "oldest": 1.0, "retained": 10.0}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if names := got["flag_names"].([]any); len(names) != 3 || names[0] != "LOSSLESS_BACKPRESSURE" {
		t.Errorf("flag_names = %v", names)
	}
	readers := got["readers"].([]any)
	if len(readers) != 1 {
		t.Fatalf("readers = %v", readers)
	}
	r := readers[0].(map[string]any)
	wantReader := map[string]any{"index": 0.0, "pid": float64(os.Getpid()), "name": "probe", "active": true,
		"alive": true, "cursor": 4.0, "lag": 7.0}
	for k, v := range wantReader {
		if r[k] != v {
			t.Errorf("reader %s = %v, want %v", k, r[k], v)
		}
	}
	out := mustRun(t, "stat", path)
	wantContains(t, "stat", out, "readers       1", " probe", "yes")
}

func TestDumpTail(t *testing.T) {
	path := genRing(t, "--count", "20", "--capacity", "16")
	out := mustRun(t, "dump", path, "--tail", "3")
	wantContains(t, "dump", out, "records 18..20 of write_seq 20", "seq 18: ready", "seq 19: ready", "seq 20: ready")
	if strings.Contains(out, "seq 17") || strings.Count(out, ": ready") != 3 {
		t.Errorf("dump --tail 3 printed other records:\n%s", out)
	}
	// The ASCII form shows non-printable bytes as dots: seq 20 = 0x14 then 7 zero bytes.
	wantContains(t, "dump ascii", out, "\n    ........")
	out = mustRun(t, "dump", "--hex", path, "--tail", "1")
	wantContains(t, "dump --hex", out, "seq 20: ready", "    00000000  14 00 00 00 00 00 00 00")
	// More than the ring retains: only the retained records.
	out = mustRun(t, "dump", path, "--tail", "100")
	wantContains(t, "dump --tail 100", out, "records 5..20")
}

func TestDumpEmptyAndHoles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ring")
	w, err := shm.Create(path, shm.RingConfig{PayloadSize: 8, Capacity: 8, Flags: shm.FlagSparse}, shm.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	wantContains(t, "empty dump", mustRun(t, "dump", path), "empty (write_seq 0)")
	for _, seq := range []uint64{1, 3} {
		if err := w.Store(seq, []byte("abcdefgh")); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Publish(3); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, "dump", path)
	wantContains(t, "sparse dump", out, "seq 1: ready\n    abcdefgh\n", "seq 2: hole (sparse ring; slot holds 0)", "seq 3: ready")
	if got := describeState(shm.SlotOverwritten, 42); got != "overwritten (slot now holds 42)" {
		t.Errorf("describeState = %q", got)
	}
	if got := describeState(shm.SlotOverwritten, shm.SlotWriting); !strings.Contains(got, "overwritten") {
		t.Errorf("describeState = %q", got)
	}
}

func TestDumpBlobDescriptor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ring")
	p, err := shm.NewBlobProducer[uint64](path, shm.BlobOptions{Capacity: 8, ArenaSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	meta := uint64(7)
	if _, err := p.Push(&meta, []byte("hello blob")); err != nil {
		t.Fatal(err)
	}
	wantContains(t, "blob dump", mustRun(t, "dump", path), "seq 1: ready, blob offset 0 len 10")
}

// deadPID returns the pid of a process that has exited.
func deadPID(t *testing.T) uint32 {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		testenv.Skipf(t, "cannot run true: %v", err)
	}
	return uint32(cmd.Process.Pid)
}

func TestPrune(t *testing.T) {
	path := genRing(t, "--count", "10", "--capacity", "16", "--lossless")
	pid := deadPID(t)
	// Forge registry entry 0 of a crashed reader: pid u32 @0, active u32 @4, cursor u64 @8.
	var entry [16]byte
	binary.LittleEndian.PutUint32(entry[0:], pid)
	binary.LittleEndian.PutUint32(entry[4:], 1)
	binary.LittleEndian.PutUint64(entry[8:], 3)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteAt(entry[:], shm.RegistryOffset)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, "stat", path)
	if !regexp.MustCompile(`(?m)^ +0 +` + strconv.FormatUint(uint64(pid), 10) + ` +no +yes +3 +8`).MatchString(out) {
		t.Errorf("stat does not show the dead reader:\n%s", out)
	}
	wantContains(t, "prune", mustRun(t, "prune", path), "reclaimed 1 dead reader slot\n")
	wantContains(t, "stat after prune", mustRun(t, "stat", path), "readers       0")
	wantContains(t, "second prune", mustRun(t, "prune", path), "reclaimed 0 dead reader slots")
	// A ring without a registry has nothing to prune.
	plain := genRing(t, "--count", "1", "--capacity", "2")
	wantContains(t, "prune plain", mustRun(t, "prune", plain), "no reader registry, reclaimed 0")
}
