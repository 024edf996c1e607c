package idle

import (
	"context"
	"time"
)

// Sleep waits d on a timer, or until ctx is done, and reports whether the
// whole of d passed. It is for the cold paths (reconnect and restart
// back-offs), never a hot loop: a timer wakes a goroutine through Go's
// netpoller, with the kernel's timer slack on top.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
