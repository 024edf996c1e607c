package report

import (
	"math"
	"strconv"
	"strings"
)

// dash stands for a missing figure (zero, NaN or infinite).
const dash = "-"

// valid reports whether v is a usable measurement: finite and positive.
func valid(v float64) bool {
	return v > 0 && !math.IsNaN(v) && !math.IsInf(v, 0)
}

// fmtUS formats microseconds with precision that shrinks as values grow:
// 4.56, 12.3, 1234.
func fmtUS(v float64) string {
	switch {
	case !valid(v):
		return dash
	case v < 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case v < 1000:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// fmtNs formats nanoseconds: 85.3, 412.
func fmtNs(v float64) string {
	switch {
	case !valid(v):
		return dash
	case v < 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// fmtCores formats a CPU share in cores with two decimals (0.00 for an
// idle process: zero is a measurement here, not a missing figure).
func fmtCores(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return dash
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// FormatSI formats a rate with three significant digits and a k/M/G
// suffix: 950, 12.3 k, 250 k, 4.80 M. The stages name their producer's
// rate with it.
func FormatSI(v float64) string {
	if !valid(v) {
		return dash
	}
	units := []struct {
		div float64
		sfx string
	}{{1e9, " G"}, {1e6, " M"}, {1e3, " k"}, {1, ""}}
	for _, u := range units {
		if v >= u.div || u.div == 1 {
			x := v / u.div
			prec := 2
			switch {
			case x >= 99.95:
				prec = 0
			case x >= 9.995:
				prec = 1
			}
			if u.div == 1 && x >= 1 {
				prec = 0
			}
			return strconv.FormatFloat(x, 'f', prec, 64) + u.sfx
		}
	}
	return dash
}

// fmtCount formats an integer with thousands separators: 1,234,567.
func fmtCount(n uint64) string {
	s := strconv.FormatUint(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// fmtPct formats a percentage with two decimals, adding decimals when a
// value short of 100 would otherwise round up to it: 97.25%, 99.9987%.
func fmtPct(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return dash
	}
	prec := 2
	s := strconv.FormatFloat(v, 'f', prec, 64)
	for v < 100 && strings.HasPrefix(s, "100") && prec < 6 {
		prec++
		s = strconv.FormatFloat(v, 'f', prec, 64)
	}
	return s + "%"
}

// fmtRatio formats a/b as "1.85×", or dash when either is missing.
func fmtRatio(a, b float64) string {
	if !valid(a) || !valid(b) {
		return dash
	}
	return strconv.FormatFloat(a/b, 'f', 2, 64) + "×"
}

// fmtDelta formats the relative change from base to v: "+12.3%".
func fmtDelta(v, base float64) string {
	if !valid(v) || !valid(base) {
		return dash
	}
	d := (v - base) / base * 100
	s := strconv.FormatFloat(d, 'f', 1, 64) + "%"
	if d >= 0 {
		s = "+" + s
	}
	return s
}

// fmtRange formats the spread of vs as "min–max" in µs, or one figure
// when they agree; missing values are ignored.
func fmtRange(vs []float64) string {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		if valid(v) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if math.IsInf(lo, 1) {
		return dash
	}
	a, b := fmtUS(lo), fmtUS(hi)
	if a == b {
		return a
	}
	return a + "–" + b
}
