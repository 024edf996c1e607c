package report

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// pct builds percentiles from p50 upwards, the rest derived.
func pct(n int64, p50, p99, max float64) Percentiles {
	return Percentiles{Samples: n, Avg: p50 * 1.1, Min: p50 * 0.7, P50: p50, P75: p50 * 1.2,
		P90: p50 * 1.5, P99: p99, P999: p99 * 1.6, P9999: p99 * 2.5, Max: max}
}

// sampleReport is a realistic report of five transports.
func sampleReport() *Report {
	transports := []string{"tcp", "udp-multicast", "udp-unicast", "xdp-unicast", "xdp-multicast"}
	p50s := []float64{28.4, 22.1, 21.7, 9.85, 10.2}
	r := &Report{
		Machine: Machine{CPU: "AMD EPYC 7763 64-Core Processor", Cores: 16, Kernel: "6.8.0-45-generic",
			Go: "go1.26.0", Load: "0.12 0.30 0.25 1/412 9876", Network: "veth pair in a namespace"},
		Command: "ringfire bench --duration 5s --rates 100k,400k,1.6M",
		Started: time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC),
		Elapsed: Duration(3*time.Minute + 12*time.Second),
		Record:  64,
		Notes:   []string{"xdp runs in copy mode on veth", "rates are per producer"},
	}
	for i, t := range transports {
		r.PingPong = append(r.PingPong, Latency{Name: t, Lat: pct(200000, p50s[i], p50s[i]*3, 1234)})
		for _, rate := range []int{100000, 400000, 1600000} {
			s := Stress{Transport: t, Rate: rate, Duration: Duration(5 * time.Second),
				Pushed: uint64(rate) * 5, Delivered: uint64(rate) * 5, DeliveredPct: 100,
				Achieved: float64(rate) * 0.9997, Lat: pct(int64(rate)*5, p50s[i]*2, p50s[i]*9, 4000)}
			if rate == 1600000 && i < 3 {
				s.Delivered = s.Pushed - 123
				s.DeliveredPct = 99.9985
				s.NAKs, s.Retransmitted, s.Gaps, s.Disorder = 17, 123, 4, 2
			}
			r.Stress = append(r.Stress, s)
		}
		z := ZeroLoss{Transport: t, Rate: 400000, Achieved: 399880}
		if i >= 3 {
			z = ZeroLoss{Transport: t, Rate: 1600000, Achieved: 1599520, Capped: true}
		}
		r.ZeroLoss = append(r.ZeroLoss, z)
	}
	r.ZeroLoss[0].Rate, r.ZeroLoss[0].Achieved = 200000, 199950
	// Another wait: compared with kernel UDP in that wait, "-" where kernel
	// UDP has no rate in it.
	r.ZeroLoss = append(r.ZeroLoss, ZeroLoss{Transport: "udp-unicast", Wait: "yield", Rate: 800000, Achieved: 799000},
		ZeroLoss{Transport: "xdp-unicast", Wait: "yield", Rate: 3200000, Achieved: 3100000})
	r.Stages = []Latency{{Name: "push→send", Lat: pct(100000, 0.85, 2.4, 31)},
		{Name: "send→read", Lat: pct(100000, 12.5, 40, 310)}}
	for _, n := range []int{1, 4, 16} {
		f := Fanout{Transport: "xdp-multicast", Mirrors: n, PushNs: 85 + 4*float64(n), BaseNs: 85}
		for m := range n {
			f.PerMirror = append(f.PerMirror, pct(50000, 11+float64(m)*0.1, 35+float64(m), 400))
		}
		r.Fanout = append(r.Fanout, f)
	}
	r.SendCost = []SendCost{{Mirrors: 4, SendmmsgNs: 410, SendtoNs: 980}, {Mirrors: 16, SendmmsgNs: 350, SendtoNs: 1010}}
	return r
}

