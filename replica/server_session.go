package replica

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ringfire/ringfire/replica/auth"
	"github.com/ringfire/ringfire/replica/wire"
)

// Session modes.
const (
	modeCatchUp int32 = iota // catching up over TCP until it meets the datagram stream
	modeLive                 // datagrams carry the records; TCP only answers NAKs
	modeStream               // TCP carries everything (no UDP, or no punch in time)
)

const (
	tcpHeartbeat = 200 * time.Millisecond
	tcpFrameMax  = 64 << 10
	burstBytes   = 1 << 20
	writeTimeout = 10 * time.Second
)

// session serves one mirror over its TCP connection.
type session struct {
	srv   *Server
	tcp   net.Conn
	raw   net.Conn   // the accepted connection tcp runs on (the same without a key)
	peer  netip.Addr // the TCP peer's address: the only one whose PUNCH counts
	token uint32
	// punchOpen checks the PUNCHes of a keyed session (nil without a
	// key). Set by serveConn before the handshake registers the session
	// (s.mu publishes it to punchLoop, its only user after that).
	punchOpen *auth.Opener
	// pending: the session counts as not live yet (ServerConfig.MaxPending).
	// Stored true by serveConn before the session starts; cleared once by
	// wentLive (CompareAndSwap, from the handshake or the writer
	// goroutine), which then takes admitted, its entry, out of the
	// pending queue under srv.mu.
	pending  atomic.Bool
	admitted *pendingConn
	// answered: the handshake wrote its answer (GEOMETRY); before that,
	// a refusal may still be told in an ERROR frame. The handshake's.
	answered bool
	// unicast: the mirror takes unicast datagrams. Stored once, by the
	// handshake (serveConn's goroutine) after register; punchLoop loads it
	// to accept the mirror's PUNCH (before the Store it refuses it).
	unicast atomic.Bool
	// punched is the mirror's UDP address once it punched: stored only by
	// punchLoop (after catchUpEnd, so that whoever loads the address sees
	// the catch-up's end); loaded by rebuildDests, the writer goroutine
	// (catchUpDone) and punchLoop.
	punched atomic.Pointer[netip.AddrPort]
	// mode is the session mode (modeCatchUp, modeLive, modeStream): stored
	// by the handshake before the reader and writer goroutines start, then
	// only by the writer goroutine (catchUpDone). Loaded by the reader
	// (maxSent), rebuildDests and transportName; it publishes nothing
	// else.
	mode atomic.Int32
	// sent is the highest sequence this connection has carried in DATA or
	// GAP frames, or is carrying: sendRange stores it just before it hands
	// the frame to write, since a direct send's write(2) puts the frame on
	// the wire at once and the mirror may apply it and report it in a
	// STATUS (checked against sent) before write returns. Two goroutines
	// write it, both from sendRange and only through storeMax: the writer
	// (catch-up, stream; or a sender holding its stream, server_direct.go)
	// and the reader (NAK answers). storeMax never lowers it, so every
	// value loaded is a sequence whose frames are queued on the connection
	// or being written to it: a STATUS or a NAK up to it (reader, maxSent)
	// names only records the mirror has, or will have from this
	// connection. A NAK answer never raises it in modeStream (a NAK is
	// accepted only up to sent there); otherwise it may raise it up to
	// srv.lastSent, records the datagrams carried already.
	sent atomic.Uint64

	telemetry bool // the mirror sends STATUS (HelloTelemetry acknowledged)
	// lines: the GEOMETRY said GeometryLines (line B follows): the
	// mirror's STATUS may carry its lines' counters (status_lines.go).
	// Set by the handshake.
	lines bool
	// history: records the ring lost come from ServerConfig.History
	// (HelloHistory acknowledged; history.go). Set by the handshake
	// before the reader and writer start.
	history bool
	// lastStatus is the mirror's last STATUS, whose texts the next reuses
	// (the reader's only).
	lastStatus wire.Status
	// start is the first sequence the session serves: the HELLO's start
	// resolved (the ring's newest record for latest). The mirror's lag
	// counts from it (MirrorInfo.Start). Set by the handshake before join.
	start uint64
	// held is the last record a resuming mirror already holds (HELLO
	// asked to continue after it; 0 otherwise): a STATUS may report it
	// before this connection sent anything. Set by the handshake before
	// the reader starts.
	held uint64
	// wide: the mirror takes the wide session's trailer (HelloSession64,
	// no key). Set by the handshake before register; read by rebuildDests
	// under srv.mu.
	wide bool
	row  *mirrorRow // its row in srv.tele (guarded by srv.tele.mu)
	// applied is the highest Applied of the mirror's STATUS frames:
	// stored by the reader (storeMax), loaded by the writer in a graceful
	// stop. It publishes nothing else.
	applied atomic.Uint64
	// shut: a graceful stop closed the sending side (stored under mu by
	// the writer); the reader no longer answers NAKs.
	shut atomic.Bool
	// finishing: the writer is in its graceful stop (writer goroutine's).
	finishing bool

	mu sync.Mutex // guards bw and the connection's writes
	bw *bufio.Writer
	// writeFrames and writeDirectFrames are ss.write and ss.writeDirect
	// as func values, made once with the session: handed to sendPaced at
	// every write of the stream, a method value made there escaped and
	// cost an allocation each time.
	writeFrames, writeDirectFrames func([]byte, bool) error
	// lastWrite is the time (unix ns) of the last write: stored by write
	// under mu, from the writer or the reader goroutine; the writer loads
	// it to send a heartbeat when the connection was idle. It publishes
	// only the time.
	lastWrite atomic.Int64

	// catchUpEnd is 1 + the last record the TCP catch-up must cover: what
	// the datagram stream sent before the mirror was in it (0: not known
	// yet, a unicast mirror that has not punched). Later records come by
	// datagram, or by NAK. Stored once: by the handshake for a multicast
	// mirror, by punchLoop at a unicast mirror's first PUNCH (before
	// punched). Loaded by the writer goroutine.
	catchUpEnd atomic.Uint64

	wake  chan struct{} // the sender's "the ring moved" (capacity 1)
	timer *time.Timer

	// reportOnAsk: the mirror reports early only when asked
	// (HelloReportOnAsk acknowledged; set by the handshake before
	// register). askFor is the highest sequence an AwaitApplied wants a
	// STATUS for (storeMax by AwaitApplied, then a send on ask, capacity
	// 1, which wakes the writer); the writer sends REPORT(askFor) once for
	// each rise (asked, the writer's). askFor publishes only itself.
	reportOnAsk bool
	askFor      atomic.Uint64
	ask         chan struct{}
	asked       uint64

	// hist is the writer's way to the history (nil: not served; the
	// writer goroutine's, made as writeLoop starts).
	hist *histSession

	cursor uint64 // next sequence to send over TCP (whoever owner names)
	feed   *feed  // owner's
	buf    []byte
	// owner names who owns cursor, feed and buf (server_direct.go):
	// the writer, or while it is parked a sender writing directly.
	owner atomic.Uint32
	// rawc is the plain TCP connection's, for direct sends (nil: TLS);
	// rawWrite writes wdata to it, leaving wn and werr (under mu).
	rawc     syscall.RawConn
	rawWrite func(fd uintptr) bool
	wdata    []byte
	wn       int
	werr     error
	born     time.Time
}

