package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/testenv"
	"github.com/ringfire/ringfire/shm"
)

// A ring file cut under its mappings (issue 38, item 1): each command is
// a child process (this test binary as the CLI), so that a SIGBUS would
// show as what it is, a process dying of "fatal error: fault" with exit
// status 2, and not as a failed assertion in the test's own process.

// errorLines counts the lines of the child's output that report the cut
// of path as an error.
func (c *child) errorLines(path string) int {
	n := 0
	for _, l := range strings.Split(c.logs(), "\n") {
		if strings.Contains(l, path+" was cut") && (strings.Contains(l, "level=ERROR") || strings.HasPrefix(l, "tail: ") || strings.HasPrefix(l, "ringfire: ")) {
			n++
		}
	}
	return n
}

// oneError fails t unless the child reported the cut of path in exactly
// one error line.
func (c *child) oneError(t *testing.T, path string) {
	t.Helper()
	testenv.Until(t, 20*time.Second, c.name+" to report the cut", func() bool {
		c.noFault(t)
		return c.errorLines(path) > 0
	})
	if n := c.errorLines(path); n != 1 {
		t.Fatalf("%s reported the cut of %s in %d error lines, want 1:\n%s", c.name, path, n, c.logs())
	}
}

// attached waits until the child has mapped the ring at path: a cut
// before that would find a tail still opening the file, or one that
// opened the fresh ring after it.
func attached(t *testing.T, path string, c *child) {
	t.Helper()
	maps := fmt.Sprintf("/proc/%d/maps", c.cmd.Process.Pid)
	testenv.Until(t, 20*time.Second, c.name+" to map "+path, func() bool {
		c.alive(t)
		b, err := os.ReadFile(maps)
		return err == nil && bytes.Contains(b, []byte(" "+path+"\n"))
	})
}

// shmDir is a fresh directory in /dev/shm, where rings live.
func shmDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "ringfire-cut-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// writeSeq is the ring's write_seq (0 when it cannot be opened).
func writeSeq(path string) uint64 {
	var w uint64
	shm.Protect(func() error {
		r, err := shm.Open(path, shm.OpenOptions{})
		if err != nil {
			return err
		}
		defer r.Close()
		w = r.WriteSeq()
		return nil
	})
	return w
}

// growing waits until the ring at path has gone past its write_seq now
// by 1,000 records.
func growing(t *testing.T, path string) { t.Helper(); growingBy(t, path, 1000) }

// growingBy waits until the ring at path has gone past its write_seq now
// by n records.
func growingBy(t *testing.T, path string, n uint64) {
	t.Helper()
	from := writeSeq(path)
	testenv.Until(t, 20*time.Second, path+" growing", func() bool { return writeSeq(path) > from+n })
}

// cut truncates the file at path to its size times frac (0: to nothing).
func cut(t *testing.T, path string, frac float64) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, int64(float64(st.Size())*frac)); err != nil {
		t.Fatal(err)
	}
}

var cuts = []struct {
	name string
	frac float64
}{{"to-zero", 0}, {"to-half", 0.5}}

// TestCutSourceRing: the source ring cut under gen (its producer), serve,
// a tail and, through serve, a mirror. gen exits with an error naming the
// file; serve and tail each report it once and wait for a valid ring;
// once a new gen makes one, serve serves it (the mirror starts a fresh
// copy) and tail reattaches. Nothing dies of a signal. Before the fault
// guard, gen, serve and tail died of SIGBUS (exit status 2).
func TestCutSourceRing(t *testing.T) {
	for _, c := range cuts {
		t.Run(c.name, func(t *testing.T) {
			dir := shmDir(t)
			src, dst, sock := filepath.Join(dir, "src"), filepath.Join(dir, "dst"), filepath.Join(dir, "sock")
			gen := startChild(t, "gen", "gen", src, "--rate", "20000", "--capacity", "1024")
			testenv.Until(t, 10*time.Second, "gen's ring", func() bool { return writeSeq(src) > 0 })
			serve := startChild(t, "serve", "serve", src, "--bind", "127.0.0.1:0", "--unix", sock)
			serve.waitLog(t, "msg=serving")
			mirror := startChild(t, "mirror", "mirror", "unix:"+sock, dst, "--from", "oldest", "--reconnect-ms", "50")
			tail := startChild(t, "tail", "tail", src, "--quiet")
			attached(t, src, tail)
			growing(t, dst)
			growing(t, src) // and tail reads it

			cut(t, src, c.frac)
			gen.exitedWithError(t)
			wantContains(t, "gen's output", gen.logs(), src+" was cut under its mapping")
			serve.oneError(t, src)
			tail.oneError(t, src)
			serve.alive(t)
			tail.alive(t)
			mirror.alive(t)

			// A new producer: serve and tail go on with its ring, the
			// mirror with a fresh copy of it.
			startChild(t, "gen (again)", "gen", src, "--rate", "20000", "--capacity", "1024", "--replace")
			testenv.Until(t, 20*time.Second, "serve to serve the new ring", func() bool {
				return strings.Count(serve.logs(), "msg=serving") == 2
			})
			tail.waitLog(t, "reattached")
			growing(t, dst)
			for _, p := range []*child{serve, mirror, tail} {
				p.stop(t)
			}
		})
	}
}

