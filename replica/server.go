package replica

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringfire/ringfire/internal/idle"
	"github.com/ringfire/ringfire/replica/wire"
	"github.com/ringfire/ringfire/shm"
)

// Server serves one ring to mirrors.
type Server struct {
	cfg     ServerConfig
	ring    *shm.Ring
	ln      net.Listener // the TCP control listener
	unix    *net.UnixListener
	accept  net.Listener // what Serve accepts from: ln, or ln and unix (fanIn)
	udp     Transport
	session uint8        // the version-1 session byte: sess.ID's low byte
	sess    wire.Session // this incarnation (SESSION frames)
	mtu     int
	keyed   *keyed // ServerConfig.Key's state (nil: no key)

	// lastSent is the last sequence the datagram stream is done with:
	// every record up to it was handed to the transport (or skipped as
	// lost or too big, or there was nobody to send to). Stored once by
	// NewServer, then written only by sender rounds under sendMu (the
	// sender goroutine's, a Handoff's, or a Loop turn's), with storeMax so
	// that it never goes back (a resend in smaller frames rewinds the
	// sender, not lastSent), before the batch's SendBatch. Sessions load
	// it for their catch-up end, NAK checks and heartbeats; punchLoop for
	// a punched mirror's catch-up end.
	lastSent atomic.Uint64
	// sentDone is lastSent once no send call carrying it is under way:
	// stored by NewServer, then (storeMax) by sender rounds under sendMu,
	// after SendBatch returned or where nothing was sent. A live
	// session's TCP heartbeat announces it, not lastSent: the TCP frame
	// must not overtake datagrams still in the send call (with many rings
	// on one interface's TX ring, the wait for room), or the mirror takes
	// them for lost and NAKs them.
	sentDone atomic.Uint64
	// dests publishes the unicast destinations of punched sessions, a
	// fresh slice each time: stored by rebuildDests under mu (from session
	// goroutines and punchLoop), loaded by the sender every round.
	dests atomic.Pointer[[]dest]
	// wakes holds every session's wake channel: the relay's goroutine
	// tells the sessions about new records for the sender, the only
	// goroutine that waits on the ring. Stored by rebuildDests under mu,
	// like dests; loaded by fireWakes.
	wakes atomic.Pointer[[]chan struct{}]
	// relay carries "the ring moved" from the sender's hot thread to the
	// sessions' writers (its goroutine sends on the wake channels; see
	// idle.Relay for why not the sender itself). Made by NewServer, run
	// by Serve, closed by Close.
	relay *idle.Relay
	// streams holds the sessions on plain TCP, which a sender may write to
	// directly while their writer is parked (server_direct.go). Stored by
	// rebuildDests under mu, like dests; loaded by wakeSessions.
	streams atomic.Pointer[[]*session]
	// listening counts the session writers that sleep on their wake
	// channel: each Adds 1, then loads write_seq, before it sleeps, and
	// Adds -1 after; a sender that saw write_seq move loads it and Kicks
	// the relay only when it is not 0. With both sides sequentially
	// consistent, a writer that missed the records is counted.
	listening atomic.Int32
	// sessionKicks counts wakeSessions' Kicks, directSends the direct
	// sends that carried records, senderWaits the sender's waits for the
	// ring (Add; Stats loads them).
	sessionKicks, directSends, senderWaits atomic.Uint64
	// senderBusyYields: the sender's yields after idle.BusyYieldEvery
	// of rounds with work (sender.yieldIfHeld writes, Add; Stats reads).
	senderBusyYields atomic.Uint64
	// afterDirectWrite, a test hook (export_test.go), is called by a
	// direct send right after its write(2), before sendRange returns.
	afterDirectWrite func()

	// sendMu is held by whoever runs a sender round: the sender goroutine,
	// or a Handoff caller that got it with TryLock. It guards every field
	// of the sender.
	sendMu sync.Mutex
	// sender is the sender's state, stored once by sendLoop before its
	// first round; Handoff loads it (nil: not serving yet).
	sender atomic.Pointer[sender]
	// handing counts the Handoff calls under way: each Adds 1 before it
	// loads closed and -1 as it returns. Close stores closed, then waits
	// for 0 before it closes what a round uses (the transport, the ring's
	// mapping). Both sides are sequentially consistent: a Handoff either
	// sees closed or is counted.
	handing atomic.Int32
	// loopMember is the sender's member of ServerConfig.Loop: stored under
	// mu by loopSend (which adds it to the loop under mu, unless closed),
	// loaded under mu by Close, which removes it before closing the
	// transport.
	loopMember *serverMember

	mu       sync.Mutex
	sessions map[uint32]*session // by token
	lim      limits              // admission counts (under mu)
	wg       sync.WaitGroup      // goroutines Serve started
	serving  sync.WaitGroup      // Serve itself
	// closed is set once, by Close (Swap under mu, so that Serve, which
	// checks it under mu, either runs to be waited for or not at all);
	// the sender and punchLoop load it to stop.
	closed atomic.Bool
	st     serverCounters
	tele   *telemetry // the table of mirrors
	// teleIdle: the telemetry loop sleeps seqIdleEvery because write_seq
	// stood still. Stored true by the loop, taken back (CompareAndSwap) by
	// the sender when write_seq moves, which then has the relay send on
	// teleWake (capacity 1): the loop samples at once and ticks fast again.
	teleIdle atomic.Bool
	teleWake chan struct{}
	// teleDue: wakeTelemetry took teleIdle back and kicked the relay,
	// whose fireWakes swaps it to false and sends on teleWake (Store
	// before the Kick, Swap in the fire: the Kick publishes it).
	teleDue atomic.Bool
	// sessionsDue: the same for wakeSessions and the sessions' wake
	// channels (a telemetry wake-up wakes no writer).
	sessionsDue atomic.Bool
	// stop is the state of a graceful stop (server_stop.go).
	stop stopState
	// lost is closed once, by lose, when the ring was cut under its
	// mapping, after lostErr (the first fault's error) is stored. endRun,
	// stored by Serve before it starts a goroutine, ends them all.
	lost     chan struct{}
	lostOnce sync.Once
	lostErr  error
	endRun   context.CancelFunc
}

