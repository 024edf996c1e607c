package main

import (
	"errors"
	"flag"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/replica"
)

// A unicast line B's flags are checked with an error naming them: on
// serve, --iface-b needs --multicast-b or --udp, and without
// --multicast-b a specific address; on mirror, --unicast takes it.
func TestLineUnicastFlags(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ring := filepath.Join(t.TempDir(), "r")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--iface-b", "10.0.0.1"}, "need --multicast-b or --udp"},
		{[]string{"--udp", "7600", "--transport-b", "udp"}, "--iface-b: a unicast line B"},
		{[]string{"--udp", "7600", "--iface-b", "0.0.0.0"}, "--iface-b"},
		{[]string{"--udp", "7600", "--iface-b", "nosuchif0"}, "--iface-b"},
		{[]string{"--udp", "7600", "--iface-b", "10.0.0.1", "--transport-b", "pigeon"}, "--transport-b"},
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
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	f := addServeFlags(fs)
	if err := fs.Parse([]string{"--udp", "7600", "--iface-b", "10.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	u, err := f.unit(ring, log)
	if err != nil {
		t.Fatal(err)
	}
	if u.cfg.IfaceB.String() != "10.0.0.1" || u.cfg.MulticastB.IsValid() || u.cfg.NewTransportB == nil || u.cfg.UDPPort != 7600 {
		t.Errorf("serve unicast line B: IfaceB %v, MulticastB %v, UDPPort %d", u.cfg.IfaceB, u.cfg.MulticastB, u.cfg.UDPPort)
	}
	ms, mf := mirrorFlagSet()
	if err := ms.Parse([]string{"--unicast", "--iface-b", "10.0.0.2"}); err != nil {
		t.Fatal(err)
	}
	mu, err := mf.unit("127.0.0.1:7400", ring, log, nil)
	if err != nil {
		t.Fatalf("mirror --unicast --iface-b: %v", err)
	}
	mu.m.Close()
	mc := replica.MirrorConfig{Unicast: true}
	if err := mf.lines.mirror(&mc, &mf.xdp, log); err != nil || mc.IfaceB.String() != "10.0.0.2" || mc.NewTransportB == nil {
		t.Errorf("mirror unicast line B: %v, IfaceB %v", err, mc.IfaceB)
	}
}

// The unicast line B keys of ringfire run are refused as the flags are.
func TestRunLineUnicastKeys(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, text, want string }{
		{"udp-iface-b", "[[serve]]\nring = \"/dev/shm/a\"\nudp = 7600\niface-b = \"0.0.0.0\"\n", "--iface-b"},
		{"iface-b-alone", "[[serve]]\nring = \"/dev/shm/a\"\niface-b = \"10.0.0.1\"\n", "need --multicast-b or --udp"},
		{"mirror-tcp", "[[mirror]]\nsource = \"h:1\"\nring = \"/dev/shm/a\"\nunicast = true\ntcp = true\niface-b = \"10.0.0.2\"\n", "--iface-b"},
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

// serve --udp --iface-b and mirror --unicast --iface-b as commands, line
// B on a second veth network: the mirror punches on both lines and takes
// the whole ring from both.
func TestServeMirrorTwoUnicastLines(t *testing.T) {
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
		"--udp", "7600", "--iface-b", lb.AAddr.String())
	waitListening(t, p.A, bind)
	mdone, mout, merr := runIn(p.B, "mirror", bind, dst, "--from", "oldest", "--unicast", "--iface", p.BAddr.String(),
		"--iface-b", lb.BAddr.String(), "--duration", "2s")
	waitDone(t, mdone, "mirror")
	waitDone(t, sdone, "serve")
	if *merr != nil || *serr != nil {
		t.Fatalf("mirror: %v, serve: %v", *merr, *serr)
	}
	wantContains(t, "mirror output", mout.String(), "mirror: udp+udp unicast", "next 20001", "gaps 0",
		"  line A (udp, up): datagrams ", "  line B (udp, up): datagrams ")
	wantContains(t, "serve output", sout.String(), "serve: ", "write_seq 20000")
	out := mustRun(t, "tail", dst, "--from", "oldest", "--quiet", "--count", "20000", "--timeout", "1s")
	wantContains(t, "tail of the mirror", out, "received 20000", "checksum errors 0", "sequence errors 0")
}
