package main

import (
	"errors"
	"strings"
	"testing"
)

func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in the error; "" = success
	}{
		{nil, "missing command"},
		{[]string{"frob"}, "unknown command"},
		{[]string{"--help"}, ""},
		{[]string{"help", "attach"}, ""},
		{[]string{"probe"}, "missing IFACE"},
		{[]string{"probe", "a", "b"}, "unexpected argument"},
		{[]string{"attach", "veth0", "--mode", "fast"}, "--mode"},
		{[]string{"attach", "veth0", "--group", "239.1.1.1"}, "need a --port"},
		{[]string{"attach", "veth0", "--port", "0"}, "--port"},
		{[]string{"attach", "veth0", "--port", "1", "--group", "10.0.0.1"}, "multicast"},
		{[]string{"attach", "veth0", "--port", "1", "--addr", "::1"}, "IPv4"},
		{[]string{"stats", "veth0", "--count", "3"}, "--count needs --interval-ms"},
		{[]string{"stats", "veth0", "--interval-ms", "-1"}, "negative"},
		{[]string{"fault", "veth0", "--off", "--drop-every", "2"}, "give one of"},
		{[]string{"fault", "veth0", "--drop-every", "0"}, "--drop-every"},
		{[]string{"fault", "veth0", "--drop-ratio", "1.5"}, "--drop-ratio"},
		{[]string{"status", "--bogus"}, "bogus"},
	} {
		_, _, err := xdpctl(nil, tc.args...)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.args, err)
			}
			continue
		}
		var ue *usageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want a usage error with %q", tc.args, err, tc.want)
		}
		if exitCode(err, &strings.Builder{}) != 2 {
			t.Errorf("%q: exit code not 2", tc.args)
		}
	}
	for _, c := range commands {
		_, errOut, err := xdpctl(nil, c.Name, "--help")
		if err != nil || !strings.Contains(errOut, "usage: xdpctl "+c.Name) || !strings.Contains(errOut, "--netns") {
			t.Errorf("%s --help: %v, %q", c.Name, err, errOut)
		}
	}
}
