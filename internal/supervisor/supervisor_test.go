package supervisor

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// start is a Supervisor of f's units under a context the test's end
// cancels, waiting for every unit.
func start(t *testing.T, f *fakes) (*Supervisor, context.Context) {
	s := f.supervisor()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); s.Wait() })
	return s, ctx
}

// apply applies text and returns the Change.
func apply(t *testing.T, s *Supervisor, ctx context.Context, text string) Change {
	t.Helper()
	ch, err := s.Apply(ctx, parse(t, text))
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// The live supervisor does what Diff says for every reloadCase: it builds
// and runs exactly the units started and restarted, has stopped (their
// Run returned) the units stopped and restarted before Apply returns, and
// leaves the kept ones running in the same Run call.
func TestApplyReloads(t *testing.T) {
	for _, c := range reloadCases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakes()
			s, ctx := start(t, f)
			runs := map[string]*run{}
			if old := parse(t, c.old); old != nil {
				apply(t, s, ctx, c.old)
				runs = f.nextRuns(t, len(old.Tables))
				f.takeBuilt()
			}
			want := Change{len(c.start), len(c.stop), len(c.restart), len(c.keep)}
			if ch := apply(t, s, ctx, c.new); ch != want {
				t.Errorf("change %+v, want %+v", ch, want)
			}
			fresh := slices.Concat(c.start, c.restart)
			if b := f.takeBuilt(); !slices.Equal(sorted(b), sorted(fresh)) {
				t.Errorf("built %q, want %q", b, fresh)
			}
			for _, k := range slices.Concat(c.stop, c.restart) {
				if !ended(runs[k]) || runs[k].ctx.Err() == nil {
					t.Errorf("%s still runs after Apply returned", k)
				}
			}
			for _, k := range c.keep {
				if ended(runs[k]) || runs[k].ctx.Err() != nil {
					t.Errorf("kept %s was stopped", k)
				}
			}
			if got := keysOf(f.nextRuns(t, len(fresh))); !slices.Equal(got, sorted(fresh)) {
				t.Errorf("ran %q, want %q", got, sorted(fresh))
			}
			var all []string
			for _, u := range s.Snapshot() {
				all = append(all, u.Key)
			}
			if want := sorted(slices.Concat(fresh, c.keep)); !slices.Equal(all, want) {
				t.Errorf("snapshot %q, want %q", all, want)
			}
		})
	}
}

// A unit whose Run fails is reported, built again and run again; it is
// unhealthy until it says it is up.
func TestFailedUnitRestarts(t *testing.T) {
	f := newFakes()
	s, ctx := start(t, f)
	apply(t, s, ctx, serveT("a", ""))
	r1 := f.nextRuns(t, 1)["serve a"]
	if err := s.Healthy(); err != nil {
		t.Fatalf("healthy before a failure: %v", err)
	}
	r1.result <- errors.New("address in use")
	e := f.nextEvent(t)
	if e.Kind != UnitFailed || e.Table.Unit() != "serve a" || e.Err == nil || e.Err.Error() != "address in use" || e.Backoff != time.Nanosecond {
		t.Fatalf("event %+v", e)
	}
	r2 := f.nextRuns(t, 1)["serve a"]
	if !ended(r1) {
		t.Error("the failed run has not returned")
	}
	if b := f.takeBuilt(); !slices.Equal(b, []string{"serve a", "serve a"}) {
		t.Errorf("built %q: want the unit built again for its restart", b)
	}
	if err := s.Healthy(); err == nil || err.Error() != "serve a: address in use" {
		t.Errorf("healthy while restarting: %v", err)
	}
	if st := s.Stats(); st != (Stats{Units: 1, Running: 1, Failed: 1, Failures: 1}) {
		t.Errorf("stats %+v", st)
	}
	r2.up()
	if err := s.Healthy(); err != nil {
		t.Errorf("healthy once up again: %v", err)
	}
	r2.result <- errors.New("again")
	if e := f.nextEvent(t); e.Kind != UnitFailed || e.Err.Error() != "again" {
		t.Fatalf("second event %+v", e)
	}
	f.nextRuns(t, 1)
	if st := s.Stats(); st.Failures != 2 || s.Snapshot()[0].Failures != 2 {
		t.Errorf("stats %+v, snapshot %+v", st, s.Snapshot())
	}
}

// A unit that cannot be built again after a failure (what it opens has
// gone) is reported as failed too, and built again after the back-off.
func TestRestartBuildFails(t *testing.T) {
	f := newFakes()
	s, ctx := start(t, f)
	apply(t, s, ctx, mirrorT("b", ""))
	r := f.nextRuns(t, 1)["mirror b"]
	f.failBuild("mirror b", errors.New("no such interface"))
	r.result <- errors.New("interface down")
	for _, want := range []string{"interface down", "no such interface"} {
		if e := f.nextEvent(t); e.Kind != UnitFailed || e.Err.Error() != want {
			t.Fatalf("event %+v, want a failure %q", e, want)
		}
	}
	f.nextRuns(t, 1)
	if b := f.takeBuilt(); !slices.Equal(b, []string{"mirror b", "mirror b"}) {
		t.Errorf("built %q", b)
	}
	if err := s.Healthy(); err == nil || err.Error() != "mirror b: no such interface" {
		t.Errorf("healthy: %v", err)
	}
}