func TestWriteTable(t *testing.T) {
	var b bytes.Buffer
	if err := sampleReport().WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Log("\n" + out)
	for _, want := range []string{
		"AMD EPYC 7763 64-Core Processor", "3m12s", "64 bytes", "ringfire bench --duration 5s",
		"ping-pong round trip (µs)", "p99.99", "200,000",
		"stress:", "1.60 M", "99.999%", "100.00%",
		"zero-loss rate", "≥ 1.60 M", "vs udp-unicast", "vs udp-multicast", "4.00×", "0.50×",
		"stages: push to read", "push→send", "0.85",
		"fan-out", "11.0–12.5", "35.0–50.0", "+75.3%",
		"send cost", "2.39×", "2.89×",
		"notes", "- xdp runs in copy mode on veth",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q", want)
		}
	}
	wantRow(t, out, "xdp-unicast", "200,000", "10.8", "6.89", "9.85", "11.8", "14.8", "29.5", "47.3", "73.9", "1234")
	wantRow(t, out, "tcp", "1.60 M", "1.60 M", "99.999%", "2", "56.8", "255.6", "17", "123", "4")
	wantRow(t, out, "udp-unicast", "adaptive", "400 k", "400 k", "1.00×", "1.00×")
	wantRow(t, out, "xdp-unicast", "yield", "3.20 M", "3.10 M", "4.00×", "-")
	wantRow(t, out, "16", "350", "1010", "2.89×")
}

// wantRow fails unless some line of out starts with first and holds the
// cells in order.
func wantRow(t *testing.T, out, first string, cells ...string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(strings.Replace(line, first, "", 1))
		if strings.HasPrefix(strings.TrimSpace(line), first) && strings.Contains(strings.Join(f, " "), strings.Join(cells, " ")) {
			return
		}
	}
	t.Errorf("no row %q with %q", first, cells)
}

func TestWriteTableOmitsEmptySections(t *testing.T) {
	r := &Report{PingPong: []Latency{{Name: "tcp", Lat: pct(10, 20, 60, 100)}}}
	var b bytes.Buffer
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"machine", "stress", "zero-loss", "stages", "fan-out", "send cost", "notes"} {
		if strings.Contains(b.String(), absent) {
			t.Errorf("empty section %q written:\n%s", absent, b.String())
		}
	}
}

func TestWriteJSONRoundTrip(t *testing.T) {
	r := sampleReport()
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\n  \"machine\": {") {
		t.Errorf("not indented:\n%.200s", b.String())
	}
	var back Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*r, back) {
		t.Errorf("round trip differs:\n%+v\n%+v", *r, back)
	}
}

func TestWriteMarkdown(t *testing.T) {
	var b bytes.Buffer
	if err := sampleReport().WriteMarkdown(&b, "img/bench"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"# Benchmarks\n", "## Method\n", "## Machine\n", "## Ping-pong\n", "## Stress and zero-loss rate\n",
		"- **cpu**: AMD EPYC 7763", "```sh\nringfire bench --duration 5s",
		"](img/bench/latency.svg)", "](img/bench/throughput.svg)",
		"| transport | samples | avg |", "| --- | ---: |",
		"| xdp-multicast | adaptive | ≥ 1.60 M | 1.60 M |", "## Notes",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
}

func TestFormat(t *testing.T) {
	cases := []struct{ got, want string }{
		{fmtUS(4.564), "4.56"}, {fmtUS(12.34), "12.3"}, {fmtUS(1234.4), "1234"},
		{fmtUS(math.NaN()), dash}, {fmtUS(0), dash},
		{FormatSI(950), "950"}, {FormatSI(12345), "12.3 k"}, {FormatSI(250000), "250 k"}, {FormatSI(4.8e6), "4.80 M"},
		{fmtCount(1234567), "1,234,567"}, {fmtCount(12), "12"},
		{fmtPct(100), "100.00%"}, {fmtPct(99.9987), "99.999%"}, {fmtPct(99.99996), "99.99996%"}, {fmtPct(97.254), "97.25%"},
		{fmtDelta(90, 100), "-10.0%"}, {fmtRatio(3, 2), "1.50×"}, {fmtRange([]float64{3, math.NaN(), 5}), "3.00–5.00"},
	}
	for i, c := range cases {
		if c.got != c.want {
			t.Errorf("case %d: got %q, want %q", i, c.got, c.want)
		}
	}
}

// The machine's stalls, measured before a run, are in its table and JSON.
func TestStallReported(t *testing.T) {
	r := sampleReport()
	r.Machine.Stall = Stall{For: Duration(2 * time.Second), Max: Duration(24645 * time.Microsecond), Over20us: 800, Over1ms: 2, Over5ms: 1, Readings: 1}
	var b strings.Builder
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if want := "stalls   longest 24.645ms; 800 gaps over 20 µs (400/s), 2 over 1 ms, 1 over 5 ms in 2s"; !strings.Contains(b.String(), want) {
		t.Fatalf("table lacks %q:\n%s", want, b.String())
	}
	b.Reset()
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal([]byte(b.String()), &back); err != nil || back.Machine.Stall != r.Machine.Stall {
		t.Fatalf("JSON round trip of the stall: %+v, %v", back.Machine.Stall, err)
	}
}
