package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/internal/testenv"
)

// [[record]] units of ringfire run, as child processes.

// One [[record]] unit of ringfire run failing (a full disk) fails alone:
// the ring it records is still served, the other recorder goes on.
func TestRecordFullDiskUnderRun(t *testing.T) {
	full := filepath.Join(testenv.Tmpfs(t, "512k"), "arch")
	dir := shmDir(t)
	p := func(name string) string { return filepath.Join(dir, name) }
	startChild(t, "gen a", "gen", p("a"), "--rate", "50000", "--capacity", "65536")
	startChild(t, "gen b", "gen", p("b"), "--rate", "20000", "--capacity", "65536")
	testenv.Until(t, 10*time.Second, "gen's rings", func() bool { return writeSeq(p("a")) > 0 && writeSeq(p("b")) > 0 })
	cfg := p("run.toml")
	writeFile(t, cfg, fmt.Sprintf(`metrics = "127.0.0.1:0"

[[serve]]
ring = %q
bind = "127.0.0.1:0"
unix = %q

[[record]]
ring = %q
dir = %q
from = "oldest"
segment-size = "64K"

[[record]]
ring = %q
dir = %q
segment-size = "64K"
`, p("a"), p("a.sock"), p("a"), full, p("b"), p("b.arch")))
	run := startChild(t, "run", "run", cfg)
	run.stopped = "msg=stopped"
	run.waitLog(t, "msg=serving")
	mirror := startChild(t, "mirror a", "mirror", "unix:"+p("a.sock"), p("a.copy"))
	growing(t, p("a.copy"))
	run.waitLog(t, "msg=\"unit failed, restarting\" unit=record ring=a")
	wantContains(t, "run's log", run.logs(), "no space left on device", full)
	_, last := archiveEnd(t, p("b.arch"))
	awaitArchived(t, p("b.arch"), last+5000)
	growing(t, p("a.copy"))
	mirror.alive(t)
	addr := metricsAt(t, run)
	m := scrape(t, "http://"+addr+"/metrics")
	if v := m[`ringfire_record_records_total{ring="b"}`]; v == 0 {
		t.Errorf("ringfire_record_records_total of b: %v", v)
	}
	if v, ok := m[`ringfire_record_direct{ring="b"}`]; !ok || v != takesDirect(t, dir) {
		t.Errorf("ringfire_record_direct of b: %v, %v; want %v", v, ok, takesDirect(t, dir))
	}
	if v := m[`ringfire_record_failures_total{ring="a"}`]; v < 1 {
		t.Errorf("ringfire_record_failures_total of a: %v, want 1 or more", v)
	}
	if v := m[`ringfire_record_failures_total{ring="b"}`]; v != 0 {
		t.Errorf("ringfire_record_failures_total of b: %v, want 0", v)
	}
	run.stop(t)
}

// A [[record]] table changed by a reload restarts that recorder alone: it
// closes the archive, the new one opens it and goes on in the same epoch,
// no record twice, none missing.
func TestRecordReloadUnderRun(t *testing.T) {
	dir := shmDir(t)
	p := func(name string) string { return filepath.Join(dir, name) }
	const n = 60000
	gen := startChild(t, "gen", "gen", p("a"), "--rate", "20000", "--count", fmt.Sprint(n), "--capacity", "65536")
	testenv.Until(t, 10*time.Second, "gen's ring", func() bool { return writeSeq(p("a")) > 0 })
	table := func(extra string) string {
		return fmt.Sprintf("[[record]]\nring = %q\ndir = %q\nfrom = \"oldest\"\nsegment-size = \"64K\"\n%s", p("a"), p("arch"), extra)
	}
	cfg := p("run.toml")
	writeFile(t, cfg, table(""))
	run := startChild(t, "run", "run", cfg)
	run.stopped = "msg=stopped"
	run.waitLog(t, "msg=recording")
	awaitArchived(t, p("arch"), 2000)
	writeFile(t, p("next.toml"), table("compress = true\nsync = \"interval=50ms\"\n"))
	if err := os.Rename(p("next.toml"), cfg); err != nil {
		t.Fatal(err)
	}
	run.cmd.Process.Signal(syscall.SIGHUP)
	run.waitLog(t, "restarted=1")
	run.waitLogs(t, 2, "msg=recording")
	wantContains(t, "run's log", run.logs(), `sync="interval=50ms" segment_size=65536 compress=true`)
	gen.exitedOK(t)
	awaitArchived(t, p("arch"), n)
	run.stop(t)
	if epochs, _ := archiveEnd(t, p("arch")); epochs != 1 {
		t.Fatalf("%d epochs after the reload, want 1", epochs)
	}
	checkHistory(t, p("arch"), p("a"), 1, 1, n)
}

// takesDirect is 1 when dir's filesystem takes O_DIRECT (tmpfs does
// since Linux 6.6), 0 when it refuses it.
func takesDirect(t *testing.T, dir string) float64 {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, "direct-probe"), os.O_CREATE|os.O_WRONLY|unix.O_DIRECT, 0o644)
	if err != nil {
		if errors.Is(err, unix.EINVAL) {
			return 0
		}
		t.Fatal(err)
	}
	f.Close()
	os.Remove(f.Name())
	return 1
}
