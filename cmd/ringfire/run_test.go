package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/bpf"
	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/testenv"
	"github.com/ringfire/ringfire/shm"
)

// startRun starts `ringfire run cfg` in ns; stop wants msg=stopped.
func startRun(t *testing.T, ns *netns.NS, cfg string) *child {
	t.Helper()
	c := startProc(t, "ringfire run "+cfg, ns, "run", cfg)
	c.stopped = "msg=stopped"
	return c
}

// httpGet fetches path from the HTTP server at addr in ns.
func httpGet(t *testing.T, ns *netns.NS, addr, path string) (int, string) {
	t.Helper()
	var code int
	var body []byte
	err := ns.Do(func() error {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(c, "GET %s HTTP/1.0\r\n\r\n", path)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		code = resp.StatusCode
		body, err = io.ReadAll(resp.Body)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return code, string(body)
}

// metricsIn scrapes the metrics endpoint at addr in ns.
func metricsIn(t *testing.T, ns *netns.NS, addr string) map[string]float64 {
	t.Helper()
	_, body := httpGet(t, ns, addr, "/metrics")
	return parseMetrics(t, strings.NewReader(body))
}

// waitMirrored waits until the local mirror of ring has written every
// record up to seq, as the process's metrics say.
func waitMirrored(t *testing.T, ns *netns.NS, addr, ring string, seq uint64) {
	t.Helper()
	key := fmt.Sprintf(`ringfire_local_mirror_next_seq{ring=%q}`, ring)
	testenv.Until(t, 30*time.Second, fmt.Sprintf("mirror %s at %d", ring, seq), func() bool {
		return metricsIn(t, ns, addr)[key] == float64(seq+1)
	})
}

// sameRings compares every record of two rings, blobs included.
func sameRings(t *testing.T, src, dst string) {
	t.Helper()
	a, err := shm.Open(src, shm.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := shm.Open(dst, shm.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	w := a.WriteSeq()
	if b.WriteSeq() != w {
		t.Fatalf("%s: write_seq %d, source %d", dst, b.WriteSeq(), w)
	}
	blob := a.Layout().ArenaOffset != 0
	pa := make([]byte, a.Layout().PayloadSize())
	pb := make([]byte, len(pa))
	ba, bb := make([]byte, 1<<16), make([]byte, 1<<16)
	for seq := a.Oldest(); seq <= w; seq++ {
		sa, _ := a.ReadSlot(seq, pa)
		sb, _ := b.ReadSlot(seq, pb)
		if sa != shm.SlotReady || sb != shm.SlotReady {
			t.Fatalf("%s record %d: source %v, mirror %v", dst, seq, sa, sb)
		}
		if !blob {
			if !bytes.Equal(pa, pb) {
				t.Fatalf("%s record %d differs", dst, seq)
			}
			continue
		}
		n := len(pa) - shm.DescriptorSize
		da, db := shm.DecodeDescriptor(pa), shm.DecodeDescriptor(pb)
		okA, _ := a.ReadBlob(da, ba)
		if !okA {
			continue // the source's arena has moved past it too
		}
		okB, _ := b.ReadBlob(db, bb)
		if !okB || !bytes.Equal(pa[:n], pb[:n]) || da.Len != db.Len || !bytes.Equal(ba[:da.Len], bb[:db.Len]) {
			t.Fatalf("%s blob record %d differs (mirror read it: %v)", dst, seq, okB)
		}
	}
}

// testRings are the rings of the run tests: fixed-size ones written
// with Push, a blob ring with blobs of varying size.
type testRings struct {
	dir     string
	writers map[string]*shm.Writer
	blob    *shm.BlobProducer[uint32]
}

func newTestRings(t *testing.T, names ...string) *testRings {
	t.Helper()
	r := &testRings{dir: t.TempDir(), writers: map[string]*shm.Writer{}}
	for _, n := range names {
		r.add(t, n)
	}
	var err error
	r.blob, err = shm.NewBlobProducer[uint32](filepath.Join(r.dir, "blob"), shm.BlobOptions{Capacity: 4096, ArenaSize: 1 << 22, SchemaSig: 0xB10B})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.blob.Close() })
	return r
}

func (r *testRings) add(t *testing.T, name string) {
	t.Helper()
	w, err := shm.Create(filepath.Join(r.dir, name), shm.RingConfig{PayloadSize: 56, Capacity: 1 << 16}, shm.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	r.writers[name] = w
}

func (r *testRings) path(name string) string { return filepath.Join(r.dir, name) }

// push writes n records into ring name ("blob": n blobs).
func (r *testRings) push(t *testing.T, name string, n int) {
	t.Helper()
	rec := make([]byte, 56)
	for i := range n {
		var err error
		if name == "blob" {
			meta := uint32(i)
			_, err = r.blob.Push(&meta, bytes.Repeat([]byte{byte(i)}, 1+i%700))
		} else {
			copy(rec, fmt.Sprintf("%s record %d", name, i))
			_, err = r.writers[name].Push(rec)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// flowsOf counts the flows of the program pinned on ifname in ns that
// process pid added.
func flowsOf(t *testing.T, ns *netns.NS, ifname string, pid int) int {
	t.Helper()
	n := 0
	err := ns.Do(func() error {
		p, err := bpf.OpenPinned(bpf.DefaultFS, ifname)
		if err != nil {
			return err
		}
		defer p.Close()
		flows, err := p.FlowEntries()
		for _, f := range flows {
			if f.Owner == pid {
				n++
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
