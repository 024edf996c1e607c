package bench

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The stages' floor relays every record to each ring it reads, in each of
// its layouts (all at once, a mirror alone, the hub alone): every row has
// every record pushed after its layout's warm-up, and the relays' threads
// are gone afterwards (GOMAXPROCS back where it was). It asserts what was
// relayed, never how fast.
func TestStagesFloor(t *testing.T) {
	dir, err := os.MkdirTemp("/dev/shm", "ringfire-floor-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	r := &rig{base: time.Now(), dir: dir}
	procs := runtime.GOMAXPROCS(0)
	ls, err := r.stagesFloor(64, 200*time.Millisecond, 5000)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"of mirror, same host:", "of mirror, other host:", "of hub → leaf:", "of a mirror alone", "of hub → leaf, alone:"}
	if len(ls) != len(names) {
		t.Fatalf("%d rows, want %d: %+v", len(ls), len(names), ls)
	}
	for i, name := range names {
		l := ls[i]
		if !strings.Contains(l.Name, name) || !strings.Contains(l.Name, "at 5.00 k/s") {
			t.Errorf("row %d is %q, want one naming %q at 5.00 k/s", i, l.Name, name)
		}
		// About 1,000 records are pushed in each layout's 200 ms; the
		// rows of all at once have the same records, and stagesFloor fails
		// if a relay did not pass on every record.
		if l.Lat.Samples < 500 || i < 3 && l.Lat.Samples != ls[0].Lat.Samples || l.Lat.P50 <= 0 {
			t.Errorf("%s: %d samples, p50 %v µs; want about 1,000, %d in each of the first three", l.Name, l.Lat.Samples, l.Lat.P50, ls[0].Lat.Samples)
		}
	}
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Errorf("GOMAXPROCS %d after the floor, %d before: a relay's thread is still locked", got, procs)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the floor left %d files in %s", len(entries), dir)
	}
}
