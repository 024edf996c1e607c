package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// socketLive reports whether process pid (in this process's PID
// namespace) still holds socket ino: a registration whose process died
// stays recorded although the kernel removed the socket from the XSKMAP.
func socketLive(pid int, ino uint64) bool {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	want := fmt.Sprintf("socket:[%d]", ino)
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && l == want {
			return true
		}
	}
	return false
}

// processLive reports whether process pid exists.
func processLive(pid int) bool {
	_, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid)))
	return err == nil
}
