package report

import "strconv"

// The openloop section's tables: each wait's knee beside its zero-loss
// rate, and every offered rate's one-way percentiles, losses and CPU.

// The openloop section's process roles, as ProcCPU names them: a
// producer and a reader, and ringfire serve and mirror, or one ringfire
// run per host for a loop's wait.
const (
	RoleProducer = "producer"
	RoleReader   = "reader"
	RoleServe    = "serve A"
	RoleMirror   = "mirror A'"
	RoleRun1     = "run 1"
	RoleRun2     = "run 2"
)

// kneeRate formats a knee: "≥" when the sweep's top rate was kept, "none"
// when its lowest was not.
func kneeRate(rate int, capped bool) string {
	return zeroLossRate(ZeroLoss{Rate: rate, Capped: capped})
}

// kneeStep is the step at the knee (zero when there is none).
func (o OpenLoop) kneeStep() OpenStep {
	rate, _ := o.Knee()
	for _, s := range o.Steps {
		if s.Rate == rate {
			return s
		}
	}
	return OpenStep{}
}

func (r *Report) openLoopKneeTable() table {
	t := table{title: "openloop: the knee, the highest offered rate up to which one-way p99 ≤ 1 ms and no record is lost, beside the zero-loss rate",
		header: []string{"transport", "wait", "knee/s", "p50 µs at the knee", "p99 µs at the knee", "zero-loss/s", "from", "knee, share of zero-loss"}}
	for _, o := range r.OpenLoop {
		rate, capped := o.Knee()
		k := o.kneeStep()
		zl, from, share := dash, dash, dash
		if o.ZeroLoss > 0 {
			zl, from = FormatSI(float64(o.ZeroLoss)), o.ZeroLossFrom
		}
		if o.ZeroLoss > 0 && rate > 0 {
			share = fmtPct(100 * float64(rate) / float64(o.ZeroLoss))
		}
		t.rows = append(t.rows, []string{o.Transport, o.Wait, kneeRate(rate, capped), fmtUS(k.Lat.P50), fmtUS(k.Lat.P99),
			zl, from, share})
	}
	return t
}

func (r *Report) openLoopStepsTable() table {
	t := table{title: "openloop: one way, producer's push to reader's read (µs), per offered rate (CPU in cores)", header: []string{
		"transport", "wait", "offered/s", "achieved/s", "records a burst", "p50", "p99", "p99.9", "max", "lapped", "lost",
		"CPU producer", "CPU serve or run 1", "CPU mirror or run 2", "CPU reader"}}
	for _, o := range r.OpenLoop {
		for _, s := range o.Steps {
			offered := FormatSI(float64(s.Rate))
			if s.Rate == o.ZeroLoss {
				offered += " (zero-loss)"
			}
			burst := dash
			if s.Wakes > 0 {
				burst = strconv.FormatFloat(float64(s.Pushed)/float64(s.Wakes), 'f', 1, 64)
			}
			t.rows = append(t.rows, []string{o.Transport, o.Wait, offered, FormatSI(s.Achieved), burst,
				fmtUS(s.Lat.P50), fmtUS(s.Lat.P99), fmtUS(s.Lat.P999), fmtUS(s.Lat.Max), fmtCount(s.Lapped), fmtCount(s.Lost),
				cpuOf(s.CPU, RoleProducer), cpuOf(s.CPU, RoleServe, RoleRun1), cpuOf(s.CPU, RoleMirror, RoleRun2), cpuOf(s.CPU, RoleReader)})
		}
	}
	return t
}
