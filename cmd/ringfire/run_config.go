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
func checkPorts(c *supervisor.Config) error {
	binds := map[string]int{}
	ports := map[string]int{}
	socks := map[string]int{}
	for i := range c.Tables {
		t := &c.Tables[i]
		if t.Kind != supervisor.Serve {
			continue
		}
		bind, bindLine := "0.0.0.0:7400", t.Line // serve's default
		for _, kv := range t.Keys {
			var port string
			switch kv.Key {
			case "bind":
				bind, bindLine = kv.Text, kv.Line
			case "unix":
				if at, dup := socks[kv.Text]; dup {
					return t.Errorf(kv.Line, kv.Key, "%s is another [[serve]]'s socket already (line %d): each served ring needs its own", kv.Text, at)
				}
				socks[kv.Text] = kv.Line
			case "udp":
				port = kv.Text
			case "multicast":
				if j := strings.LastIndexByte(kv.Text, ':'); j >= 0 {
					port = kv.Text[j+1:]
				}
			}
			if port == "" || port == "0" {
				continue
			}
			if at, dup := ports[port]; dup {
				return t.Errorf(kv.Line, kv.Key, "UDP port %s is another [[serve]]'s already (line %d): each served ring needs its own", port, at)
			}
			ports[port] = kv.Line
		}
		if at, dup := binds[bind]; dup {
			return t.Errorf(bindLine, "bind", "%s is another [[serve]]'s already (line %d): each served ring needs its own TCP address", bind, at)
		}
		binds[bind] = bindLine
	}
	return nil
}
