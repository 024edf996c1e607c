package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"path/filepath"
	"sync"
	"time"

	"github.com/ringfire/ringfire/internal/trace"
	"github.com/ringfire/ringfire/replica"
)

const serveHelp = `Serve maps the ring at PATH read-only and serves it to mirrors. Every mirror
connects to --bind over TCP (handshake, catch-up, NAK repair), or, on this
host, to the Unix socket --unix PATH (everything over it). Records then
travel over TCP, or as UDP datagrams: to a multicast group (--multicast, one
datagram for all mirrors of a LAN) or by unicast to mirrors that punch to
--udp PORT (other sites, clouds, NAT). Lost datagrams are repaired from the
ring itself; what the ring no longer holds becomes a gap. A frame leaves as
soon as the sender has it: under load, records gather while the previous
batch is being sent (--linger-us N holds a partial frame up to N µs). The
sender waits as --wait says (adaptive: sched_yield between its first 200
polls of the ring, then sleep on the ring's futex). Serve runs until SIGINT,
SIGTERM or --duration, or with --once until the first mirror session ends (a
mirror that completed the handshake disconnects, for whatever reason), and
then exits with status 0; the counters are printed when it ends. Mirrors
report their progress back: a mirror whose lag passes half the ring is
logged, and --metrics ADDR serves Prometheus metrics (/metrics) and the
table of mirrors (/mirrors, read by "ringfire mirrors ADDR"), on loopback
unless ADDR names a host. A connection must finish its handshake (TLS
included) within --handshake-timeout; at most --max-pending-per-addr
connections from one address may be in their handshake or catch-up, and
when --max-pending are, the oldest is closed for the newcomer. A refused
peer is sent an ERROR frame saying why (a mirror logs it), and refusals are
counted by kind. Repair (NAK answers, and the catch-up a mirror asks for) is
paced by token buckets of bytes per address and in total (--repair-*), each
holding one full catch-up of the ring; live records are never paced, and a
NAK the budget cannot answer within 100 ms waits for the
mirror's repeat. With --archive DIR (what "ringfire record PATH DIR"
writes), a mirror that asks for records the ring no longer holds (mirror
--from N) or NAKs them is sent them from the archive, in order over TCP,
paced by the repair budget, and then the ring's: no gap, no duplicate.
Only records neither holds are a gap; a mirror too old to announce it
gets a gap, as without --archive. A second line (A/B feeds: every datagram
also sent over another network, the mirror applying the first copy) is
--multicast-b GROUP:PORT with --iface-b ADDR for multicast mirrors, and
--udp PORT with --iface-b ADDR for unicast ones: they punch to ADDR:PORT too,
with a key the source gave their session, and get every datagram on both.`

type serveFlags struct {
	bind, unix, multicast string
	iface                 string
	ttl, udp, dup, mtu    int
	batch, lingerUS       int
	wideMulticast         bool
	xdp                   xdpFlags
	wait                  waitFlags
	limits                limitFlags
	key                   keyFlags
	// admission: the handshake's deadline, the per-address pending cap.
	handshakeTimeout time.Duration
	pendingPerAddr   int
	repair           repairFlags
	archive          string
	lines            lineFlags // line B: --multicast-b, --iface-b, --transport-b, --xdp-b
}

