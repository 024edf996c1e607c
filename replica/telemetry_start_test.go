package replica_test

// A mirror's lag counts from where its session started: a mirror that
// joins from latest a ring whose write_seq is far past half its capacity
// is not lagging, one that asked for records and applied none is.

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/replica/wire"
)

// helloFrom does a TCP-only mirror's handshake on c, asking for start,
// and returns the first sequence the source will send.
func helloFrom(t *testing.T, c net.Conn, start uint64) uint64 {
	t.Helper()
	if _, err := c.Write(wire.AppendHello(nil, start, wire.Hello{Flags: wire.HelloTelemetry})); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	defer c.SetReadDeadline(time.Time{})
	b := make([]byte, wire.HeaderSize+wire.GeometrySize)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatal(err)
	}
	h, err := wire.ParseHeader(b, wire.GeometrySize)
	if err != nil || h.Kind != wire.KindGeometry || h.Flags&wire.GeometryTelemetry == 0 {
		t.Fatalf("expected GEOMETRY acknowledging telemetry: %+v %v", h, err)
	}
	return h.Seq
}

// sendStatus writes a STATUS saying the mirror id applied applied.
func sendStatus(t *testing.T, c net.Conn, id, applied uint64) {
	t.Helper()
	st := wire.Status{Applied: applied, Interval: time.Hour, ID: id, Name: "raw", Transport: "tcp"}
	if _, err := c.Write(wire.AppendStatus(nil, st)); err != nil {
		t.Fatal(err)
	}
}

// A 256-record ring at write_seq 1000: a real mirror joining from latest
// and a fresh one reporting Applied 0 before its first record (as a
// mirror does while its catch-up runs) are within a record of the source
// and raise no EventLagging; a mirror that joined from oldest and applied
// nothing is 256 records behind and raises one. Its event comes after
// the fresh mirrors' rows were ticked (rows tick in join order), so no
// lagging event of theirs can come later.
func TestLagCountsFromStart(t *testing.T) {
	const fresh, behind = 1, 2 // the raw mirrors' identities
	eachMode(t, teleModes, func(t *testing.T, mode string) {
		p, src := pairSource(t, 256)
		var ev events
		scfg, _ := transportConfigs(mode)
		scfg.Events = ev.add
		srv := src.serve(scfg)
		src.push(1000)

		m := teleMirror(t, src, p.BAddr, mode, replica.From{Mode: replica.FromLatest}, "", nil)
		runMirror(t, p.B, m)
		waitRow(t, srv, m.ID(), "the mirror from latest caught up", caughtUp(1000))

		c := dialTCP(t, p.B, srv.Addr().String())
		if first := helloFrom(t, c, wire.StartNewest); first != 1000 {
			t.Fatalf("from latest: first record %d, want 1000", first)
		}
		sendStatus(t, c, fresh, 0)
		row := waitRow(t, srv, fresh, "the fresh mirror's STATUS", func(r replica.MirrorInfo) bool { return r.Reported })
		if row.Applied != 0 || row.LagRecords > 1 || row.Lagging {
			t.Fatalf("a mirror that joined at 1000 and has not applied it yet: row %+v; want lag at most 1", row)
		}

		b := dialTCP(t, p.B, srv.Addr().String())
		if first := helloFrom(t, b, wire.StartOldest); first != 1000-256+1 {
			t.Fatalf("from oldest: first record %d, want %d", first, 1000-256+1)
		}
		sendStatus(t, b, behind, 0)
		waitUntil(t, 5*time.Second, "EventLagging of the mirror behind", func() bool { return len(ev.get()) > 0 })
		if k := ev.get(); len(k) != 1 || k[0].Kind != replica.EventLagging || k[0].Mirror.ID != behind || k[0].Mirror.LagRecords != 256 {
			t.Fatalf("lag events %+v; want one EventLagging, of the mirror 256 records behind its start", k)
		}
		if row, _ := rowOf(srv, m.ID()); row.LagRecords != 0 || row.Lagging {
			t.Errorf("the mirror from latest: row %+v", row)
		}
		if row, _ := rowOf(srv, fresh); row.LagRecords > 1 || row.Lagging {
			t.Errorf("the fresh mirror: row %+v", row)
		}
	})
}
