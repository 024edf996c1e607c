package replica_test

// A mirror without datagrams reads its plain TCP connection on its own
// loop (direct); a datagram mirror and a keyed (TLS) one keep the reader
// goroutine.

import (
	"path/filepath"
	"testing"
	"time"

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
