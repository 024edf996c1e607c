package supervisor

import (
	"slices"
	"testing"
)

// reloadCases are old and new files and what a reload from one to the
// other does, unit by unit.
var reloadCases = []struct {
	name, old, new             string
	start, restart, stop, keep []string
}{
	{
		name:  "first start",
		new:   serveT("a", "") + mirrorT("b", ""),
		start: []string{"serve a", "mirror b"},
	},
	{
		name: "same file",
		old:  serveT("a", "") + mirrorT("b", ""),
		new:  serveT("a", "") + mirrorT("b", ""),
		keep: []string{"serve a", "mirror b"},
	},
	{
		name:  "added and removed",
		old:   serveT("a", "") + serveT("b", "bind = \":7410\"\n"),
		new:   serveT("a", "") + serveT("c", "bind = \":7420\"\n"),
		start: []string{"serve c"}, stop: []string{"serve b"}, keep: []string{"serve a"},
	},
	{
		name:    "a changed key restarts its unit alone",
		old:     serveT("a", "udp = 7403\n") + mirrorT("b", ""),
		new:     serveT("a", "udp = 7403\ndup = 2\n") + mirrorT("b", ""),
		restart: []string{"serve a"}, keep: []string{"mirror b"},
	},
	{
		name:    "a key's kind counts",
		old:     serveT("a", "udp = 7403\n"),
		new:     serveT("a", "udp = \"7403\"\n"),
		restart: []string{"serve a"},
	},
	{
		name:    "a changed source restarts the mirror",
		old:     mirrorT("b", ""),
		new:     "[[mirror]]\nsource = \"h:2\"\nring = \"/dev/shm/b\"\n",
		restart: []string{"mirror b"},
	},
	{
		name: "moved and commented: kept",
		old:  serveT("a", "") + mirrorT("b", ""),
		new:  "# the mirror first now\n" + mirrorT("b", "") + "\n\n" + serveT("a", ""),
		keep: []string{"mirror b", "serve a"},
	},
	{
		name:  "renamed: another unit",
		old:   serveT("a", ""),
		new:   "[[serve]]\nname = \"z\"\nring = \"/dev/shm/a\"\n",
		start: []string{"serve z"}, stop: []string{"serve a"},
	},
	{
		name:  "a serve and a mirror of one ring are two units",
		old:   serveT("a", ""),
		new:   serveT("a", "") + mirrorT("a", ""),
		start: []string{"mirror a"}, keep: []string{"serve a"},
	},
	{
		name: "process-wide keys are not units",
		old:  serveT("a", ""),
		new:  "metrics = \":9464\"\nlog-format = \"json\"\n" + serveT("a", ""),
		keep: []string{"serve a"},
	},
	{
		name:    "everything at once",
		old:     serveT("a", "") + serveT("b", "bind = \":7410\"\n") + mirrorT("c", "") + mirrorT("d", ""),
		new:     mirrorT("d", "from = \"oldest\"\n") + serveT("a", "") + mirrorT("e", ""),
		start:   []string{"mirror e"},
		restart: []string{"mirror d"},
		stop:    []string{"serve b", "mirror c"},
		keep:    []string{"serve a"},
	},
}

func serveT(ring, keys string) string {
	return "[[serve]]\nring = \"/dev/shm/" + ring + "\"\n" + keys
}

func mirrorT(ring, keys string) string {
	return "[[mirror]]\nsource = \"h:1\"\nring = \"/dev/shm/" + ring + "\"\n" + keys
}

// parse parses text ("": no file yet, nil).
func parse(t *testing.T, text string) *Config {
	t.Helper()
	if text == "" {
		return nil
	}
	c, err := Parse("f.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func units(ts []*Table) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Unit())
	}
	return out
}

// Diff, a pure function of two files, starts, restarts, stops and keeps
// the units reloadCases say, in the files' order.
func TestDiff(t *testing.T) {
	for _, c := range reloadCases {
		t.Run(c.name, func(t *testing.T) {
			p := Diff(parse(t, c.old), parse(t, c.new))
			for _, g := range []struct {
				what      string
				got, want []string
			}{{"start", units(p.Start), c.start}, {"restart", units(p.Restart), c.restart}, {"stop", units(p.Stop), c.stop}, {"keep", units(p.Keep), c.keep}} {
				if !slices.Equal(g.got, g.want) {
					t.Errorf("%s %q, want %q", g.what, g.got, g.want)
				}
			}
			want := Change{len(c.start), len(c.stop), len(c.restart), len(c.keep)}
			if p.Change() != want {
				t.Errorf("change %+v, want %+v", p.Change(), want)
			}
		})
	}
}