// serveConn runs one mirror's session until it disconnects or ctx ends.
// Its handshake (TLS included) must be done by the deadline admit set.
func (s *Server) serveConn(ctx context.Context, raw net.Conn, peer netip.Addr) {
	defer s.guardRing(guard()) // its writer reads the ring
	defer raw.Close()
	p := s.admitted(raw)
	defer s.release(raw, peer, p)
	pc := &prefixConn{Conn: raw}
	c, err := s.secure(ctx, pc)
	if err != nil {
		var via net.Conn
		if !pc.wrote { // a TLS client reads a plain ERROR until TLS answered it
			via = pc
		}
		s.handshakeFailed(raw, via, p, err)
		return
	}
	ss := &session{srv: s, tcp: c, raw: raw, peer: peer, bw: bufio.NewWriterSize(c, 256<<10), feed: newFeed(s.ring),
		buf: make([]byte, 0, tcpFrameMax+wire.HeaderSize), born: time.Now(), wake: make(chan struct{}, 1),
		ask: make(chan struct{}, 1), admitted: p}
	ss.writeFrames, ss.writeDirectFrames = ss.write, ss.writeDirect
	ss.pending.Store(true)
	ss.directConn()
	if err := ss.keyPunch(); err != nil {
		s.handshakeFailed(raw, nil, p, err)
		return
	}
	br := bufio.NewReader(c)
	if err := ss.handshake(br); err != nil {
		var via net.Conn
		if !ss.answered {
			via = c
		}
		s.handshakeFailed(c, via, p, err)
		return
	}
	defer s.unregister(ss)
	if !s.shookHands(p) {
		return // evicted as its handshake ended
	}
	s.tele.join(ss, time.Now())
	defer func() { s.tele.leave(ss, time.Now(), s.cfg.MirrorRetention > 0) }()
	s.event(EventConnected, c, nil)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		errc <- ss.readLoop(ctx, br)
		cancel()
	}()
	werr := ss.writeLoop(ctx)
	c.Close()
	rerr := <-errc
	if protocolErr(rerr) {
		s.st.badConn.Add(1) // BadFrames: closed for a protocol error
	}
	if werr == nil {
		werr = rerr
	}
	s.event(EventDisconnected, c, werr)
}

