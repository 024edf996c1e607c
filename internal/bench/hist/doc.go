// Package hist records latencies into an HDR histogram (1 ns to 10 s, 3
// significant digits) and summarizes it as report.Percentiles in
// microseconds. The bench's measuring process and its role processes both
// record into it, so a percentile means the same wherever it was taken:
//
//	New ── Record(d) per sample ── Percentiles() ──▶ report.Percentiles
package hist
