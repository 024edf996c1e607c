package deployed

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

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
