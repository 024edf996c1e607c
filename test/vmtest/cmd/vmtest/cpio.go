package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
)

// cpioWriter writes an initramfs: a cpio archive in the "newc" format the
// kernel unpacks into its root file system. Every entry's parent
// directories are written before it (the kernel creates no missing
// parents), each once.
type cpioWriter struct {
	w    *bufio.Writer
	ino  uint32
	dirs map[string]bool
	err  error
}

func newCPIO(w io.Writer) *cpioWriter {
	return &cpioWriter{w: bufio.NewWriterSize(w, 1<<20), ino: 1, dirs: map[string]bool{"": true, ".": true}}
}

const (
	modeDir  = 0o040000
	modeFile = 0o100000
	modeLink = 0o120000
)

// header writes one entry header and its name, padded to four bytes.
func (c *cpioWriter) header(name string, mode uint32, size int) {
	if c.err != nil {
		return
	}
	nlink := 1
	if mode&0o170000 == modeDir {
		nlink = 2
	}
	ino := c.ino
	c.ino++
	// magic, ino, mode, uid, gid, nlink, mtime, filesize, devmajor,
	// devminor, rdevmajor, rdevminor, namesize, check
	_, c.err = fmt.Fprintf(c.w, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		ino, mode, 0, 0, nlink, 0, size, 0, 0, 0, 0, len(name)+1, 0)
	if c.err == nil {
		_, c.err = c.w.WriteString(name + "\x00")
	}
	c.pad(110 + len(name) + 1)
}

func (c *cpioWriter) pad(n int) {
	if c.err == nil && n%4 != 0 {
		_, c.err = c.w.Write(make([]byte, 4-n%4))
	}
}

// clean turns an absolute guest path into an archive name ("bin/sh").
func clean(p string) string { return strings.TrimPrefix(path.Clean("/"+p), "/") }

// Mkdir writes directory p and its missing parents.
func (c *cpioWriter) Mkdir(p string) {
	p = clean(p)
	if c.dirs[p] {
		return
	}
	c.Mkdir(path.Dir(p))
	c.dirs[p] = true
	c.header(p, modeDir|0o755, 0)
}

// Bytes writes a regular file holding b.
func (c *cpioWriter) Bytes(p string, perm uint32, b []byte) {
	p = clean(p)
	c.Mkdir(path.Dir(p))
	c.header(p, modeFile|perm, len(b))
	if c.err == nil {
		_, c.err = c.w.Write(b)
	}
	c.pad(len(b))
}

// File writes a regular file with the contents of host file src (symlinks
// followed), keeping its permission bits.
func (c *cpioWriter) File(p, src string) {
	if c.err != nil {
		return
	}
	f, err := os.Open(src)
	if err != nil {
		c.err = err
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		c.err = err
		return
	}
	if !fi.Mode().IsRegular() {
		c.err = fmt.Errorf("cpio: %s is not a regular file", src)
		return
	}
	p = clean(p)
	c.Mkdir(path.Dir(p))
	c.header(p, modeFile|uint32(fi.Mode().Perm()), int(fi.Size()))
	if c.err != nil {
		return
	}
	n, err := io.Copy(c.w, f)
	if err == nil && n != fi.Size() {
		err = fmt.Errorf("cpio: %s changed size while copied", src)
	}
	c.err = err
	c.pad(int(n))
}

// Symlink writes a symbolic link p pointing to target.
func (c *cpioWriter) Symlink(p, target string) {
	p = clean(p)
	c.Mkdir(path.Dir(p))
	c.header(p, modeLink|0o777, len(target))
	if c.err == nil {
		_, c.err = c.w.WriteString(target)
	}
	c.pad(len(target))
}

// Close writes the trailer and flushes; it returns the first error.
func (c *cpioWriter) Close() error {
	c.header("TRAILER!!!", 0, 0)
	if c.err == nil {
		c.err = c.w.Flush()
	}
	return c.err
}
