package main

import (
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ringfire/ringfire/internal/supervisor"
	"github.com/ringfire/ringfire/replica"
)

// serve's repair budget flags reach ServerConfig: the defaults, sizes
// with suffixes, off; and as keys of a [[serve]] table.
func TestRepairFlags(t *testing.T) {
	ring := filepath.Join(t.TempDir(), "ring")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, c := range []struct {
		args                         []string
		rate, burst, addr, addrBurst int64
	}{
		{nil, replica.DefaultRepairRate, 0, replica.DefaultRepairAddrRate, 0},
		{[]string{"--repair-rate", "48M", "--repair-burst", "1G", "--repair-addr-rate", "off", "--repair-addr-burst", "64K"}, 48 << 20, 1 << 30, -1, 64 << 10},
		{[]string{"--repair-rate", "off", "--repair-addr-rate", "1000000"}, -1, 0, 1000000, 0},
	} {
		fs := newTableFlags("serve")
		f := addServeFlags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		cfg, err := f.config(ring, log)
		if err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		if cfg.RepairRate != c.rate || cfg.RepairBurst != c.burst || cfg.RepairAddrRate != c.addr || cfg.RepairAddrBurst != c.addrBurst {
			t.Errorf("%q: rate %d burst %d, per address %d burst %d; want %d %d, %d %d", c.args,
				cfg.RepairRate, cfg.RepairBurst, cfg.RepairAddrRate, cfg.RepairAddrBurst, c.rate, c.burst, c.addr, c.addrBurst)
		}
	}
	conf, err := supervisor.Parse("r.toml", []byte("[[serve]]\nring = \"/dev/shm/a\"\nrepair-rate = \"96M\"\nrepair-addr-burst = 1048576\n"))
	if err != nil {
		t.Fatal(err)
	}
	u, err := serveUnitOf(&conf.Tables[0], log, "")
	if err != nil {
		t.Fatal(err)
	}
	if u.cfg.RepairRate != 96<<20 || u.cfg.RepairAddrBurst != 1<<20 {
		t.Errorf("run keys: rate %d, per-address burst %d; want %d, %d", u.cfg.RepairRate, u.cfg.RepairAddrBurst, 96<<20, 1<<20)
	}
}

// A repair flag out of bounds is a usage error naming it, from serve and
// from ringfire run (with the file's line and key).
func TestRepairFlagErrors(t *testing.T) {
	ring := filepath.Join(t.TempDir(), "ring")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--repair-rate", "0"}, "--repair-rate 0: want bytes a second"},
		{[]string{"--repair-addr-rate", "0"}, "--repair-addr-rate 0: want bytes a second"},
		{[]string{"--repair-burst", "1K"}, "--repair-burst 1K: want 0 (one full catch-up of the ring) or at least 64K"},
		{[]string{"--repair-addr-burst", "100"}, "--repair-addr-burst 100: want 0"},
		{[]string{"--repair-rate", "fast"}, `invalid value "fast" for flag -repair-rate`},
		{[]string{"--repair-burst", "off"}, `invalid value "off" for flag -repair-burst`},
		{[]string{"--repair-addr-rate", "-5"}, `invalid value "-5" for flag -repair-addr-rate`},
	} {
		_, _, err := runCmd(t, append([]string{"serve", ring}, c.args...)...)
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("serve %q: %v, want a usage error containing %q", c.args, err, c.want)
		}
	}
	file := filepath.Join(t.TempDir(), "r.toml")
	writeFile(t, file, "[[serve]]\nring = \"/dev/shm/a\"\nrepair-rate = 0\n")
	_, _, err := runCmd(t, "run", file)
	if want := `:3: key "repair-rate": --repair-rate 0`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("run: %v, want an error containing %q", err, want)
	}
}
