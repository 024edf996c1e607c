package replica_test

// Report on ask: a mirror that announces HelloReportOnAsk reports early
// only when an AwaitApplied asks (REPORT), so mirrors nobody waits on
// report once per interval; a mirror without it keeps reporting whenever
// it catches up, and never sees a REPORT.

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/replica/wire"
)

// readUntil reads c's frames (payloads skipped) until want returns true,
// failing after within.
func readUntil(t *testing.T, br *bufio.Reader, c net.Conn, within time.Duration, want func(wire.Header) bool) wire.Header {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(within))
	defer c.SetReadDeadline(time.Time{})
	for {
		h, err := readHeader(br)
		if err != nil {
			t.Fatalf("reading frames: %v", err)
		}
		if want(h) {
			return h
		}
	}
}

// The wire: GEOMETRY acknowledges the extension only to a mirror that
// announced it; an AwaitApplied sends that mirror REPORT(seq) and returns on its
// STATUS; the mirror without the extension gets no REPORT.
func TestWaitAsksForReport(t *testing.T) {
	p, src := pairSource(t, 1024)
	srv := src.serve(replica.ServerConfig{})
	asker := dialTCP(t, p.B, srv.Addr().String())
	ha, _ := biHandshake(t, asker, wire.HelloTelemetry|wire.HelloReportOnAsk)
	old := dialTCP(t, p.B, srv.Addr().String())
	ho, _ := biHandshake(t, old, wire.HelloTelemetry)
	if ha.Flags&(wire.GeometryTelemetry|wire.GeometryReportOnAsk) != wire.GeometryTelemetry|wire.GeometryReportOnAsk {
		t.Fatalf("GEOMETRY flags %#x to the mirror that asked: want telemetry and report on ask", ha.Flags)
	}
	if ho.Flags&wire.GeometryReportOnAsk != 0 || ho.Flags&wire.GeometryTelemetry == 0 {
		t.Fatalf("GEOMETRY flags %#x to the mirror without the extension: want telemetry only", ho.Flags)
	}
	src.push(3)
	ba, bo := bufio.NewReader(asker), bufio.NewReader(old)
	has3 := func(h wire.Header) bool { return h.Kind == wire.KindData && h.Seq+uint64(h.Count) > 3 }
	readUntil(t, ba, asker, 5*time.Second, has3)
	readUntil(t, bo, old, 5*time.Second, has3)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() { n, err := srv.AwaitApplied(ctx, 1, 3); done <- result{n, err} }()
	h := readUntil(t, ba, asker, 5*time.Second, func(h wire.Header) bool { return h.Kind == wire.KindReport })
	if h.Seq != 3 || h.Len != 0 {
		t.Fatalf("REPORT %+v, want seq 3 and no payload", h)
	}
	st := wire.AppendStatus(nil, wire.Status{Applied: 3, Interval: time.Hour, ID: 1, Name: "asker", Transport: "tcp"})
	if _, err := asker.Write(st); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.n != 1 || r.err != nil {
		t.Fatalf("AwaitApplied(1, 3) after the asked STATUS: %d, %v", r.n, r.err)
	}
	// The other mirror was asked nothing (its writer was woken with the
	// asker's): a window of 200 ms holds only heartbeats and data.
	old.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	for {
		h, err := readHeader(bo)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
		if err != nil || h.Kind == wire.KindReport {
			t.Fatalf("the mirror without the extension: %+v, %v", h, err)
		}
	}
}

// A real mirror whose STATUS interval is an hour: only a REPORT can make
// it report in time, and every AwaitApplied returns once the records are
// readable. The first AwaitApplied also needs the session going live (a unicast
// mirror's catch-up ends after its STATUS came) to wake it.
func TestWaitWithHourlyStatus(t *testing.T) {
	for _, mode := range []string{"tcp", "unicast"} {
		t.Run(mode, func(t *testing.T) {
			lan, src := lanSource(t, 2, 1<<12)
			scfg, _ := transportConfigs(mode)
			srv := src.serve(scfg)
			m := teleMirror(t, src, lan.Addrs[1], mode, fromOldest, "", func(c *replica.MirrorConfig) { c.StatusInterval = time.Hour })
			runMirror(t, lan.Hosts[1], m)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			for round := range 20 {
				src.push(1 + round)
				seq := src.w.Next() - 1
				if n, err := srv.AwaitApplied(ctx, 1, seq); n != 1 || err != nil {
					t.Fatalf("round %d: AwaitApplied(1, %d) = %d, %v; mirror %+v; server %+v", round, seq, n, err, m.Stats(), srv.Stats())
				}
			}
		})
	}
}