// TestCutMirrorRing: a mirror's own ring cut under it (and under a tail
// of it). The mirror ends that session with one error naming the file
// and starts a fresh ring at the next; tail reports it once and
// reattaches to the fresh ring; serve and gen do not notice. Before the
// fault guard, the mirror and tail died of SIGBUS.
func TestCutMirrorRing(t *testing.T) {
	for _, c := range cuts {
		t.Run(c.name, func(t *testing.T) {
			dir := shmDir(t)
			src, dst, sock := filepath.Join(dir, "src"), filepath.Join(dir, "dst"), filepath.Join(dir, "sock")
			gen := startChild(t, "gen", "gen", src, "--rate", "20000", "--capacity", "1024")
			testenv.Until(t, 10*time.Second, "gen's ring", func() bool { return writeSeq(src) > 0 })
			serve := startChild(t, "serve", "serve", src, "--bind", "127.0.0.1:0", "--unix", sock)
			serve.waitLog(t, "msg=serving")
			mirror := startChild(t, "mirror", "mirror", "unix:"+sock, dst, "--reconnect-ms", "50")
			growing(t, dst)
			tail := startChild(t, "tail", "tail", dst, "--quiet")
			attached(t, dst, tail)
			growing(t, dst)

			cut(t, dst, c.frac)
			mirror.oneError(t, dst)
			tail.oneError(t, dst)
			tail.waitLog(t, "reattached")
			growing(t, dst) // the fresh ring
			for _, p := range []*child{gen, serve, mirror, tail} {
				p.alive(t)
				p.noFault(t)
			}
			if strings.Contains(serve.logs(), "level=ERROR") {
				t.Fatalf("serve logged an error for a mirror's ring:\n%s", serve.logs())
			}
			for _, p := range []*child{tail, mirror, serve, gen} {
				p.stop(t)
			}
		})
	}
}

// TestCutRingUnderRun: `ringfire run` serves two rings and mirrors a
// third source, each unit on a thread of its own or all on one
// replica.Loop (the loop key). The served ring a is cut, then the mirror
// unit's own ring: each is that unit's error alone (one line naming the
// file) and the other units go on: the served ring b's mirror (another
// process) stays connected, and a tail of its copy loses nothing. Before
// the fault guards the first cut killed the process (SIGBUS); before the
// guards of a Loop's ring watcher and members, either cut ended the loop
// with every unit on it.
func TestCutRingUnderRun(t *testing.T) {
	for _, layout := range []struct{ name, key string }{{"threads", ""}, {"loop", "loop = \"yield\"\n\n"}} {
		for _, c := range cuts {
			t.Run(layout.name+"/"+c.name, func(t *testing.T) { cutUnderRun(t, layout.key, c.frac) })
		}
	}
}

// metricsAt is the address of the child's metrics endpoint, from its log.
func metricsAt(t *testing.T, c *child) string {
	t.Helper()
	c.waitLog(t, "msg=metrics addr=")
	_, after, _ := strings.Cut(c.logs(), "msg=metrics addr=")
	addr, _, _ := strings.Cut(after, " ")
	return addr
}

