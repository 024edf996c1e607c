package report

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// catchupReport is the archive section with a catch-up of 10 M records
// in 2 s, then 3 M records live.
func catchupReport() *Report {
	r := archiveReport()
	cpu := []ProcCPU{{Role: "producer"}, {Role: "recorder", PerSec: 0.01}, {Role: "serve", PerSec: 0.9}, {Role: "mirror", PerSec: 0.7}}
	r.Archive.Catchup = &ArchiveCatchup{Dir: "/var/tmp (ext2/3/4 on /dev/vda)", Transport: "xdp-unicast", Capacity: 1 << 20, Record: 64,
		Records: 10_000_000, FillRate: 2_000_000, Elapsed: Duration(2 * time.Second), CPU: cpu,
		Live: CatchupLive{Rate: 1_000_000, Pushed: 3_000_000, Last: 13_000_000, Written: 13_000_000, Next: 13_000_001,
			History: 10_000_000, Duplicates: 2, Stale: 5, Compared: 1 << 20, Identical: true, CPU: cpu}}
	return r
}

// The catch-up table gives the catch-up rate beside the run's zero-loss
// rate, the live check and each process's cores; without the stress
// section it quotes the committed bench.json; a mirror that lost or
// doubled a record, or whose last records differ, is LOST.
func TestArchiveCatchupTable(t *testing.T) {
	var b bytes.Buffer
	if err := catchupReport().WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Log("\n" + out)
	wantRow(t, out, "10,000,000", "2s", "5.00 M", "320 MB/s", "0.78×", "1.00 M", "zero loss", "10,000,000", "0", "0", "2 / 5",
		"1,048,576 identical", "0.90", "0.70", "0.01")
	if !strings.Contains(out, "the live zero-loss replication rate: 6.40 M/s (stress section: xdp-unicast, wait loop-yield)") {
		t.Errorf("title lacks the run's zero-loss rate")
	}
	r := catchupReport()
	r.ZeroLoss = nil
	r.Archive.Catchup.Live.Written, r.Archive.Catchup.Live.Identical = 13_000_002, false
	b.Reset()
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	wantRow(t, b.String(), "10,000,000", "2s", "5.00 M", "320 MB/s", "-", "1.00 M", "LOST", "10,000,000", "0", "2", "2 / 5",
		"1,048,576 compared, DIFFER")
	if !strings.Contains(b.String(), "not measured in this run (--sections stress,archive measures both)") {
		t.Errorf("without the stress section, the title does not say the rate was not measured:\n%s", b.String())
	}
}
