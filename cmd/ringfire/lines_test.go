package main

import (
	"errors"
	"flag"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/replica"
)

// Every line B flag is validated with an error naming it, on serve and
// mirror (and so as ringfire run keys, which are these flags).
func TestLineFlagsRefused(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ring := filepath.Join(t.TempDir(), "r")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--multicast-b", "239.255.1.1:7401"}, "--multicast-b needs --multicast"},
		{[]string{"--multicast", "239.255.0.1:7401", "--multicast-b", "10.0.0.1:7401"}, "--multicast-b"},
		{[]string{"--multicast", "239.255.0.1:7401", "--multicast-b", "239.255.0.1:7401"}, "--multicast-b"},
		{[]string{"--multicast", "239.255.0.1:7401", "--iface-b", "10.0.0.1"}, "need --multicast-b"},
		{[]string{"--multicast", "239.255.0.1:7401", "--multicast-b", "239.255.1.1:7401", "--iface-b", "nosuchif0"}, "--iface-b"},
		{[]string{"--multicast", "239.255.0.1:7401", "--multicast-b", "239.255.1.1:7401", "--transport-b", "carrier-pigeon"}, "--transport-b"},
		{[]string{"--multicast", "239.255.0.1:7401", "--multicast-b", "239.255.1.1:7401", "--transport-b", "udp", "--xdp-b", "eth1"}, "--xdp-b"},
	} {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f := addServeFlags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		_, err := f.unit(ring, log)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("serve %v: %v, want an error naming %s", c.args, err, c.want)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--iface-b", "10.0.0.1", "--tcp"}, "--iface-b"},
		{[]string{"--iface-b", "nosuchif0"}, "--iface-b"},
		{[]string{"--line-window", "5ms"}, "--line-window needs --iface-b"},
		{[]string{"--iface-b", "10.0.0.1", "--line-window", "1s"}, "--line-window"},
		{[]string{"--transport-b", "xdp"}, "--transport-b needs --iface-b"},
		{[]string{"--iface-b", "10.0.0.1", "--transport-b", "nope"}, "--transport-b"},
	} {
		fs, f := mirrorFlagSet()
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		_, err := f.unit("127.0.0.1:7400", ring, log, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("mirror %v: %v, want an error naming %s", c.args, err, c.want)
		}
	}
}

// The line B flags reach the configurations.
func TestLineFlagsSet(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	f := addServeFlags(fs)
	if err := fs.Parse([]string{"--multicast", "239.255.0.1:7401", "--multicast-b", "239.255.1.1:7402", "--iface-b", "10.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	u, err := f.unit(filepath.Join(t.TempDir(), "r"), log)
	if err != nil {
		t.Fatal(err)
	}
	if u.cfg.MulticastB.String() != "239.255.1.1:7402" || u.cfg.IfaceB.String() != "10.0.0.1" || u.cfg.NewTransportB == nil {
		t.Errorf("serve line B: %v %v", u.cfg.MulticastB, u.cfg.IfaceB)
	}
	var mc replica.MirrorConfig
	ms, mf := mirrorFlagSet()
	if err := ms.Parse([]string{"--iface-b", "10.0.0.2", "--line-window", "3ms"}); err != nil {
		t.Fatal(err)
	}
	if err := mf.lines.mirror(&mc, &mf.xdp, log); err != nil {
		t.Fatal(err)
	}
	if mc.IfaceB.String() != "10.0.0.2" || mc.LineWindow != 3*time.Millisecond || mc.NewTransportB == nil {
		t.Errorf("mirror line B: %v %v", mc.IfaceB, mc.LineWindow)
	}
}

// serve --multicast-b and mirror --iface-b as commands, line B on a
// second veth network: the mirror takes both lines and the whole ring.
func TestServeMirrorTwoLines(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	lb, err := p.AddLink()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	mustRun(t, "gen", src, "--count", "20000", "--size", "56", "--capacity", "65536")
	bind := p.AAddr.String() + ":7400"
	sdone, sout, serr := runIn(p.A, "serve", src, "--bind", bind, "--iface", p.AAddr.String(), "--duration", "3s",
		"--multicast", "239.255.0.1:7401", "--multicast-b", "239.255.1.1:7501", "--iface-b", lb.AAddr.String())
	waitListening(t, p.A, bind)
	mdone, mout, merr := runIn(p.B, "mirror", bind, dst, "--from", "oldest", "--iface", p.BAddr.String(),
		"--iface-b", lb.BAddr.String(), "--line-window", "2ms", "--duration", "2s")
	waitDone(t, mdone, "mirror")
	waitDone(t, sdone, "serve")
	if *merr != nil || *serr != nil {
		t.Fatalf("mirror: %v, serve: %v", *merr, *serr)
	}
	wantContains(t, "mirror output", mout.String(), "mirror: udp+udp multicast", "next 20001", "gaps 0",
		"  line A (udp, up): datagrams ", "  line B (udp, up): datagrams ")
	wantContains(t, "serve output", sout.String(), "serve: ", "write_seq 20000")
	out := mustRun(t, "tail", dst, "--from", "oldest", "--quiet", "--count", "20000", "--timeout", "1s")
	wantContains(t, "tail of the mirror", out, "received 20000", "checksum errors 0", "sequence errors 0")
}

// The line B flags are ringfire run keys, refused as the flags are.
func TestRunLineKeys(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, text, want string }{
		{"multicast-b", "[[serve]]\nring = \"/dev/shm/a\"\nmulticast = \"239.1.1.1:7401\"\nmulticast-b = \"10.0.0.1:7401\"\n", `--multicast-b "10.0.0.1:7401"`},
		{"line-window", "[[mirror]]\nsource = \"h:1\"\nring = \"/dev/shm/a\"\niface-b = \"10.0.0.2\"\nline-window = \"1s\"\n", `--line-window 1s`},
	} {
		file := filepath.Join(dir, c.name+".toml")
		writeFile(t, file, c.text)
		_, _, err := runCmd(t, "run", file)
		var ue *usageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want a usage error containing %q", c.name, err, c.want)
		}
	}
}
