package main

import (
	"strings"

	"github.com/ringfire/ringfire/internal/supervisor"
)

// loadRunConfig reads and parses CONFIG (supervisor.Parse), then checks
// what needs the flags of serve and mirror; its mistakes are usage errors.
func loadRunConfig(file string) (*supervisor.Config, error) {
	data, err := readConfigFile(file)
	if err != nil {
		return nil, err
	}
	c, err := supervisor.Parse(file, data)
	if err == nil {
		err = checkLoopKeys(c)
	}
	if err == nil {
		err = checkPorts(c)
	}
	if err != nil {
		return nil, &usageError{Err: err}
	}
	return c, nil
}

// checkLoopKeys refuses a table's own wait mode or CPU when every table
// runs on the loop.
func checkLoopKeys(c *supervisor.Config) error {
	if c.Loop == "" {
		return nil
	}
	for i := range c.Tables {
		t := &c.Tables[i]
		for _, kv := range t.Keys {
			if supervisor.OwnWaitKeys[kv.Key] {
				return t.Errorf(kv.Line, kv.Key, "every table runs on the loop (key loop at the top): its wait mode and loop-cpu apply")
			}
		}
	}
	return nil
}

// checkPorts refuses two [[serve]] tables on one TCP address, one Unix
// socket or one UDP port: the second could never start (the kernel
// refuses the address, an interface's AF_XDP transports steer by port).
// Line B's ports (multicast-b, any KEY-b of a port key) count as the
// table's own: a port of line B may be its line A's (another group), not
// another table's.
func checkPorts(c *supervisor.Config) error {
	binds := map[string]int{}
	ports := map[string]portUse{}
	socks := map[string]int{}
	for i := range c.Tables {
		t := &c.Tables[i]
		if t.Kind != supervisor.Serve {
			continue
		}
		bind, bindLine := "0.0.0.0:7400", t.Line // serve's default
		for _, kv := range t.Keys {
			switch kv.Key {
			case "bind":
				bind, bindLine = kv.Text, kv.Line
			case "unix":
				if at, dup := socks[kv.Text]; dup {
					return t.Errorf(kv.Line, kv.Key, "%s is another [[serve]]'s socket already (line %d): each served ring needs its own", kv.Text, at)
				}
				socks[kv.Text] = kv.Line
			}
			port := udpPortOf(kv.Key, kv.Text)
			if port == "" || port == "0" {
				continue
			}
			use := portUse{line: kv.Line, table: i, lineB: strings.HasSuffix(kv.Key, "-b")}
			if at, dup := ports[port]; dup && (at.table != i || !(at.lineB || use.lineB)) {
				return t.Errorf(kv.Line, kv.Key, "UDP port %s is another [[serve]]'s already (line %d): each served ring needs its own", port, at.line)
			}
			ports[port] = use
		}
		if at, dup := binds[bind]; dup {
			return t.Errorf(bindLine, "bind", "%s is another [[serve]]'s already (line %d): each served ring needs its own TCP address", bind, at)
		}
		binds[bind] = bindLine
	}
	return nil
}

// portUse is where checkPorts saw a UDP port: the line, the table, and
// whether a line B key gave it.
type portUse struct {
	line, table int
	lineB       bool
}

// udpPortOf is the UDP port a serve key's value takes ("" if none): udp
// and multicast, and their line B keys (multicast-b, udp-b).
func udpPortOf(key, text string) string {
	switch strings.TrimSuffix(key, "-b") {
	case "udp":
		return text
	case "multicast":
		if j := strings.LastIndexByte(text, ':'); j >= 0 {
			return text[j+1:]
		}
	}
	return ""
}
