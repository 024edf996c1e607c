package replica

import (
	"context"
	"time"
)

// sleepCtx waits d, or until ctx is done (a timer, never a futex).
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
