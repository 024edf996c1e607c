package bench

import (
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The stages' floor relays every record to all three of its rings: each
// row has every record pushed after the warm-up, the same count in each,
// and the relays' threads are gone afterwards (GOMAXPROCS back where it
// was). It asserts what was relayed, never how fast.
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
	if len(ls) != 3 {
		t.Fatalf("%d rows, want 3: %+v", len(ls), ls)
	}
	want := ls[0].Lat.Samples
	if want < 500 { // 1,000 records are pushed in the 200 ms
		t.Fatalf("the first row has %d samples, want about 1,000", want)
	}
	for i, name := range []string{"mirror, same host", "mirror, other host", "hub → leaf"} {
		l := ls[i]
		if !strings.Contains(l.Name, name) || !strings.Contains(l.Name, "at 5.00 k/s") {
			t.Errorf("row %d is %q, want one naming %q at 5.00 k/s", i, l.Name, name)
		}
		if l.Lat.Samples != want || l.Lat.P50 <= 0 {
			t.Errorf("%s: %d samples, p50 %v µs; want %d samples (every record relayed)", l.Name, l.Lat.Samples, l.Lat.P50, want)
		}
	}
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Errorf("GOMAXPROCS %d after the floor, %d before: a relay's thread is still locked", got, procs)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the floor left %d files in %s", len(entries), dir)
	}
}