// addServeFlags registers the flags that describe how one ring is served:
// serve's, and the keys of a [[serve]] table of ringfire run.
func addServeFlags(fs *flag.FlagSet) *serveFlags {
	f := new(serveFlags)
	fs.StringVar(&f.bind, "bind", "0.0.0.0:7400", "TCP control `address` mirrors connect to")
	fs.StringVar(&f.unix, "unix", "", "also listen on this Unix socket `path` (@name: abstract) for mirrors on this host (mirror unix:PATH)")
	fs.StringVar(&f.multicast, "multicast", "", "send datagrams to this multicast `group:port`")
	fs.StringVar(&f.iface, "iface", "", "interface (`address` or name) multicast leaves by")
	fs.IntVar(&f.ttl, "ttl", 1, "multicast TTL")
	fs.IntVar(&f.udp, "udp", 0, "UDP `port` for unicast mirrors that punch (0: none)")
	fs.BoolVar(&f.wideMulticast, "wide-multicast", false, "multicast datagrams carry the 64-bit session id (version-1 mirrors are then served over TCP)")
	fs.IntVar(&f.dup, "dup", 1, "send every datagram `N` times")
	fs.IntVar(&f.mtu, "mtu", replica.DefaultMTU, "datagram budget in `bytes`, 16-byte header included")
	fs.IntVar(&f.batch, "batch", 0, "at most `N` records per frame (0: fill the MTU)")
	fs.IntVar(&f.lingerUS, "linger-us", 0, "hold a partial frame up to `µs` for more records (0: none; -1: adaptive, 50 µs)")
	f.wait.add(fs, "datagram sender")
	f.limits.add(fs)
	fs.IntVar(&f.pendingPerAddr, "max-pending-per-addr", replica.DefaultMaxPendingPerAddr,
		"at most `N` connections from one address in their handshake or catch-up; past it a connection is refused with an ERROR frame saying why (-1: no limit)")
	fs.DurationVar(&f.handshakeTimeout, "handshake-timeout", replica.DefaultHandshakeTimeout,
		"close a connection whose handshake, TLS included, is not done within this `duration` (100ms..5m), telling the peer why")
	f.repair.add(fs)
	fs.StringVar(&f.archive, "archive", "", "answer a mirror asking for records the ring no longer holds from the archive in `DIR` (ringfire record of this ring), then go on with the ring: no gap")
	f.key.add(fs, "with --key, also encrypt the datagrams' payloads (TCP is always encrypted under a key)")
	f.xdp.add(fs)
	f.lines.addServe(fs)
	return f
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve", "PATH [flags]", serveHelp, stderr)
	f := addServeFlags(fs)
	var (
		metrics         string
		asJSON, once    bool
		duration, every time.Duration
	)
	fs.StringVar(&metrics, "metrics", "", "serve Prometheus metrics and the mirror table on `[host]:port` (no host: 127.0.0.1)")
	fs.BoolVar(&once, "once", false, "exit (status 0) when the first mirror session ends")
	addRunFlags(fs, &duration, &every, &asJSON)
	logFormat := fs.String("log-format", "text", "log as `text` or json")
	path, err := parsePath(fs, args)
	if err != nil {
		return helpOr(err)
	}
	log, err := newLogger(*logFormat, stderr)
	if err != nil {
		return err
	}
	u, err := f.unit(path, log)
	if err != nil {
		return err
	}
	if err := checkRunFlags(duration, every); err != nil {
		return err
	}
	ctx, cancel := runContext(ctx, duration)
	defer cancel()
	if once {
		ctx = endAfterFirstSession(ctx, u)
	}
	defer trace.Flush("serve-" + filepath.Base(path))
	if metrics != "" {
		addr, err := metricsAddr(metrics)
		if err != nil {
			return err
		}
		var set unitSet
		set.addServe(u)
		at, err := startMetrics(ctx, addr, &set, log)
		if err != nil {
			return err
		}
		log.Info("metrics", "addr", at, "metrics", "/metrics", "mirrors", "/mirrors")
	}
	return u.run(ctx, func(sctx context.Context, srv *replica.Server) {
		go everyTick(sctx, every, func() { printServerStats(stdout, stats(srv), false) })
	}, func(st replica.ServerStats) { printServerStats(stdout, st, asJSON) })
}

// endAfterFirstSession returns a context that ends with ctx or, earlier,
// when the first mirror session u serves ends: the server's
// EventDisconnected, which only follows an EventConnected. Serve then
// stops as it does on a signal (sessions closed, counters printed) and
// returns nil.
func endAfterFirstSession(ctx context.Context, u *serveUnit) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	events := u.cfg.Events
	var ended sync.Once
	u.cfg.Events = func(e replica.ServerEvent) {
		if events != nil {
			events(e)
		}
		if e.Kind == replica.EventDisconnected {
			ended.Do(func() {
				u.log.Info("the first mirror session ended: stopping (--once)", "peer", e.Peer)
				cancel()
			})
		}
	}
	return ctx
}

// sunPathMax is the longest Unix socket path a sockaddr_un holds (108
// bytes with the terminating NUL).
const sunPathMax = 107

// checkSocketPath checks a Unix socket path p given as value of what.
func checkSocketPath(what, value, p string) error {
	switch {
	case p == "" || p == "@":
		return usagef("%s %q: no socket path", what, value)
	case len(p) > sunPathMax:
		return usagef("%s %q: the path is %d bytes, a Unix socket's holds at most %d", what, value, len(p), sunPathMax)
	}
	return nil
}

