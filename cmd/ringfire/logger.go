package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"syscall"
	"time"
)

// newLogger logs to w as format says: "text" (or "") or "json". Lines
// marked throttled (what a peer can cause at will) are logged at most
// once per logEvery per kind and reason (see throttleHandler).
func newLogger(format string, w io.Writer) (*slog.Logger, error) {
	var h slog.Handler
	switch format {
	case "", "text":
		h = slog.NewTextHandler(w, nil)
	case "json":
		h = slog.NewJSONHandler(w, nil)
	default:
		return nil, usagef("--log-format %q: want text or json", format)
	}
	return slog.New(newThrottleHandler(h, logEvery, time.Now)), nil
}

// maxConfigSize bounds a config file: anything larger is not one.
const maxConfigSize = 4 << 20

// readConfigFile reads a regular file of at most maxConfigSize bytes; a
// FIFO, a device or a directory is refused without being opened for
// reading (a FIFO would block).
func readConfigFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, fi.Mode().Type())
	}
	if fi.Size() > maxConfigSize {
		return nil, fmt.Errorf("%s: %d bytes: a config file is at most %d", path, fi.Size(), maxConfigSize)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxConfigSize+1))
}
