package replica_test

// A source also listens on a Unix socket (ServerConfig.Unix) for mirrors on
// its host, which dial "unix:PATH": the stream carries everything, the
// source writes it from its hot thread and the mirror reads it on its own
// loop, as for a plain TCP-only mirror.

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/replica/wire"
)

// unixSocket is a socket path in a fresh directory (the path stays under
// the 108 bytes a sockaddr_un holds).
func unixSocket(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "rf-unix")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "s.sock")
}

func TestUnixMirrorReplicates(t *testing.T) {
	cases := []struct {
		name   string
		wait   replica.WaitMode
		onLoop bool
	}{
		{"adaptive", replica.WaitAdaptive, false},
		{"block", replica.WaitBlock, false},
		{"yield", replica.WaitYield, false},
		{"adaptive on a Loop", replica.WaitAdaptive, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, src := pairSource(t, 4096)
			path := unixSocket(t)
			scfg := replica.ServerConfig{Unix: path, Wait: tc.wait}
			mcfg := replica.MirrorConfig{Source: replica.UnixPrefix + path, From: fromOldest, Wait: tc.wait,
				Ring: filepath.Join(t.TempDir(), "mirror"), Reconnect: 50 * time.Millisecond}
			if tc.onLoop {
				loop := runLoop(t, p.A, tc.wait)
				scfg.Loop, mcfg.Loop = loop, loop
			}
			srv := src.serve(scfg)
			if got := srv.UnixAddr(); got != path {
				t.Fatalf("UnixAddr = %q, want %q", got, path)
			}
			src.push(300) // history, sent by the session's writer
			m, err := replica.NewMirror(mcfg)
			if err != nil {
				t.Fatal(err)
			}
			mr := &mirror{tb: t, path: mcfg.Ring}
			mr.launch(m, p.A.Go)
			mr.waitFor(300, 10*time.Second)
			if !replica.DirectTCP(m) {
				t.Fatal("the mirror does not read its Unix socket itself")
			}
			fds := replica.SessionSockets(srv)
			if len(fds) != 1 || fds[0] < 0 {
				t.Fatalf("session sockets %v: the source's Unix session is in Go's poller", fds)
			}
			if eps := epollsWatching(t, fds[0]); len(eps) != 0 {
				t.Fatalf("the source's Unix session socket is in the epoll set of descriptors %v", eps)
			}
			direct := srv.Stats().DirectSends
			// One record at a time, the writer parked between them: the
			// hot thread that sees each one writes it.
			src.pushPaced(200, 1, 500*time.Microsecond)
			last := src.w.Next() - 1
			mr.waitFor(last, 10*time.Second)
			sst, st := finish(t, srv, mr)
			sameSlots(t, src.path, mr.path, 1)
			wantAll(t, st, last, "unix")
			oneConnection(t, st)
			if st.Datagrams != 0 || sst.Datagrams != 0 {
				t.Fatalf("datagrams over a Unix socket: mirror %d, server %d", st.Datagrams, sst.Datagrams)
			}
			if sent := sst.DirectSends - direct; sent < 100 {
				t.Fatalf("%d of 200 records written to the Unix stream by a hot thread: %+v", sent, sst)
			}
		})
	}
}

