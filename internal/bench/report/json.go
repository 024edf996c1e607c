package report

import (
	"encoding/json"
	"fmt"
	"io"
)

// WriteJSON writes the report as indented JSON. encoding/json rejects
// NaN and infinities, so such figures must not reach the report.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// ReadJSON reads a report WriteJSON wrote (a committed bench.json, to
// render it again without measuring).
func ReadJSON(rd io.Reader) (*Report, error) {
	var r Report
	if err := json.NewDecoder(rd).Decode(&r); err != nil {
		return nil, fmt.Errorf("report: read JSON: %w", err)
	}
	return &r, nil
}
