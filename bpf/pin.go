//go:build linux

package bpf

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// DefaultFS is where bpffs is usually mounted.
const DefaultFS = "/sys/fs/bpf"

// pinLink is the pin of the BPF link inside a pin directory; the maps are
// pinned under their own names.
const pinLink = "link"

// PinDir is the directory under the bpffs mounted at fs where the program
// of interface ifname of the calling thread's network namespace is pinned:
//
//	<fs>/ringfire/<netns>/<ifname>/{link,flows,xsks,counters,fault,fault_seq,xsk_owners}
//
// <netns> is the namespace's cookie (SO_NETNS_COOKIE, never reused while
// the system runs), or "ino<inode>" on kernels before 5.14, so two
// namespaces' "veth0" do not collide. Pins live in the bpffs mount, which
// belongs to a mount namespace, not a network namespace.
func PinDir(fs, ifname string) (string, error) {
	if ifname == "" || ifname == "." || ifname == ".." || strings.ContainsRune(ifname, '/') || len(ifname) >= unix.IFNAMSIZ {
		return "", fmt.Errorf("bpf: pin dir: interface name %q: %w", ifname, ErrInvalid)
	}
	ns, err := netnsName()
	if err != nil {
		return "", err
	}
	return filepath.Join(fs, "ringfire", ns, ifname), nil
}

// netnsName names the calling thread's network namespace.
func netnsName() (string, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("bpf: network namespace: %w", os.NewSyscallError("socket", err))
	}
	defer unix.Close(fd)
	if c, err := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_NETNS_COOKIE); err == nil {
		return strconv.FormatUint(c, 10), nil
	}
	fi, err := os.Stat("/proc/thread-self/ns/net")
	if err != nil {
		return "", fmt.Errorf("bpf: network namespace: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", errors.New("bpf: network namespace: no inode")
	}
	return "ino" + strconv.FormatUint(st.Ino, 10), nil
}

// IsFS reports whether path is on a bpffs.
func IsFS(path string) bool {
	var st unix.Statfs_t
	return unix.Statfs(path, &st) == nil && st.Type == unix.BPF_FS_MAGIC
}

// MountFS mounts a bpffs at dir (created if missing) unless one is there,
// and reports whether it mounted one. A failure wraps ErrNoFS.
func MountFS(dir string) (mounted bool, err error) {
	if IsFS(dir) {
		return false, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("bpf: mount bpffs at %s: %w: %w", dir, ErrNoFS, err)
	}
	if err := unix.Mount("bpf", dir, "bpf", 0, "mode=0700"); err != nil {
		return false, fmt.Errorf("bpf: mount bpffs at %s: %w: %w", dir, ErrNoFS, os.NewSyscallError("mount", err))
	}
	return true, nil
}

// pinnable is a link or a map.
type pinnable interface{ Pin(string) error }

// pins lists what Pin pins, by file name. Callers hold p.mu.
func (p *Program) pins() map[string]pinnable {
	m := &p.objs.steerMaps
	return map[string]pinnable{
		pinLink: p.link, steerMapFlows: m.Flows, steerMapXsks: m.Xsks, steerMapCounters: m.Counters,
		steerMapFault: m.Fault, steerMapFaultSeq: m.FaultSeq, ownersName: p.owners,
	}
}

// Pin pins the program's link and maps in dir (created with its parents,
// which must be on a bpffs), so the attachment and the maps outlive the
// process: Close then leaves the program attached. The program must be
// attached; a dir that already holds pins is ErrBusy. On error nothing is
// left pinned.
func (p *Program) Pin(dir string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.objs == nil {
		return fmt.Errorf("bpf: pin: %w", ErrClosed)
	}
	if p.link == nil {
		return fmt.Errorf("bpf: pin: %w", ErrNotAttached)
	}
	if !onFS(dir) {
		return fmt.Errorf("bpf: pin: %s is not on a bpffs: %w", dir, ErrNoFS)
	}
	if _, err := os.Stat(filepath.Join(dir, pinLink)); err == nil {
		return fmt.Errorf("bpf: pin: %s already holds a pinned program: %w", dir, ErrBusy)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("bpf: pin: %w", err)
	}
	for name, obj := range p.pins() {
		if err := obj.Pin(filepath.Join(dir, name)); err != nil {
			os.RemoveAll(dir)
			if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
				return fmt.Errorf("bpf: pin %s: needs root or CAP_BPF: %w: %w", name, ErrNotSupported, err)
			}
			return fmt.Errorf("bpf: pin %s in %s: %w", name, dir, err)
		}
	}
	p.pinDir = dir
	return nil
}

// onFS reports whether dir, or its closest existing ancestor, is on a
// bpffs.
func onFS(dir string) bool {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			return IsFS(d)
		}
		if d == filepath.Dir(d) {
			return false
		}
	}
}

