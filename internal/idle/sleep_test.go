package idle

import (
	"context"
	"testing"
	"time"
)

func TestSleepEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, time.Hour) {
		t.Fatal("Sleep on a done context reported the whole hour passed")
	}
}

func TestSleepPasses(t *testing.T) {
	if !Sleep(context.Background(), time.Microsecond) {
		t.Fatal("Sleep of 1µs on a live context reported it was cut short")
	}
}