// statusCounts runs a fake source that acknowledges telemetry (and, with
// onAsk, report on ask), sends records 1..5 one at a time 150 ms apart to
// a mirror whose STATUS interval is 2 s (its catch-up rule would report
// early after 100 ms), then a REPORT for record 5. It returns how many
// STATUS frames came while the records went out, after the first (sent at
// connection), and the Applied of the first STATUS after the REPORT.
func statusCounts(t *testing.T, onAsk bool) (during int, answer uint64) {
	p, _ := pairSource(t, 16)
	geom := fakeGeometry(t)
	type result struct {
		during int
		answer uint64
	}
	res := make(chan result, 1)
	f := newFakeSource(t, p.A, p.AAddr, func(c net.Conn, _ uint64) error {
		flags := wire.GeometryTelemetry
		if onAsk {
			flags |= wire.GeometryReportOnAsk
		}
		if _, err := c.Write(wire.AppendGeometry(nil, 1, flags, geom)); err != nil {
			return err
		}
		statuses := make(chan wire.Status, 64)
		go func() { // every STATUS the mirror sends, until the connection closes
			defer close(statuses)
			br := bufio.NewReader(c)
			for {
				var hb [wire.HeaderSize + wire.StatusSize]byte
				if _, err := io.ReadFull(br, hb[:wire.HeaderSize]); err != nil {
					return
				}
				h, err := wire.ParseHeader(hb[:], wire.StatusSize)
				if err != nil || h.Kind != wire.KindStatus {
					return
				}
				if _, err := io.ReadFull(br, hb[wire.HeaderSize:]); err != nil {
					return
				}
				if st, err := wire.ParseStatus(h, hb[wire.HeaderSize:]); err == nil {
					statuses <- st
				}
			}
		}()
		var r result
		n := 0
		for seq := uint64(1); seq <= 5; seq++ {
			if _, err := c.Write(dataFrame(0, seq, 1, seq)); err != nil {
				return err
			}
			time.Sleep(150 * time.Millisecond) // pacing: longer than the early rule's 100 ms
		}
		for len(statuses) > 0 {
			<-statuses
			n++
		}
		r.during = max(n-1, 0)
		if _, err := c.Write(wire.AppendReport(nil, 5)); err != nil {
			return err
		}
		select {
		case st := <-statuses:
			r.answer = st.Applied
		case <-time.After(5 * time.Second): // the interval is 2 s: an answer must come first
		}
		res <- r
		return nil
	})
	m, _ := f.mirror(t, replica.MirrorConfig{StatusInterval: 2 * time.Second, From: fromOldest, Once: true})
	done := make(chan error, 1)
	go func() { done <- runIn(p.B, m, 20*time.Second) }()
	var r result
	select {
	case r = <-res:
	case err := <-f.errc:
		t.Fatalf("fake source: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("fake source did not finish")
	}
	<-done
	return r.during, r.answer
}

// A mirror that reports on ask sends no early STATUS while records come
// and none is asked for, and answers a REPORT at once; against a source
// that did not acknowledge the extension it keeps reporting whenever it
// catches up.
func TestMirrorReportsOnlyWhenAsked(t *testing.T) {
	if during, answer := statusCounts(t, true); during != 0 || answer != 5 {
		t.Errorf("report on ask: %d early STATUS frames while records came, answer to REPORT(5) applied %d; want 0 and 5", during, answer)
	}
	if during, _ := statusCounts(t, false); during < 3 {
		t.Errorf("an older source: %d early STATUS frames for 5 records 150 ms apart; want one after most", during)
	}
}