// PinPath is the directory the program is pinned in (Pin) or was loaded
// from (LoadPinned), "" if neither or after Unpin.
func (p *Program) PinPath() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pinDir
}

// Unpin removes the pins (the directory, and its network namespace's
// directory once empty). The program stays attached while a Program or
// another process holds the link; Detach detaches it at once.
func (p *Program) Unpin() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pinDir == "" {
		return fmt.Errorf("bpf: unpin: not pinned: %w", ErrNotFound)
	}
	if err := RemovePins(p.pinDir); err != nil {
		return err
	}
	p.pinDir = ""
	return nil
}

// RemovePins removes the pin directory dir, stale or not, and its
// network namespace's directory once empty. A missing dir is not an error.
func RemovePins(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("bpf: remove pins: %w", err)
	}
	os.Remove(filepath.Dir(dir)) // fails while other interfaces are pinned there
	return nil
}

// LoadPinned loads the program pinned in dir by Pin, in another process
// or this one. The Program is a guest: flows it adds are tagged with this
// process's id, and Close removes the flows and socket registrations it
// added and leaves the program attached. No pins in dir is ErrNotFound;
// pins whose link no longer attaches the program (the interface is gone,
// or it was detached) or whose maps do not match this package are
// ErrStale. Mode is read with netlink in the calling thread's network
// namespace.
func LoadPinned(dir string) (*Program, error) {
	l, err := link.LoadPinnedLink(filepath.Join(dir, pinLink), nil)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("bpf: no program pinned in %s: %w", dir, ErrNotFound)
		}
		return nil, loadError(fmt.Errorf("pinned link in %s: %w", dir, err))
	}
	p := newProgram(new(steerObjects), nil)
	p.link, p.guest, p.pinDir = l, true, dir
	if err := p.loadPins(dir); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

func (p *Program) loadPins(dir string) error {
	info, err := p.link.Info()
	if err != nil {
		return fmt.Errorf("bpf: pinned link in %s: %w", dir, err)
	}
	xi := info.XDP()
	if xi == nil {
		return fmt.Errorf("bpf: pinned link in %s is not an XDP link: %w", dir, ErrStale)
	}
	if xi.Ifindex == 0 {
		return fmt.Errorf("bpf: pinned link in %s is defunct (interface gone or program detached): %w", dir, ErrStale)
	}
	p.ifindex = int(xi.Ifindex)
	spec, err := loadSteer()
	if err != nil {
		return err
	}
	m := &p.objs.steerMaps
	for name, dst := range map[string]**ebpf.Map{
		steerMapFlows: &m.Flows, steerMapXsks: &m.Xsks, steerMapCounters: &m.Counters,
		steerMapFault: &m.Fault, steerMapFaultSeq: &m.FaultSeq, ownersName: &p.owners,
	} {
		mp, err := ebpf.LoadPinnedMap(filepath.Join(dir, name), nil)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("bpf: pins in %s lack map %s: %w", dir, name, ErrStale)
			}
			return loadError(fmt.Errorf("pinned map %s in %s: %w", name, dir, err))
		}
		*dst = mp
		ms := spec.Maps[name]
		if name == ownersName {
			ms = ownersSpec()
		}
		if err := ms.Compatible(mp); err != nil {
			return fmt.Errorf("bpf: pinned map %s in %s: %w: %w", name, dir, ErrStale, err)
		}
	}
	p.mode = attachedMode(p.ifindex)
	return nil
}

// attachedMode asks netlink how the interface's XDP program is attached.
func attachedMode(ifindex int) Mode {
	l, err := netlink.LinkByIndex(ifindex)
	if err != nil || l.Attrs().Xdp == nil {
		return ModeAuto
	}
	switch l.Attrs().Xdp.AttachMode {
	case xdpAttachedDrv, xdpAttachedHW:
		return ModeNative
	case xdpAttachedSKB:
		return ModeGeneric
	}
	return ModeAuto
}

// IFLA_XDP_ATTACHED values (linux/if_link.h).
const (
	xdpAttachedDrv = 1
	xdpAttachedSKB = 2
	xdpAttachedHW  = 3
)

// OpenPinned loads the program pinned for interface ifname of the calling
// thread's network namespace under the bpffs at fs (see PinDir), and
// checks that it is attached to that interface: pins of an interface that
// was deleted and created again under the same name are ErrStale.
func OpenPinned(fs, ifname string) (*Program, error) {
	dir, err := PinDir(fs, ifname)
	if err != nil {
		return nil, err
	}
	p, err := LoadPinned(dir)
	if err != nil {
		return nil, err
	}
	ifi, err := net.InterfaceByName(ifname)
	if err != nil || ifi.Index != p.Ifindex() {
		p.Close()
		return nil, fmt.Errorf("bpf: pins in %s are for ifindex %d, not %s: %w", dir, p.Ifindex(), ifname, ErrStale)
	}
	return p, nil
}
