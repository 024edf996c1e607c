package main

import "testing"

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "4096": 4096, "64k": 64 << 10, "3M": 3 << 20, "64G": 64 << 30, "2T": 2 << 40} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
		if got, _ := parseSize(formatSize(want)); got != want {
			t.Errorf("formatSize(%d) = %q does not parse back", want, formatSize(want))
		}
	}
	for _, in := range []string{"", "-1", "1.5G", "12X", "99999999T", "G"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) accepted", in)
		}
	}
}
