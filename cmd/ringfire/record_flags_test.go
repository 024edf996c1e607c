package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/archive"
	"github.com/ringfire/ringfire/internal/supervisor"
)

// Every flag of record, replay and archive is validated with a usage
// error naming it, before anything is opened or made.
func TestArchiveFlags(t *testing.T) {
	dir := t.TempDir()
	ring, arch := filepath.Join(dir, "ring"), filepath.Join(dir, "arch")
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"record", ring, arch, "--from", "newest"}, "--from"},
		{[]string{"record", ring, arch, "--from", "0"}, "--from"},
		{[]string{"record", ring, arch, "--from", "-3"}, "--from"},
		{[]string{"record", ring, arch, "--sync", "always"}, "--sync"},
		{[]string{"record", ring, arch, "--sync", "interval="}, "--sync"},
		{[]string{"record", ring, arch, "--sync", "interval=-1s"}, "--sync"},
		{[]string{"record", ring, arch, "--segment-size", "1K"}, "--segment-size"},
		{[]string{"record", ring, arch, "--segment-size", "lots"}, "-segment-size"},
		{[]string{"record", ring, arch, "--segment-size", "-1"}, "-segment-size"},
		{[]string{"record", ring, arch, "--max-bytes", "many"}, "-max-bytes"},
		{[]string{"record", ring, arch, "--max-bytes", "1M"}, "--max-bytes"}, // below the 64M segments
		{[]string{"record", ring, arch, "--max-age", "-1h"}, "--max-age"},
		{[]string{"record", ring, arch, "--max-age", "week"}, "-max-age"},
		{[]string{"record", ring, arch, "--flush-delay", "0"}, "--flush-delay"},
		{[]string{"record", ring, arch, "--flush-delay", "1m"}, "--flush-delay"},
		{[]string{"record", ring, arch, "--compress=maybe"}, "-compress"},
		{[]string{"record", ring, arch, "--metrics", "nowhere"}, "--metrics"},
		{[]string{"record", ring, arch, "--duration", "-1s"}, "--duration"},
		{[]string{"record", ring, arch, "--stats-interval", "-1s"}, "--stats-interval"},
		{[]string{"record", ring, arch, "--log-format", "xml"}, "log"},
		{[]string{"replay", arch, ring, "--epoch", "x"}, "-epoch"},
		{[]string{"replay", arch, ring, "--from", "yesterday"}, "--from"},
		{[]string{"replay", arch, ring, "--from", "0"}, "--from"},
		{[]string{"replay", arch, ring, "--to", "2026-13-01T00:00:00Z"}, "--to"},
		{[]string{"replay", arch, ring, "--from", "20", "--to", "10"}, "--from"},
		{[]string{"replay", arch, ring, "--speed", "fast"}, "--speed"},
		{[]string{"replay", arch, ring, "--speed", "0x"}, "--speed"},
		{[]string{"replay", arch, ring, "--speed", "2"}, "--speed"},
		{[]string{"replay", arch, ring, "--max-size", "huge"}, "-max-size"},
		{[]string{"replay", arch, ring, "--duration", "-1s"}, "--duration"},
		{[]string{"archive", "dump", arch, "--tail", "0"}, "--tail"},
		{[]string{"archive", "dump", arch, "--count", "3"}, "--count"},
		{[]string{"archive", "dump", arch, "--epoch", "-1"}, "-epoch"},
		{[]string{"archive", "stat", arch, "--json=x"}, "-json"},
	} {
		_, _, err := runCmd(t, c.args...)
		var ue *usageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), c.flag) {
			t.Errorf("%v: %v, want a usage error naming %s", c.args, err, c.flag)
		}
	}
	if _, err := os.Stat(arch); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused command made %s: %v", arch, err)
	}
	for _, args := range [][]string{{"archive"}, {"archive", "list", arch}, {"record", ring}, {"replay", arch}} {
		var ue *usageError
		if _, _, err := runCmd(t, args...); !errors.As(err, &ue) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

// --help says what each sync mode can lose, and lists every flag.
func TestArchiveHelp(t *testing.T) {
	_, stderr, err := runCmd(t, "record", "--help")
	if err != nil {
		t.Fatal(err)
	}
	stderr = strings.Join(strings.Fields(stderr), " ") // the help's lines wrap anywhere
	wantContains(t, "record --help", stderr, "a power cut loses what the", "a power cut loses about D at most", "a power cut loses at most the segment being",
		"--from", "--sync", "--segment-size", "--compress", "--max-bytes", "--max-age", "--flush-delay", "--metrics", "full disk")
	_, stderr, _ = runCmd(t, "replay", "--help")
	wantContains(t, "replay --help", stderr, "--epoch", "--from", "--to", "--speed", "--replace", "--follow", "--max-size", "SPARSE")
	_, stderr, _ = runCmd(t, "archive", "--help")
	wantContains(t, "archive --help", stderr, "stat", "verify", "dump", "status 1")
	_, stderr, _ = runCmd(t, "--help")
	wantContains(t, "ringfire --help", stderr, "record", "replay", "archive")
}

// A [[record]] table's keys are record's flags, checked the same way, its
// mistakes at their line; the defaults are record's.
func TestRecordTable(t *testing.T) {
	cfg, err := supervisor.Parse("rec.toml", []byte(`[[record]]
ring = "/dev/shm/q"
dir = "/var/lib/q"
from = "oldest"
sync = "interval=250ms"
segment-size = "1M"
compress = true
max-bytes = "10M"
max-age = "1h"
flush-delay = "2ms"
page-cache = true
`))
	if err != nil {
		t.Fatal(err)
	}
	u, err := recordUnitOf(&cfg.Tables[0], discardLogger())
	if err != nil {
		t.Fatal(err)
	}
	want := archive.Options{SegmentSize: 1 << 20, Sync: archive.SyncInterval, SyncEvery: 250 * time.Millisecond, Compress: true, MaxBytes: 10 << 20, MaxAge: time.Hour, PageCache: true}
	if u.opts != want || u.cfg.Start != archive.StartOldest || u.cfg.FlushDelay != 2*time.Millisecond || u.dir != "/var/lib/q" || u.ring != "/dev/shm/q" || u.name != "q" {
		t.Fatalf("unit %+v, want options %+v", u, want)
	}
	d, err := supervisor.Parse("d.toml", []byte("[[record]]\nring = \"/dev/shm/q\"\ndir = \"/var/lib/q\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if u, err = recordUnitOf(&d.Tables[0], discardLogger()); err != nil || u.opts.SegmentSize != archive.DefaultSegmentSize ||
		u.opts.Sync != archive.SyncNone || u.cfg.Start != archive.StartResume {
		t.Fatalf("defaults: %+v, %v", u, err)
	}
	for key, want := range map[string]string{
		`sync = "always"`:        `:4: key "sync": --sync "always"`,
		`segment-size = "1K"`:    `:4: key "segment-size": --segment-size 1K`,
		`max-age = 3`:            `:4: key "max-age": want a duration string`,
		`metrics = ":1"`:         `:4: key "metrics": is process-wide`,
		`from = "newest"`:        `:4: key "from": --from "newest"`,
		`compress = "yes"`:       `:4: key "compress": want a boolean`,
		`flush-delay = "1ns"`:    `:4: key "flush-delay": --flush-delay 1ns`,
		`speed = "1x"`:           `:4: key "speed": unknown key in [[record]]`,
		`segment-size = "lotsK"`: `:4: key "segment-size"`,
	} {
		c, err := supervisor.Parse("bad.toml", []byte("[[record]]\nring = \"/dev/shm/q\"\ndir = \"/var/lib/q\"\n"+key+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := recordUnitOf(&c.Tables[0], discardLogger()); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", key, err, want)
		}
	}
}
