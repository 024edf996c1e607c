package replica_test

// The basic copy: a mirror joining a source with history ends byte for
// byte identical over every transport.

import (
	"testing"
	"time"
)

func TestByteForByteCopy(t *testing.T) {
	eachMode(t, allModes, func(t *testing.T, mode string) {
		p, src := pairSource(t, 16384) // never laps, however late the mirror connects
		src.push(3000)
		_, mr := serveMirrored(t, p, src, mode, fromOldest, nil)
		src.pushPaced(5000, 50, 200*time.Microsecond)
		st := mr.waitFor(8000, 10*time.Second)
		mr.close()
		sameSlots(t, src.path, mr.path, 1)
		wantAll(t, st, 8000, "")
	})
}
