package testenv

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// Tmpfs mounts a tmpfs of size (mount's size= option: "256k", "1m") on a
// fresh directory for tb, unmounted when it ends: a small filesystem to
// fill. Mounting needs root: without it tb skips, or fails under CI.
func Tmpfs(tb testing.TB, size string) string {
	tb.Helper()
	if os.Geteuid() != 0 {
		Skipf(tb, "mounting a tmpfs needs root")
	}
	dir := tb.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		tb.Fatalf("mount tmpfs on %s: %v", dir, err)
	}
	tb.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			tb.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}
