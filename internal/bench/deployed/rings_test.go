package deployed

import (
	"net/netip"
	"strings"
	"testing"
)

// A run file names every ring with the keys of serve and mirror (the
// AF_XDP ones unless over kernel UDP), the wait mode's key unless
// "default", or a loop-X wait name's loop key at the top.
func TestRunFile(t *testing.T) {
	h := ringsHop{prefix: "A", dir: "/dev/shm/x", src: netip.MustParseAddr("10.77.1.1"), dst: netip.MustParseAddr("10.77.1.2"),
		ifname: "veth0", ports: portsA, wait: "yield", n: 2}
	got := runFile(netip.MustParseAddrPort("10.77.1.1:9470"), []ringsHop{h}, nil)
	for _, want := range []string{`metrics = "10.77.1.1:9470"`,
		"[[serve]]\nring = \"/dev/shm/x/A01\"\nbind = \"10.77.1.1:7800\"\nudp = 7850\niface = \"10.77.1.1\"\nxdp = \"veth0\"\nrequire-xdp = true\nwait = \"yield\"\n",
		"ring = \"/dev/shm/x/A02\"\nbind = \"10.77.1.1:7801\"\nudp = 7851\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("serving file lacks %q:\n%s", want, got)
		}
	}
	h.wait = "default"
	got = runFile(netip.MustParseAddrPort("10.77.1.2:9470"), nil, []ringsHop{h})
	want := "[[mirror]]\nsource = \"10.77.1.1:7801\"\nring = \"/dev/shm/x/A02-mirror\"\nfrom = \"oldest\"\nunicast = true\n" +
		"iface = \"10.77.1.2\"\nxdp = \"veth0\"\nrequire-xdp = true\nreconnect-ms = 50\n"
	if !strings.Contains(got, want) || strings.Contains(got, "wait") || strings.Count(got, "[[mirror]]") != 2 {
		t.Errorf("mirroring file:\n%s\nwant two mirrors, no wait key, and\n%s", got, want)
	}
	h.wait = "loop-yield"
	got = runFile(netip.MustParseAddrPort("10.77.1.2:9470"), []ringsHop{h}, []ringsHop{h})
	if !strings.Contains(got, "metrics = \"10.77.1.2:9470\"\nloop = \"yield\"\nloops = 1\n") || strings.Contains(got, "wait") {
		t.Errorf("a loop's file:\n%s\nwant the loop keys at the top, no wait key", got)
	}
	h.wait = "loop2-spin"
	if got = runFile(netip.MustParseAddrPort("10.77.1.2:9470"), []ringsHop{h}, nil); !strings.Contains(got, "loop = \"spin\"\nloops = 2\n") {
		t.Errorf("two loops' file:\n%s", got)
	}
	h.udp = true // kernel UDP: the same tables without the AF_XDP keys
	got = runFile(netip.MustParseAddrPort("10.77.1.2:9470"), []ringsHop{h}, []ringsHop{h})
	if strings.Contains(got, "xdp") || !strings.Contains(got, "iface = \"10.77.1.2\"\nreconnect-ms = 50\n") ||
		!strings.Contains(got, "udp = 7850\niface = \"10.77.1.1\"\n\n") {
		t.Errorf("a kernel UDP file:\n%s\nwant no AF_XDP key", got)
	}
}

func TestRingsLoadCapacity(t *testing.T) {
	for n, want := range map[int]uint64{1: 1 << 20, 2: 1 << 19, 3: 1 << 18, 4: 1 << 18, 16: 1 << 16, 50: 1 << 14} {
		if got := ringsLoadCapacity(n); got != want {
			t.Errorf("%d rings: capacity %d, want %d", n, got, want)
		}
	}
}

func TestParseMetrics(t *testing.T) {
	m := parseMetrics("# HELP x y\n# TYPE x counter\n" + `ringfire_local_mirror_naks_total{ring="L01-mirror"} 3` + "\n" +
		`ringfire_local_mirror_naks_total{ring="L02-mirror"} 4` + "\nringfire_up 1\n")
	if n, err := sumSeries(m, "ringfire_local_mirror_naks_total", []string{"L01-mirror", "L02-mirror"}); n != 7 || err != nil {
		t.Errorf("sum %d, %v; want 7", n, err)
	}
	if _, err := sumSeries(m, "ringfire_local_mirror_naks_total", []string{"L03-mirror"}); err == nil {
		t.Error("a missing ring summed")
	}
}
