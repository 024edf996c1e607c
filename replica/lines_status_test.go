package replica_test

// A source's table of mirrors shows a mirror's two lines, from its
// STATUS; peers of one line exchange the 96-byte STATUS as before.

import (
	"bytes"
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/replica/wire"
)

// mirrorRow waits for the source's row of its one connected mirror to
// satisfy ok.
func mirrorRow(t *testing.T, srv *replica.Server, what string, ok func(replica.MirrorInfo) bool) replica.MirrorInfo {
	t.Helper()
	var row replica.MirrorInfo
	waitUntil(t, 5*time.Second, what, func() bool {
		rows := srv.Mirrors() // connected first
		if len(rows) == 0 || !rows[0].Connected || (len(rows) > 1 && rows[1].Connected) {
			return false
		}
		row = rows[0]
		return ok(row)
	})
	return row
}

// TestLinesSourceTable: the source's row of a mirror of two lines carries
// each line's counters within a few STATUS intervals, line A's going dark
// and coming back included; multicast and unicast lines.
func TestLinesSourceTable(t *testing.T) {
	t.Run("multicast", func(t *testing.T) {
		tl := newTwoLines(t)
		sourceTable(t, tl, tl.serve(), tl.mirrorCfg(), "udp+udp multicast")
	})
	t.Run("unicast", func(t *testing.T) {
		// Keyed: the TCP session (and its STATUS) runs on the pair's own
		// link, not on line A's, which goes down.
		tl := newTwoLines(t)
		sourceTable(t, tl, tl.serveUnicast(t, true), tl.unicastCfg(t, true), "udp+udp unicast")
	})
}

func sourceTable(t *testing.T, tl *twoLines, srv *replica.Server, cfg replica.MirrorConfig, transport string) {
	var ev lineEvents
	cfg.Events, cfg.StatusInterval = ev.add, 20*time.Millisecond
	mr := startMirror(t, tl.p.B, tl.la.BAddr, tl.src, cfg, nil)
	mr.connected()
	stop := make(chan struct{})
	last := pushing(tl.src, stop)
	row := mirrorRow(t, srv, "both lines in the table", func(r replica.MirrorInfo) bool {
		a, b := r.Lines[0], r.Lines[1]
		return a.Name == "udp" && b.Name == "udp" && a.Up && b.Up && a.Received > 100 && b.Received > 100
	})
	if row.Transport != transport { // "udp+udp multicast": 17 bytes, the STATUS field cuts it at 16
		t.Errorf("the row's transport %q, want %s (whole)", row.Transport, transport)
	}
	t.Logf("row %+v", row)
	tl.linkSet(t, tl.la.BIf, "down")
	ev.wait(t, replica.MirrorLineDown, "A")
	mirrorRow(t, srv, "line A down in the table", func(r replica.MirrorInfo) bool {
		return !r.Lines[0].Up && r.Lines[0].Downs == 1 && r.Lines[1].Up
	})
	tl.linkSet(t, tl.la.BIf, "up")
	ev.wait(t, replica.MirrorLineUp, "A")
	mirrorRow(t, srv, "line A back in the table", func(r replica.MirrorInfo) bool {
		return r.Lines[0].Up && r.Lines[0].Ups == 1
	})
	now := mr.m.Stats().Lines
	mirrorRow(t, srv, "the table up to date", func(r replica.MirrorInfo) bool {
		return r.Lines[0].Received >= now[0].Received && r.Lines[1].Received >= now[1].Received
	})
	st := tl.finish(t, mr, stop, last, transport)
	row = srv.Mirrors()[0]
	for i, l := range row.Lines {
		if got := st.Lines[i]; l.Received > got.Received || l.First > got.First || l.Name != got.Name {
			t.Errorf("line %c in the table %+v, the mirror's %+v", 'A'+i, l, got)
		}
	}
}

