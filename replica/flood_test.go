package replica_test

// The idle-connection flood: child processes (this test binary, started
// by TestMain's dispatch) hold 20,000 idle TCP connections to a source
// while a legitimate mirror replicates. Two children hold 10,000 each:
// this machine kind's descriptor limit is 20,000 per process, and the
// tests cannot raise it (no CAP_SYS_RESOURCE).

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/testenv"
	"github.com/ringfire/ringfire/replica"
)

// floodEnv names the address a flood child connects to; floodConns is
// how many connections the children hold in all.
const (
	floodEnv      = "RINGFIRE_TEST_FLOOD_ADDR"
	floodConns    = 20_000
	floodChildren = 2
	floodStep     = 1000
)

func TestMain(m *testing.M) {
	if addr := os.Getenv(floodEnv); addr != "" {
		os.Exit(floodChild(addr))
	}
	os.Exit(m.Run())
}

// floodChild opens its share of floodConns connections to addr that
// never say HELLO, floodStep at a time: after each step it prints "held
// N" (N so far) and waits for a line on stdin, so that the source's
// listen queue never overflows (connections the kernel gave up on in
// SYN_RECV would be no flood at all). Then it holds them all until its
// stdin closes.
func floodChild(addr string) int {
	in := bufio.NewReader(os.Stdin)
	var held []net.Conn
	for len(held) < floodConns/floodChildren {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			fmt.Fprintf(os.Stderr, "flood: connection %d: %v\n", len(held)+1, err)
			return 1
		}
		if held = append(held, c); len(held)%floodStep == 0 {
			fmt.Printf("held %d\n", len(held))
			if _, err := in.ReadString('\n'); err != nil {
				return 1
			}
		}
	}
	io.Copy(io.Discard, os.Stdin)
	return 0
}

// TestIdleConnectionFlood: 20,000 idle connections from one host, with
// this process (the source) limited to a few hundred more descriptors
// than it started with, cost the source one connection slot per allowed
// connection, not one per attempt: the rest are refused, its goroutines
// stay few, and a mirror on another host connects and replicates.
func TestIdleConnectionFlood(t *testing.T) {
	lan, src := lanSource(t, 3, 4096)
	srv := src.serve(replica.ServerConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// The source runs with a few hundred descriptors more than it has now:
	// far fewer than the flood's connections.
	defer lowerFDLimit(t, 400)()
	for k := range floodChildren {
		floodStepwise(t, ctx, lan.Hosts[2], srv, k*floodConns/floodChildren)
	}
	st := srv.Stats()
	t.Logf("during the flood: goroutines %d; server %+v", runtime.NumGoroutine(), st)
	if n := runtime.NumGoroutine(); n > 1000 || st.AcceptErrors != 0 {
		t.Fatalf("the flood cost the source: %d goroutines, %+v", n, st)
	}
	mr := startMirror(t, lan.Hosts[1], lan.Addrs[1], src, replica.MirrorConfig{From: fromOldest}, nil)
	mr.connected()
	src.push(1000)
	mr.waitFor(1000, 10*time.Second)
	mr.close()
	sameSlots(t, src.path, mr.path, 1)
}

// floodStepwise starts a flood child in ns and steps it until it holds its
// connections, each step once the source has accepted (and refused) the
// step's connections; before is what earlier children hold. The test's
// cleanup ends it.
func floodStepwise(t *testing.T, ctx context.Context, ns *netns.NS, srv *replica.Server, before int) {
	t.Helper()
	cmd := ns.Run(ctx, os.Args[0])
	cmd.Env = append(os.Environ(), floodEnv+"="+srv.Addr().String())
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	lines := bufio.NewReader(out)
	for held := floodStep; held <= floodConns/floodChildren; held += floodStep {
		line, err := lines.ReadString('\n')
		if want := fmt.Sprintf("held %d", held); strings.TrimSpace(line) != want {
			t.Fatalf("flood child: %q, %v; want %q", line, err, want)
		}
		// Refused at once, or admitted (64 at a time) and dropped when
		// their handshake timed out (BadFrames).
		done := uint64(before + held - replica.DefaultMaxConnsPerAddr)
		testenv.Until(t, time.Minute, fmt.Sprintf("%d connections handled", done), func() bool {
			st := srv.Stats()
			return st.Refused+st.BadFrames >= done
		})
		if _, err := io.WriteString(stdin, "more\n"); err != nil {
			t.Fatal(err)
		}
	}
}
