package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ringfire/ringfire/internal/trace"
	"github.com/ringfire/ringfire/replica"
)

const mirrorHelp = `Mirror connects to a ringfire serve at SOURCE (host:port, or unix:PATH for a
serve on this host with --unix PATH) and keeps the ring at PATH identical to
the source ring: same geometry, same sequence numbers, records written
strictly in order, never duplicated. Readers attach to PATH as to any ring.
--from picks where to start: latest (the newest record, then live), oldest
(everything the source still holds), resume (after the last record already in
PATH) or a sequence number. Records come by multicast when the source offers
it, by UDP unicast with --unicast (the mirror punches to the source, NAT
friendly), or over TCP with --tcp; from a Unix socket everything comes over
the socket, cheaper than loopback TCP (no TCP stack). The mirror reconnects
after --reconnect-ms unless --once is given. The counters are printed when it
ends.`

// mirrorFlags are the flags that describe one mirror: mirror's, and the
// keys of a [[mirror]] table of ringfire run.
type mirrorFlags struct {
	loop                            *replica.Loop // ringfire run's, when its file has a loop key
	from, iface                     string
	unicast, tcp, once, noTelemetry bool
	anySource                       bool
	reconnectMS                     int
	maxSize                         maxSize
	wait                            waitFlags
	key                             keyFlags
	xdp                             xdpFlags
}

func addMirrorFlags(fs *flag.FlagSet) *mirrorFlags {
	f := &mirrorFlags{maxSize: defaultMaxSize()}
	fs.StringVar(&f.from, "from", "latest", "start `at` latest, oldest, resume or a sequence number")
	fs.StringVar(&f.iface, "iface", "", "local interface (`address` or name) facing the source")
	fs.BoolVar(&f.unicast, "unicast", false, "ask for UDP unicast (punch through NAT)")
	fs.BoolVar(&f.tcp, "tcp", false, "receive everything over TCP")
	fs.BoolVar(&f.once, "once", false, "do not reconnect: exit when the source goes away")
	fs.IntVar(&f.reconnectMS, "reconnect-ms", 1000, "wait `ms` between reconnections")
	f.wait.add(fs, "receive loop")
	fs.Var(&f.maxSize, "max-size", "refuse a source whose ring would make a mirror ring larger than `SIZE` bytes (K, M, G, T suffixes; 0: no limit but the free space)")
	fs.BoolVar(&f.noTelemetry, "no-telemetry", false, "send a version-1 HELLO: no STATUS reports, no wide session id")
	fs.BoolVar(&f.anySource, "any-source", false, "accept datagrams from any address (default: only from the source's)")
	f.key.add(fs, "with --key, refuse a source whose datagrams are not encrypted (serve --encrypt)")
	f.xdp.add(fs)
	return f
}

func runMirror(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("mirror", "SOURCE PATH [flags]", mirrorHelp, stderr)
	f := addMirrorFlags(fs)
	var (
		asJSON             bool
		duration, interval time.Duration
	)
	addRunFlags(fs, &duration, &interval, &asJSON)
	logFormat := fs.String("log-format", "text", "log as `text` or json")
	pos, err := parseArgs(fs, args, "SOURCE", "PATH")
	if err != nil {
		return helpOr(err)
	}
	if err := checkRunFlags(duration, interval); err != nil {
		return err
	}
	log, err := newLogger(*logFormat, stderr)
	if err != nil {
		return err
	}
	u, err := f.unit(pos[0], pos[1], log, nil)
	if err != nil {
		return err
	}
	ctx, cancel := runContext(ctx, duration)
	defer cancel()
	go everyTick(ctx, interval, func() { printMirrorStats(stdout, u.m.Stats(), false) })
	err = u.run(ctx)
	if terr := trace.Flush("mirror-" + filepath.Base(pos[1])); err == nil {
		err = terr
	}
	printMirrorStats(stdout, u.m.Stats(), asJSON)
	return err
}

// checkSource checks that SOURCE is HOST:PORT with a port, or unix:PATH.
func checkSource(s string) error {
	if p, ok := replica.UnixSocket(s); ok {
		return checkSocketPath("SOURCE", s, p)
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" {
		return usagef("SOURCE %q: want HOST:PORT, the address serve's --bind listens on, or unix:PATH, its --unix", s)
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		return usagef("SOURCE %q: port %q is not 1..65535", s, port)
	}
	return nil
}

func parseMirrorFrom(s string) (replica.From, error) {
	switch s {
	case "latest":
		return replica.From{Mode: replica.FromLatest}, nil
	case "oldest":
		return replica.From{Mode: replica.FromOldest}, nil
	case "resume":
		return replica.From{Mode: replica.FromResume}, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n == 0 {
		return replica.From{}, usagef("--from %q: want latest, oldest, resume or a sequence number from 1", s)
	}
	return replica.From{Mode: replica.FromSeq, Seq: n}, nil
}

func printMirrorStats(w io.Writer, st replica.MirrorStats, asJSON bool) {
	if asJSON {
		json.NewEncoder(w).Encode(st)
		return
	}
	fmt.Fprintf(w, "mirror: %s, next %d, lag %d, connects %d, fresh rings %d\n", st.Transport, st.Next, st.Lag, st.Connects, st.Resets)
	fmt.Fprintf(w, "  received: frames %d, datagrams %d, records %d (history %d, retransmitted %d), gaps %d\n",
		st.Frames, st.Datagrams, st.Records, st.CatchUp, st.Retransmitted, st.Gaps)
	fmt.Fprintf(w, "  NAKs sent %d; dropped: duplicates %d, stale %d, other session %d, malformed %d, overflow %d, far ahead %d, foreign %d\n",
		st.NaksSent, st.Duplicates, st.Stale, st.OtherSession, st.Malformed, st.Overflow, st.FarAhead, st.Foreign)
}
