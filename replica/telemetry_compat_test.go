package replica_test

// Peers that do not announce telemetry get version 1 exactly: the same
// bytes from the source, no STATUS from the mirror; a source that does not
// acknowledge the flag never gets a STATUS.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/replica/wire"
	"github.com/ringfire/ringfire/shm"
)

// v1Stream is what a version-1 TCP-only mirror asking for the oldest
// record must receive from a source whose ring holds records 1..n: the
// GEOMETRY (with extra flags), one DATA frame, the idle HEARTBEAT.
func v1Stream(t *testing.T, src *source, n int, flags uint8) []byte {
	t.Helper()
	r, err := shm.Open(src.path, shm.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b := wire.AppendGeometry(nil, 1, flags, wire.GeometryOf(r.Layout()))
	b = append(b, make([]byte, wire.HeaderSize)...)
	wire.Header{Kind: wire.KindData, Count: uint16(n), Len: uint32(n * recordSize), Seq: 1}.Put(b[len(b)-wire.HeaderSize:])
	rec := make([]byte, recordSize)
	for seq := uint64(1); seq <= uint64(n); seq++ {
		if st, _ := r.ReadSlot(seq, rec); st != shm.SlotReady {
			t.Fatalf("source record %d: %v", seq, st)
		}
		b = append(b, rec...)
	}
	return wire.AppendEmpty(b, wire.KindHeartbeat, 0, uint64(n))
}

// A raw version-1 peer gets byte for byte the version-1 stream; a peer
// announcing telemetry gets the same bytes but GeometryTelemetry. A STATUS
// from a peer that did not announce is a protocol error, as any unknown
// frame was.
func TestTelemetryV1PeerBytes(t *testing.T) {
	p, src := pairSource(t, 1024)
	src.push(10)
	srv := src.serve(replica.ServerConfig{})
	for _, tc := range []struct {
		hello, geometry uint8
	}{{0, 0}, {wire.HelloTelemetry, wire.GeometryTelemetry}} {
		c := dialTCP(t, p.B, srv.Addr().String())
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write(wire.AppendHello(nil, wire.StartOldest, wire.Hello{Flags: tc.hello})); err != nil {
			t.Fatal(err)
		}
		want := v1Stream(t, src, 10, tc.geometry)
		got := make([]byte, len(want))
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("HELLO flags %#x: stream\n% x\nwant\n% x", tc.hello, got, want)
		}
		rows := srv.Mirrors()
		if len(rows) != 1 || rows[0].Telemetry != (tc.hello != 0) || rows[0].Reported || rows[0].Transport != "tcp" {
			t.Fatalf("HELLO flags %#x: table %+v", tc.hello, rows)
		}
		bad := srv.Stats().BadFrames
		c.Write(wire.AppendStatus(nil, wire.Status{Interval: time.Second, Applied: 10}))
		if tc.hello == 0 {
			if _, err := io.ReadAll(c); err != nil {
				t.Fatalf("v1 peer sending STATUS: %v, want the connection closed", err)
			}
			waitUntil(t, 5*time.Second, "BadFrames", func() bool { return srv.Stats().BadFrames == bad+1 })
		} else {
			waitUntil(t, 5*time.Second, "the STATUS in the table", func() bool {
				r := srv.Mirrors()
				return len(r) == 1 && r[0].Reported && r[0].Applied == 10 && r[0].LagRecords == 0
			})
		}
		c.Close()
		waitUntil(t, 5*time.Second, "the row gone", func() bool { return len(srv.Mirrors()) == 0 })
	}
}

// A mirror configured without telemetry works unchanged, is listed
// without a report, and never counts for AwaitApplied; so does a mirror of a
// source that does not take telemetry.
func TestTelemetryMirrorWithoutFlag(t *testing.T) {
	eachMode(t, []string{"tcp", "multicast"}, func(t *testing.T, mode string) {
		for _, side := range []string{"mirror", "source"} {
			p, src := pairSource(t, 1024)
			scfg, _ := transportConfigs(mode)
			scfg.NoTelemetry = side == "source"
			srv := src.serve(scfg)
			m := teleMirror(t, src, p.BAddr, mode, fromOldest, "", func(c *replica.MirrorConfig) {
				c.NoTelemetry = side == "mirror"
			})
			r := runMirror(t, p.B, m)
			src.push(500)
			waitUntil(t, 10*time.Second, "records at the mirror", func() bool { return m.Stats().Next == 501 })
			rows := srv.Mirrors()
			if len(rows) != 1 || rows[0].Telemetry || rows[0].Reported || rows[0].Applied != 0 || !rows[0].Connected {
				t.Fatalf("%s without telemetry: table %+v", side, rows)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
			n, err := srv.AwaitApplied(ctx, 1, 500)
			cancel()
			if n != 0 || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("%s without telemetry: AwaitApplied = %d, %v", side, n, err)
			}
			r.close()
			if st := m.Stats(); st.Gaps != 0 || st.Connects != 1 || srv.Stats().BadFrames != 0 {
				t.Fatalf("%s without telemetry: mirror %+v, server %+v", side, st, srv.Stats())
			}
		}
	})
}

// Against a version-1 source (a script): the mirror announces the flag, a
// mirror without telemetry sends the version-1 HELLO byte for byte, and
// neither sends a STATUS when the source did not acknowledge.
func TestTelemetryOldSource(t *testing.T) {
	p, _ := pairSource(t, 16)
	geom := fakeGeometry(t)
	for _, off := range []bool{false, true} {
		var ln net.Listener
		if err := p.A.Do(func() (err error) { ln, err = net.Listen("tcp", p.AAddr.String()+":0"); return err }); err != nil {
			t.Fatal(err)
		}
		type result struct {
			hello, after []byte
			err          error
		}
		res := make(chan result, 1)
		go func() {
			var r result
			defer func() { res <- r }()
			c, err := ln.Accept()
			if r.err = err; err != nil {
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			r.hello = make([]byte, wire.HeaderSize+16)
			if _, r.err = io.ReadFull(c, r.hello); r.err != nil {
				return
			}
			b := wire.AppendGeometry(nil, 1, 0, geom)
			b = append(b, dataFrame(0, 1, 5, 7)...)
			if _, r.err = c.Write(b); r.err != nil {
				return
			}
			// Everything the mirror sends in half a second: nothing.
			c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
			r.after, _ = io.ReadAll(c)
		}()
		m, err := replica.NewMirror(replica.MirrorConfig{Source: ln.Addr().String(), Ring: t.TempDir() + "/m",
			TCPOnly: true, Once: true, NoTelemetry: off, NoSession64: off, NoHistory: off, StatusInterval: 10 * time.Millisecond, From: fromOldest})
		if err != nil {
			t.Fatal(err)
		}
		if err := runIn(p.B, m, 10*time.Second); err != nil {
			t.Fatalf("telemetry off=%v: %v", off, err)
		}
		r := <-res
		ln.Close()
		flags := wire.HelloTelemetry | wire.HelloReportOnAsk | wire.HelloSession64 | wire.HelloHistory // extensions a version-1 source ignores
		if off {
			flags = 0 // exactly version 1
		}
		want := wire.AppendHello(nil, wire.StartOldest, wire.Hello{Flags: flags})
		if r.err != nil || !bytes.Equal(r.hello, want) || len(r.after) != 0 {
			t.Fatalf("telemetry off=%v: %v, HELLO % x (want % x), then % x", off, r.err, r.hello, want, r.after)
		}
		if st := m.Stats(); st.Next != 6 {
			t.Fatalf("telemetry off=%v: mirror %+v", off, st)
		}
		m.Close()
	}
}
