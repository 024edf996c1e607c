package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/shm"
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

func TestWaitArgs(t *testing.T) {
	for _, c := range []struct {
		wait string
		want []string
	}{{"default", nil}, {"spin", []string{"--spin"}}, {"block", []string{"--wait", "block"}},
		{"adaptive", []string{"--wait", "adaptive"}}, {"yield", []string{"--wait", "yield"}}} {
		if got := WaitArgs(c.wait); !reflect.DeepEqual(got, c.want) {
			t.Errorf("WaitArgs(%q) = %q, want %q", c.wait, got, c.want)
		}
	}
}

// A pinger or echo waits on its ring as serve's sender does in the same
// mode (an adaptive one used to spin 2,000 polls first, which the sender
// stopped doing), and default's as the first table did.
func TestRoleWait(t *testing.T) {
	for _, m := range []replica.WaitMode{replica.WaitAdaptive, replica.WaitBlock, replica.WaitYield, replica.WaitSpin} {
		if got, want := roleWait(m.String()), replica.RingWait(m); got != want {
			t.Errorf("roleWait(%q) = %+v, want the sender's %+v", m, got, want)
		}
	}
	if got := roleWait("default"); got != shm.FutexWait(32) {
		t.Errorf("roleWait(default) = %+v, want FutexWait(32)", got)
	}
}

// Every ringfire process of a hop gets the transport's flags and the
// wait mode's.
func TestHopArgs(t *testing.T) {
	h := hop{src: netip.MustParseAddr("10.79.3.2"), dst: netip.MustParseAddr("10.79.3.1"), ifname: "veth1", dir: 1,
		ring: "/dev/shm/x/B", copy: "/dev/shm/x/B-mirror"}
	for _, c := range []struct {
		tr, wait      string
		serve, mirror string
	}{
		{"udp-unicast", "default",
			"rf serve /dev/shm/x/B --bind 10.79.3.2:7401 --iface 10.79.3.2 --udp 7603",
			"rf mirror 10.79.3.2:7401 /dev/shm/x/B-mirror --from oldest --iface 10.79.3.1 --reconnect-ms 50 --unicast"},
		{"udp-multicast", "spin",
			"rf serve /dev/shm/x/B --bind 10.79.3.2:7401 --iface 10.79.3.2 --multicast 239.255.7.2:7503 --spin",
			"rf mirror 10.79.3.2:7401 /dev/shm/x/B-mirror --from oldest --iface 10.79.3.1 --reconnect-ms 50 --spin"},
		{"xdp-unicast", "block",
			"rf serve /dev/shm/x/B --bind 10.79.3.2:7401 --iface 10.79.3.2 --udp 7603 --xdp veth1 --require-xdp --wait block",
			"rf mirror 10.79.3.2:7401 /dev/shm/x/B-mirror --from oldest --iface 10.79.3.1 --reconnect-ms 50 --unicast --xdp veth1 --require-xdp --wait block"},
	} {
		if got := strings.Join(serveArgs("rf", h, c.tr, c.wait), " "); got != c.serve {
			t.Errorf("%s %s serve:\n got %s\nwant %s", c.tr, c.wait, got, c.serve)
		}
		if got := strings.Join(mirrorArgs("rf", h, c.tr, c.wait), " "); got != c.mirror {
			t.Errorf("%s %s mirror:\n got %s\nwant %s", c.tr, c.wait, got, c.mirror)
		}
	}
}

func TestParseStatCPU(t *testing.T) {
	// A command name with a space and a parenthesis; utime 250, stime 50.
	stat := "4242 (ring fire) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 99 1000 10"
	got, err := parseStatCPU(stat)
	if err != nil || got != 3*time.Second {
		t.Fatalf("parseStatCPU = %v, %v; want 3s", got, err)
	}
	if _, err := parseStatCPU("4242 (short) S 1"); err == nil {
		t.Error("a short stat line parsed")
	}
	own, err := cpuTime(os.Getpid())
	if err != nil || own < 0 {
		t.Fatalf("cpuTime(self) = %v, %v", own, err)
	}
}

func TestTailBuffer(t *testing.T) {
	b := &tailBuffer{max: 8}
	b.Write([]byte("hello, "))
	b.Write([]byte("world"))
	if got := b.String(); got != "o, world" {
		t.Fatalf("tail %q, want the last 8 bytes %q", got, "o, world")
	}
}

func TestLastLines(t *testing.T) {
	if got := lastLines("a\nb\nc\nd\n", 2); got != "c | d" {
		t.Errorf("lastLines = %q, want %q", got, "c | d")
	}
	if got := lastLines("only", 6); got != "only" {
		t.Errorf("lastLines = %q, want %q", got, "only")
	}
}

// traceHops pairs the stamps of the processes by sequence and measures
// every leg, leaving out the warm-up and incomplete records: six
// processes, or four with one ringfire run per host.
func TestTraceHops(t *testing.T) {
	for name, chain := range map[string][]traceStage{"six": traceChain, "loop": loopChain} {
		t.Run(name, func(t *testing.T) { testTraceHops(t, chain) })
	}
}

func testTraceHops(t *testing.T, chain []traceStage) {
	dir := t.TempDir()
	files := map[string]*strings.Builder{}
	for i, st := range chain {
		b := files[st.file]
		if b == nil {
			b = new(strings.Builder)
			files[st.file] = b
		}
		for seq := 1; seq <= 3; seq++ {
			if seq == 3 && i == 5 {
				continue // record 3 never reached this stage
			}
			fmt.Fprintf(b, "%s %d %d\n", st.stage, seq, 1000*seq+10*i*seq)
		}
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name+"-1.trace"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hops, err := traceHops(dir, 1, chain)
	if err != nil {
		t.Fatal(err)
	}
	if len(hops) != len(chain)-1 || hops[0].From != "pinger push" || hops[len(hops)-1].To != "pinger read" {
		t.Fatalf("hops %+v", hops)
	}
	for _, h := range hops {
		if h.Lat.Samples != 1 || h.Lat.P50 < 0.019 || h.Lat.P50 > 0.021 { // only record 2: 20 ns (0.02 µs) a leg
			t.Errorf("%s → %s: %+v, want one sample of 20 ns", h.From, h.To, h.Lat)
		}
	}
}
