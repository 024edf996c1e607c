package main

import (
	"bufio"
	"flag"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/supervisor"
)

// memTotal is MemTotal of /proc/meminfo, in bytes.
func memTotal(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for sc := bufio.NewScanner(f); sc.Scan(); {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no MemTotal in /proc/meminfo")
	return 0
}

func mirrorFlagSet() (*flag.FlagSet, *mirrorFlags) {
	fs := flag.NewFlagSet("mirror", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs, addMirrorFlags(fs)
}

// --max-size is auto by default: half of MemTotal, not a fixed 64 GiB
// (above the memory of many hosts); a size or 0 still work as before.
func TestMirrorMaxSizeAuto(t *testing.T) {
	fs, f := mirrorFlagSet()
	if def := fs.Lookup("max-size").DefValue; def != "auto" {
		t.Errorf("--max-size default %q, want auto", def)
	}
	if got, want := f.maxSize.opt(), memTotal(t)/2; got != want {
		t.Errorf("--max-size auto = %d, want half of MemTotal, %d", got, want)
	}
	for in, want := range map[string]int64{"1G": 1 << 30, "0": -1, "64k": 64 << 10} {
		if err := fs.Parse([]string{"--max-size", in}); err != nil || f.maxSize.opt() != want {
			t.Errorf("--max-size %s: %d, %v; want %d", in, f.maxSize.opt(), err, want)
		}
	}
	if err := fs.Parse([]string{"--max-size", "AUTO"}); err != nil || !f.maxSize.auto {
		t.Errorf("--max-size AUTO: %v, auto %v", err, f.maxSize.auto)
	}
	if err := fs.Parse([]string{"--max-size", "lots"}); err == nil || !strings.Contains(err.Error(), "max-size") {
		t.Errorf("--max-size lots: %v, want an error naming the flag", err)
	}
}

// --source-timeout is MirrorConfig.SourceTimeout: 5 s by default, a
// duration of at least 500 ms or 0 (never), a duration key of ringfire
// run; anything else is refused naming the flag.
func TestSourceTimeoutFlag(t *testing.T) {
	fs, f := mirrorFlagSet()
	if got := f.sourceTimeout.opt(); got != 5*time.Second {
		t.Errorf("default %v, want 5s", got)
	}
	for in, want := range map[string]time.Duration{"2s": 2 * time.Second, "500ms": 500 * time.Millisecond, "0": -1} {
		if err := fs.Parse([]string{"--source-timeout", in}); err != nil || f.sourceTimeout.opt() != want {
			t.Errorf("--source-timeout %s: %v, %v; want %v", in, f.sourceTimeout.opt(), err, want)
		}
	}
	for _, in := range []string{"100ms", "-1s", "5", "soon"} {
		if err := fs.Parse([]string{"--source-timeout", in}); err == nil || !strings.Contains(err.Error(), "source-timeout") {
			t.Errorf("--source-timeout %s: %v, want an error naming the flag", in, err)
		}
	}
	fl := fs.Lookup("source-timeout")
	if _, ok := wantKind(fl, supervisor.String); !ok {
		t.Error("a [[mirror]] table's source-timeout does not take a duration string")
	}
	if _, ok := wantKind(fl, supervisor.Integer); ok {
		t.Error("a [[mirror]] table's source-timeout takes an integer")
	}
}
