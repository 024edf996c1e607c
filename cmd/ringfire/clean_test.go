package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/internal/testenv"
	"github.com/ringfire/ringfire/shm"
)

// shmTestDir is a fresh directory under /dev/shm, where rings live in
// production, removed when t ends.
func shmTestDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "rfclean")
	if err != nil {
		testenv.Skipf(t, "no /dev/shm to test in: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// plantDeadReader forges registry entry i of a crashed reader: pid u32 @0,
// active u32 @4, cursor u64 @8.
func plantDeadReader(t *testing.T, path string, i int) {
	t.Helper()
	var entry [16]byte
	binary.LittleEndian.PutUint32(entry[0:], deadPID(t))
	binary.LittleEndian.PutUint32(entry[4:], 1)
	binary.LittleEndian.PutUint64(entry[8:], 3)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteAt(entry[:], int64(shm.RegistryOffset+shm.RegistryEntry*i))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

func mustExist(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

func mustBeGone(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still there: %v", p, err)
		}
	}
}

// clean keeps a ring with a live producer and one with a live registered
// reader, lists (--dry-run) and then removes the abandoned ones, and never
// touches what is not a ring.
func TestClean(t *testing.T) {
	dir := shmTestDir(t)
	self := strconv.Itoa(os.Getpid())
	producing := filepath.Join(dir, "producing")
	w, err := shm.Create(producing, shm.RingConfig{PayloadSize: 56, Capacity: 16}, shm.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	reading := filepath.Join(dir, "reading")
	mustRun(t, "gen", reading, "--count", "10", "--capacity", "16", "--lossless")
	rd, err := shm.OpenReader(reading, shm.ReadOptions{Name: "clean test"})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	abandoned := filepath.Join(dir, "abandoned") // its registered reader crashed
	mustRun(t, "gen", abandoned, "--count", "10", "--capacity", "16", "--lossless")
	plantDeadReader(t, abandoned, 0)
	plain := filepath.Join(dir, "plain") // no registry
	mustRun(t, "gen", plain, "--count", "10", "--capacity", "16")
	notes := filepath.Join(dir, "notes")
	text := bytes.Repeat([]byte("not a ring\n"), 20)
	if err := os.WriteFile(notes, text, 0o644); err != nil {
		t.Fatal(err)
	}
	unfinished := filepath.Join(dir, "unfinished") // a creator stores the magic last
	if err := os.WriteFile(unfinished, make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo") // opened without blocking, then left alone
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	nested := filepath.Join(sub, "nested")
	mustRun(t, "gen", nested, "--count", "1", "--capacity", "2")

	kept := []string{
		"kept " + producing + ": producer pid " + self + " holds the lock\n",
		"kept " + reading + ": reader pid " + self + ` ("clean test") alive` + "\n",
		"skipped " + fifo + ": not a regular file\n",
		"skipped " + notes + ": not a ringfire ring\n",
		"skipped " + unfinished + ": not a ringfire ring\n",
		"skipped " + sub + ": a directory (clean does not descend)\n",
	}
	out := mustRun(t, "clean", dir, "--dry-run")
	wantContains(t, "clean --dry-run", out, append(kept,
		"would remove "+abandoned+": no producer, no live reader\n",
		"would remove "+plain+": no producer, no live reader\n",
		"clean: 2 to remove (dry run), 2 kept, 4 skipped\n")...)
	mustExist(t, producing, reading, abandoned, plain, notes, unfinished, fifo, nested)

	out = mustRun(t, "clean", dir)
	wantContains(t, "clean", out, append(kept,
		"removed "+abandoned+": no producer, no live reader\n",
		"removed "+plain+": no producer, no live reader\n",
		"clean: 2 removed, 2 kept, 4 skipped\n")...)
	mustBeGone(t, abandoned, plain)
	mustExist(t, producing, reading, unfinished, fifo, nested)
	if b, err := os.ReadFile(notes); err != nil || !bytes.Equal(b, text) {
		t.Errorf("clean touched a file that is not a ring: %q, %v", b, err)
	}

	// Once their producer and reader are gone, those rings go too; PATH
	// may name one file.
	w.Close()
	rd.Close()
	for _, p := range []string{producing, reading} {
		out := mustRun(t, "clean", p)
		wantContains(t, "clean "+p, out, "removed "+p+": no producer, no live reader\n", "clean: 1 removed, 0 kept, 0 skipped\n")
	}
	mustBeGone(t, producing, reading)
}

// A ring no producer holds and no registered reader reads is kept while
// another process maps it: here a tail, which a ring without a registry
// does not register.
func TestCleanKeepsMappedRing(t *testing.T) {
	path := filepath.Join(shmTestDir(t), "ring")
	mustRun(t, "gen", path, "--count", "10", "--capacity", "16")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "tail", path, "--from", "oldest", "--quiet")
	cmd.Env = append(os.Environ(), "RINGFIRE_TEST_MAIN=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := strconv.Itoa(cmd.Process.Pid)
	testenv.Until(t, 10*time.Second, "the tail mapping the ring", func() bool {
		b, err := os.ReadFile("/proc/" + pid + "/maps")
		return err == nil && strings.Contains(string(b), path)
	})
	out := mustRun(t, "clean", path)
	wantContains(t, "clean", out, "kept "+path+": mapped by pid "+pid+" (", "clean: 0 removed, 1 kept, 0 skipped\n")
	mustExist(t, path)
	cmd.Process.Kill()
	cmd.Wait()
	wantContains(t, "clean after the tail", mustRun(t, "clean", path), "removed "+path+": no producer, no live reader\n")
}

func TestCleanErrors(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := runCmd(t, "clean", filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("clean of a missing path: %v", err)
	}
	_, _, err := runCmd(t, "clean", dir, "other")
	var ue *usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), `unexpected argument "other"`) {
		t.Errorf("clean with two paths: %v", err)
	}
}