// A socket file left by a server that is gone is replaced; a live one, a
// regular file or a FIFO at the path refuse the server and are left alone.
func TestUnixListenPath(t *testing.T) {
	p, src := pairSource(t, 64)
	path := unixSocket(t)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close() // the file stays, nobody accepts on it
	srv := src.serve(replica.ServerConfig{Unix: path})
	if _, err := net.Dial("unix", path); err != nil {
		t.Fatalf("the server does not listen on the stale socket's path: %v", err)
	}
	other := replica.ServerConfig{Ring: src.path, Bind: "127.0.0.1:0", Unix: path}
	if err := p.A.Do(func() error { _, err := replica.NewServer(other); return err }); !errors.Is(err, replica.ErrSocketInUse) {
		t.Fatalf("a second server on a live socket: %v, want ErrSocketInUse", err)
	}
	src.close()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the socket file outlived its server (%v): %v", srv.UnixAddr(), err)
	}
	file := filepath.Join(filepath.Dir(path), "file")
	fifo := filepath.Join(filepath.Dir(path), "fifo")
	if err := os.WriteFile(file, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, at := range []string{file, fifo} {
		cfg := replica.ServerConfig{Ring: src.path, Bind: "127.0.0.1:0", Unix: at}
		err := p.A.Do(func() error { _, err := replica.NewServer(cfg); return err })
		if !errors.Is(err, replica.ErrNotSocket) || !strings.Contains(err.Error(), at) {
			t.Fatalf("a server on %s: %v, want ErrNotSocket naming the path", at, err)
		}
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "keep" {
		t.Fatalf("the file was touched: %q, %v", b, err)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode().Type() != os.ModeNamedPipe {
		t.Fatalf("the FIFO was touched: %v, %v", fi, err)
	}
}

// A peer on the Unix socket that asks for datagrams is served over the
// stream: it has no address to send them to.
func TestUnixPeerGetsNoDatagrams(t *testing.T) {
	_, src := pairSource(t, 64)
	path := unixSocket(t)
	scfg, _ := transportConfigs("unicast") // the server sends UDP unicast to mirrors that ask
	scfg.Unix = path
	src.serve(scfg)
	src.push(3)
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	hello := wire.Hello{Flags: wire.HelloUDP | wire.HelloUnicast}
	if _, err := c.Write(wire.AppendHello(nil, wire.StartOldest, hello)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	h, err := readHeader(br)
	if err != nil || h.Kind != wire.KindGeometry {
		t.Fatalf("first frame %v, %v; want GEOMETRY", h, err)
	}
	if h.Flags&wire.GeometryMulticast != 0 {
		t.Fatalf("GEOMETRY flags %#x offer datagrams to a Unix peer", h.Flags)
	}
	for h.Kind != wire.KindData { // readHeader skips the payloads
		if h, err = readHeader(br); err != nil {
			t.Fatalf("no DATA over the stream: %v", err)
		}
	}
	if h.Seq != 1 {
		t.Fatalf("first DATA starts at %d, want 1", h.Seq)
	}
}

// A mirror of a Unix socket cannot ask for unicast, and refuses a source
// there that offers datagrams (there is no address they could come from).
func TestUnixMirrorRefusesDatagrams(t *testing.T) {
	path := unixSocket(t)
	_, err := replica.NewMirror(replica.MirrorConfig{Source: replica.UnixPrefix + path, Ring: filepath.Join(t.TempDir(), "m"), Unicast: true})
	if err == nil || !strings.Contains(err.Error(), "Unicast") {
		t.Fatalf("NewMirror with Unicast of a Unix socket: %v", err)
	}
	if _, err := replica.NewMirror(replica.MirrorConfig{Source: replica.UnixPrefix, Ring: filepath.Join(t.TempDir(), "m")}); err == nil || !strings.Contains(err.Error(), "no socket path") {
		t.Fatalf("NewMirror of %q: %v, want no socket path", replica.UnixPrefix, err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b := make([]byte, wire.HeaderSize+wire.HelloSize)
		if _, err := io.ReadFull(c, b); err != nil {
			return
		}
		mc := wire.Multicast{MTU: 1472, TTL: 1, Port: 9}
		out := wire.AppendGeometry(nil, 1, wire.GeometryMulticast, fakeGeometry(t))
		c.Write(wire.AppendMulticast(out, mc))
		c.Read(b) // until the mirror closes
	}()
	m, err := replica.NewMirror(replica.MirrorConfig{Source: replica.UnixPrefix + path, Ring: filepath.Join(t.TempDir(), "m"), Once: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Connect(ctx); !errors.Is(err, wire.ErrMalformed) {
		t.Fatalf("Connect to a Unix source offering datagrams: %v, want ErrMalformed", err)
	}
}

// Hostile peers on the Unix socket: a frame that breaks the protocol ends
// the session (BadFrames), and a peer that never reads is cut off once
// the socket is full and a write has waited its timeout, while a mirror on
// the other host keeps up throughout.
func TestUnixHostilePeers(t *testing.T) {
	p, src := pairSource(t, 1<<16)
	path := unixSocket(t)
	var ended atomic.Int32
	srv := src.serve(replica.ServerConfig{Unix: path, Events: func(e replica.ServerEvent) {
		if e.Kind == replica.EventDisconnected && e.Err != nil {
			ended.Add(1)
		}
	}})
	junk, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer junk.Close()
	biHandshake(t, junk, 0)
	if _, err := junk.Write(wire.AppendNak(nil, 9, 3)); err != nil { // last before first
		t.Fatal(err)
	}
	biExpectClosed(t, junk)
	waitUntil(t, 5*time.Second, "the bad frame counted", func() bool { return srv.Stats().BadFrames >= 1 })

	mr := startMirror(t, p.B, p.BAddr, src, replica.MirrorConfig{TCPOnly: true, From: fromOldest}, nil)
	mr.connected()
	stuck, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	biHandshake(t, stuck, 0) // then never reads
	ended.Store(0)
	for range 40 { // 400,000 records: more than the socket holds
		src.push(10000)
		mr.waitFor(src.w.Next()-1, 10*time.Second)
	}
	waitUntil(t, 30*time.Second, "the peer that never reads cut off", func() bool { return ended.Load() >= 1 })
	src.push(1000)
	last := src.w.Next() - 1
	st := mr.waitFor(last, 10*time.Second)
	oneConnection(t, st)
	mr.close()
	sameSlots(t, src.path, mr.path, 1) // what the ring still holds
}
