package deployed

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"time"

	"github.com/ringfire/ringfire/internal/bench/proc"
	"github.com/ringfire/ringfire/internal/netns"
)

// The lines section's networks. Direct: line A is veth0 of the deployed
// topology, line B its veth1 (both N1 → N2). Through delay lines: each
// line passes through a middle namespace of its own (MA, MB), where a
// forwarder process joins its two veths:
//
//	N1 vla ══ fa1  MA: forwarder A  fa2 ══ vra N2      10.90.0.0/24
//	N1 vlb ══ fb1  MB: forwarder B  fb2 ══ vrb N2      10.91.0.0/24
//
// The ends in N1 and N2 compute their checksums and segment in software
// (ethtool -K tx off tso off gso off): a forwarder passes frames as
// AF_PACKET reads them, and a partial checksum or a 64 KB TCP segment
// would not survive the copy.

// linesVia is one line through a middle namespace.
type linesVia struct {
	src, dst      netip.Addr // the line's address in N1 and N2
	srcIf, dstIf  string     // their interfaces
	midIn, midOut string     // the middle's: facing N1, facing N2
	mid           *netns.NS
	launcher      *proc.Launcher
	name          string // "A", "B"
}

// linesNet is the section's middle namespaces and lines, made at its
// first use and kept with the deployed topology.
type linesNet struct {
	mids *netns.Pair // MA (A) and MB (B); their own veth0 carries nothing
	a, b linesVia
}

// linesSubnets are the lines' subnets through the middles (fixed: the
// namespaces are the run's own).
var linesSubnets = [2][3]byte{{10, 90, 0}, {10, 91, 0}}

// linesNet makes (once) the middle namespaces and both lines through them.
func (b *Bench) linesNet(d *deployedNet) (*linesNet, error) {
	if b.lines != nil {
		return b.lines, nil
	}
	mids, err := b.owner.NewPair()
	if err != nil {
		return nil, err
	}
	ln := &linesNet{mids: mids}
	for i, v := range []*linesVia{&ln.a, &ln.b} {
		name := string(rune('A' + i))
		lo := strings.ToLower(name)
		s := linesSubnets[i]
		*v = linesVia{name: name, srcIf: "vl" + lo, dstIf: "vr" + lo, midIn: "f" + lo + "1", midOut: "f" + lo + "2",
			src: netip.AddrFrom4([4]byte{s[0], s[1], s[2], 1}), dst: netip.AddrFrom4([4]byte{s[0], s[1], s[2], 2})}
		v.mid = mids.A
		if i == 1 {
			v.mid = mids.B
		}
		if err := v.make(d); err != nil {
			return nil, fmt.Errorf("deployed: line %s: %w", name, err)
		}
		v.launcher = proc.NewLauncher(v.mid)
	}
	b.lines = ln
	return ln, nil
}

func (ln *linesNet) close() {
	for _, v := range []*linesVia{&ln.a, &ln.b} {
		if v.launcher != nil {
			v.launcher.Close()
		}
	}
}

// make creates the line's two veth pairs, addresses and offloads, and
// waits for the four ends to carry.
func (v *linesVia) make(d *deployedNet) error {
	n1, n2 := d.pair.A.Name, d.pair.B.Name
	cmds := [][]string{
		{"ip", "link", "add", v.srcIf, "netns", n1, "type", "veth", "peer", "name", v.midIn, "netns", v.mid.Name},
		{"ip", "link", "add", v.dstIf, "netns", n2, "type", "veth", "peer", "name", v.midOut, "netns", v.mid.Name},
		{"ip", "-n", n1, "addr", "add", v.src.String() + "/24", "dev", v.srcIf},
		{"ip", "-n", n2, "addr", "add", v.dst.String() + "/24", "dev", v.dstIf},
		{"ip", "netns", "exec", n1, "ethtool", "-K", v.srcIf, "tx", "off", "tso", "off", "gso", "off"},
		{"ip", "netns", "exec", n2, "ethtool", "-K", v.dstIf, "tx", "off", "tso", "off", "gso", "off"},
		{"ip", "-n", v.mid.Name, "link", "set", v.midIn, "up"},
		{"ip", "-n", v.mid.Name, "link", "set", v.midOut, "up"},
		{"ip", "-n", n1, "link", "set", v.srcIf, "up"},
		{"ip", "-n", n2, "link", "set", v.dstIf, "up"},
	}
	for _, c := range cmds {
		if err := command(c...); err != nil {
			return err
		}
	}
	for _, e := range [][2]string{{n1, v.srcIf}, {n2, v.dstIf}, {v.mid.Name, v.midIn}, {v.mid.Name, v.midOut}} {
		if err := carrier(e[0], e[1]); err != nil {
			return err
		}
	}
	return nil
}

// cmdWait bounds one ip or ethtool command.
const cmdWait = 30 * time.Second

func command(argv ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), cmdWait)
	defer cancel()
	if out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// carrierWait bounds the wait for a link's carrier.
const carrierWait = 5 * time.Second

// carrier waits (bounded) until ifname in namespace ns is up with carrier.
func carrier(ns, ifname string) error {
	deadline := time.Now().Add(carrierWait)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), cmdWait)
		out, err := exec.CommandContext(ctx, "ip", "-n", ns, "-o", "link", "show", "dev", ifname).CombinedOutput()
		cancel()
		if err == nil && strings.Contains(string(out), "LOWER_UP") && !strings.Contains(string(out), "qdisc noop") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("deployed: %s in %s has no carrier after %v: %s", ifname, ns, carrierWait, out)
		}
		time.Sleep(5 * time.Millisecond) // polling the link, bounded by the deadline
	}
}
