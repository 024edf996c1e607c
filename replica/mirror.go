package replica

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/ringfire/ringfire/internal/idle"
	"github.com/ringfire/ringfire/replica/auth"
	"github.com/ringfire/ringfire/replica/wire"
)

// FromMode says where a mirror starts.
type FromMode int

const (
	FromLatest FromMode = iota // the newest record, then live
	FromOldest                 // everything the source still retains, then live
	FromResume                 // after the last record of the local mirror ring
	FromSeq                    // at a given sequence (clamped to the oldest retained)
)

// From is a mirror's start position.
type From struct {
	Mode FromMode
	Seq  uint64 // for FromSeq
}

// MirrorConfig configures a mirror.
type MirrorConfig struct {
	Source    string        // the source's TCP address, host:port, or UnixPrefix+path
	Ring      string        // path of the mirror ring
	From      From          // where to start on the first connection
	Unicast   bool          // ask for UDP unicast (punching through NAT)
	TCPOnly   bool          // do not offer to receive UDP
	Iface     netip.Addr    // local interface for multicast and unicast
	Reconnect time.Duration // wait between reconnections (default 1 s)
	Once      bool          // do not reconnect: Run returns when the source goes
	// Wait is how Run's loop waits when nothing arrived (WaitMode;
	// default WaitAdaptive). Spin is WaitSpin.
	Wait WaitMode
	Spin bool
	// Pin binds Run's thread to a CPU.
	Pin Pin
	// Loop, when set, steps the mirror's connections on that Loop's
	// thread, with the other servers and mirrors given it (Wait and Pin
	// are then the Loop's); Run's goroutine only connects. A transport
	// that is not Pollable is stepped by Run itself.
	Loop *Loop
	// NewTransport builds the datagram transport once the source says how
	// datagrams come (default: kernel UDP, NewMirrorUDP).
	NewTransport func(DatagramSpec) (Transport, error)
	// DialTimeout bounds connecting and the handshake (default 10 s).
	// The end of the context given Run or Connect ends them at once.
	DialTimeout time.Duration
	// SourceTimeout ends a connection over which the source has sent
	// nothing (no record, no heartbeat) for this long; Run then reconnects
	// (default DefaultSourceTimeout; negative: never). It also bounds how
	// long a GAP past what the source announced waits to be backed.
	SourceTimeout time.Duration
	// NoTelemetry does not announce HelloTelemetry: the mirror speaks
	// version 1 exactly and never reports STATUS.
	NoTelemetry bool
	// Name names the mirror in the source's table (default
	// "hostname:ring file name"; at most 32 bytes are sent).
	Name string
	// StatusInterval is how often the mirror reports STATUS to a source
	// that takes it (default DefaultStatusInterval, 100 ms).
	StatusInterval time.Duration
	// AnySource accepts datagrams from any address. By default a mirror
	// takes them only from its source: the address and port it punches
	// (unicast), or the address its TCP connection reached (multicast).
	AnySource bool
	// MaxRingSize limits the mirror ring a source's GEOMETRY may make us
	// create, in bytes (shm.CreateOptions.MaxSize: 0 is shm's
	// DefaultMaxSize, negative only the free space); beyond it the
	// connection fails with an error wrapping shm.ErrTooLarge (or
	// ErrNoSpace) and nothing is created.
	MaxRingSize int64
	// Events, when set, is told about the connection to the source:
	// connects, disconnects and Run's failed attempts. It is called from
	// the goroutine calling Run, Connect, Step or Close, and must not
	// block.
	Events func(MirrorEvent)
	// Published, when set, is called after each step that made records
	// visible in the mirror ring, with the last sequence published, on
	// the goroutine that applied them (Run's, or Step's caller): readers
	// see each datagram's records as soon as they are applied, and
	// Published hears of a received batch once, after its last datagram.
	// It must not block. A hub that serves the mirror ring again in this
	// process passes its Server's Handoff, so the records leave on the
	// thread that applied them, without waking the hub's sender, a batch's
	// in one send.
	Published func(seq uint64)
	// Key, when set, makes replication keyed (ServerConfig.Key): the
	// source must hold the same secret, or the connection fails with
	// ErrKeyRequired or ErrRefused. Encrypt, with a Key, refuses a source
	// whose datagrams are not encrypted.
	Key     *auth.Key
	Encrypt bool
	// NoSession64 does not ask for the wide session (HelloSession64): the
	// source's datagrams then carry only the version-1 session byte.
	NoSession64 bool
	// NoHistory does not announce HelloHistory: a source with a history
	// (ServerConfig.History) then answers a start or a NAK older than its
	// ring as one without does, with its oldest record or a GAP.
	NoHistory bool
	// IfaceB, when set (or NewTransportB), announces HelloLines: a source
	// that sends on two lines (ServerConfig.MulticastB) tells its line B
	// group, joined through this interface by NewTransportB (default:
	// kernel UDP, NewMirrorUDP); the mirror applies the first copy of each
	// frame from either line (lines.go). With Unicast, a source with a
	// unicast line B (ServerConfig.UDPPort and IfaceB) tells its line B
	// address and a punch key: the mirror punches from IfaceB too
	// (lines_unicast.go). With a Key both
	// lines' sealed copies meet one replay window (1,024 datagrams): the
	// second copy of each counts as a duplicate, not a replay.
	IfaceB        netip.Addr
	NewTransportB func(DatagramSpec) (Transport, error)
	// LineWindow is how long a hole waits for the other line before it
	// is NAKed (default DefaultLineWindow; negative: NAK at once).
	LineWindow time.Duration
}

