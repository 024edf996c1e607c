package netns

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const wait = 5 * time.Second // bound for every wait in these tests

// rootIno is the inode of the namespace the test binary started in.
var rootIno = func() uint64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return nsIno("/proc/thread-self/ns/net")
}()

func nsIno(path string) uint64 {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		panic(err)
	}
	return st.Ino
}

// threadIno reports the namespace inode of the calling locked thread.
func threadIno() uint64 { return nsIno("/proc/thread-self/ns/net") }

func listen(t *testing.T, ns *NS, addr netip.Addr) *net.UDPConn {
	t.Helper()
	var c *net.UDPConn
	err := ns.Do(func() (err error) {
		c, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, 0)))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func recv(t *testing.T, c net.PacketConn) (string, net.Addr) {
	t.Helper()
	buf := make([]byte, 1500)
	c.SetReadDeadline(time.Now().Add(wait))
	n, from, err := c.ReadFrom(buf)
	if err != nil {
		t.Fatalf("receive on %v: %v", c.LocalAddr(), err)
	}
	return string(buf[:n]), from
}

// sendFrom sends msg to dst from a fresh socket in ns.
func sendFrom(t *testing.T, ns *NS, dst net.Addr, msg string) {
	t.Helper()
	err := ns.Do(func() error {
		c, err := net.DialUDP("udp4", nil, dst.(*net.UDPAddr))
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write([]byte(msg))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestPair(t *testing.T) {
	Require(t)
	t.Parallel()
	p := NewPair(t)

	rc := listen(t, p.B, p.BAddr)
	sendFrom(t, p.A, rc.LocalAddr(), "hello B")
	msg, from := recv(t, rc) // read outside Do: sockets stay in their namespace
	if msg != "hello B" || from.(*net.UDPAddr).AddrPort().Addr() != p.AAddr {
		t.Fatalf("got %q from %v, want %q from %v", msg, from, "hello B", p.AAddr)
	}

	// And back, first packet from the end brought up last.
	ra := listen(t, p.A, p.AAddr)
	sendFrom(t, p.B, ra.LocalAddr(), "hello A")
	if msg, _ := recv(t, ra); msg != "hello A" {
		t.Fatalf("got %q, want %q", msg, "hello A")
	}

	// The root namespace sees none of it.
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	test77 := netip.MustParsePrefix("10.77.0.0/16")
	for _, ifi := range ifs {
		addrs, _ := ifi.Addrs()
		for _, a := range addrs {
			if pfx, err := netip.ParsePrefix(a.String()); err == nil && test77.Contains(pfx.Addr()) {
				t.Errorf("root namespace interface %s has %v", ifi.Name, a)
			}
		}
	}
	if c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.BAddr, 0))); err == nil {
		c.Close()
		t.Errorf("binding %v in the root namespace succeeded", p.BAddr)
	}

	// Do runs in the namespace and restores nothing but its own thread.
	var in uint64
	if err := p.A.Do(func() error { in = threadIno(); return nil }); err != nil {
		t.Fatal(err)
	}
	if want := nsIno(runDir + "/" + p.A.Name); in != want || in == rootIno {
		t.Errorf("Do ran in namespace inode %d, want %d (root %d)", in, want, rootIno)
	}
	if err := p.A.Do(func() error { return errors.New("boom") }); err == nil || err.Error() != "boom" {
		t.Errorf("Do error = %v, want boom", err)
	}
	checkThreadsInRoot(t)
}

// checkThreadsInRoot checks that unlocked threads are all in the root namespace.
func checkThreadsInRoot(t *testing.T) {
	t.Helper()
	var wg sync.WaitGroup
	var bad sync.Map
	for range 4 * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if ino := threadIno(); ino != rootIno {
				bad.Store(ino, true)
			}
			time.Sleep(time.Millisecond)
		})
	}
	wg.Wait()
	bad.Range(func(k, _ any) bool {
		t.Errorf("a thread is in namespace inode %v, not root %d", k, rootIno)
		return true
	})
}

func nsList(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").CombinedOutput()
	if err != nil {
		t.Fatalf("ip netns list: %v: %s", err, out)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			names = append(names, f[0])
		}
	}
	return names
}

func TestPairCleanup(t *testing.T) {
	Require(t)
	t.Parallel()
	var names []string
	t.Run("pair", func(t *testing.T) {
		p := NewPair(t)
		names = []string{p.A.Name, p.B.Name}
		if l := nsList(t); !slices.Contains(l, p.A.Name) || !slices.Contains(l, p.B.Name) {
			t.Fatalf("ip netns list = %v, want %v in it", l, names)
		}
	})
	l := nsList(t)
	for _, n := range names {
		if slices.Contains(l, n) {
			t.Errorf("namespace %s still listed after the sub-test ended", n)
		}
		if _, err := os.Stat(runDir + "/" + n); !os.IsNotExist(err) {
			t.Errorf("%s/%s: stat err %v, want not-exist", runDir, n, err)
		}
	}
}

func TestGo(t *testing.T) {
	Require(t)
	t.Parallel()
	p := NewPair(t)
	type res struct {
		c   *net.UDPConn
		ino uint64
		err error
	}
	ch := make(chan res, 1)
	done := p.B.Go(func() {
		time.Sleep(100 * time.Millisecond) // the socket is created well after Go returned
		c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.BAddr, 0)))
		ch <- res{c, threadIno(), err}
	})
	var r res
	select {
	case r = <-ch:
	case <-time.After(wait):
		t.Fatal("Go: no socket within deadline")
	}
	if r.err != nil {
		t.Fatalf("binding %v from Go: %v", p.BAddr, r.err)
	}
	defer r.c.Close()
	if want := nsIno(runDir + "/" + p.B.Name); r.ino != want {
		t.Errorf("Go ran in namespace inode %d, want %d", r.ino, want)
	}
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatal("Go: done not closed")
	}
	sendFrom(t, p.A, r.c.LocalAddr(), "via Go")
	if msg, _ := recv(t, r.c); msg != "via Go" {
		t.Fatalf("got %q", msg)
	}
	checkThreadsInRoot(t)
}

func TestDoPanicAndGoexit(t *testing.T) {
	Require(t)
	t.Parallel()
	p := NewPair(t)
	func() {
		defer func() {
			if pv := recover(); pv == nil || !strings.Contains(fmt.Sprint(pv), "kaboom") {
				t.Errorf("recovered %v, want a re-raised panic mentioning kaboom", pv)
			}
		}()
		_ = p.A.Do(func() error { panic("kaboom") })
	}()
	err := p.A.Do(func() error { runtime.Goexit(); return nil })
	if err == nil || !strings.Contains(err.Error(), "Goexit") {
		t.Errorf("Do(Goexit) = %v, want a Goexit error", err)
	}
	checkThreadsInRoot(t)
}
