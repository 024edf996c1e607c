package transport

// HookWoken makes f run each time a waiting RecvBatch of x checks whether
// it was woken: the first check comes after the wait armed what it arms
// (the sockets, or nothing). Set it before x's first RecvBatch.
func HookWoken(x *XDP, f func()) {
	woken := x.rx.woken
	x.rx.woken = func() bool { f(); return woken() }
}
