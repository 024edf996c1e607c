package main

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/testenv"

	"github.com/ringfire/ringfire/internal/netns"
)

// runIn runs the CLI on a thread inside ns (sockets, reconnects included).
func runIn(ns *netns.NS, args ...string) (done <-chan struct{}, out *bytes.Buffer, errp *error) {
	out = new(bytes.Buffer)
	var err error
	var stderr bytes.Buffer
	done = ns.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err = run(ctx, args, out, &stderr)
	})
	return done, out, &err
}

// waitListening waits until a TCP socket in ns listens on addr's port
// (as ss sees it), so that what connects next finds it; bounded in time.
func waitListening(t *testing.T, ns *netns.NS, addr string) {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Until(t, 10*time.Second, "a listener on "+addr+" in "+ns.Name, func() bool {
		out, err := ns.Exec("ss", "-Hltn", "sport = :"+port)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out) != ""
	})
}

func waitDone(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not end", what)
	}
}

// serve and mirror as commands, in two namespaces, for every transport: the
// mirror ring validates with tail and both print their counters.
func TestServeMirrorCommands(t *testing.T) {
	netns.Require(t)
	for _, tc := range []struct {
		name        string
		serve, mirr []string
		transport   string
		keyed       bool // both ends get a fresh key (ringfire keygen) and --encrypt
		unix        bool // serve --unix; the mirror, on the source host, dials unix:PATH
	}{
		{"unix", nil, nil, "unix", false, true},
		{"tcp", nil, []string{"--tcp"}, "tcp", false, false},
		{"multicast", []string{"--multicast", "239.255.0.1:7401"}, nil, "udp multicast", false, false},
		{"unicast", []string{"--udp", "7403", "--dup", "2"}, []string{"--unicast"}, "udp unicast", false, false},
		{"keyed unicast", []string{"--udp", "7403"}, []string{"--unicast"}, "udp unicast", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := netns.NewPair(t)
			dir := t.TempDir()
			src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
			if tc.keyed {
				key := filepath.Join(dir, "key")
				mustRun(t, "keygen", key)
				keyed := []string{"--key", key, "--encrypt"}
				tc.serve, tc.mirr = append(tc.serve, keyed...), append(tc.mirr, keyed...)
			}
			mustRun(t, "gen", src, "--count", "20000", "--size", "56", "--capacity", "65536")
			bind := p.AAddr.String() + ":7400"
			source, mns, miface := bind, p.B, p.BAddr.String()
			if tc.unix {
				sock := filepath.Join(dir, "s.sock")
				tc.serve = append(tc.serve, "--unix", sock)
				source, mns, miface = "unix:"+sock, p.A, p.AAddr.String()
			}
			// The mirror goes on until the source stops (--once), bounded by
			// its --duration: a loaded machine may take seconds to start it.
			sdone, sout, serr := runIn(p.A, append([]string{"serve", src, "--bind", bind, "--iface", p.AAddr.String(), "--duration", "5s"}, tc.serve...)...)
			waitListening(t, p.A, bind) // the Unix socket listens before the TCP one
			mdone, mout, merr := runIn(mns, append([]string{"mirror", source, dst, "--from", "oldest", "--iface", miface, "--once", "--duration", "30s"}, tc.mirr...)...)
			waitDone(t, mdone, "mirror")
			waitDone(t, sdone, "serve")
			if *merr != nil || *serr != nil {
				t.Fatalf("mirror: %v, serve: %v", *merr, *serr)
			}
			wantContains(t, "mirror output", mout.String(), "mirror: "+tc.transport, "next 20001", "gaps 0")
			wantContains(t, "serve output", sout.String(), "serve: ", "write_seq 20000")
			out := mustRun(t, "tail", dst, "--from", "oldest", "--quiet", "--count", "20000", "--timeout", "1s")
			wantContains(t, "tail of the mirror", out, "received 20000", "checksum errors 0", "sequence errors 0")
		})
	}
}

func TestServeMirrorErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"serve", "/nonexistent/ring"}, "no such file"},
		{[]string{"serve", "x", "--multicast", "10.0.0.1:5"}, "multicast GROUP:PORT"},
		{[]string{"serve", "x", "--iface", "nosuchif0"}, "--iface"},
		{[]string{"mirror", "127.0.0.1:1"}, "missing PATH"},
		{[]string{"mirror", "127.0.0.1:1", "p", "--from", "yesterday"}, "--from"},
		{[]string{"mirror", "127.0.0.1:1", filepath.Join(t.TempDir(), "m"), "--once", "--reconnect-ms", "10"}, "connect"},
	}
	for _, c := range cases {
		_, _, err := runCmd(t, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v, want it to mention %q", c.args, err, c.want)
		}
	}
}