// TestLinesStatusCompat: a source of two lines reads the 96-byte STATUS
// of a mirror that asked for lines (a mirror that does not send the
// counters) and refuses (counted, the table untouched) the 336-byte
// STATUS from a mirror it did not tell line B's group, or with a reserved
// bit set; a mirror of two lines whose source does not send on two
// lines (a script answering without GeometryLines) sends it the 96-byte
// STATUS.
func TestLinesStatusCompat(t *testing.T) {
	tl := newTwoLines(t)
	srv := tl.serve()
	old := wire.HelloUDP | wire.HelloTelemetry | wire.HelloReportOnAsk
	long := wire.AppendStatus(nil, wire.Status{Interval: time.Second, Name: "raw", HasLines: true,
		Lines: [2]wire.StatusLine{{Transport: "udp", Up: true, Received: 3}, {Transport: "xdp"}}})
	forged := bytes.Clone(long)
	forged[wire.HeaderSize+wire.StatusSize+96] = 2 // line A's state: a reserved bit
	for _, tc := range []struct {
		hello  uint8
		status []byte
		ok     bool
	}{
		{old | wire.HelloLines, wire.AppendStatus(nil, wire.Status{Interval: time.Second, Name: "raw"}), true},
		{old | wire.HelloLines, long, true},
		{old, long, false},
		{old | wire.HelloLines, forged, false},
	} {
		c := dialTCP(t, tl.p.B, srv.Addr().String())
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write(wire.AppendHello(nil, wire.StartNewest, wire.Hello{Flags: tc.hello})); err != nil {
			t.Fatal(err)
		}
		mirrorRow(t, srv, "the raw mirror's row", func(r replica.MirrorInfo) bool { return r.Connected })
		bad := srv.Stats().BadFrames
		if _, err := c.Write(tc.status); err != nil {
			t.Fatal(err)
		}
		if tc.ok {
			row := mirrorRow(t, srv, "the STATUS in the table", func(r replica.MirrorInfo) bool { return r.Reported })
			want := [2]replica.LineStats{}
			if len(tc.status) > wire.HeaderSize+wire.StatusSize {
				want = [2]replica.LineStats{{Name: "udp", Up: true, Received: 3}, {Name: "xdp"}}
			}
			if row.Name != "raw" || row.Lines != want {
				t.Errorf("HELLO %#x, STATUS of %d bytes: row %+v, lines want %+v", tc.hello, len(tc.status), row, want)
			}
		} else {
			io.Copy(io.Discard, c) // the source closes the connection
			waitUntil(t, 5*time.Second, "BadFrames", func() bool { return srv.Stats().BadFrames == bad+1 })
			if rows := srv.Mirrors(); len(rows) > 0 && rows[0].Reported {
				t.Errorf("HELLO %#x: a refused STATUS reached the table: %+v", tc.hello, rows[0])
			}
		}
		c.Close()
		waitUntil(t, 5*time.Second, "the row gone", func() bool {
			rows := srv.Mirrors()
			return len(rows) == 0 || !rows[0].Connected
		})
	}
	statusToOldSource(t, tl)
}

// statusToOldSource serves a mirror of two lines from a script that
// acknowledges telemetry but not lines: the mirror's STATUS is 96 bytes.
func statusToOldSource(t *testing.T, tl *twoLines) {
	geom := fakeGeometry(t)
	got := make(chan wire.Header, 1)
	f := newFakeSource(t, tl.p.A, tl.p.AAddr, func(c net.Conn, _ uint64) error {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		b := wire.AppendGeometry(nil, 1, wire.GeometryTelemetry, geom)
		if _, err := c.Write(append(b, dataFrame(0, 1, 5, 7)...)); err != nil {
			return err
		}
		var hb [wire.HeaderSize]byte
		if _, err := io.ReadFull(c, hb[:]); err != nil {
			return err
		}
		h, err := wire.ParseHeader(hb[:], wire.StatusSize)
		got <- h
		return err
	})
	cfg := tl.mirrorCfg()
	cfg.StatusInterval = 10 * time.Millisecond
	cfg.Source, cfg.Ring = f.ln.Addr().String(), t.TempDir()+"/m"
	m, err := replica.NewMirror(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := tl.p.B.Go(func() { m.Run(ctx) })
	defer func() { cancel(); <-done }()
	select {
	case h := <-got:
		if h.Kind != wire.KindStatus || h.Len != wire.StatusSize {
			t.Errorf("the mirror sent an old source %v of %d bytes, want a 96-byte STATUS", h.Kind, h.Len)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no STATUS from the mirror in 10 s")
	}
	if err := <-f.errc; err != nil {
		t.Errorf("script: %v", err)
	}
}
