package report

import (
	"fmt"
	"time"
)

func (r *Report) archiveCatchupTable() table {
	t := table{header: []string{"records", "catch-up", "catch-up/s", "read", "÷ zero-loss", "live offered/s", "live",
		"from history", "gaps", "written twice", "dropped dup/stale", "last records", "serve cores", "mirror cores", "recorder cores"}}
	if r.Archive == nil || r.Archive.Catchup == nil || r.Archive.Catchup.Records == 0 {
		return t
	}
	c := r.Archive.Catchup
	zl, hasZL := r.bestZeroLoss()
	ref, vsZL := "not measured in this run (--sections stress,archive measures both)", dash
	if hasZL {
		ref = fmt.Sprintf("%s/s (stress section: %s, wait %s)", zeroLossRate(zl), zl.Transport, zl.waitName())
		vsZL = fmtRatio(perSec(c.Records, c.Elapsed), float64(zl.Rate))
	}
	t.title = fmt.Sprintf("archive: a mirror catching up %s records from the archive (serve --archive over TCP, --repair-rate off "+
		"--repair-addr-rate off; ring %s slots; archive %s), then live over %s; the live zero-loss replication rate: %s; "+
		"CPU in cores during the catch-up", fmtCount(c.Records), fmtCount(c.Capacity), c.Dir, c.Transport, ref)
	l := c.Live
	yes := map[bool]string{true: "zero loss", false: "LOST"}
	twice := dash
	if l.Last > 0 {
		twice = fmtCount(l.Written - min(l.Written, l.Last)) // in order: more than Last written is a record twice
	}
	same := fmt.Sprintf("%s identical", fmtCount(l.Compared))
	if !l.Identical {
		same = fmt.Sprintf("%s compared, DIFFER", fmtCount(l.Compared))
	}
	t.rows = append(t.rows, []string{fmtCount(c.Records), time.Duration(c.Elapsed).Round(time.Millisecond).String(),
		FormatSI(perSec(c.Records, c.Elapsed)), fmtMBs(perSec(c.Records*uint64(c.Record), c.Elapsed)), vsZL,
		FormatSI(float64(l.Rate)), yes[c.Complete()], fmtCount(l.History), fmtCount(l.Gaps + c.RecorderGaps), twice,
		fmtCount(l.Duplicates) + " / " + fmtCount(l.Stale), same,
		cpuOf(c.CPU, "serve"), cpuOf(c.CPU, "mirror"), cpuOf(c.CPU, "recorder")})
	return t
}