// handshake reads HELLO and answers GEOMETRY (and MULTICAST).
func (ss *session) handshake(br *bufio.Reader) error {
	s := ss.srv
	defer ss.tcp.SetDeadline(time.Time{}) // admit's handshake deadline
	h, p, err := readFrameFrom(br, wire.HelloSize)
	if err != nil {
		return err
	}
	if h.Kind != wire.KindHello {
		return fmt.Errorf("%w: expected HELLO, got %v", wire.ErrMalformed, h.Kind)
	}
	hello, err := wire.ParseHello(p)
	if err != nil {
		return err
	}
	// Before the writer and reader start, which serve the history.
	ss.history = hello.Flags&wire.HelloHistory != 0 && s.cfg.History != nil
	first, reset := s.startOf(h.Seq)
	if ss.history && !reset {
		first = s.historyStart(h.Seq, first)
	}
	ss.cursor, ss.start = first, first
	if h.Seq != wire.StartNewest && h.Seq != wire.StartOldest && !reset {
		ss.held = first - 1 // a resumed mirror holds what came before
	}
	// Before register publishes the session to rebuildDests.
	ss.wide = hello.Flags&wire.HelloSession64 != 0 && s.keyed == nil
	askable := wire.HelloTelemetry | wire.HelloReportOnAsk
	ss.reportOnAsk = hello.Flags&askable == askable && !s.cfg.NoTelemetry
	s.register(ss)
	var flags uint8
	if reset {
		flags |= wire.GeometryReset
	}
	if hello.Flags&wire.HelloTelemetry != 0 && !s.cfg.NoTelemetry {
		flags |= wire.GeometryTelemetry
		ss.telemetry = true
		if ss.reportOnAsk {
			flags |= wire.GeometryReportOnAsk
		}
	}
	b := make([]byte, 0, 3*wire.HeaderSize+wire.GeometrySize+wire.MulticastSize+wire.SessionSize)
	mc, udp := s.datagramsFor(hello, ss.token, ss.peer)
	if udp && !mc.Unicast() && s.cfg.WideMulticast && !ss.wide && s.keyed == nil {
		udp = false // it could not parse the group's datagrams: TCP carries them
	}
	ss.mode.Store(modeStream)
	if udp {
		flags |= wire.GeometryMulticast
		ss.unicast.Store(mc.Unicast())
		ss.mode.Store(modeCatchUp)
	}
	if udp && !mc.Unicast() {
		// The mirror joins the group as soon as it has GEOMETRY: TCP
		// sends what the group got before (at least the first record).
		ss.catchUpEnd.Store(max(s.lastSent.Load(), first) + 1)
	}
	if ss.wide || s.keyed != nil {
		flags |= wire.GeometrySession64
	}
	if ss.history {
		flags |= wire.GeometryHistory
	}
	mcB, lines := s.lineBFor(hello, mc, udp)
	if lines {
		flags |= wire.GeometryLines
	}
	ss.lines = flags&wire.GeometryLines != 0 // the mirror's STATUS may carry its lines
	b = wire.AppendGeometry(b, first, flags, wire.GeometryOf(s.ring.Layout()))
	if udp {
		b = wire.AppendMulticast(b, mc)
	}
	if lines {
		b = wire.AppendMulticast(b, mcB)
	}
	if flags&wire.GeometrySession64 != 0 {
		sess := s.sess
		sess.Trailer = ss.wide && udp && (mc.Unicast() || s.cfg.WideMulticast)
		b = wire.AppendSession(b, sess)
	}
	ss.answered = true
	if _, err = ss.tcp.Write(b); err != nil {
		return err
	}
	if !udp {
		ss.wentLive() // TCP carries its stream from the first record
	}
	return nil
}

// startOf turns a HELLO start into the first sequence to send, and whether
// the mirror must start a fresh ring (it asked to resume ahead of us).
func (s *Server) startOf(want uint64) (first uint64, reset bool) {
	w := s.ring.WriteSeq()
	oldest := s.ring.Oldest()
	switch {
	case want == wire.StartNewest:
		return max(w, 1), false
	case want == wire.StartOldest:
		return oldest, false
	case want > w+1:
		return oldest, true
	}
	return max(want, oldest), false
}

// datagramsFor picks multicast or unicast for a mirror that can take UDP
// from peer; none for a peer without an address (a Unix socket's).
func (s *Server) datagramsFor(h wire.Hello, token uint32, peer netip.Addr) (wire.Multicast, bool) {
	if h.Flags&wire.HelloUDP == 0 || s.udp == nil || !peer.IsValid() {
		return wire.Multicast{}, false
	}
	mc := wire.Multicast{MTU: uint16(s.mtu), TTL: uint8(max(s.cfg.TTL, 1)), Session: s.session, Token: token}
	uni := s.cfg.UDPPort != 0 && (h.Flags&wire.HelloUnicast != 0 || !s.cfg.Multicast.IsValid())
	if uni {
		mc.Port = s.udp.LocalAddr().Port()
		return mc, true
	}
	if !s.cfg.Multicast.IsValid() {
		return wire.Multicast{}, false
	}
	mc.Group = s.cfg.Multicast.Addr().As4()
	mc.Port = s.cfg.Multicast.Port()
	return mc, true
}
