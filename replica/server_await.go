package replica

import (
	"context"
)

// AwaitApplied blocks until n mirrors have applied seq — published it in
// their rings, where their readers can read it — and returns how many
// have. It returns early with ctx's error when ctx ends (a deadline is the
// timeout), or ErrClosed when the server closes, with the count reached so
// far. Like Redis WAIT: only connected, live mirrors (past their catch-up)
// that report STATUS count, and a mirror's word comes with its STATUS
// (every 100 ms by default, and as soon as it has applied seq:
// AwaitApplied asks for it, or an older mirror reports whenever it catches
// up); a STATUS claiming a record the session was never sent ends that
// session. A record a mirror lost by GAP counts as passed once the mirror
// applied a later one. n ≤ 0 returns the count at once.
//
// It waits for mirrors, not for records: how a hot loop idles is
// WaitMode, and how a ring's reader waits shm.WaitStrategy.
func (s *Server) AwaitApplied(ctx context.Context, n int, seq uint64) (int, error) {
	t := s.tele
	for {
		t.mu.Lock()
		have := t.appliedCount(seq)
		changed, closed := t.awaitChange(), t.closed
		if have < n {
			t.askReports(seq)
		}
		t.mu.Unlock()
		switch {
		case have >= n:
			return have, nil
		case closed:
			return have, ErrClosed
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.mu.Lock()
			have = t.appliedCount(seq)
			t.mu.Unlock()
			if have >= n {
				return have, nil
			}
			return have, ctx.Err()
		}
	}
}

// Wait is the former name of AwaitApplied.
//
// Deprecated: use AwaitApplied.
func (s *Server) Wait(ctx context.Context, n int, seq uint64) (int, error) {
	return s.AwaitApplied(ctx, n, seq)
}

// askReports asks every connected mirror that reports on ask and has not
// reported seq for a STATUS once it has applied it (t.mu held): an
// AwaitApplied hears in about a round trip, and mirrors nobody waits on
// report once per interval.
func (t *telemetry) askReports(seq uint64) {
	for _, r := range t.rows {
		if r.ss != nil && !(r.info.Reported && r.info.Applied >= seq) {
			r.ss.askReport(seq)
		}
	}
}

// appliedCount counts the connected, live mirrors that reported applying
// seq (t.mu held). A session still in its catch-up does not count: its
// mirror has not shown it takes the stream.
func (t *telemetry) appliedCount(seq uint64) int {
	k := 0
	for _, r := range t.rows {
		if r.ss != nil && r.ss.live() && r.info.Reported && r.info.Applied >= seq {
			k++
		}
	}
	return k
}
