package report

import (
	"fmt"
	"strconv"
)

// deployedTailsTable is where the slowest round trips went: the hops that
// took their excess, and how the hop's thread spent it (--trace).
func (r *Report) deployedTailsTable() table {
	t := table{title: "deployed: the slowest round trips, the hop that took the excess and how its thread spent it (--trace)", header: []string{
		"transport", "wait", "above", "from", "to", "of the tail", "excess p50 µs", "traced", "running", "runnable", "asleep"}}
	for _, d := range r.Deployed {
		for _, h := range d.Tails {
			share := dash
			if h.Tail > 0 {
				share = fmt.Sprintf("%d of %d", h.Samples, h.Tail)
			}
			row := []string{d.Transport, d.Wait, h.Above, h.From, h.To, share, fmtUS(h.ExcessP50), strconv.Itoa(h.Traced)}
			for _, v := range []float64{h.Running, h.Runnable, h.Sleeping} {
				if h.Traced == 0 {
					row = append(row, dash)
				} else {
					row = append(row, fmtPct(100*v))
				}
			}
			t.rows = append(t.rows, row)
		}
	}
	return t
}