// Mirror keeps a local ring identical to a source ring: same sequence
// numbers, same records, in order, never duplicated.
type Mirror struct {
	cfg   MirrorConfig
	ring  *mirrorRing
	seq   *sequencer
	shape wire.Shape
	geom  wire.Geometry
	c     *conn // the current connection, nil between connections

	session    uint64 // the source's session: its byte, or the keyed SESSION id
	hasSession bool
	// restarted: the source restarted under a resumed ring; the next
	// connection starts a fresh ring from the configured start.
	restarted  bool
	stats      MirrorStats
	msgs       []Message // receive batch
	bufs       [][]byte
	nakBuf     []byte
	lastPunch  time.Time
	lastPublic time.Time
	id         uint64 // identity reported in STATUS

	// Run's waiting (mirror_wait.go): the Waker and the Idler, made by
	// NewMirror, live as long as the mirror (Close closes the Waker);
	// pollable says the connection's transport is watched by the Idler
	// (written by Connect, read by Run's goroutine, which calls it).
	waker    *idle.Waker
	idler    *idle.Idler
	pollable bool
	dirty    bool // counters changed since the last publishStats

	// afterDatagram, a test hook (export_test.go), is called after each
	// datagram of a batch was applied and published, with its index in the
	// batch, the last sequence it carries and the last the whole batch
	// carries.
	afterDatagram func(i int, last, batchLast uint64)

	mu     sync.Mutex
	public MirrorStats
}

// DefaultSourceTimeout is MirrorConfig.SourceTimeout's default: 25 times
// the longest a real source's TCP session stays silent (a HEARTBEAT after
// 200 ms without a frame), so that a few TCP retransmissions with their
// backoff (200, 400, 800 ms...) on a lossy WAN never end a connection.
const DefaultSourceTimeout = 5 * time.Second

// MinSourceTimeout is the shortest SourceTimeout: a source's TCP session
// may be silent for 200 ms (its heartbeat interval), plus the way.
const MinSourceTimeout = 500 * time.Millisecond

// ErrSourceSilent ends a connection whose source sent nothing for
// MirrorConfig.SourceTimeout.
var ErrSourceSilent = errors.New("replica: the source went silent")

// stepLimit bounds the datagrams and TCP frames one Step handles, so that
// single-threaded callers get control back under any load.
const stepLimit = 32

// NewMirror prepares a mirror; nothing is connected until Run or Connect.
func NewMirror(cfg MirrorConfig) (*Mirror, error) {
	if cfg.Source == "" || cfg.Ring == "" {
		return nil, errors.New("replica: mirror needs a source address and a ring path")
	}
	if p, ok := UnixSocket(cfg.Source); ok {
		switch {
		case p == "":
			return nil, fmt.Errorf("replica: mirror of %q: no socket path", cfg.Source)
		case cfg.Unicast:
			return nil, fmt.Errorf("replica: mirror of %s: a Unix socket carries no datagrams (Unicast)", cfg.Source)
		}
		cfg.TCPOnly = true // everything comes over the stream
	}
	if cfg.Reconnect <= 0 {
		cfg.Reconnect = time.Second
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 10 * time.Second
	}
	switch {
	case cfg.SourceTimeout == 0:
		cfg.SourceTimeout = DefaultSourceTimeout
	case cfg.SourceTimeout > 0 && cfg.SourceTimeout < MinSourceTimeout:
		return nil, fmt.Errorf("replica: mirror: SourceTimeout %v is below %v: a source's TCP session may be silent for 200 ms", cfg.SourceTimeout, MinSourceTimeout)
	}
	if cfg.NewTransport == nil {
		cfg.NewTransport = NewMirrorUDP
	}
	if err := checkMirrorLines(&cfg); err != nil {
		return nil, err
	}
	if cfg.Spin {
		cfg.Wait = WaitSpin
	}
	if err := cfg.Pin.check(); err != nil {
		return nil, err
	}
	m := &Mirror{cfg: cfg, msgs: make([]Message, stepLimit), bufs: make([][]byte, stepLimit)}
	if err := m.newWaiting(); err != nil {
		return nil, err
	}
	m.initTelemetry()
	for i := range m.bufs {
		m.bufs[i] = make([]byte, MaxMTU)
	}
	return m, nil
}

// Stats returns a snapshot of the counters, safe from any goroutine (it is
// refreshed at least every millisecond while the mirror runs).
func (m *Mirror) Stats() MirrorStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.public
}

func (m *Mirror) publishStats(now time.Time) {
	if m.seq != nil {
		m.stats.Held, m.stats.Next, m.stats.Lag, m.stats.Heartbeat = len(m.seq.held), m.seq.next, m.seq.lag(), m.seq.hb
	}
	if m.idler != nil {
		m.stats.Wait = m.idler.Stats()
	}
	m.mu.Lock()
	m.public = m.stats
	m.mu.Unlock()
	m.lastPublic = now
}

// Close ends the connection and closes the mirror ring.
func (m *Mirror) Close() error {
	m.disconnect(nil)
	var err error
	if m.ring != nil {
		err = m.ring.close()
		m.ring = nil
	}
	if m.cfg.Loop == nil { // the Loop's Waker is the Loop's
		m.waker.Close() // a late notification (Run's ctx) finds it closed and does nothing
	}
	m.publishStats(time.Now())
	return err
}

// disconnect ends the current connection, if any, for reason why (nil:
// the mirror is closing).
func (m *Mirror) disconnect(why error) {
	if m.c != nil {
		if protocolErr(why) {
			m.stats.SourceErrors++
		}
		m.c.close()
		m.c = nil
		// What the last step applied is visible before anyone hears of
		// the end (a step publishes its counters at most every
		// millisecond, and no step runs until the next connection).
		m.publishStats(time.Now())
		m.emit(MirrorDisconnected, why, 0)
	}
}
