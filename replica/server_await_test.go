package replica_test

// Server.AwaitApplied returns once the records are readable on the mirrors, and
// times out when they are not.

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/replica/wire"
	"github.com/ringfire/ringfire/shm"
)

// readableAt checks that record seq of the mirror ring at path is
// readable and equal to the source's.
func readableAt(t *testing.T, src *source, path string, seq uint64) {
	t.Helper()
	a, err := shm.Open(src.path, shm.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := shm.Open(path, shm.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	pa, pb := make([]byte, recordSize), make([]byte, recordSize)
	sa, _ := a.ReadSlot(seq, pa)
	sb, _ := b.ReadSlot(seq, pb)
	if sa != shm.SlotReady || sb != shm.SlotReady || !bytes.Equal(pa, pb) || b.WriteSeq() < seq {
		t.Fatalf("record %d right after AwaitApplied: source %v, mirror %v (write_seq %d), equal %v", seq, sa, sb, b.WriteSeq(), bytes.Equal(pa, pb))
	}
}

func TestAwaitApplied(t *testing.T) {
	eachMode(t, teleModes, func(t *testing.T, mode string) {
		lan, src := lanSource(t, 3, 1<<14)
		scfg, _ := transportConfigs(mode)
		srv := src.serve(scfg)
		var rs []*runner
		var paths []string
		for i := 1; i <= 2; i++ {
			path := filepath.Join(t.TempDir(), "mirror")
			m := teleMirror(t, src, lan.Addrs[i], mode, fromOldest, path, func(c *replica.MirrorConfig) {
				c.StatusInterval = wire.DefaultStatusInterval // as shipped
			})
			paths, rs = append(paths, path), append(rs, runMirror(t, lan.Hosts[i], m))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for round := range 5 {
			src.pushPaced(400, 50, time.Millisecond)
			seq := src.w.Next() - 1
			start := time.Now()
			n, err := srv.AwaitApplied(ctx, 2, seq)
			if n != 2 || err != nil {
				t.Fatalf("round %d: AwaitApplied(2, %d) = %d, %v", round, seq, n, err)
			}
			for _, path := range paths {
				readableAt(t, src, path, seq)
			}
			t.Logf("round %d: AwaitApplied took %v", round, time.Since(start).Round(time.Millisecond))
		}

		// One mirror hangs: AwaitApplied for both times out with one, on time.
		rs[1].pause()
		src.push(10)
		seq := src.w.Next() - 1
		short, cancelShort := context.WithTimeout(context.Background(), 300*time.Millisecond)
		start := time.Now()
		n, err := srv.AwaitApplied(short, 2, seq)
		took := time.Since(start)
		cancelShort()
		if n != 1 || !errors.Is(err, context.DeadlineExceeded) || took < 300*time.Millisecond || took > 5*time.Second {
			t.Fatalf("AwaitApplied with a hung mirror: %d, %v after %v; want 1, deadline exceeded after 300 ms", n, err, took)
		}
		readableAt(t, src, paths[0], seq)
		if n, err := srv.AwaitApplied(ctx, 1, seq); n < 1 || err != nil {
			t.Fatalf("AwaitApplied(1) = %d, %v", n, err)
		}
		if n, err := srv.AwaitApplied(ctx, 0, seq); n != 1 || err != nil {
			t.Fatalf("AwaitApplied(0) = %d, %v; want the count at once", n, err)
		}
		rs[1].start()
		if n, err := srv.AwaitApplied(ctx, 2, seq); n != 2 || err != nil {
			t.Fatalf("AwaitApplied(2) after the resume = %d, %v", n, err)
		}
		readableAt(t, src, paths[1], seq)

		// A Wait pending when the server closes ends with ErrClosed.
		errc := make(chan error, 1)
		go func() { _, err := srv.AwaitApplied(context.Background(), 3, seq); errc <- err }()
		time.Sleep(20 * time.Millisecond)
		src.close()
		select {
		case err := <-errc:
			if !errors.Is(err, replica.ErrClosed) {
				t.Fatalf("Wait across Close: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Wait outlived Close")
		}
	})
}
