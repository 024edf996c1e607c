package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/shm"
)

// TestServeMirrorMPMC: serve reads a multi-producer ring (written by three
// producer processes) like any ring; the mirror holds every record at the
// same sequence, byte for byte.
func TestServeMirrorMPMC(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	const n = 20000
	mustRun(t, "gen", src, "--producers", "3", "--count", "20000", "--size", "56", "--capacity", "65536")
	bind := p.AAddr.String() + ":7410"
	sdone, _, serr := runIn(p.A, "serve", src, "--bind", bind, "--duration", "3s")
	waitListening(t, p.A, bind)
	mdone, mout, merr := runIn(p.B, "mirror", bind, dst, "--from", "oldest", "--tcp", "--duration", "2s")
	waitDone(t, mdone, "mirror")
	waitDone(t, sdone, "serve")
	if *merr != nil || *serr != nil {
		t.Fatalf("mirror: %v, serve: %v", *merr, *serr)
	}
	wantContains(t, "mirror output", mout.String(), "next 20001", "gaps 0")
	var rings [2]*shm.Ring
	for i, path := range []string{src, dst} {
		r, err := shm.Open(path, shm.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		rings[i] = r
	}
	a, b := rings[0], rings[1]
	pa, pb := make([]byte, 56), make([]byte, 56)
	for seq := uint64(1); seq <= n; seq++ {
		sa, _ := a.ReadSlot(seq, pa)
		sb, _ := b.ReadSlot(seq, pb)
		if sa != shm.SlotReady || sb != shm.SlotReady || !bytes.Equal(pa, pb) {
			t.Fatalf("record %d: source %v %x, mirror %v %x", seq, sa, pa, sb, pb)
		}
	}
	if a.WriteSeq() != n || b.WriteSeq() != n {
		t.Fatalf("write_seq: source %d, mirror %d, want %d", a.WriteSeq(), b.WriteSeq(), n)
	}
}
