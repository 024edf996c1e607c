package replica

import (
	"bytes"
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/synth"
	"github.com/ringfire/ringfire/shm"
)

func TestSmokeLoopback(t *testing.T) {
	for _, mode := range []string{"tcp", "multicast", "unicast"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, "src")
			w, err := shm.Create(src, shm.RingConfig{PayloadSize: 56, Capacity: 1024}, shm.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			rec := make([]byte, 56)
			for i := uint64(1); i <= 500; i++ {
				synth.Fill(rec, i, 0)
				w.Push(rec)
			}
			cfg := ServerConfig{Ring: src, Bind: "127.0.0.1:0", Loopback: true}
			switch mode {
			case "multicast":
				cfg.Multicast = netip.MustParseAddrPort("239.255.9.9:17401")
				cfg.Iface = netip.MustParseAddr("127.0.0.1")
			case "unicast":
				cfg.UDPPort = 17403
			}
			srv, err := NewServer(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go srv.Serve(ctx)
			defer srv.Close()
			mcfg := MirrorConfig{Source: srv.Addr().String(), Ring: filepath.Join(dir, "mirror"), From: From{Mode: FromOldest},
				TCPOnly: mode == "tcp", Unicast: mode == "unicast", Iface: netip.MustParseAddr("127.0.0.1"), Once: true}
			m, err := NewMirror(mcfg)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- m.Run(ctx) }()
			for i := uint64(501); i <= 3000; i++ {
				synth.Fill(rec, i, 0)
				w.Push(rec)
				if i%100 == 0 {
					time.Sleep(time.Millisecond)
				}
			}
			deadline := time.Now().Add(10 * time.Second)
			for m.Stats().Next <= 3000 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			m.Close()
			st := m.Stats()
			t.Logf("%s: mirror %+v", mode, st)
			t.Logf("%s: server %+v", mode, srv.Stats())
			a, _ := os.ReadFile(src)
			b, _ := os.ReadFile(mcfg.Ring)
			l := w.Ring().Layout()
			so := l.SlotsOffset
			if !bytes.Equal(a[so:], b[so:]) {
				t.Fatalf("slots differ")
			}
		})
	}
}
