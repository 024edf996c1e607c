package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/ringfire/ringfire/archive"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/shm"
)

// openArchive opens serve's --archive DIR for reading ("": none). A
// directory not there yet is made: the recorder (ringfire record, or a
// [[record]] unit of the same run) may start after serve.
func openArchive(dir string) (*archive.Reader, error) {
	if dir == "" {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, usagef("--archive %q: %v", dir, err)
	}
	return archive.Open(dir)
}

// newServer opens the server of cfg. With an archive, the server's
// History is the archive's epoch of the very ring the server mapped: the
// ring's identity is read before and after NewServer opens it, and a
// ring replaced in between is opened again.
func (u *serveUnit) newServer() (*replica.Server, error) {
	if u.archive == nil {
		return replica.NewServer(u.cfg)
	}
	for range 8 {
		src, err := ringSource(u.path)
		if err != nil {
			return nil, err
		}
		cfg := u.cfg
		cfg.History = u.archive.History(src)
		srv, err := replica.NewServer(cfg)
		if err != nil {
			return nil, err
		}
		if again, err := ringSource(u.path); err == nil && again == src {
			return srv, nil
		}
		srv.Close()
	}
	return nil, fmt.Errorf("serve %s: %w, 8 times", u.path, errRingMoved)
}

// errRingMoved: the ring at the path was replaced as it was identified;
// serve opens it again (serveUnit.open counts it transient).
var errRingMoved = errors.New("the ring was replaced while it was opened")

// ringSource identifies the ring at path now.
func ringSource(path string) (archive.Source, error) {
	r, err := shm.Open(path, shm.OpenOptions{})
	if err != nil {
		return archive.Source{}, err
	}
	defer r.Close()
	src, err := archive.SourceOf(r)
	if err != nil {
		return archive.Source{}, fmt.Errorf("%w: %w", errRingMoved, err)
	}
	return src, nil
}