// NewServer opens the ring read-only and binds the TCP control address and
// the datagram transport.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.MTU == 0 {
		cfg.MTU = DefaultMTU
	}
	if cfg.MTU < MinMTU || cfg.MTU > MaxMTU {
		return nil, fmt.Errorf("replica: mtu %d outside %d..%d", cfg.MTU, MinMTU, MaxMTU)
	}
	if cfg.Dup <= 0 {
		cfg.Dup = 1
	}
	if cfg.Linger < 0 {
		cfg.Linger = AdaptiveLinger
	}
	if cfg.PunchTimeout <= 0 {
		cfg.PunchTimeout = 3 * time.Second
	}
	if cfg.MirrorRetention == 0 {
		cfg.MirrorRetention = DefaultMirrorRetention
	}
	if cfg.MirrorRows == 0 {
		cfg.MirrorRows = DefaultMirrorRows
	}
	cfg.MaxConns = orDefault(cfg.MaxConns, DefaultMaxConns)
	cfg.MaxConnsPerAddr = orDefault(cfg.MaxConnsPerAddr, DefaultMaxConnsPerAddr)
	cfg.MaxPending = orDefault(cfg.MaxPending, DefaultMaxPending)
	if cfg.Multicast.IsValid() && !cfg.Multicast.Addr().IsMulticast() {
		return nil, fmt.Errorf("replica: %v is not a multicast group", cfg.Multicast)
	}
	if err := checkLines(&cfg); err != nil {
		return nil, err
	}
	if cfg.Spin {
		cfg.Wait = WaitSpin
	}
	if cfg.Encrypt && cfg.Key == nil {
		return nil, fmt.Errorf("replica: Encrypt needs a Key: %w", ErrKeyRequired)
	}
	if err := cfg.Pin.check(); err != nil {
		return nil, err
	}
	if err := checkRepair(&cfg); err != nil {
		return nil, err
	}
	ring, err := shm.Open(cfg.Ring, shm.OpenOptions{Notify: true})
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, ring: ring, mtu: cfg.MTU, sessions: map[uint32]*session{}, teleWake: make(chan struct{}, 1),
		lost: make(chan struct{})}
	s.stop.begun = make(chan struct{})
	s.st.repair.init(&cfg, ring.Layout())
	s.sess = newIncarnation(cfg.Encrypt)
	s.session = byte(s.sess.ID) // datagrams carry its low byte
	if cfg.Key != nil {
		if s.keyed, err = newKeyed(cfg.Key, s.sess); err != nil {
			ring.Close()
			return nil, fmt.Errorf("replica: key: %w", err)
		}
	}
	// The datagram stream starts after what the ring holds now; sessions
	// accepted before the sender runs must already see that.
	s.lastSent.Store(ring.WriteSeq())
	s.sentDone.Store(ring.WriteSeq())
	s.tele = newTelemetry(ring.Layout().Capacity, ring.WriteSeq(), time.Now(), max(cfg.MirrorRows, 0))
	s.dests.Store(&[]dest{})
	s.wakes.Store(&[]chan struct{}{})
	s.streams.Store(&[]*session{})
	if s.relay, err = idle.NewRelay(s.fireWakes); err != nil {
		ring.Close()
		return nil, fmt.Errorf("replica: %w", err)
	}
	if err := s.listen(); err != nil {
		s.relay.Close()
		ring.Close()
		return nil, err
	}
	if err := s.openDatagrams(); err != nil {
		s.accept.Close()
		s.relay.Close()
		ring.Close()
		return nil, err
	}
	return s, nil
}

