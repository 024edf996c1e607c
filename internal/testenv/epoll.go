package testenv

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Polled returns the descriptors of this process that some epoll
// instance of this process watches (Go's poller's among them), read from
// /proc/self/fdinfo: a socket in it wakes the watcher's thread when it
// becomes readable or writable.
func Polled(tb testing.TB) map[int]bool {
	tb.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		tb.Fatalf("testenv: %v", err)
	}
	polled := map[int]bool{}
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err != nil || l != "anon_inode:[eventpoll]" {
			continue
		}
		info, err := os.ReadFile(filepath.Join("/proc/self/fdinfo", e.Name()))
		if err != nil {
			continue // closed since ReadDir
		}
		sc := bufio.NewScanner(bytes.NewReader(info))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) >= 2 && f[0] == "tfd:" {
				if fd, err := strconv.Atoi(f[1]); err == nil {
					polled[fd] = true
				}
			}
		}
	}
	return polled
}
