package replica_test

// A mirror without datagrams reads its plain TCP connection on its own
// loop (direct); a datagram mirror and a keyed (TLS) one keep the reader
// goroutine.

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/replica"
)

func TestDirectTCPOnlyWherePlainAndAlone(t *testing.T) {
	cases := []struct {
		name   string
		mode   string
		keyed  bool
		direct bool
	}{
		{"tcp", "tcp", false, true},
		{"unicast", "unicast", false, false},
		{"keyed tcp", "tcp", true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, src := pairSource(t, 4096)
			scfg, mcfg := transportConfigs(tc.mode)
			if tc.keyed {
				scfg.Key, mcfg.Key = testKey(t, 1), testKey(t, 1)
			}
			src.serve(scfg)
			src.push(100)
			mcfg.From, mcfg.Ring = fromOldest, filepath.Join(t.TempDir(), "mirror")
			m := newMirrorOf(t, src, p.BAddr, mcfg)
			defer m.Close()
			connectIn(t, p.B, m)
			if got := replica.DirectTCP(m); got != tc.direct {
				t.Fatalf("direct = %v, want %v", got, tc.direct)
			}
			// Stepped, it copies the history (and, direct, with no reader
			// goroutine queueing for it).
			for deadline := time.Now().Add(10 * time.Second); m.Stats().Next <= 100; {
				if _, err := m.Step(); err != nil {
					t.Fatal(err)
				}
				if time.Now().After(deadline) {
					t.Fatalf("stepping for 10 s: %+v", m.Stats())
				}
			}
		})
	}
}

// A direct mirror that blocks sleeps in ppoll on its socket: each record
// ends a sleep as the descriptor's (Ready), not as the Waker's or the
// sleep's bound.
func TestDirectTCPWakesOnTheSocket(t *testing.T) {
	p, src := pairSource(t, 4096)
	scfg, mcfg := transportConfigs("tcp")
	src.serve(scfg)
	mcfg.From, mcfg.Wait, mcfg.StatusInterval = fromOldest, replica.WaitBlock, time.Hour
	mr := startMirror(t, p.B, p.BAddr, src, mcfg, nil)
	src.push(1)
	mr.waitFor(1, 10*time.Second)
	const records = 20
	before := mr.m.Stats().Wait
	for i := 2; i <= 1+records; i++ {
		src.push(1)
		mr.waitFor(uint64(i), 10*time.Second)
	}
	after := mr.m.Stats().Wait
	if ready := after.Ready - before.Ready; ready < records {
		t.Fatalf("%d sleeps ended by the socket for %d records (wait stats %+v → %+v)", ready, records, before, after)
	}
}

// A direct mirror's socket is out of Go's poller: no epoll instance of the
// process watches it (/proc/self/fdinfo of every eventpoll descriptor),
// so a frame that arrives wakes no runtime thread in epoll_wait, only the
// run loop's ppoll. The mirror still writes on it: its STATUS reaches the
// source (Server.AwaitApplied returns), and it closes cleanly.
func TestDirectTCPOutOfGoPoller(t *testing.T) {
	p, src := pairSource(t, 4096)
	scfg, mcfg := transportConfigs("tcp")
	srv := src.serve(scfg)
	src.push(10)
	mcfg.From, mcfg.Ring = fromOldest, filepath.Join(t.TempDir(), "mirror")
	m := newMirrorOf(t, src, p.BAddr, mcfg)
	defer m.Close()
	connectIn(t, p.B, m)
	fd := replica.DirectFD(m)
	if fd < 0 {
		t.Fatal("the mirror reads no socket itself")
	}
	if eps := epollsWatching(t, fd); len(eps) != 0 {
		t.Fatalf("descriptor %d is in the epoll set of descriptors %v", fd, eps)
	}
	if n, err := stepUntilWaited(t, m, srv, 10); n != 1 {
		t.Fatalf("AwaitApplied for the STATUS of 10 records: %d, %v (%+v)", n, err, m.Stats())
	}
}

// epollsWatching lists this process's eventpoll descriptors that watch
// fd's file, under any descriptor number (their fdinfo has a "tfd:" line
// with its inode).
func epollsWatching(t *testing.T, fd int) []int {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		t.Fatal(err)
	}
	ino := "ino:" + strconv.FormatUint(st.Ino, 16)
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var eps []int
	for _, e := range ents {
		if link, _ := os.Readlink("/proc/self/fd/" + e.Name()); link != "anon_inode:[eventpoll]" {
			continue
		}
		info, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err != nil {
			continue // closed meanwhile
		}
		for _, line := range strings.Split(string(info), "\n") {
			if f := strings.Fields(line); len(f) > 0 && f[0] == "tfd:" && slices.Contains(f, ino) {
				n, _ := strconv.Atoi(e.Name())
				eps = append(eps, n)
			}
		}
	}
	return eps
}

// On a Loop too, a mirror without datagrams reads its socket itself: no
// reader goroutine, the socket in no epoll instance, and a Loop that
// blocks sleeps in ppoll on it (each record ends a sleep as a
// descriptor's, not as the Waker's). A reader goroutine would keep the
// socket in Go's poller, which wakes a runtime thread inside the source's
// write for every frame.
func TestDirectTCPOnALoop(t *testing.T) {
	p, src := pairSource(t, 4096)
	scfg, mcfg := transportConfigs("tcp")
	src.serve(scfg)
	loop := runLoop(t, p.B, replica.WaitBlock)
	mcfg.From, mcfg.Loop, mcfg.StatusInterval = fromOldest, loop, time.Hour
	mr := startMirror(t, p.B, p.BAddr, src, mcfg, nil)
	mr.connected()
	src.push(1)
	mr.waitFor(1, 10*time.Second)
	fd := replica.DirectFD(mr.m)
	if fd < 0 {
		t.Fatal("the mirror on a Loop reads no socket itself")
	}
	if eps := epollsWatching(t, fd); len(eps) != 0 {
		t.Fatalf("descriptor %d is in the epoll set of descriptors %v", fd, eps)
	}
	const records = 20
	before := loop.Stats().Wait
	for i := 2; i <= 1+records; i++ {
		src.push(1)
		mr.waitFor(uint64(i), 10*time.Second)
	}
	after := loop.Stats().Wait
	if ready := after.Ready - before.Ready; ready < records {
		t.Fatalf("%d of the Loop's sleeps ended by the socket for %d records (wait stats %+v → %+v)", ready, records, before, after)
	}
	mr.close()
	sameSlots(t, src.path, mr.path, 1)
}
