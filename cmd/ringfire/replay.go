package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/ringfire/ringfire/archive"
)

const replayHelp = `Replay writes the records of the archive in DIR into the ring at RING, each
at its original sequence number, so that readers, tail and mirrors (serve
RING) consume a replay as they would the live ring. The ring is created with
the recorded ring's geometry (payload size, capacity, blob arena, schema) and
is SPARSE: where the archive holds a gap, the ring holds a hole. It replays one
epoch (one producer's incarnation): --epoch N, the last by default (see
'ringfire archive stat DIR'). --from and --to bound what is replayed, both
inclusive, each a sequence number or an RFC 3339 time (the time the recorder
saw a record; a time bound and a sequence bound may be given together).
--speed max writes as fast as it can; 1x keeps the original inter-arrival
times, Nx divides them by N (0.5x: twice as slow). The ring is always a new
file: a stale ring of the same geometry at RING is replaced, one of another
geometry (or a file that is not a ring) only with --replace, and one a live
producer writes never. With --follow, replay goes on with what a recorder
still appends to the epoch, until SIGINT or SIGTERM or a later epoch begins.
The ring stays at RING when replay ends; the counters are printed.`

func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("replay", "DIR RING [flags]", replayHelp, stderr)
	var (
		epoch           uint64
		from, to, speed string
		replace, follow bool
		asJSON          bool
		duration        time.Duration
	)
	fs.Uint64Var(&epoch, "epoch", 0, "replay epoch `N` (0: the archive's last)")
	fs.StringVar(&from, "from", "", "replay from this `sequence or RFC 3339 time` on (default: the epoch's first)")
	fs.StringVar(&to, "to", "", "replay up to this `sequence or RFC 3339 time`, inclusive (default: the epoch's last)")
	fs.StringVar(&speed, "speed", "max", "`max` (as fast as possible), 1x (the original pace) or Nx (N times faster, such as 10x or 0.5x)")
	fs.BoolVar(&replace, "replace", false, "replace an existing ring of another geometry (or a non-ring file) at RING")
	fs.BoolVar(&follow, "follow", false, "at the end of the archive, wait for what a recorder appends, until interrupted")
	size := defaultMaxSize()
	fs.Var(&size, "max-size", "refuse to create a ring file larger than `SIZE` bytes (K, M, G, T suffixes; 0: no limit but the free space)")
	fs.DurationVar(&duration, "duration", 0, "stop after this `duration` (0: at the end, or with --follow until SIGINT or SIGTERM)")
	fs.BoolVar(&asJSON, "json", false, "print the final counters as JSON")
	pos, err := parseArgs(fs, args, "DIR", "RING")
	if err != nil {
		return helpOr(err)
	}
	cfg := archive.ReplayConfig{Ring: pos[1], Epoch: epoch, Replace: replace, MaxSize: size.opt(), Follow: follow}
	if cfg.From, cfg.FromTime, err = parseBound("--from", from); err != nil {
		return err
	}
	if cfg.To, cfg.ToTime, err = parseBound("--to", to); err != nil {
		return err
	}
	if cfg.To != 0 && cfg.From > cfg.To || cfg.ToTime != 0 && cfg.FromTime > cfg.ToTime {
		return usagef("--from %s is after --to %s", from, to)
	}
	if cfg.Speed, err = parseSpeed(speed); err != nil {
		return err
	}
	if duration < 0 {
		return usagef("--duration %v: want 0 or a positive duration", duration)
	}
	r, err := archive.Open(pos[0])
	if err != nil {
		return err
	}
	defer r.Close()
	ctx, cancel := runContext(ctx, duration)
	defer cancel()
	st, err := archive.Replay(ctx, r, cfg)
	if asJSON {
		json.NewEncoder(stdout).Encode(st)
	} else {
		fmt.Fprintf(stdout, "replay: records %d, gaps %d (%d records), sequences %d..%d into %s\n",
			st.Records, st.Gaps, st.GapRecords, st.First, st.Last, cfg.Ring)
	}
	if err != nil && ctx.Err() != nil {
		return nil // interrupted (--follow, --duration)
	}
	return err
}

// parseBound parses --from or --to: a sequence number (seq) or an RFC
// 3339 time (t, unix ns); "" is neither.
func parseBound(name, s string) (seq uint64, t int64, err error) {
	if s == "" {
		return 0, 0, nil
	}
	if n, err := strconv.ParseUint(s, 10, 64); err == nil {
		if n == 0 {
			return 0, 0, usagef("%s 0: sequences start at 1", name)
		}
		return n, 0, nil
	}
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, 0, usagef("%s %q: want a sequence number or an RFC 3339 time such as 2026-12-07T09:30:00Z", name, s)
	}
	if at.UnixNano() <= 0 {
		return 0, 0, usagef("%s %q: want a time after 1970", name, s)
	}
	return 0, at.UnixNano(), nil
}

// parseSpeed parses --speed: max is 0 (as fast as possible), Nx is N.
func parseSpeed(s string) (float64, error) {
	if s == "max" {
		return 0, nil
	}
	n, err := strconv.ParseFloat(strings.TrimSuffix(s, "x"), 64)
	if err != nil || !strings.HasSuffix(s, "x") || !(n >= 0.001 && n <= 1e6) {
		return 0, usagef("--speed %q: want max, or Nx with N from 0.001 to 1000000 (1x: the original pace)", s)
	}
	return n, nil
}
