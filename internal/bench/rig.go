package bench

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ringfire/ringfire/internal/bench/archive"
	"github.com/ringfire/ringfire/internal/bench/deployed"
	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/internal/synth"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/shm"
	"github.com/ringfire/ringfire/transport"
)

// Transports are the datagram paths a run can measure.
var Transports = []string{"tcp", "udp-multicast", "udp-unicast", "afpacket-multicast", "afpacket-unicast", "xdp-multicast", "xdp-unicast"}

// iface is the veth name in both namespaces of the pair.
const iface = "veth0"

// rig is the run's topology: two namespaces on one veth pair (hosts A and
// B), rings in a temporary directory of /dev/shm, and everything this
// process started there, stopped by close.
type rig struct {
	owner netns.Owner
	pair  *netns.Pair
	back  *netns.Pair // a second link for the way back of the round trips
	dir   string
	base  time.Time // record stamps are nanoseconds since base
	stops []func()
	dep   *deployed.Bench // the sections whose endpoints are processes, made by Run
	arch  *archive.Bench  // the archive section, made at its first step
}

func newRig() (*rig, error) {
	if err := netns.Available(); err != nil {
		return nil, err
	}
	r := &rig{base: time.Now()}
	var err error
	if r.pair, err = r.owner.NewPair(); err != nil {
		r.owner.Close()
		return nil, err
	}
	if r.back, err = r.owner.NewPair(); err != nil {
		r.owner.Close()
		return nil, err
	}
	if r.dir, err = os.MkdirTemp("/dev/shm", "ringfire-bench-"); err != nil {
		r.owner.Close()
		return nil, err
	}
	return r, nil
}

// reset stops what the last measurement started.
func (r *rig) reset() {
	for i := len(r.stops) - 1; i >= 0; i-- {
		r.stops[i]()
	}
	r.stops = nil
}

func (r *rig) close() error {
	r.reset()
	if r.dep != nil {
		r.dep.Close()
	}
	if r.arch != nil {
		r.arch.Close()
	}
	os.RemoveAll(r.dir)
	return r.owner.Close()
}

// stamp is the time since the rig started, as stored in records.
func (r *rig) stamp() uint64 { return uint64(time.Since(r.base)) }

// since is the time elapsed since a record's stamp.
func (r *rig) since(ts uint64) time.Duration { return time.Since(r.base) - time.Duration(ts) }

// source is a ring and its server in one namespace.
type source struct {
	w   *shm.Writer
	srv *replica.Server
	rec []byte
}

// push writes the next record, stamped now.
func (s *source) push(r *rig) error { return s.pushAt(r.stamp()) }

// pushAt writes the next record with stamp ts.
func (s *source) pushAt(ts uint64) error {
	synth.Fill(s.rec, s.w.Next(), ts)
	_, err := s.w.Push(s.rec)
	return err
}

// newSource creates ring name (capacity records of size bytes) and serves
// it from ns over transport (dir tells apart the ports of several
// sources).
func (r *rig) newSource(ns *netns.NS, addr netip.Addr, name string, size int, capacity uint64, tr string, dir int, tweak func(*replica.ServerConfig)) (*source, error) {
	path := filepath.Join(r.dir, name)
	w, err := shm.Create(path, shm.RingConfig{PayloadSize: size, Capacity: capacity}, shm.CreateOptions{Replace: true})
	if err != nil {
		return nil, err
	}
	s := &source{w: w, rec: make([]byte, size)}
	r.stops = append(r.stops, func() { w.Close() })
	if s.srv, err = r.serve(ns, addr, path, tr, dir, tweak); err != nil {
		return nil, fmt.Errorf("serve %s over %s: %w", name, tr, err)
	}
	return s, nil
}

// serve serves the ring at path from ns over transport tr.
func (r *rig) serve(ns *netns.NS, addr netip.Addr, path, tr string, dir int, tweak func(*replica.ServerConfig)) (*replica.Server, error) {
	cfg, _ := configs(tr, dir)
	cfg.Ring, cfg.Bind, cfg.Iface = path, netip.AddrPortFrom(addr, 0).String(), addr
	cfg.Linger = 0
	if tweak != nil {
		tweak(&cfg)
	}
	var srv *replica.Server
	if err := ns.Do(func() (err error) { srv, err = replica.NewServer(cfg); return err }); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ctx) }()
	r.stops = append(r.stops, func() { cancel(); srv.Close(); <-done })
	return srv, nil
}

