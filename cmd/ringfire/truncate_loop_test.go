package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/testenv"
)

// TestCutRingUnderRunLoop: `ringfire run` with the loop key runs every
// unit on one replica.Loop: two serves and a mirror of a third source.
// The served ring a is cut, then the mirror unit's own ring: each is that
// unit's error alone (one line naming the file), the loop goes on, and
// the served ring b's mirror (another process) stays connected and loses
// nothing. Without the guards of the loop's ring watcher and of a mirror
// member's steps, the first cut killed the process (SIGBUS) and the
// second ended the loop with every unit on it.
func TestCutRingUnderRunLoop(t *testing.T) {
	for _, c := range cuts {
		t.Run(c.name, func(t *testing.T) {
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
			writeFile(t, cfg, fmt.Sprintf(`loop = "yield"

[[serve]]
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

			cut(t, p("a"), c.frac)
			run.oneError(t, p("a"))
			genA.exitedWithError(t)
			growingBy(t, p("b.copy"), 20000) // b is still served, a second on

			cut(t, p("c.copy"), c.frac)
			run.oneError(t, p("c.copy"))
			growing(t, p("c.copy")) // the mirror unit's fresh ring
			growingBy(t, p("b.copy"), 20000)
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
		})
	}
}
