package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/internal/testenv"
	"github.com/ringfire/ringfire/shm"
)

// runBounded runs the CLI and fails the test if it has not returned in 5 s.
func runBounded(t *testing.T, args ...string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		var out, errb strings.Builder
		done <- run(ctx, args, &out, &errb)
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatalf("ringfire %s blocked for 5 s", strings.Join(args, " "))
		return nil
	}
}

// A FIFO, a directory or a device where a ring should be is refused at
// once by every command that opens a ring, with the reason.
func TestRingPathNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, kind string }{{fifo, "FIFO"}, {dir, "directory"}, {"/dev/zero", "character device"}} {
		for _, args := range [][]string{
			{"stat", c.path}, {"dump", c.path}, {"tail", c.path, "--count", "1", "--timeout", "100ms"},
			{"top", c.path, "--iterations", "1"}, {"prune", c.path},
			{"serve", c.path, "--bind", "127.0.0.1:0", "--duration", "100ms"},
			{"gen", c.path, "--count", "1", "--replace"},
		} {
			err := runBounded(t, args...)
			if !errors.Is(err, shm.ErrNotRegular) || !strings.Contains(err.Error(), c.kind) {
				t.Errorf("%s on a %s: %v, want ErrNotRegular naming it", args[0], c.kind, err)
			}
		}
	}
}

// gen refuses a ring beyond --max-size (or the free space) before it
// creates anything.
func TestGenTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ring")
	err := runBounded(t, "gen", path, "--count", "1", "--capacity", "1099511627776")
	if !errors.Is(err, shm.ErrTooLarge) || !strings.Contains(err.Error(), "--max-size") {
		t.Fatalf("gen of a 64 TiB ring: %v, want ErrTooLarge naming --max-size", err)
	}
	err = runBounded(t, "gen", path, "--count", "1", "--capacity", "1099511627776", "--max-size", "0")
	if !errors.Is(err, shm.ErrNoSpace) {
		t.Fatalf("gen of a 64 TiB ring without a limit: %v, want ErrNoSpace", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused ring left a file: %v", err)
	}
	if err := runBounded(t, "gen", path, "--max-size", "12X"); err == nil || !strings.Contains(err.Error(), "max-size") {
		t.Fatalf("--max-size 12X: %v, want an error naming the flag", err)
	}
	if err := runBounded(t, "mirror", "127.0.0.1:1", path, "--max-size", "-3"); err == nil || !strings.Contains(err.Error(), "max-size") {
		t.Fatalf("mirror --max-size -3: %v, want an error naming the flag", err)
	}
}

// gen on a full tmpfs is a clear error, not a SIGBUS (which would kill
// this test binary).
func TestGenFullFilesystem(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skipf(t, "mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	err := runBounded(t, "gen", filepath.Join(dir, "a"), "--count", "100000", "--capacity", "32768")
	if !errors.Is(err, shm.ErrNoSpace) {
		t.Fatalf("gen of a 2 MiB ring on a 1 MiB tmpfs: %v, want ErrNoSpace", err)
	}
	if err := runBounded(t, "gen", filepath.Join(dir, "b"), "--count", "100000", "--capacity", "8192"); err != nil {
		t.Fatalf("gen of a 512 KiB ring: %v", err)
	}
	err = runBounded(t, "gen", filepath.Join(dir, "c"), "--count", "100000", "--capacity", "8192")
	if !errors.Is(err, shm.ErrNoSpace) {
		t.Fatalf("a second 512 KiB ring on the 1 MiB tmpfs: %v, want ErrNoSpace", err)
	}
}