func (s *Server) openDatagrams() error {
	if !s.cfg.Multicast.IsValid() && s.cfg.UDPPort == 0 {
		return nil
	}
	s.udp = s.cfg.Transport
	if s.udp != nil {
		return s.openLineB()
	}
	bind := netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(s.cfg.UDPPort))
	cfg := UDPConfig{Bind: bind, Iface: s.cfg.Iface, TTL: s.cfg.TTL, Loopback: s.cfg.Loopback, SocketBuffer: 4 << 20}
	open := s.cfg.NewTransport
	if open == nil {
		open = func(c UDPConfig) (Transport, error) { return NewUDP(c) }
	}
	t, err := open(cfg)
	if err != nil {
		return fmt.Errorf("replica: datagram transport: %w", err)
	}
	s.udp = t
	return s.openLineB()
}

// Addr is the TCP control address.
func (s *Server) Addr() netip.AddrPort { return s.ln.Addr().(*net.TCPAddr).AddrPort() }

// UnixAddr is the Unix socket path mirrors on this host may dial (after
// UnixPrefix); "" without ServerConfig.Unix.
func (s *Server) UnixAddr() string {
	if s.unix == nil {
		return ""
	}
	return s.unix.Addr().String()
}

// Session is this source incarnation's session byte.
func (s *Server) Session() uint8 { return s.session }

