package report

import (
	"fmt"
	"io"
	"path"
	"strings"
)

// WriteMarkdown writes the report as a section of docs/benchmarks.md:
// a heading, the machine, the command, one markdown table per section
// (figures right-aligned) and links to the charts WriteSVG writes, svgDir being their directory
// relative to the markdown file ("" for the same directory).
func (r *Report) WriteMarkdown(w io.Writer, svgDir string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\n", r.heading())
	for _, p := range r.machineRows() {
		fmt.Fprintf(&b, "- **%s**: %s\n", p[0], mdEscape(p[1]))
	}
	if r.Command != "" {
		fmt.Fprintf(&b, "\n```sh\n%s\n```\n", r.Command)
	}
	for _, name := range svgNames {
		fmt.Fprintf(&b, "\n![%s](%s)\n", svgAlt[name], path.Join(svgDir, name))
	}
	for _, t := range r.tables() {
		fmt.Fprintf(&b, "\n### %s\n\n", mdEscape(t.title))
		writeMdRow(&b, t.header)
		b.WriteString("| --- |" + strings.Repeat(" ---: |", len(t.header)-1) + "\n")
		for _, row := range t.rows {
			writeMdRow(&b, row)
		}
	}
	if len(r.Notes) > 0 {
		b.WriteString("\n### notes\n\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "- %s\n", mdEscape(n))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// heading names the run by date and CPU.
func (r *Report) heading() string {
	h := "ringfire-bench"
	if !r.Started.IsZero() {
		h += " " + r.Started.Format("2006-01-02")
	}
	if r.Machine.CPU != "" {
		h += ", " + mdEscape(r.Machine.CPU)
	}
	return h
}

// writeMdRow writes cells as one markdown table row.
func writeMdRow(b *strings.Builder, cells []string) {
	b.WriteString("|")
	for _, c := range cells {
		b.WriteString(" " + mdEscape(c) + " |")
	}
	b.WriteString("\n")
}

// mdEscape keeps s from breaking a table or starting markup.
var mdEscape = strings.NewReplacer("|", `\|`, "\n", " ", "*", `\*`, "_", `\_`, "`", "\\`").Replace
