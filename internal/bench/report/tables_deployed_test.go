package report

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// deployedReport is a report of the deployed section alone: two
// transports in two wait modes and the datagram in two styles.
func deployedReport() *Report {
	cpu := func(roles []string, per float64) []ProcCPU {
		var cs []ProcCPU
		for i, r := range roles {
			cs = append(cs, ProcCPU{Role: r, Pid: 100 + i, Seconds: per * 2, PerSec: per})
		}
		return cs
	}
	r := &Report{}
	for _, d := range []struct {
		tr, wait string
		p50, p99 float64
		per      float64
	}{{"udp-unicast", "default", 120, 300, 0.2}, {"udp-unicast", "spin", 40, 90, 0.3},
		{"xdp-unicast", "default", 90, 150, 0.25}, {"xdp-unicast", "spin", 20, 45, 0.33}} {
		r.Deployed = append(r.Deployed, Deployed{Transport: d.tr, Wait: d.wait, Lat: pct(100000, d.p50, d.p99, 900),
			Measured: Duration(2 * time.Second), CPU: cpu(deployedRoles[:6], d.per)})
	}
	r.Deployed[0].Hiccups = Hiccups{Sleeps: 1900, Max: Duration(6100 * time.Microsecond), Over1ms: 1, Over5ms: 1}
	r.Deployed = append(r.Deployed, Deployed{Transport: "xdp-unicast", Wait: "loop-spin", Lat: pct(100000, 15, 35, 900),
		Measured: Duration(2 * time.Second), CPU: cpu([]string{"pinger", "echo", "run 1", "run 2"}, 0.6)})
	r.DeployedRelay = append(r.DeployedRelay, Deployed{Transport: "shm", Wait: "spin", Procs: 4, Lat: pct(100000, 4, 10, 300),
		Measured: Duration(time.Second), CPU: cpu([]string{"pinger", "relay 1", "relay 2", "relay 3"}, 0.45)})
	for _, d := range []struct {
		style    string
		p50, p99 float64
	}{{"netpoller", 10, 30}, {"spin", 5, 15}} {
		r.DeployedDatagram = append(r.DeployedDatagram, Deployed{Transport: "udp", Wait: d.style,
			Lat: pct(100000, d.p50, d.p99, 200), Measured: Duration(time.Second), CPU: cpu([]string{"pinger", "echo"}, 1)})
	}
	return r
}

// The deployed tables show the percentiles, the ratios to the datagram
// of the matching style and of AF_XDP to kernel UDP, and every process's
// CPU with their total.
func TestDeployedTables(t *testing.T) {
	var b bytes.Buffer
	if err := deployedReport().WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Log("\n" + out)
	for _, want := range []string{
		"deployed: ring to ring round trip", "deployed: datagram alone", "deployed: CPU per second",
		"p99.9", "netpoller", "12.00×", // udp default p50 120 ÷ netpoller 10
		"8.00×",          // udp spin p50 40 ÷ spin 5
		"0.75×", "0.50×", // xdp ÷ udp p50: default 90/120, spin 20/40
		"mirror B'", "1.20", "1.98", "2.00", // totals: 6 × 0.2, 6 × 0.33, datagram 2 × 1
		"loop-spin", "3.00×", // a loop's wait against its mode's datagram: 15 ÷ spin 5
		"run 2", "2.40", // the loop's four processes: 4 × 0.6
		"the hand-offs alone", "2.50×", "1.80", // relay p99 ÷ p50: 10 ÷ 4; CPU 4 × 0.45
		"hiccup", "6100", // the sleeping thread's longest oversleep, µs
	} {
		if !strings.Contains(out, want) {
			t.Errorf("tables lack %q", want)
		}
	}
	var md bytes.Buffer
	if err := deployedReport().WriteMarkdown(&md, ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "### deployed: CPU per second of measurement (cores)") {
		t.Errorf("markdown lacks the CPU table:\n%s", md.String())
	}
}

// The deployed figures survive a JSON round trip.
func TestDeployedJSON(t *testing.T) {
	in := deployedReport()
	var b bytes.Buffer
	if err := in.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var out Report
	if err := json.Unmarshal(b.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in.Deployed, out.Deployed) || !reflect.DeepEqual(in.DeployedDatagram, out.DeployedDatagram) {
		t.Fatalf("round trip changed the deployed figures:\n%+v\n%+v", in.Deployed, out.Deployed)
	}
}
