package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/testenv"
	"github.com/ringfire/ringfire/shm"
)

// serve --once ends by itself, with no error, once the first mirror's
// session ends, and not before: here a real mirror over serve's Unix
// socket copies the ring and is then stopped.
func TestServeOnce(t *testing.T) {
	dir := t.TempDir()
	src, dst, sock := filepath.Join(dir, "src"), filepath.Join(dir, "dst"), filepath.Join(dir, "s.sock")
	mustRun(t, "gen", src, "--count", "1000", "--size", "56", "--capacity", "1024")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var sout, serr bytes.Buffer
	served := make(chan error, 1)
	go func() {
		served <- run(ctx, []string{"serve", src, "--bind", "127.0.0.1:0", "--unix", sock, "--once"}, &sout, &serr)
	}()
	testenv.Until(t, 10*time.Second, "serve's Unix socket", func() bool {
		_, err := os.Stat(sock)
		return err == nil
	})

	mctx, stopMirror := context.WithCancel(ctx)
	defer stopMirror()
	var mout, merr bytes.Buffer
	mirrored := make(chan error, 1)
	go func() {
		mirrored <- run(mctx, []string{"mirror", "unix:" + sock, dst, "--from", "oldest", "--reconnect-ms", "20"}, &mout, &merr)
	}()
	testenv.Until(t, 10*time.Second, "the mirror holding the 1000 records", func() bool {
		r, err := shm.Open(dst, shm.OpenOptions{})
		if err != nil {
			return false
		}
		defer r.Close()
		return r.WriteSeq() == 1000
	})
	select {
	case err := <-served:
		t.Fatalf("serve --once ended while its mirror was connected: %v\n%s", err, serr.String())
	default:
	}
	stopMirror()
	if err := <-mirrored; err != nil {
		t.Fatalf("mirror: %v\n%s", err, merr.String())
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("serve --once: %v\n%s", err, serr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("serve --once still running 10 s after its mirror's session ended\n%s", serr.String())
	}
	if ctx.Err() != nil {
		t.Fatalf("serve ended only with the test's context: %v", ctx.Err())
	}
	wantContains(t, "serve's log", serr.String(), "msg=\"mirror connected\"", "msg=\"mirror disconnected\"", "the first mirror session ended: stopping (--once)")
	wantContains(t, "serve's counters", sout.String(), "serve: mirrors ", "write_seq 1000")
}
