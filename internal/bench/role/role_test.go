package role

import (
	"testing"

	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/shm"
)

// A pinger or echo waits on its ring as serve's sender does in the same
// mode (replica.RingWait), and default's sleeps on the futex after 32
// polls.
func TestRoleWait(t *testing.T) {
	for _, m := range []replica.WaitMode{replica.WaitAdaptive, replica.WaitBlock, replica.WaitYield, replica.WaitSpin} {
		if got, want := roleWait(m.String()), replica.RingWait(m); got != want {
			t.Errorf("roleWait(%q) = %+v, want the sender's %+v", m, got, want)
		}
	}
	if got := roleWait("default"); got != shm.FutexWait(32) {
		t.Errorf("roleWait(default) = %+v, want FutexWait(32)", got)
	}
}
