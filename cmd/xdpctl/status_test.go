package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/ringfire/ringfire/transport"
)

func statusJSON(t *testing.T, args ...string) []ifaceStatus {
	t.Helper()
	var sts []ifaceStatus
	if err := json.Unmarshal([]byte(must(t, nil, append([]string{"status", "--json"}, args...)...)), &sts); err != nil {
		t.Fatal(err)
	}
	return sts
}

// A ringfire transport opened after xdpctl attach uses the pinned program:
// its flow and socket appear in status with its pid; detach refuses while
// it runs; after it closes, the program stays attached with xdpctl's flow
// only.
func TestStatusWithTransport(t *testing.T) {
	p := pair(t)
	must(t, p.B, "attach", p.BIf, "--mode", "generic", "--port", "7700", "--group", "239.1.2.3")

	var x *transport.XDP
	err := p.B.Do(func() (err error) {
		x, err = transport.NewXDP(transport.XDPConfig{Iface: p.BIf, Bind: netip.AddrPortFrom(p.BAddr, 0), Socket: smallRings})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	own := x.LocalAddr().String()

	sts := statusJSON(t, "--netns", p.B.Name, p.BIf)
	if len(sts) != 1 {
		t.Fatalf("status: %+v", sts)
	}
	st := sts[0]
	want := []flowStatus{{Flow: own, Owner: os.Getpid(), Live: true}, {Flow: "239.1.2.3:7700", Live: true}}
	if fmt.Sprint(st.Flows) != fmt.Sprint(want) {
		t.Errorf("flows %+v, want %+v", st.Flows, want)
	}
	if len(st.Sockets) != 1 || st.Sockets[0].Queue != 0 || st.Sockets[0].PID != os.Getpid() || !st.Sockets[0].Live {
		t.Errorf("sockets %+v", st.Sockets)
	}
	if st.XDP == nil || st.XDP.Mode != "generic" || st.Fault == nil || st.Fault.DropEvery != 0 {
		t.Errorf("status %+v", st)
	}
	out := must(t, p.B, "status")
	for _, w := range []string{"generic mode, pinned at", own, fmt.Sprintf("pid %d", os.Getpid()), "239.1.2.3:7700        xdpctl attach", "queue 0", "live", "fault: off"} {
		if !strings.Contains(out, w) {
			t.Errorf("status lacks %q:\n%s", w, out)
		}
	}

	// The transport works through the pinned program.
	send(t, p.A, x.LocalAddr(), 3)
	if !waitFor(func() bool { st, _ := x.Stats(); return st.Program.Redirected >= 3 }) {
		st, _ := x.Stats()
		t.Errorf("datagrams not redirected: %+v", st.Program)
	}

	if _, _, err := xdpctl(p.B, "detach", p.BIf); !errors.Is(err, errInUse) || !strings.Contains(err.Error(), "this process (queue 0)") {
		t.Errorf("detach while in use: %v", err)
	}

	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	st = statusJSON(t, "--netns", p.B.Name, p.BIf)[0]
	if len(st.Flows) != 1 || st.Flows[0].Flow != "239.1.2.3:7700" || len(st.Sockets) != 0 {
		t.Errorf("after the transport closed: %+v", st)
	}
	if got := xdpOn(t, p.B, p.BIf); got != "xdpgeneric" {
		t.Errorf("after the transport closed: xdp %q", got)
	}
}

// detach --force detaches under a running transport.
func TestDetachForce(t *testing.T) {
	p := pair(t)
	must(t, p.B, "attach", p.BIf, "--mode", "generic")
	var x *transport.XDP
	if err := p.B.Do(func() (err error) {
		x, err = transport.NewXDP(transport.XDPConfig{Iface: p.BIf, Socket: smallRings})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	must(t, p.B, "detach", p.BIf, "--force")
	if got := xdpOn(t, p.B, p.BIf); got != "" {
		t.Errorf("after detach --force: xdp %q", got)
	}
	if err := x.Close(); err != nil {
		t.Errorf("transport Close after a forced detach: %v", err)
	}
}
