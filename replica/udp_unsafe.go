package replica

import (
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mmsg holds the kernel structures of one sendmmsg/recvmmsg call, allocated
// once per transport so that batches do not allocate.
type mmsg struct {
	hdrs  []unix.Mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrInet4
}

func newMmsg(n int) *mmsg {
	return &mmsg{hdrs: make([]unix.Mmsghdr, n), iovs: make([]unix.Iovec, n), names: make([]unix.RawSockaddrInet4, n)}
}

func (m *mmsg) cap() int { return len(m.hdrs) }

func (m *mmsg) pack(i int, buf []byte) {
	h := &m.hdrs[i]
	m.iovs[i].Base = unsafe.SliceData(buf)
	m.iovs[i].SetLen(len(buf))
	h.Hdr = unix.Msghdr{Name: (*byte)(unsafe.Pointer(&m.names[i])), Namelen: unix.SizeofSockaddrInet4,
		Iov: &m.iovs[i], Iovlen: 1}
	h.Len = 0
}

// packSend fills the headers for ms (len(ms) ≤ cap) and returns the count.
func (m *mmsg) packSend(ms []Message) int {
	for i := range ms {
		m.pack(i, ms[i].Buf)
		sa := &m.names[i]
		*sa = unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: ms[i].Addr.Addr().As4()}
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		p[0], p[1] = byte(ms[i].Addr.Port()>>8), byte(ms[i].Addr.Port())
	}
	return len(ms)
}

func (m *mmsg) packRecv(ms []Message) int {
	for i := range ms {
		m.pack(i, ms[i].Buf[:cap(ms[i].Buf)])
	}
	return len(ms)
}

func (m *mmsg) unpackRecv(ms []Message) {
	for i := range ms {
		ms[i].N = int(m.hdrs[i].Len)
		sa := &m.names[i]
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		ms[i].Addr = netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(p[0])<<8|uint16(p[1]))
	}
}

func (m *mmsg) sendmmsg(fd int, n int) (int, error) {
	r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&m.hdrs[0])), uintptr(n), unix.MSG_DONTWAIT, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

func (m *mmsg) recvmmsg(fd int, n int) (int, error) {
	r, _, e := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&m.hdrs[0])), uintptr(n), unix.MSG_DONTWAIT, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}