// Serve accepts mirrors and sends datagrams until ctx is done or Close.
//
// When ctx ends (and not Close, nor a replaced ring, which end at once)
// the stop is graceful (server_stop.go): Serve stops accepting, sends as
// datagrams every record the ring held that the datagram stream had not
// carried yet (linger or not) and a final heartbeat announcing the last
// one; each mirror's session then sends over TCP what that mirror is owed
// (history, a TCP stream) and a heartbeat naming its last record, answers
// the NAKs that follow, and closes its side once the mirror has applied it
// all (its STATUS says so; a mirror without telemetry: once it has been
// quiet for a while), or the stop's deadline (1 s after ctx ended) has
// passed; at the deadline every connection left is closed. Serve returns
// nil after that, once the sender's current wait has ended too (at most
// its deadline: a heartbeat interval, or a pending frame's Linger).
//
// A replaced ring ends Serve at once with ErrRingReplaced; a ring cut
// under its mapping (the file truncated by another process) with
// ErrRingTruncated: every goroutine of Serve that reads the ring recovers
// the fault (shm.Guard) and ends serving, and the ring watcher ends it
// when the file is shorter than the mapping, within 200 ms.
func (s *Server) Serve(ctx context.Context) (err error) {
	defer s.guardServe(shm.Guard(), &err)
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		return nil // closed before it began: nothing to serve
	}
	s.serving.Add(1) // Close waits for Serve, even one that only just began
	s.mu.Unlock()
	defer s.serving.Done()
	// run is the context of every goroutine Serve starts: it ends when the
	// ring is replaced, or when Serve returns (after Close, or after a
	// graceful stop), not with ctx, whose end starts the graceful stop.
	run, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	// accept ends with ctx or run; the listener is closed then, which
	// ends the accept loop.
	accept, stopAccept := context.WithCancel(ctx)
	defer stopAccept()
	defer context.AfterFunc(run, stopAccept)()
	go func() {
		<-accept.Done()
		s.accept.Close()
	}()
	replaced := make(chan struct{})
	s.endRun = cancel
	sn := newSender(s) // before Handoff or a graceful stop may look for it
	if s.cfg.Loop == nil {
		sn.startHandWait()
	}
	s.sender.Store(sn)
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.watchRing(run, cancel, replaced) }()
	s.wg.Add(1)
	if s.cfg.Loop != nil {
		go func() { defer s.wg.Done(); s.loopSend(run, sn) }()
	} else {
		go func() { defer s.wg.Done(); s.sendLoop(run, sn) }()
	}
	s.wg.Add(1)
	go func() { defer s.wg.Done(); defer s.guardRing(guard()); s.telemetryLoop(run) }()
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.relay.Run(run) }()
	if s.udp != nil && !s.punchesInLoop() {
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.punchLoop(run) }()
	}
	// The goroutines above end with run: end it before waiting for them,
	// or a Close that ends the accept loop would wait forever.
	defer func() { cancel(); s.waitAll() }()
	for failed := 0; ; {
		c, err := s.accept.Accept()
		if err != nil {
			select {
			case <-s.lost:
				return s.lostError()
			case <-replaced:
				return fmt.Errorf("serve %s: %w", s.cfg.Ring, ErrRingReplaced)
			default:
			}
			if accept.Err() != nil || errors.Is(err, net.ErrClosed) {
				if ctx.Err() != nil && run.Err() == nil && !s.closed.Load() {
					s.gracefulStop(run)
				}
				return nil
			}
			if acceptRetry(err) {
				failed++
				s.backoff(accept, err, failed)
				continue
			}
			return fmt.Errorf("replica: accept: %w", err)
		}
		failed = 0
		if c, err = outOfPoller(c); err != nil {
			s.refuse(c, err)
			continue
		}
		peer := peerAddr(c)
		if err := s.admit(c, peer); err != nil {
			s.refuse(c, err)
			continue
		}
		s.wg.Add(1)
		s.stop.conns.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.stop.conns.Done()
			s.serveConn(run, c, peer)
		}()
	}
}

// watchRing ends Serve when the ring's path names a new ring (the
// producer restarted, and the mapping we serve will never move again), or
// when the file was cut under the mapping: a goroutine faulted on it
// (lose), or the file is now shorter than the mapping, found here before
// anyone touches a lost page.
func (s *Server) watchRing(ctx context.Context, cancel context.CancelFunc, replaced chan struct{}) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.lost:
			return // lose closed the sessions and ended run
		case <-t.C:
			// Shrunk first: a cut ring may be replaced at once (a hub's
			// mirror starts a fresh one), and a cut must end as one.
			if err := s.ring.Shrunk(); err != nil {
				s.lose(err)
				return
			}
			if s.ring.Replaced() {
				close(replaced)
				s.closeSessions()
				cancel()
				return
			}
		}
	}
}

// closeSessions closes every connection, those still in their handshake
// too (they would hold Close up to the handshake's timeout).
func (s *Server) closeSessions() {
	s.mu.Lock()
	for c := range s.lim.open {
		c.Close()
	}
	s.mu.Unlock()
}

// Close stops serving: the listener, every mirror connection, the
// datagram transport and the ring.
func (s *Server) Close() error {
	s.mu.Lock()
	already := s.closed.Swap(true)
	lm := s.loopMember
	s.mu.Unlock()
	if already {
		return nil
	}
	s.awaitHandoffs()
	if lm != nil {
		// The Loop's thread must be done with the transport and the ring
		// before they close under it.
		s.cfg.Loop.remove(lm)
	}
	s.accept.Close()
	s.tele.close()
	s.closeSessions()
	if s.udp != nil {
		s.udp.Close()
	}
	s.serving.Wait()
	s.wg.Wait()
	s.relay.Close()
	return s.ring.Close()
}

// storeMax raises *a to v unless it already is at least v (a CAS loop:
// safe with several writers, and *a never goes back).
func storeMax(a *atomic.Uint64, v uint64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}
