package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ringfire/ringfire/internal/trace"
	"github.com/ringfire/ringfire/replica"
)

const mirrorHelp = `Mirror connects to a ringfire serve at SOURCE (host:port) and keeps the ring
at PATH identical to the source ring: same geometry, same sequence numbers,
records written strictly in order, never duplicated. Readers attach to PATH
as to any ring. --from picks where to start: latest (the newest record, then
live), oldest (everything the source still holds), resume (after the last
record already in PATH) or a sequence number. Records come by multicast when
the source offers it, by UDP unicast with --unicast (the mirror punches to
the source, NAT friendly), or over TCP with --tcp. The mirror reconnects
after --reconnect-ms unless --once is given. The counters are printed when it
ends.`

func runMirror(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("mirror", "SOURCE PATH [flags]", mirrorHelp, stderr)
	var (
		from, iface        string
		unicast, tcp, once bool
		asJSON             bool
		noTelemetry        bool
		reconnectMS        int
		duration, interval time.Duration
	)
	fs.StringVar(&from, "from", "latest", "start `at` latest, oldest, resume or a sequence number")
	fs.StringVar(&iface, "iface", "", "local interface (`address` or name) facing the source")
	fs.BoolVar(&unicast, "unicast", false, "ask for UDP unicast (punch through NAT)")
	fs.BoolVar(&tcp, "tcp", false, "receive everything over TCP")
	fs.BoolVar(&once, "once", false, "do not reconnect: exit when the source goes away")
	fs.IntVar(&reconnectMS, "reconnect-ms", 1000, "wait `ms` between reconnections")
	var wf waitFlags
	wf.add(fs, "receive loop")
	ms := defaultMaxSize()
	fs.Var(&ms, "max-size", "refuse a source whose ring would make a mirror ring larger than `SIZE` bytes (K, M, G, T suffixes; 0: no limit but the free space)")
	fs.BoolVar(&noTelemetry, "no-telemetry", false, "send a version-1 HELLO: no STATUS reports, no wide session id")
	anySource := fs.Bool("any-source", false, "accept datagrams from any address (default: only from the source's)")
	var kf keyFlags
	kf.add(fs, "with --key, refuse a source whose datagrams are not encrypted (serve --encrypt)")
	var xf xdpFlags
	xf.add(fs)
	addRunFlags(fs, &duration, &interval, &asJSON)
	pos, err := parseArgs(fs, args, "SOURCE", "PATH")
	if err != nil {
		return helpOr(err)
	}
	if err := checkSource(pos[0]); err != nil {
		return err
	}
	if err := checkRunFlags(duration, interval); err != nil {
		return err
	}
	start, err := parseMirrorFrom(from)
	if err != nil {
		return err
	}
	ifa, err := ifaceAddr(iface)
	if err != nil {
		return err
	}
	mode, pin, err := wf.check()
	if err != nil {
		return err
	}
	key, err := kf.load()
	if err != nil {
		return err
	}
	if reconnectMS <= 0 {
		return usagef("--reconnect-ms must be positive")
	}
	tc, err := xf.check()
	if err != nil {
		return err
	}
	xf.busyPollFor(&tc, mode)
	log := slog.New(slog.NewTextHandler(stderr, nil))
	xo := newOpener(tc, &xf, log)
	m, err := replica.NewMirror(replica.MirrorConfig{Source: pos[0], Ring: pos[1], From: start, Unicast: unicast,
		TCPOnly: tcp, Iface: ifa, Once: once, Wait: mode, Pin: pin, Reconnect: time.Duration(reconnectMS) * time.Millisecond,
		NewTransport: xo.mirrorTransport(), NoTelemetry: noTelemetry, NoSession64: noTelemetry, Events: mirrorEvents(log, time.Now),
		MaxRingSize: ms.opt(), AnySource: *anySource, Key: key, Encrypt: kf.encrypt})
	if err != nil {
		return err
	}
	log.Info("mirroring", "source", pos[0], "ring", pos[1], "from", from)
	ctx, cancel := runContext(ctx, duration)
	defer cancel()
	go every(ctx, interval, func() { printMirrorStats(stdout, m.Stats(), false) })
	err = m.Run(ctx)
	if cerr := m.Close(); err == nil {
		err = cerr
	}
	if terr := trace.Flush("mirror-" + filepath.Base(pos[1])); err == nil {
		err = terr
	}
	printMirrorStats(stdout, m.Stats(), asJSON)
	return err
}

// checkSource checks that SOURCE is HOST:PORT with a port.
func checkSource(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" {
		return usagef("SOURCE %q: want HOST:PORT, the address serve's --bind listens on", s)
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
