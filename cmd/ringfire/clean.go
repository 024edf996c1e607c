package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/internal/cli"
	"github.com/ringfire/ringfire/shm"
)

const cleanHelp = `Clean lists the ring files that no process uses and removes them (with
--dry-run it only lists them). It looks at the files directly under /dev/shm,
or under PATH when PATH is a directory, or at PATH itself when it is a file;
it does not descend into subdirectories. A ring is in use, and kept, while a
producer holds its lock (the flock every producer holds for its lifetime, a
mirror on its ring included), while a reader registered in its reader
registry is alive (kill(pid, 0)), or while another process maps it (a reader
outside the registry, a serve), as /proc/PID/maps shows. Files that are not
ringfire rings (blackboards, offset files, anything else, a ring its creator
has not finished) are never removed. Each file gets one line: removed (would
remove, with --dry-run), kept or skipped, and why; a last line counts them.
While it checks and removes a ring, clean holds that ring's producer lock, so
a producer starting on the same path at that instant fails with "held by
another producer" instead of losing its new ring. It exits with status 1 if
a removal failed.`

// cleanDir is where rings live unless PATH says otherwise.
const cleanDir = "/dev/shm"

func runClean(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("clean", "[PATH] [--dry-run]", cleanHelp, stderr)
	dry := fs.Bool("dry-run", false, "list what would be removed, and remove nothing")
	pos, err := cli.ParseArgs("ringfire", fs, args, 0, "PATH")
	if err != nil {
		return helpOr(err)
	}
	root := cleanDir
	if len(pos) == 1 {
		root = pos[0]
	}
	paths, err := cleanPaths(root)
	if err != nil {
		return err
	}
	c := &cleaner{dry: *dry, out: stdout}
	for _, p := range paths {
		if ctx.Err() != nil {
			break
		}
		c.clean(p)
	}
	c.summary()
	return errors.Join(c.errs...)
}

// cleanPaths lists what clean looks at: root itself when it is not a
// directory, else the entries directly under it, in name order.
func cleanPaths(root string) ([]string, error) {
	st, err := os.Stat(root)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{root}, nil
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	paths := make([]string, len(ents))
	for i, e := range ents {
		paths[i] = filepath.Join(root, e.Name())
	}
	return paths, nil
}

// cleaner checks files one by one and keeps the tally.
type cleaner struct {
	dry                    bool
	out                    io.Writer
	removed, kept, skipped int
	errs                   []error
	mapped                 map[fileID][]int // processes mapping each file; nil until first needed
}

// clean decides about one file and prints its line.
func (c *cleaner) clean(path string) {
	if st, err := os.Lstat(path); err == nil && st.IsDir() {
		c.line(&c.skipped, "skipped", path, "a directory (clean does not descend)")
		return
	}
	s, err := shm.OpenStaleRing(path)
	if err != nil {
		c.refused(path, err)
		return
	}
	defer s.Close()
	if why := c.inUse(path, s); why != "" {
		c.line(&c.kept, "kept", path, why)
		return
	}
	why := "no producer, no live reader"
	if c.dry {
		c.line(&c.removed, "would remove", path, why)
		return
	}
	if err := s.Remove(); err != nil {
		c.errs = append(c.errs, err)
		c.line(&c.kept, "kept", path, "removing failed: "+err.Error())
		return
	}
	c.line(&c.removed, "removed", path, why)
}

// refused prints the line of a file OpenStaleRing refused: a ring whose
// producer holds the lock, or a file that is not a ring.
func (c *cleaner) refused(path string, err error) {
	switch {
	case errors.Is(err, shm.ErrLocked):
		c.line(&c.kept, "kept", path, lockHolders(path))
	case errors.Is(err, shm.ErrMagic), errors.Is(err, shm.ErrTruncated):
		c.line(&c.skipped, "skipped", path, "not a ringfire ring")
	case errors.Is(err, shm.ErrVersion):
		c.line(&c.skipped, "skipped", path, "a ring of another layout version")
	case errors.Is(err, shm.ErrCorrupt):
		c.line(&c.skipped, "skipped", path, "not a valid ringfire ring (its header fails validation)")
	case errors.Is(err, shm.ErrNotRegular):
		c.line(&c.skipped, "skipped", path, "not a regular file")
	default:
		c.line(&c.skipped, "skipped", path, err.Error())
	}
}

