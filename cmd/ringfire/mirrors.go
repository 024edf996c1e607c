package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ringfire/ringfire/internal/cli"
)

const mirrorsHelp = `Mirrors prints the table of mirrors of a ringfire serve started with
--metrics ADDR: for each mirror its name, address, transport, the last
sequence it applied (readable in its ring), its lag behind the source ring in
records and in milliseconds (the age of the oldest record it has not
applied), the NAKs it sent and the records it lost to gaps, and for a mirror
of two lines (mirror --iface-b) each line's transport, whether it delivers
(up) or went dark (down), and the frames it brought first, brought late
(after the other line) and lost. Mirrors that do not report telemetry are
listed with "-"; mirrors that left are kept a while.
ADDR without a host means 127.0.0.1. A ringfire run process serves several
rings: RING names the one (its name key, else its file's base name).`

func runMirrors(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("mirrors", "ADDR [RING] [flags]", mirrorsHelp, stderr)
	var asJSON bool
	var timeout time.Duration
	fs.BoolVar(&asJSON, "json", false, "print the table as JSON")
	fs.DurationVar(&timeout, "timeout", 5*time.Second, "give up after this `duration`")
	pos, err := cli.ParseArgs("ringfire", fs, args, 1, "ADDR", "RING")
	if err != nil {
		return helpOr(err)
	}
	addr, err := metricsAddr(strings.TrimPrefix(pos[0], "http://"))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/mirrors"+ringQuery(pos), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", addr, resp.Status, strings.TrimSpace(string(body)))
	}
	var t mirrorTable
	if err := json.Unmarshal(body, &t); err != nil {
		return fmt.Errorf("%s: not a mirror table: %w", addr, err)
	}
	if asJSON {
		_, err := stdout.Write(body)
		return err
	}
	printMirrorTable(stdout, t)
	return nil
}

// ringQuery is the /mirrors query naming RING, if given.
func ringQuery(pos []string) string {
	if len(pos) < 2 {
		return ""
	}
	return "?" + url.Values{"ring": {pos[1]}}.Encode()
}

// printMirrorTable prints the table, one mirror a line.
func printMirrorTable(w io.Writer, t mirrorTable) {
	fmt.Fprintf(w, "write_seq %d, capacity %d, %d mirrors\n", t.WriteSeq, t.Capacity, len(t.Mirrors))
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "MIRROR\tADDRESS\tTRANSPORT\tAPPLIED\tLAG\tLAG MS\tNAKS\tGAPS\tSTATE\tLINES (FIRST/LATE/LOST)")
	for _, m := range t.Mirrors {
		name := m.Mirror
		if name == "" {
			name = "-"
		}
		state := "connected"
		switch {
		case !m.Connected:
			state = "left"
		case !m.Telemetry:
			state = "no telemetry"
		case !m.Reported:
			state = "no report yet"
		}
		if m.Lagging {
			state += ", lagging"
		}
		figures := "-\t-\t-\t-\t-"
		if m.Reported {
			figures = fmt.Sprintf("%d\t%d\t%.0f\t%d\t%d", m.Applied, m.LagRecords, m.LagMS, m.Naks, m.Gaps)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, m.Addr, m.Transport, figures, state, linesCell(m.Lines))
	}
	tw.Flush()
}