func cutUnderRun(t *testing.T, key string, frac float64) {
	dir := shmDir(t)
	p := func(name string) string { return filepath.Join(dir, name) }
	genA := startChild(t, "gen a", "gen", p("a"), "--rate", "20000", "--capacity", "1024")
	startChild(t, "gen b", "gen", p("b"), "--rate", "20000", "--capacity", "65536")
	startChild(t, "gen c", "gen", p("c"), "--rate", "20000", "--capacity", "1024")
	testenv.Until(t, 10*time.Second, "gen's rings", func() bool {
		return writeSeq(p("a")) > 0 && writeSeq(p("b")) > 0 && writeSeq(p("c")) > 0
	})
	serveC := startChild(t, "serve c", "serve", p("c"), "--bind", "127.0.0.3:0", "--unix", p("c.sock"))
	serveC.waitLog(t, "msg=serving")
	cfg := p("run.toml")
	writeFile(t, cfg, "metrics = \"127.0.0.1:0\"\n"+key+fmt.Sprintf(`[[serve]]
ring = %q
bind = "127.0.0.1:0"
unix = %q

[[serve]]
ring = %q
bind = "127.0.0.2:0"
unix = %q

[[mirror]]
source = %q
ring = %q
reconnect-ms = 50
`, p("a"), p("a.sock"), p("b"), p("b.sock"), "unix:"+p("c.sock"), p("c.copy")))
	run := startChild(t, "run", "run", cfg)
	testenv.Until(t, 20*time.Second, "both serves", func() bool {
		run.alive(t)
		return strings.Count(run.logs(), "msg=serving") == 2
	})
	growing(t, p("c.copy"))
	mirrorB := startChild(t, "mirror b", "mirror", "unix:"+p("b.sock"), p("b.copy"), "--reconnect-ms", "50")
	growing(t, p("b.copy"))
	tailB := startChild(t, "tail b", "tail", p("b.copy"), "--quiet")
	growing(t, p("b.copy"))

	cut(t, p("a"), frac)
	run.oneError(t, p("a"))
	genA.exitedWithError(t)
	growingBy(t, p("b.copy"), 20000) // b is still served, a second on

	cut(t, p("c.copy"), frac)
	run.oneError(t, p("c.copy"))
	growing(t, p("c.copy")) // the mirror unit's fresh ring
	growingBy(t, p("b.copy"), 20000)
	m := scrape(t, "http://"+metricsAt(t, run)+"/metrics")
	for series, want := range map[string]float64{
		`ringfire_serve_ring_cuts_total{ring="a"}`:             1,
		`ringfire_serve_ring_cuts_total{ring="b"}`:             0,
		`ringfire_local_mirror_ring_cuts_total{ring="c.copy"}`: 1,
	} {
		if got, ok := m[series]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", series, got, ok, want)
		}
	}
	for _, x := range []*child{run, mirrorB, tailB, serveC} {
		x.alive(t)
		x.noFault(t)
	}
	if strings.Contains(mirrorB.logs(), "disconnected") {
		t.Fatalf("the mirror of the ring not cut was disconnected:\n%s", mirrorB.logs())
	}
	tailB.stop(t)
	wantContains(t, "tail of b's copy", tailB.logs(), "lapped 0, gaps 0, checksum errors 0, sequence errors 0")
	for _, x := range []*child{mirrorB, run, serveC} {
		x.stop(t)
	}
}

// TestCutUnderTop: top, which maps a ring for as long as it runs, ends
// with an error naming the file when the ring is cut, as gen does,
// instead of dying of SIGBUS (to zero) or printing a frozen write_seq
// (to half: the header survives). stat and dump read the ring the same way,
// under the same guard, for the moment they map it.
func TestCutUnderTop(t *testing.T) {
	for _, c := range cuts {
		t.Run(c.name, func(t *testing.T) {
			src := filepath.Join(shmDir(t), "src")
			startChild(t, "gen", "gen", src, "--rate", "20000", "--capacity", "1024")
			testenv.Until(t, 10*time.Second, "gen's ring", func() bool { return writeSeq(src) > 0 })
			top := startChild(t, "top", "top", src, "--interval-ms", "1")
			attached(t, src, top)
			top.waitLogs(t, 3, "\n")
			cut(t, src, c.frac)
			top.exitedWithError(t)
			wantContains(t, "top's output", top.logs(), src+" was cut")
		})
	}
}
