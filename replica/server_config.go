package replica

import (
	"net/netip"
	"time"

	"github.com/ringfire/ringfire/replica/auth"
)

// ServerConfig configures a source.
type ServerConfig struct {
	Ring string // path of the ring to serve (mapped read-only)
	Bind string // TCP control address, host:port
	// Unix, when set, is a Unix domain socket path (or "@name", abstract)
	// the server listens on too, for mirrors on this host that dial
	// UnixPrefix+Unix: they are served over that stream only
	// (server_unix.go).
	Unix      string
	Multicast netip.AddrPort // --multicast GROUP:PORT (invalid: none)
	UDPPort   int            // --udp PORT for unicast mirrors (0: none)
	Iface     netip.Addr     // --iface: interface address for multicast
	TTL       int            // multicast TTL (default 1)
	Dup       int            // send every datagram this many times (default 1)
	MTU       int            // datagram budget, header included (default 1472)
	Batch     int            // at most this many records per frame (0: fill the MTU)
	// Linger paces frames: a frame leaves when full, or at most once per
	// Linger; a lone record coming more than Linger after the previous
	// frame leaves at once. Negative: AdaptiveLinger; 0: no pacing.
	Linger time.Duration
	// Wait is how the datagram sender waits for records (WaitMode; default
	// WaitAdaptive). Spin is WaitSpin.
	Wait WaitMode
	Spin bool
	// Pin binds the sender's thread to a CPU.
	Pin Pin
	// Loop, when set, runs the sender on that Loop's thread, with the
	// other servers and mirrors given it, instead of a thread of its own
	// (Wait and Pin are then the Loop's).
	Loop *Loop
	// Transport carries the datagrams (default: NewTransport's).
	Transport Transport
	// NewTransport, when Transport is nil, opens the datagram transport
	// from the kernel UDP settings the server would use (default: NewUDP).
	// The server closes the transport.
	NewTransport func(UDPConfig) (Transport, error)
	// PunchTimeout is how long a unicast mirror has to punch before it is
	// served over TCP instead (default 3 s).
	PunchTimeout time.Duration
	// Loopback delivers multicast to receivers on this host too.
	Loopback bool
	// Events, when set, is told about mirror connections (from the
	// connection's goroutine), refusals and failed accepts (from Serve's
	// goroutine) and lag warnings (from the telemetry goroutine); it must
	// not block.
	Events func(ServerEvent)
	// NoTelemetry ignores HelloTelemetry: every mirror is served as a
	// version-1 peer and sends no STATUS.
	NoTelemetry bool
	// MirrorRetention is how long a mirror that reported an identity and
	// left stays in Mirrors (default DefaultMirrorRetention; negative:
	// not at all).
	MirrorRetention time.Duration
	// MaxConns, MaxConnsPerAddr and MaxPending limit the TCP connections
	// open at once: in all, from one address, and not live yet (in the
	// handshake or the catch-up). A connection past MaxConns or
	// MaxConnsPerAddr is refused at once: sent an ERROR frame saying why,
	// closed and counted (ServerStats.Refused, by RefusalKind). When
	// MaxPending connections are not live yet, the oldest of them is
	// evicted for the newcomer (RefusedEvicted; a mirror evicted in its
	// catch-up reconnects and goes on from what it holds), so that
	// holding connections open locks nobody out: an attacker would have
	// to open MaxPending of them within a real mirror's handshake. 0:
	// DefaultMaxConns, DefaultMaxConnsPerAddr, DefaultMaxPending;
	// negative: no limit.
	MaxConns, MaxConnsPerAddr, MaxPending int
	// MaxPendingPerAddr limits the connections not live yet from one
	// address (0: DefaultMaxPendingPerAddr; negative: no limit): a few
	// addresses cannot fill the MaxPending pool. Connections over a Unix
	// socket count as one address.
	MaxPendingPerAddr int
	// HandshakeTimeout bounds a connection's handshake, from its accept
	// to the answer to its HELLO, TLS included with a Key (0:
	// DefaultHandshakeTimeout). A peer past it is told why in an ERROR
	// frame when it can read one, and closed (RefusedTimeout).
	HandshakeTimeout time.Duration
	// Key, when set, makes replication keyed: mirrors must hold the same
	// secret (TLS on TCP with both ends authenticated by it, datagrams
	// sealed with a key derived from it); every other peer is refused
	// with an ERROR frame saying why. Encrypt, with a Key, also encrypts
	// the datagrams' payloads (TCP is always encrypted under a key).
	Key     *auth.Key
	Encrypt bool
	// WideMulticast makes the multicast datagrams carry the 64-bit
	// session id (the wide session extension) after each frame; a
	// version-1 mirror, which cannot parse them, is then served over TCP.
	// Unicast mirrors that announce the extension get it anyway.
	WideMulticast bool
	// MirrorRows is the most mirrors that left kept in Mirrors, the
	// longest gone forgotten first (default DefaultMirrorRows; negative:
	// none).
	MirrorRows int
	// RepairRate and RepairBurst budget the repair sent to all peers
	// together, RepairAddrRate and RepairAddrBurst to one peer address
	// (an IPv6 peer's /64): token buckets of bytes, refilled at the rate
	// (bytes/s), holding at most the burst. Repair is NAK answers and a
	// session's history (the records the ring held when it began); live
	// data is never paced, nor a Unix socket's peer (server_budget.go).
	// Rates: 0 is DefaultRepairRate, DefaultRepairAddrRate; negative, no
	// limit. Bursts: 0 is one full catch-up of the ring (every record it
	// holds, as sent over TCP); never less than one frame (64 KiB);
	// negative, ErrConfig. NewServer sets the budget up.
	RepairRate, RepairBurst         int64
	RepairAddrRate, RepairAddrBurst int64
	// History, when set, holds the served ring's records past what the
	// ring holds (an archive of it: history.go). A mirror that announces
	// HelloHistory is sent from it, over TCP and in order, the records its
	// HELLO or NAKs ask for that the ring lost, instead of a GAP; its
	// frames are repair (the budget above). nil: every mirror is served
	// from the ring alone, as a mirror that does not announce it is.
	History History
	// MulticastB, when set, sends every datagram to line A's group
	// (Multicast) on a second line too: this group, through IfaceB's
	// interface (--multicast-b, --iface-b), by TransportB (default: what
	// NewTransportB opens for IfaceB, else kernel UDP: NewTransport opens
	// line A's). A mirror that
	// announces HelloLines takes both and applies the first copy
	// (lines.go). IfaceB with UDPPort (MulticastB or not) is a unicast
	// line B: line B's transport is bound to IfaceB:UDPPort, unicast
	// mirrors that announce HelloLines punch there too, with a key that
	// ties the PUNCH to their session, and get every datagram on both
	// lines (lines_unicast.go).
	MulticastB    netip.AddrPort
	IfaceB        netip.Addr
	TransportB    Transport
	NewTransportB func(UDPConfig) (Transport, error)
}

// AdaptiveLinger is the linger of the adaptive pacing.
const AdaptiveLinger = 50 * time.Microsecond
