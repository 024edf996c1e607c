package main

import (
	"fmt"
	"strings"

	"github.com/ringfire/ringfire/replica"
)

// lineJSON is one line of a mirror of two lines in the /mirrors document
// (replica.LineStats, as the mirror's STATUS reported it).
type lineJSON struct {
	Line      string   `json:"line"` // A or B
	Transport string   `json:"transport"`
	Up        bool     `json:"up"`
	Received  uint64   `json:"received"`
	First     uint64   `json:"first"`
	Late      uint64   `json:"late"`
	LateBy    []uint64 `json:"late_by"` // Late by how much: < 10 µs, < 100 µs, < 1 ms, < 10 ms, later
	Lost      uint64   `json:"lost"`
	Downs     uint64   `json:"downs"`
	Ups       uint64   `json:"ups"`
	Errors    uint64   `json:"errors"`
}

// linesJSON are a mirror's lines, none if it reported none.
func linesJSON(ls [2]replica.LineStats) []lineJSON {
	if ls[0].Name == "" {
		return nil
	}
	out := make([]lineJSON, 0, len(ls))
	for i, l := range ls {
		out = append(out, lineJSON{Line: string(rune('A' + i)), Transport: l.Name, Up: l.Up, Received: l.Received,
			First: l.First, Late: l.Late, LateBy: l.LateBy[:], Lost: l.Lost, Downs: l.Downs, Ups: l.Ups, Errors: l.Errors})
	}
	return out
}

// linesCell is the table's LINES cell: per line its name, transport,
// up or down, and first/late/lost ("-": one line).
func linesCell(ls []lineJSON) string {
	if len(ls) == 0 {
		return "-"
	}
	cells := make([]string, 0, len(ls))
	for _, l := range ls {
		state := "down"
		if l.Up {
			state = "up"
		}
		cells = append(cells, fmt.Sprintf("%s:%s %s %d/%d/%d", l.Line, l.Transport, state, l.First, l.Late, l.Lost))
	}
	return strings.Join(cells, "  ")
}
