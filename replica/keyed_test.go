package replica_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/faulty"
	"github.com/ringfire/ringfire/internal/testenv"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/replica/auth"
	"github.com/ringfire/ringfire/replica/wire"
)

// testKey is a key made from a fixed secret (b picks which).
func testKey(t *testing.T, b byte) *auth.Key {
	t.Helper()
	k, err := auth.NewKey(bytes.Repeat([]byte{b}, auth.MinSecret))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestKeyedReplication: with a key at both ends, with and without
// encryption, every transport replicates byte-identically; nothing fails
// its tag.
func TestKeyedReplication(t *testing.T) {
	modes := []string{"tcp", "multicast", "unicast", "xdp-multicast", "xdp-unicast", "pkt-multicast", "pkt-unicast"}
	eachMode(t, modes, func(t *testing.T, mode string) {
		for _, encrypt := range []bool{false, true} {
			p, src := pairSource(t, 1<<14)
			scfg, mcfg := transportConfigs(mode)
			scfg.Key, scfg.Encrypt = testKey(t, 1), encrypt
			mcfg.Key, mcfg.Encrypt, mcfg.From = testKey(t, 1), encrypt, fromOldest
			srv := src.serve(scfg)
			src.push(500)
			mr := startMirror(t, p.B, p.BAddr, src, mcfg, nil)
			mr.connected()
			if mode != "tcp" {
				waitDatagrams(t, mr)
			}
			src.pushPaced(3000, 100, time.Millisecond)
			mr.waitFor(3500, 10*time.Second)
			sst, st := finish(t, srv, mr)
			sameSlots(t, src.path, mr.path, 1)
			if st.BadAuth != 0 || st.Replayed != 0 || st.Gaps != 0 || st.Connects != 1 {
				t.Fatalf("encrypt %v: mirror %+v", encrypt, st)
			}
			if mode != "tcp" && (sst.Records == 0 || st.Datagrams == 0) {
				t.Fatalf("encrypt %v: no datagrams carried records: server %+v", encrypt, sst)
			}
			src.close()
		}
	})
}

// TestKeyRefused: another key, no key at the mirror, a key at the mirror
// only: each is refused at once, with an error naming the cause on the
// mirror's side and a rejection on the source's.
func TestKeyRefused(t *testing.T) {
	p, src := pairSource(t, 1024)
	var rejected atomic.Int32
	var lastErr atomic.Value
	events := func(e replica.ServerEvent) {
		if e.Kind == replica.EventRejected && errors.Is(e.Err, replica.ErrKeyRequired) {
			rejected.Add(1)
			lastErr.Store(e.Err.Error())
		}
	}
	connect := func(mcfg replica.MirrorConfig) error {
		mcfg.Ring, mcfg.Once = shmDir(t)+"/mirror", true
		m := newMirrorOf(t, src, p.BAddr, mcfg)
		defer m.Close()
		var err error
		p.B.Do(func() error { err = m.Connect(context.Background()); return nil })
		return err
	}
	src.serve(replica.ServerConfig{Key: testKey(t, 1), Events: events})
	for _, tc := range []struct {
		name string
		cfg  replica.MirrorConfig
		want error
		says string
	}{
		{"another key", replica.MirrorConfig{Key: testKey(t, 2)}, replica.ErrKeyRequired, "another key"},
		{"no key", replica.MirrorConfig{}, replica.ErrRefused, "requires its key"},
	} {
		before := rejected.Load()
		err := connect(tc.cfg)
		if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
			t.Fatalf("%s: %v, want %v saying %q", tc.name, err, tc.want, tc.says)
		}
		testenv.Until(t, 5*time.Second, tc.name+": the source's rejection", func() bool { return rejected.Load() > before })
		t.Logf("%s: mirror %v; source %v", tc.name, err, lastErr.Load())
	}
	src.close()
	src.serve(replica.ServerConfig{})
	err := connect(replica.MirrorConfig{Key: testKey(t, 1)})
	if !errors.Is(err, replica.ErrRefused) || !strings.Contains(err.Error(), "has no key") {
		t.Fatalf("a key against a source without one: %v", err)
	}
}

// tamper flips one payload byte of every 50th datagram it receives (a
// duplicate of a flipped one fails its tag again: BadAuth ≥ flipped).
type tamper struct {
	replica.Transport
	n, flipped atomic.Uint64
}

func (tp *tamper) RecvBatch(ms []replica.Message, wait time.Duration) (int, error) {
	k, err := tp.Transport.RecvBatch(ms, wait)
	for i := range k {
		if tp.n.Add(1)%50 == 0 && ms[i].N > 20 {
			ms[i].Buf[20] ^= 0x40
			tp.flipped.Add(1)
		}
	}
	return k, err
}

// TestTamperedAndReplayedDatagrams: on a keyed stream, datagrams whose
// bytes changed on the way fail their tag (BadAuth) and datagrams
// delivered again are refused (Replayed); NAK repair fills the tampered
// ones' records and the mirror ends byte-identical.
func TestTamperedAndReplayedDatagrams(t *testing.T) {
	for _, encrypt := range []bool{false, true} {
		p, src := pairSource(t, 1<<14)
		srv := src.serve(replica.ServerConfig{Multicast: mcastGroup(), Key: testKey(t, 1), Encrypt: encrypt})
		tp := &tamper{}
		mcfg := replica.MirrorConfig{From: fromOldest, Key: testKey(t, 1)}
		mcfg.NewTransport = wrapMirrorUDP(func(tr replica.Transport) replica.Transport { tp.Transport = tr; return tp })
		dup := faulty.Faults{Dup: func(_ wire.Kind, _ uint64, n uint64) bool { return n%7 == 0 }}
		mr := startMirror(t, p.B, p.BAddr, src, mcfg, &dup)
		mr.connected()
		waitDatagrams(t, mr)
		src.pushPaced(5000, 20, time.Millisecond)
		mr.waitFor(5000, 20*time.Second)
		_, st := finish(t, srv, mr)
		sameSlots(t, src.path, mr.path, 1)
		if st.BadAuth == 0 || st.BadAuth < tp.flipped.Load() || st.Replayed == 0 || st.Retransmitted == 0 {
			t.Fatalf("encrypt %v: flipped %d; mirror %+v", encrypt, tp.flipped.Load(), st)
		}
		src.close()
	}
}