func (f *serveFlags) config(path string, log *slog.Logger) (replica.ServerConfig, error) {
	if f.unix != "" {
		if err := checkSocketPath("--unix", f.unix, f.unix); err != nil {
			return replica.ServerConfig{}, err
		}
	}
	cfg := replica.ServerConfig{Ring: path, Bind: f.bind, Unix: f.unix, TTL: f.ttl, UDPPort: f.udp, Dup: f.dup,
		MTU: f.mtu, Batch: f.batch, Linger: time.Duration(f.lingerUS) * time.Microsecond,
		Events: func(e replica.ServerEvent) { logEvent(log, e) }}
	if f.lingerUS < 0 {
		cfg.Linger = -1
	}
	var err error
	if cfg.Wait, cfg.Pin, err = f.wait.check(); err != nil {
		return cfg, err
	}
	if err := f.limits.apply(&cfg); err != nil {
		return cfg, err
	}
	if err := f.admission(&cfg); err != nil {
		return cfg, err
	}
	if err := f.repair.apply(&cfg); err != nil {
		return cfg, err
	}
	if cfg.Key, err = f.key.load(); err != nil {
		return cfg, err
	}
	cfg.Encrypt = f.key.encrypt
	cfg.WideMulticast = f.wideMulticast
	switch {
	case f.ttl < 1 || f.ttl > 255:
		return cfg, usagef("--ttl %d: want 1..255", f.ttl)
	case f.lingerUS < -1 || f.lingerUS > 1_000_000:
		return cfg, usagef("--linger-us %d: want -1 (adaptive), 0 (none) or up to 1000000 (1 s)", f.lingerUS)
	case f.mtu < replica.MinMTU || f.mtu > replica.MaxMTU:
		return cfg, usagef("--mtu %d: want %d..%d bytes", f.mtu, replica.MinMTU, replica.MaxMTU)
	case f.batch < 0 || f.batch > 65535:
		return cfg, usagef("--batch %d: want 0 (fill the MTU) .. 65535", f.batch)
	case f.udp < 0 || f.udp > 65535:
		return cfg, usagef("--udp %d: want a port, 1..65535 (0: none)", f.udp)
	case f.dup < 1 || f.dup > 16:
		return cfg, usagef("--dup %d: want 1..16", f.dup)
	}
	if f.multicast != "" {
		g, err := netip.ParseAddrPort(f.multicast)
		if err != nil || !g.Addr().Is4() || !g.Addr().IsMulticast() || g.Port() == 0 {
			return cfg, usagef("--multicast %q: want an IPv4 multicast GROUP:PORT such as 239.255.0.1:7401", f.multicast)
		}
		cfg.Multicast = g
	}
	if cfg.Iface, err = ifaceAddr(f.iface); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// admission checks --max-pending-per-addr and --handshake-timeout and
// sets them in cfg.
func (f *serveFlags) admission(cfg *replica.ServerConfig) error {
	if f.pendingPerAddr < 1 && f.pendingPerAddr != -1 {
		return usagef("--max-pending-per-addr %d: want at least 1, or -1 for no limit", f.pendingPerAddr)
	}
	if f.handshakeTimeout < 100*time.Millisecond || f.handshakeTimeout > 5*time.Minute {
		return usagef("--handshake-timeout %v: want 100ms..5m", f.handshakeTimeout)
	}
	cfg.MaxPendingPerAddr, cfg.HandshakeTimeout = f.pendingPerAddr, f.handshakeTimeout
	return nil
}

// ifaceAddr accepts an interface's IPv4 address or its name.
func ifaceAddr(s string) (netip.Addr, error) {
	if s == "" {
		return netip.Addr{}, nil
	}
	if a, err := netip.ParseAddr(s); err == nil {
		if !a.Is4() {
			return a, usagef("--iface %q: want an IPv4 address or an interface name", s)
		}
		return a, nil
	}
	a, err := replica.InterfaceAddr(s)
	if err != nil {
		return a, usagef("--iface %q: %v", s, err)
	}
	return a, nil
}

// checkRunFlags checks the values addRunFlags parsed.
func checkRunFlags(duration, interval time.Duration) error {
	if duration < 0 {
		return usagef("--duration %v: want 0 (until a signal) or a positive duration", duration)
	}
	if interval < 0 {
		return usagef("--stats-interval %v: want 0 (only at the end) or a positive interval", interval)
	}
	return nil
}

func addRunFlags(fs *flag.FlagSet, duration, interval *time.Duration, asJSON *bool) {
	fs.DurationVar(duration, "duration", 0, "stop after this `duration` (0: until SIGINT or SIGTERM)")
	fs.DurationVar(interval, "stats-interval", 0, "print the counters every `interval` (0: only at the end)")
	fs.BoolVar(asJSON, "json", false, "print the final counters as JSON")
}

func runContext(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d > 0 {
		return context.WithTimeout(ctx, d)
	}
	return context.WithCancel(ctx)
}

// everyTick calls fn every d until ctx ends (never when d is 0).
func everyTick(ctx context.Context, d time.Duration, fn func()) {
	if d <= 0 {
		return
	}
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

func printServerStats(w io.Writer, st replica.ServerStats, asJSON bool) {
	if asJSON {
		json.NewEncoder(w).Encode(st)
		return
	}
	fmt.Fprintf(w, "serve: mirrors %d, write_seq %d, last sent %d, lag %d\n", st.Mirrors, st.WriteSeq, st.LastSent, st.Lag)
	via := st.Transport
	if via == "" {
		via = "datagrams"
	}
	fmt.Fprintf(w, "  %s: frames %d, records %d, datagrams %d, send calls %d, heartbeats %d, too large for a datagram %d\n",
		via, st.Frames, st.Records, st.Datagrams, st.Syscalls, st.Heartbeats, st.Skipped)
	fmt.Fprintf(w, "  tcp: frames %d, records %d; NAKs answered %d, retransmitted %d, gaps %d (%d records)\n",
		st.TCPFrames, st.TCPRecord, st.NaksAnswered, st.Retransmitted, st.Gaps, st.GapRecords)
	fmt.Fprintf(w, "  refused: connections %d, punches %d, datagrams %d\n", st.BadFrames, st.BadPunches, st.BadDatagram)
	fmt.Fprintf(w, "  admission: refused %d (max conns %d, per address %d, pending per address %d, evicted %d, handshake timeouts %d)\n",
		st.Refused, st.RefusedConns, st.RefusedAddr, st.RefusedAddrPending, st.Evicted, st.HandshakeTimeouts)
	r := st.Repair
	fmt.Fprintf(w, "  repair: bytes %d (catch-up %d); NAKs paced %d, left for a repeat %d; catch-up waits %d\n",
		r.Bytes, r.CatchUpBytes, r.NaksDeferred, r.NaksRefused, r.CatchUpWaits)
	if h := st.History; h.Reads > 0 {
		fmt.Fprintf(w, "  archive: records %d, bytes %d, reads %d, errors %d\n", h.Records, h.Bytes, h.Reads, h.Errors)
	}
}

// logEvent logs a server event: lag warnings at WARN with the mirror's
// figures, the rest at INFO. What a peer can cause at will is throttled
// (newLogger's logger logs it at most once a second per kind, with the
// count suppressed): refusals and rejections by their error's root cause,
// connects and disconnects by the peer's host.
func logEvent(log *slog.Logger, e replica.ServerEvent) {
	switch e.Kind {
	case replica.EventLagging, replica.EventLagRecovered:
		m := e.Mirror
		level := slog.LevelWarn
		if e.Kind == replica.EventLagRecovered {
			level = slog.LevelInfo
		}
		log.Log(context.Background(), level, "mirror "+e.Kind.String(), "mirror", m.Name, "peer", e.Peer,
			"applied", m.Applied, "lag_records", m.LagRecords, "lag", m.Lag.Round(time.Millisecond), "connected", m.Connected)
	case replica.EventRefused:
		// The library tells each kind at most once a second and counts the
		// refusals it did not tell (Suppressed); the throttle, keyed by the
		// kind too, only bounds a caller that tells more.
		log.Warn("connection "+e.Kind.String(), throttled(e.Refusal.String()), "kind", e.Refusal.String(),
			"refusals_not_logged", e.Suppressed, "peer", e.Peer, "err", e.Err)
	case replica.EventAcceptFailed:
		log.Warn("connection "+e.Kind.String(), throttled(rootCause(e.Err)), "peer", e.Peer, "err", e.Err)
	case replica.EventRejected:
		log.Info("mirror "+e.Kind.String(), throttled(rootCause(e.Err)), "peer", e.Peer, "err", e.Err)
	default:
		log.Info("mirror "+e.Kind.String(), throttled(peerHost(e.Peer)), "peer", e.Peer, "err", e.Err)
	}
}