// mirrorEnd is a running mirror and a reader of its ring.
type mirrorEnd struct {
	m      *replica.Mirror
	path   string
	rd     *shm.Reader
	stream bool // configured to take no datagrams: everything comes over its TCP or Unix stream
}

// newMirror mirrors src from ns (local address addr) into ring name over
// transport (tweak, if set, adjusts the settings), and opens a reader of
// the mirror ring once it exists.
func (r *rig) newMirror(ns *netns.NS, addr netip.Addr, src *source, name, tr string, dir int, tweak func(*replica.MirrorConfig)) (*mirrorEnd, error) {
	_, cfg := configs(tr, dir)
	path := filepath.Join(r.dir, name)
	cfg.Source, cfg.Ring, cfg.Iface = src.srv.Addr().String(), path, addr
	cfg.From = replica.From{Mode: replica.FromOldest}
	cfg.Reconnect = 50 * time.Millisecond
	if tweak != nil {
		tweak(&cfg)
	}
	m, err := replica.NewMirror(cfg)
	if err != nil {
		return nil, err
	}
	if err := ns.Do(func() error { return m.Connect(context.Background()) }); err != nil {
		m.Close()
		return nil, fmt.Errorf("mirror %s over %s: %w", name, tr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	// Run in ns: a mirror that reconnects dials from its own namespace.
	go func() { defer close(done); ns.Do(func() error { return m.Run(ctx) }) }()
	r.stops = append(r.stops, func() { cancel(); <-done; m.Close() })
	rd, err := shm.OpenReader(path, shm.ReadOptions{Start: shm.StartOldest, NoRegister: true})
	if err != nil {
		return nil, err
	}
	r.stops = append(r.stops, func() { rd.Close() })
	_, unixSource := replica.UnixSocket(cfg.Source)
	return &mirrorEnd{m: m, path: path, rd: rd, stream: cfg.TCPOnly || unixSource}, nil
}

// configs are the server and mirror settings of a transport; dir tells
// apart the groups and ports of the sources of one run.
func configs(tr string, dir int) (replica.ServerConfig, replica.MirrorConfig) {
	var s replica.ServerConfig
	var m replica.MirrorConfig
	tr, keyMode := splitKey(tr)
	applyKey(keyMode, &s, &m)
	_, kind, _ := strings.Cut(tr, "-")
	switch kind {
	case "multicast":
		s.Multicast = netip.AddrPortFrom(netip.AddrFrom4([4]byte{239, 255, 7, byte(1 + dir)}), uint16(7501+2*dir))
	case "unicast":
		s.UDPPort, m.Unicast = 7601+2*dir, true
	default:
		m.TCPOnly = true
	}
	switch {
	case strings.HasPrefix(tr, "xdp-"):
		base := transport.XDPConfig{Iface: iface}
		s.NewTransport = func(u replica.UDPConfig) (replica.Transport, error) {
			return openXDP(transport.XDPForServer(base, u))
		}
		m.NewTransport = func(d replica.DatagramSpec) (replica.Transport, error) {
			return openXDP(transport.XDPForMirror(base, d))
		}
	case strings.HasPrefix(tr, "afpacket-"):
		base := transport.AFPacketConfig{Iface: iface}
		s.NewTransport = func(u replica.UDPConfig) (replica.Transport, error) {
			return openPacket(transport.AFPacketForServer(base, u))
		}
		m.NewTransport = func(d replica.DatagramSpec) (replica.Transport, error) {
			return openPacket(transport.AFPacketForMirror(base, d))
		}
	}
	return s, m
}

func openPacket(cfg transport.AFPacketConfig) (replica.Transport, error) {
	t, err := transport.NewAFPacket(cfg)
	if err != nil {
		return nil, err
	}
	return t, nil
}

func openXDP(cfg transport.XDPConfig) (replica.Transport, error) {
	t, err := transport.NewXDP(cfg)
	if err != nil {
		return nil, err
	}
	return t, nil
}