// inUse says why a ring no producer holds is still in use ("" if it is
// not): a live registered reader, or another process mapping it.
func (c *cleaner) inUse(path string, s *shm.StaleRing) string {
	rs, err := s.Readers()
	if err != nil {
		return "cannot read its reader registry: " + err.Error()
	}
	for _, r := range rs {
		if r.Alive {
			if r.Name != "" {
				return fmt.Sprintf("reader pid %d (%q) alive", r.PID, r.Name)
			}
			return fmt.Sprintf("reader pid %d alive", r.PID)
		}
	}
	id, ok := idOf(path)
	if !ok {
		return "cannot stat it"
	}
	if c.mapped == nil {
		c.mapped = mappedFiles()
	}
	if pids := c.mapped[id]; len(pids) > 0 {
		return "mapped by " + describePIDs(pids)
	}
	return ""
}

func (c *cleaner) line(n *int, verdict, path, why string) {
	*n++
	fmt.Fprintf(c.out, "%s %s: %s\n", verdict, path, why)
}

func (c *cleaner) summary() {
	removed := "removed"
	if c.dry {
		removed = "to remove (dry run)"
	}
	fmt.Fprintf(c.out, "clean: %d %s, %d kept, %d skipped\n", c.removed, removed, c.kept, c.skipped)
}

// fileID names a file as /proc/locks and /proc/PID/maps do: its device
// and inode.
type fileID struct{ major, minor, ino uint64 }

func idOf(path string) (fileID, bool) {
	st, err := os.Stat(path)
	if err != nil {
		return fileID{}, false
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	dev := uint64(sys.Dev)
	return fileID{uint64(unix.Major(dev)), uint64(unix.Minor(dev)), sys.Ino}, true
}

// parseFileID parses /proc's "MAJ:MIN" (hexadecimal) and a decimal inode.
func parseFileID(dev, ino string) (fileID, bool) {
	maj, min, ok := strings.Cut(dev, ":")
	if !ok {
		return fileID{}, false
	}
	a, err1 := strconv.ParseUint(maj, 16, 64)
	b, err2 := strconv.ParseUint(min, 16, 64)
	n, err3 := strconv.ParseUint(ino, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || n == 0 {
		return fileID{}, false
	}
	return fileID{a, b, n}, true
}

// lockHolders names the processes holding path's flock, from /proc/locks
// (lines such as "1: FLOCK  ADVISORY  WRITE 123 00:1a:4567 0 EOF"; a
// waiter's line has "->" after the number and holds nothing).
func lockHolders(path string) string {
	const unknown = "a producer holds the lock"
	id, ok := idOf(path)
	if !ok {
		return unknown
	}
	b, err := os.ReadFile("/proc/locks")
	if err != nil {
		return unknown
	}
	var pids []int
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 6 || f[1] != "FLOCK" {
			continue
		}
		dev, ino, ok := cutLast(f[5], ":")
		if !ok {
			continue
		}
		if got, ok := parseFileID(dev, ino); !ok || got != id {
			continue
		}
		if pid, err := strconv.Atoi(f[4]); err == nil {
			pids = append(pids, pid)
		}
	}
	switch len(pids) {
	case 0:
		return unknown
	case 1:
		return fmt.Sprintf("producer pid %d holds the lock", pids[0])
	}
	return "producers " + describePIDs(pids) + " hold the lock"
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// mappedFiles reads every process's /proc/PID/maps (but this one's: clean
// maps the rings it checks) and returns the processes mapping each file.
// Processes whose maps it may not read are left out.
func mappedFiles() map[fileID][]int {
	out := make(map[fileID][]int)
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/maps")
		if err != nil {
			continue
		}
		seen := make(map[fileID]bool)
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 0, 4096), 1<<20)
		for sc.Scan() {
			// address perms offset dev inode [path]
			f := strings.Fields(sc.Text())
			if len(f) < 6 {
				continue
			}
			if id, ok := parseFileID(f[3], f[4]); ok && !seen[id] {
				seen[id] = true
				out[id] = append(out[id], pid)
			}
		}
	}
	return out
}

// describePIDs is "pid 12 (gen)" or "pids 12 (gen), 34 (tail)", with each
// process's command name from /proc/PID/comm when it can be read.
func describePIDs(pids []int) string {
	var b strings.Builder
	b.WriteString("pid")
	if len(pids) > 1 {
		b.WriteString("s")
	}
	for i, pid := range pids {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " %d", pid)
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil {
			fmt.Fprintf(&b, " (%s)", strings.TrimSpace(string(comm)))
		}
	}
	return b.String()
}