// A unit whose Run returns nil by itself has ended: it is reported, not
// restarted, and a reload that keeps its table does not start it again.
func TestUnitEnded(t *testing.T) {
	f := newFakes()
	s, ctx := start(t, f)
	text := mirrorT("b", "once = true\n")
	apply(t, s, ctx, text)
	r := f.nextRuns(t, 1)["mirror b"]
	r.result <- nil
	if e := f.nextEvent(t); e.Kind != UnitEnded || e.Table.Unit() != "mirror b" {
		t.Fatalf("event %+v", e)
	}
	<-r.ended
	f.takeBuilt()
	if ch := apply(t, s, ctx, text); ch != (Change{Kept: 1}) {
		t.Errorf("change %+v", ch)
	}
	if b := f.takeBuilt(); len(b) != 0 {
		t.Errorf("built %q for an ended unit kept", b)
	}
	snap := s.Snapshot()
	if len(snap) != 1 || snap[0].Unit != nil || snap[0].Err != nil || s.Healthy() != nil {
		t.Errorf("snapshot %+v", snap)
	}
	if st := s.Stats(); st != (Stats{Units: 1}) {
		t.Errorf("stats %+v", st)
	}
}

// A reload whose file no longer parses, or has a table that fails to
// build, keeps the running set: nothing stops, nothing starts, the units
// built for it are discarded, and the next good file is applied against
// the set that runs.
func TestRefusedReloadKeepsRunningSet(t *testing.T) {
	f := newFakes()
	s, ctx := start(t, f)
	good := serveT("a", "") + mirrorT("b", "")
	apply(t, s, ctx, good)
	runs := f.nextRuns(t, 2)
	f.takeBuilt()

	if _, err := Parse("f.toml", []byte("[[mirror]\nring = \n")); err == nil {
		t.Fatal("a broken file parsed")
	}
	bad := serveT("a", "udp = 2\n") + serveT("c", "") + mirrorT("d", "fail-build = true\n") + mirrorT("b", "")
	ch, err := s.Apply(ctx, parse(t, bad))
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Key != "fail-build" || ce.Line != 9 || ch != (Change{}) {
		t.Fatalf("apply: %+v, %v: want the error of fail-build on line 9", ch, err)
	}
	if d, b := f.discards(), f.takeBuilt(); !slices.Equal(d, []string{"serve a", "serve c"}) || !slices.Equal(b, d) {
		t.Errorf("built %q, discarded %q: want serve a and serve c, both discarded", b, d)
	}
	for k, r := range runs {
		if ended(r) || r.ctx.Err() != nil {
			t.Errorf("%s stopped by a refused file", k)
		}
	}
	if snap := s.Snapshot(); len(snap) != 2 || snap[0].Unit == nil || snap[1].Unit == nil {
		t.Errorf("snapshot %+v", snap)
	}

	next := serveT("a", "udp = 2\n") + serveT("c", "") + mirrorT("b", "")
	if ch := apply(t, s, ctx, next); ch != (Change{Started: 1, Restarted: 1, Kept: 1}) {
		t.Errorf("the good file after a refused one: %+v", ch)
	}
	if !ended(runs["serve a"]) || ended(runs["mirror b"]) {
		t.Error("the good file did not restart serve a alone")
	}
	if got := keysOf(f.nextRuns(t, 2)); !slices.Equal(got, []string{"serve a", "serve c"}) {
		t.Errorf("ran %q", got)
	}
}

// Ready waits for every running unit, names the ones not ready one a
// line, and says a failure first; Healthy names failed units only.
func TestHealthAndReady(t *testing.T) {
	f := newFakes()
	s, ctx := start(t, f)
	apply(t, s, ctx, serveT("a", "")+mirrorT("b", ""))
	runs := f.nextRuns(t, 2)
	if err := s.Ready(); err == nil || err.Error() != "mirror b: not ready yet\nserve a: not ready yet" {
		t.Errorf("ready: %v", err)
	}
	if err := s.Healthy(); err != nil {
		t.Errorf("healthy: %v", err)
	}
	f.setReady("serve a", true)
	if err := s.Ready(); err == nil || err.Error() != "mirror b: not ready yet" {
		t.Errorf("ready with serve a ready: %v", err)
	}
	f.setReady("mirror b", true)
	if err := s.Ready(); err != nil {
		t.Errorf("ready with both ready: %v", err)
	}
	runs["serve a"].result <- errors.New("boom")
	f.nextEvent(t)
	r := f.nextRuns(t, 1)["serve a"]
	for what, err := range map[string]error{"healthy": s.Healthy(), "ready": s.Ready()} {
		if err == nil || !strings.Contains(err.Error(), "serve a: boom") {
			t.Errorf("%s after a failure: %v", what, err)
		}
	}
	r.up()
	if s.Healthy() != nil || s.Ready() != nil {
		t.Errorf("once up: healthy %v, ready %v", s.Healthy(), s.Ready())
	}
}

// When the context given to Apply ends, every unit stops and Wait
// returns; a stopped unit's failure mark is gone.
func TestStopAll(t *testing.T) {
	f := newFakes()
	s := f.supervisor()
	ctx, cancel := context.WithCancel(context.Background())
	apply(t, s, ctx, serveT("a", "")+serveT("b", "bind = \":1\"\n")+mirrorT("c", ""))
	runs := f.nextRuns(t, 3)
	runs["serve b"].result <- errors.New("boom")
	f.nextEvent(t)
	f.nextRuns(t, 1)
	cancel()
	s.Wait()
	for k, r := range runs {
		if !ended(r) {
			t.Errorf("%s runs after Wait", k)
		}
	}
	if st := s.Stats(); st.Running != 0 || st.Failed != 0 || s.Healthy() != nil {
		t.Errorf("stats after Wait %+v, healthy %v", st, s.Healthy())
	}
}
