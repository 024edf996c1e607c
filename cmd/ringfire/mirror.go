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
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringfire/ringfire/internal/trace"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/shm"
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
after --reconnect-ms unless --once is given. With --iface-b ADDR the mirror
also takes a source's second line (serve --multicast-b, or with --unicast
serve --udp --iface-b: it then punches from ADDR too) and applies the first
copy of each frame. The counters are printed when it ends.`

// mirrorFlags are the flags that describe one mirror: mirror's, and the
// keys of a [[mirror]] table of ringfire run.
type mirrorFlags struct {
	loop                            *replica.Loop // ringfire run's, when its file has a loop key
	from, iface                     string
	unicast, tcp, once, noTelemetry bool
	noHistory                       bool
	anySource                       bool
	reconnectMS                     int
	maxSize                         mirrorMaxSize
	sourceTimeout                   sourceTimeout
	wait                            waitFlags
	key                             keyFlags
	xdp                             xdpFlags
	lines                           lineFlags // line B: --iface-b, --xdp-b, --transport-b, --line-window
}

func addMirrorFlags(fs *flag.FlagSet) *mirrorFlags {
	f := &mirrorFlags{maxSize: mirrorMaxSize{auto: true}, sourceTimeout: sourceTimeout(replica.DefaultSourceTimeout)}
	fs.StringVar(&f.from, "from", "latest", "start `at` latest, oldest, resume or a sequence number")
	fs.StringVar(&f.iface, "iface", "", "local interface (`address` or name) facing the source")
	fs.BoolVar(&f.unicast, "unicast", false, "ask for UDP unicast (punch through NAT)")
	fs.BoolVar(&f.tcp, "tcp", false, "receive everything over TCP")
	fs.BoolVar(&f.once, "once", false, "do not reconnect: exit when the source goes away")
	fs.IntVar(&f.reconnectMS, "reconnect-ms", 1000, "wait `ms` between reconnections")
	f.wait.add(fs, "receive loop")
	fs.Var(&f.maxSize, "max-size", "refuse a source whose ring would make a mirror ring larger than `SIZE` bytes (K, M, G, T suffixes; "+
		"auto: half the machine's memory, MemTotal, as a mirror ring's pages all become resident; 0: no limit). "+
		"Whatever the limit, the ring must fit the free space of PATH's filesystem when it is created: on a tmpfs such as /dev/shm both bound it")
	fs.Var(&f.sourceTimeout, "source-timeout", "reconnect when the source has sent nothing (no record, no heartbeat: a source sends one every 200 ms) for `DURATION` "+
		"(at least 500ms; 0: never); a GAP past what the source announced must be backed within it too")
	fs.BoolVar(&f.noTelemetry, "no-telemetry", false, "send a version-1 HELLO: no STATUS reports, no wide session id, no archive")
	fs.BoolVar(&f.noHistory, "no-history", false, "do not ask a source serving an archive (serve --archive) for the records its ring lost: take a gap")
	fs.BoolVar(&f.anySource, "any-source", false, "accept datagrams from any address (default: only from the source's)")
	f.key.add(fs, "with --key, refuse a source whose datagrams are not encrypted (serve --encrypt)")
	f.xdp.add(fs)
	f.lines.addMirror(fs)
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
	fmt.Fprintf(w, "  received: frames %d, datagrams %d, records %d (catch-up %d, retransmitted %d), gaps %d\n",
		st.Frames, st.Datagrams, st.Records, st.CatchUp, st.Retransmitted, st.Gaps)
	fmt.Fprintf(w, "  source faults: protocol errors %d, silent %d\n", st.SourceErrors, st.SourceSilent)
	fmt.Fprintf(w, "  NAKs sent %d; dropped: duplicates %d, stale %d, other session %d, malformed %d, overflow %d, far ahead %d, foreign %d\n",
		st.NaksSent, st.Duplicates, st.Stale, st.OtherSession, st.Malformed, st.Overflow, st.FarAhead, st.Foreign)
	printLineStats(w, st)
}

// mirrorMaxSize is mirror's --max-size: a size (maxSize), or auto (the
// default), half the machine's memory (MemTotal). A mirror ring is
// written all over, so every page of it becomes resident (on a tmpfs it
// is memory; on a disk, page cache), and a source decides its size: auto
// keeps a source from taking more than half the host. The free space of
// the ring's filesystem bounds it too, checked by shm as the ring is
// created (each time: it follows the space left).
type mirrorMaxSize struct {
	maxSize
	auto bool
}

func (m *mirrorMaxSize) String() string {
	if m == nil {
		return ""
	}
	if m.auto {
		return "auto"
	}
	return m.maxSize.String()
}

func (m *mirrorMaxSize) Set(s string) error {
	if strings.EqualFold(strings.TrimSpace(s), "auto") {
		m.auto = true
		return nil
	}
	if err := m.maxSize.Set(s); err != nil {
		return fmt.Errorf("%w, or auto", err)
	}
	m.auto = false
	return nil
}

// opt is the value of MirrorConfig.MaxRingSize (shm's CreateOptions.MaxSize).
func (m mirrorMaxSize) opt() int64 {
	if m.auto {
		return autoMaxSize()
	}
	return m.maxSize.opt()
}

// autoMaxSize is --max-size auto: half of MemTotal (sysinfo(2), what
// /proc/meminfo shows); shm's fixed default if the kernel does not say.
func autoMaxSize() int64 {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil || si.Totalram == 0 {
		return shm.DefaultMaxSize
	}
	return int64(min(uint64(si.Totalram)*uint64(max(si.Unit, 1))/2, 1<<62))
}

// sourceTimeout is --source-timeout: MirrorConfig.SourceTimeout, checked
// as it is set (a [[mirror]] key too); 0 turns it off.
type sourceTimeout time.Duration

func (d *sourceTimeout) String() string {
	if d == nil {
		return ""
	}
	return time.Duration(*d).String()
}

func (d *sourceTimeout) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 || v > 0 && v < replica.MinSourceTimeout {
		return fmt.Errorf("%q: want a duration of at least %v (a source may be silent for 200 ms between heartbeats), or 0 for never", s, replica.MinSourceTimeout)
	}
	*d = sourceTimeout(v)
	return nil
}

// Get makes the flag a duration for ringfire run's type check.
func (d *sourceTimeout) Get() any { return time.Duration(*d) }

// opt is the value of MirrorConfig.SourceTimeout (negative: never).
func (d sourceTimeout) opt() time.Duration {
	if d == 0 {
		return -1
	}
	return time.Duration(d)
}
