package replica_test

// The source's table of mirrors follows them: a mirror that pauses, one
// that stops and resumes its ring, lag warnings once per crossing.

import (
	"context"
	"net/netip"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/replica"
)

// teleModes are the kernel transports the telemetry tests run over.
var teleModes = []string{"tcp", "multicast", "unicast"}

// runner runs a mirror's Run loop in a namespace; pause stops the loop
// but keeps its connection open (a hung mirror), start runs it again.
type runner struct {
	t      *testing.T
	ns     *netns.NS
	m      *replica.Mirror
	cancel context.CancelFunc
	done   <-chan struct{}
	err    error
}

func runMirror(t *testing.T, ns *netns.NS, m *replica.Mirror) *runner {
	r := &runner{t: t, ns: ns, m: m}
	r.start()
	t.Cleanup(r.close)
	return r
}

func (r *runner) start() {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.done = r.ns.Go(func() { r.err = r.m.Run(ctx) })
}

func (r *runner) pause() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		r.t.Fatal("mirror did not stop")
	}
	if r.err != nil {
		r.t.Errorf("mirror: %v", r.err)
	}
}

// close stops the mirror for good, its ring closed.
func (r *runner) close() {
	r.pause()
	r.m.Close()
}

// teleMirror makes a mirror of src in the settings of mode, reporting
// every 20 ms, its ring at path (empty: a temporary one).
func teleMirror(t *testing.T, src *source, iface netip.Addr, mode string, from replica.From, path string, tweak func(*replica.MirrorConfig)) *replica.Mirror {
	t.Helper()
	_, cfg := transportConfigs(mode)
	cfg.From, cfg.Ring, cfg.Reconnect, cfg.StatusInterval = from, path, 50*time.Millisecond, 20*time.Millisecond
	if path == "" {
		cfg.Ring = filepath.Join(t.TempDir(), "mirror")
	}
	if tweak != nil {
		tweak(&cfg)
	}
	return newMirrorOf(t, src, iface, cfg)
}

// rowOf is the table's row of the mirror with identity id.
func rowOf(srv *replica.Server, id uint64) (replica.MirrorInfo, bool) {
	for _, r := range srv.Mirrors() {
		if r.ID == id {
			return r, true
		}
	}
	return replica.MirrorInfo{}, false
}

// waitRow polls the row of mirror id until ok holds (10 s).
func waitRow(t *testing.T, srv *replica.Server, id uint64, what string, ok func(replica.MirrorInfo) bool) replica.MirrorInfo {
	t.Helper()
	var r replica.MirrorInfo
	if !poll(10*time.Second, 5*time.Millisecond, func() bool {
		var found bool
		r, found = rowOf(srv, id)
		return found && ok(r)
	}) {
		t.Fatalf("%s: not reached; row %+v; table %+v", what, r, srv.Mirrors())
	}
	return r
}

func caughtUp(seq uint64) func(replica.MirrorInfo) bool {
	return func(r replica.MirrorInfo) bool {
		return r.Connected && r.Applied == seq && r.LagRecords == 0 && r.Lag == 0
	}
}

