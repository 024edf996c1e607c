package report

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable writes the report as aligned plain-text tables: the
// machine, then one section per kind of measurement (ping-pong, stress,
// zero-loss rate, stages, fan-out, send cost) and the notes. Empty
// sections are omitted.
func (r *Report) WriteTable(w io.Writer) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	if kv := r.machineRows(); len(kv) > 0 || r.Command != "" {
		fmt.Fprintln(tw, "machine")
		for _, p := range kv {
			fmt.Fprintf(tw, "  %s\t%s\n", p[0], p[1])
		}
		if r.Command != "" {
			fmt.Fprintf(tw, "  command\t%s\n", r.Command)
		}
	}
	for _, t := range r.tables() {
		fmt.Fprintf(tw, "\n%s\n", t.title)
		writeTabRow(tw, t.header)
		for _, row := range t.rows {
			writeTabRow(tw, row)
		}
	}
	if len(r.Notes) > 0 {
		fmt.Fprintln(tw, "\nnotes")
		for _, n := range r.Notes {
			fmt.Fprintf(tw, "  - %s\n", n)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// writeTabRow writes cells as one indented tabwriter line.
func writeTabRow(w io.Writer, cells []string) {
	fmt.Fprintf(w, "  %s\n", strings.Join(cells, "\t"))
}
