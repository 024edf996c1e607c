package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ringfire/ringfire/replica"
)

// The table shows per line its transport, up or down, first/late/lost;
// the JSON carries every counter; a mirror of one line shows "-" and no
// lines key.
func TestMirrorTableLines(t *testing.T) {
	var ls [2]replica.LineStats
	ls[0] = replica.LineStats{Name: "xdp", Up: true, Received: 9, First: 1200, Late: 30, LateBy: [replica.LateBuckets]uint64{30}}
	ls[1] = replica.LineStats{Name: "udp", First: 30, Late: 1170, Lost: 5, Downs: 1}
	tab := mirrorTable{Mirrors: []mirrorJSON{
		{Mirror: "two", Addr: "10.0.0.2:1", Connected: true, Telemetry: true, Reported: true, Lines: linesJSON(ls)},
		{Mirror: "one", Addr: "10.0.0.3:1", Connected: true, Telemetry: true, Reported: true, Lines: linesJSON([2]replica.LineStats{})},
	}}
	var b bytes.Buffer
	printMirrorTable(&b, tab)
	rows := strings.Split(b.String(), "\n")
	if !strings.Contains(rows[1], "LINES (FIRST/LATE/LOST)") ||
		!strings.HasSuffix(rows[2], "A:xdp up 1200/30/0  B:udp down 30/1170/5") || !strings.HasSuffix(rows[3], " -") {
		t.Fatalf("table:\n%s", b.String())
	}
	js, err := json.Marshal(tab)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Mirrors []map[string]any `json:"mirrors"`
	}
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	lines, _ := back.Mirrors[0]["lines"].([]any)
	if _, has := back.Mirrors[1]["lines"]; len(lines) != 2 || has {
		t.Fatalf("JSON %s", js)
	}
	a := lines[0].(map[string]any)
	if a["line"] != "A" || a["transport"] != "xdp" || a["up"] != true || a["first"] != 1200.0 || a["received"] != 9.0 ||
		len(a["late_by"].([]any)) != replica.LateBuckets || lines[1].(map[string]any)["lost"] != 5.0 {
		t.Fatalf("line A %v, B %v", a, lines[1])
	}
}
