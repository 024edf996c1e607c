package report

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// committedJSON is the report docs/benchmarks.md is rendered from.
const committedJSON = "../../../docs/bench/bench.json"

// dateLike matches a calendar date or a clock time of day as a page could
// carry one: 2026-12-07, 2026/12/07, 07.12.2026, 05:07 or 05:07:14.
var dateLike = regexp.MustCompile(`\b(19|20)\d\d[-/](0[1-9]|1[0-2])[-/]\d\d\b|\b\d\d\.\d\d\.(19|20)\d\d\b|\b([01]\d|2[0-3]):[0-5]\d\b`)

func readCommitted(t *testing.T) *Report {
	t.Helper()
	f, err := os.Open(committedJSON)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := ReadJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The committed bench.json loads, and renders as a page with every
// section it holds, the floors and the charts linked relatively.
func TestPageFromCommittedJSON(t *testing.T) {
	r := readCommitted(t)
	if len(r.PingPong) == 0 || len(r.Deployed) == 0 || r.Machine.Cores == 0 || r.Machine.Kernel == "" || r.Machine.Go == "" {
		t.Fatalf("committed report lacks figures: %d ping-pong, %d deployed, machine %+v", len(r.PingPong), len(r.Deployed), r.Machine)
	}
	var b bytes.Buffer
	if err := r.WriteMarkdown(&b, "bench"); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		"# Benchmarks\n", "## Method\n", "## Machine\n", "- **cores**: 2", "- **kernel**: " + r.Machine.Kernel, "- **go**: " + r.Machine.Go,
		"](bench/latency.svg)", "](bench/throughput.svg)",
		"## Ping-pong\n", "## Stress and zero-loss rate\n", "## Stages\n", "## Fan-out\n", "## Send cost\n", "## Deployed\n", "## Rings\n",
		"## Floors\n", "| floor of a mirror alone", "| hand-offs alone, 6 processes, yield |", "| datagram alone, spin |",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// The page carries no date, no time of day: only the machine's header
// (its load average, its command) may hold figures that look like one,
// and the run's start time is left out of it.
func TestPageHasNoDates(t *testing.T) {
	for _, r := range []*Report{readCommitted(t), sampleReport(), deployedReport(), ringsReport(), archiveReport()} {
		var b bytes.Buffer
		if err := r.WriteMarkdown(&b, "bench"); err != nil {
			t.Fatal(err)
		}
		inMachine := false
		for i, line := range strings.Split(b.String(), "\n") {
			if strings.HasPrefix(line, "## ") {
				inMachine = line == "## Machine"
			}
			if m := dateLike.FindString(line); m != "" && !inMachine {
				t.Errorf("line %d carries %q: %s", i+1, m, line)
			}
			if inMachine && strings.HasPrefix(line, "- **started**") {
				t.Errorf("line %d: the page names the run's start: %s", i+1, line)
			}
		}
	}
}

// The date pattern finds what it must, so that the test above can fail.
func TestDateLike(t *testing.T) {
	for _, s := range []string{"2026-12-07", "run at 05:07", "2026/03/14", "14.03.2026"} {
		if !dateLike.MatchString(s) {
			t.Errorf("%q not found", s)
		}
	}
	for _, s := range []string{"6.18.44-fc-v1272", "go1.26.8", "1,234,567", "3.20 M", "600.0–615.0", "p99.99"} {
		if dateLike.MatchString(s) {
			t.Errorf("%q taken for a date", s)
		}
	}
}

// The page committed in docs/ is the one the committed JSON renders:
// make bench (or ringfire-bench --render) wrote it, nobody edited it.
func TestCommittedPageIsRendered(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("../../../docs", "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := readCommitted(t).WriteMarkdown(&b, "bench"); err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Fatal("docs/benchmarks.md is not what docs/bench/bench.json renders: run ringfire-bench --render docs/bench/bench.json --out docs/bench --markdown docs/benchmarks.md")
	}
}
