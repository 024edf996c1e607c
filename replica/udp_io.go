package replica

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// SendBatch sends the messages with sendmmsg, in chunks of the batch size;
// a full send buffer is waited for in ppoll.
func (u *UDP) SendBatch(ms []Message) (int, error) {
	u.inUse.RLock()
	defer u.inUse.RUnlock()
	sent := 0
	for sent < len(ms) {
		if u.closed.Load() {
			return sent, ErrClosed
		}
		chunk := ms[sent:min(len(ms), sent+u.smm.cap())]
		n, err := u.smm.sendmmsg(u.fd, u.smm.packSend(chunk))
		switch {
		case err == unix.EAGAIN:
			if err := u.await(unix.POLLOUT, -1); err != nil {
				return sent, err
			}
			continue
		case err != nil:
			return sent, os.NewSyscallError("sendmmsg", err)
		}
		sent += n
	}
	return sent, nil
}

// RecvBatch receives with recvmmsg (see Transport); a wait is ppoll on the
// socket.
func (u *UDP) RecvBatch(ms []Message, wait time.Duration) (int, error) {
	u.inUse.RLock()
	defer u.inUse.RUnlock()
	ms = ms[:min(len(ms), u.rmm.cap())]
	var deadline time.Time
	if wait > 0 {
		deadline = time.Now().Add(wait)
	}
	for {
		if u.closed.Load() {
			return 0, ErrClosed
		}
		got, err := u.rmm.recvmmsg(u.fd, u.rmm.packRecv(ms))
		switch {
		case err == nil:
			u.rmm.unpackRecv(ms[:got])
			return got, nil
		case err != unix.EAGAIN && err != unix.EINTR:
			return 0, os.NewSyscallError("recvmmsg", err)
		case wait == 0:
			return 0, nil
		}
		left := time.Duration(-1)
		if wait > 0 {
			if left = time.Until(deadline); left <= 0 {
				return 0, nil
			}
		}
		if err := u.await(unix.POLLIN, left); err != nil {
			return 0, err
		}
	}
}

// await waits in ppoll until the socket has events (or is shut down by
// Close), at most d (negative: no limit).
func (u *UDP) await(events int16, d time.Duration) error {
	fds := [1]unix.PollFd{{Fd: int32(u.fd), Events: events}}
	var ts *unix.Timespec
	if d >= 0 {
		t := unix.NsecToTimespec(d.Nanoseconds())
		ts = &t
	}
	_, err := unix.Ppoll(fds[:], ts, nil)
	if u.closed.Load() {
		return ErrClosed
	}
	if err != nil && err != unix.EINTR {
		return os.NewSyscallError("ppoll", err)
	}
	return nil
}

// Close shuts the socket down, which wakes calls waiting in ppoll (they
// return ErrClosed), waits for calls in progress, and closes it.
func (u *UDP) Close() error {
	if u.closed.Swap(true) {
		return ErrClosed
	}
	unix.Shutdown(u.fd, unix.SHUT_RDWR) // ENOTCONN on an unconnected socket, which still wakes its pollers
	u.inUse.Lock()
	defer u.inUse.Unlock()
	return os.NewSyscallError("close", unix.Close(u.fd))
}