// The table follows a mirror that hangs (its loop stops, its connection
// stays), resumes, is stopped (closed), comes back with --from resume and
// catches up; the lag grows while it is away, in records and in time.
func TestTelemetryFollowsStoppedMirror(t *testing.T) {
	eachMode(t, teleModes, func(t *testing.T, mode string) {
		p, src := pairSource(t, 4096)
		scfg, _ := transportConfigs(mode)
		srv := src.serve(scfg)
		path := filepath.Join(t.TempDir(), "mirror")
		m := teleMirror(t, src, p.BAddr, mode, fromOldest, path, nil)
		r := runMirror(t, p.B, m)
		src.push(300)
		row := waitRow(t, srv, m.ID(), "caught up at 300", caughtUp(300))
		if !row.Telemetry || row.Transport != m.Stats().Transport || row.Addr.Addr() != p.BAddr || row.Name == "" {
			t.Fatalf("row %+v, mirror transport %q", row, m.Stats().Transport)
		}

		r.pause() // hung: connected, silent
		src.push(200)
		row = waitRow(t, srv, m.ID(), "lag 200 while hung", func(r replica.MirrorInfo) bool {
			return r.Connected && r.Applied == 300 && r.LagRecords == 200 && r.Lag > 0
		})
		time.Sleep(50 * time.Millisecond)
		if later, _ := rowOf(srv, m.ID()); later.Lag <= row.Lag {
			t.Errorf("lag in time did not grow: %v then %v", row.Lag, later.Lag)
		}
		r.start()
		waitRow(t, srv, m.ID(), "caught up at 500", caughtUp(500))

		r.close() // stopped: its row stays, its lag grows
		src.push(200)
		waitRow(t, srv, m.ID(), "lag 200 while stopped", func(r replica.MirrorInfo) bool {
			return !r.Connected && r.Applied == 500 && r.LagRecords == 200 && r.Lag > 0
		})

		m2 := teleMirror(t, src, p.BAddr, mode, replica.From{Mode: replica.FromResume}, path, nil)
		if m2.ID() != m.ID() {
			t.Fatalf("identity changed on the same ring: %x, %x", m.ID(), m2.ID())
		}
		r2 := runMirror(t, p.B, m2)
		waitRow(t, srv, m.ID(), "caught up at 700 after resume", caughtUp(700))
		if rows := srv.Mirrors(); len(rows) != 1 {
			t.Errorf("the resumed mirror did not take its row over: %+v", rows)
		}
		r2.close()
		sameSlots(t, src.path, path, 1)
	})
}

// events collects the lag events of a server.
type events struct {
	mu   sync.Mutex
	list []replica.ServerEvent
}

func (e *events) add(ev replica.ServerEvent) {
	if ev.Kind == replica.EventLagging || ev.Kind == replica.EventLagRecovered {
		e.mu.Lock()
		e.list = append(e.list, ev)
		e.mu.Unlock()
	}
}

func (e *events) get() []replica.ServerEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]replica.ServerEvent(nil), e.list...)
}

// A mirror whose lag passes half the ring raises one EventLagging, however
// long it stays there, and one EventLagRecovered once back.
func TestTelemetryLagWarning(t *testing.T) {
	eachMode(t, []string{"tcp", "unicast"}, func(t *testing.T, mode string) {
		p, src := pairSource(t, 256)
		var ev events
		scfg, _ := transportConfigs(mode)
		scfg.Events = ev.add
		srv := src.serve(scfg)
		m := teleMirror(t, src, p.BAddr, mode, fromOldest, "", nil)
		r := runMirror(t, p.B, m)
		src.push(10)
		waitRow(t, srv, m.ID(), "caught up", caughtUp(10))
		r.pause()
		src.push(100) // lag 100 of 256: not yet
		waitRow(t, srv, m.ID(), "lag 100", func(r replica.MirrorInfo) bool { return r.LagRecords == 100 })
		time.Sleep(50 * time.Millisecond)
		if k := ev.get(); len(k) != 0 {
			t.Fatalf("events below half the ring: %+v", k)
		}
		src.push(30) // 130 > 128
		waitUntil(t, 5*time.Second, "EventLagging", func() bool { return len(ev.get()) > 0 })
		src.push(50)
		waitRow(t, srv, m.ID(), "lag 180", func(r replica.MirrorInfo) bool { return r.LagRecords == 180 && r.Lagging })
		time.Sleep(100 * time.Millisecond) // ten ticks past the line
		r.start()
		waitRow(t, srv, m.ID(), "caught up", caughtUp(190))
		waitUntil(t, 5*time.Second, "EventLagRecovered", func() bool { return len(ev.get()) > 1 })
		time.Sleep(50 * time.Millisecond)
		k := ev.get()
		if len(k) != 2 || k[0].Kind != replica.EventLagging || k[1].Kind != replica.EventLagRecovered ||
			k[0].Mirror.LagRecords <= 128 || k[0].Mirror.ID != m.ID() || k[1].Mirror.LagRecords > 64 || k[0].Peer == nil {
			t.Fatalf("events %+v, want one lagging (lag > 128) then one recovered", k)
		}
		if row, _ := rowOf(srv, m.ID()); row.Lagging {
			t.Errorf("still lagging: %+v", row)
		}
	})
}
