package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/ringfire/ringfire/replica"
)

// repairFlags are serve's repair budget: token buckets of bytes for the
// repair (NAK answers, catch-up) sent to all mirrors and to one address.
type repairFlags struct {
	rate, burst, addrRate, addrBurst byteFlag
}

// minRepairBurst is one frame: a smaller bucket could never pay for it.
const minRepairBurst = 64 << 10

func (r *repairFlags) add(fs *flag.FlagSet) {
	r.rate = byteFlag{n: replica.DefaultRepairRate, off: true}
	r.addrRate = byteFlag{n: replica.DefaultRepairAddrRate, off: true}
	fs.Var(&r.rate, "repair-rate", "send at most `BYTES` a second of repair (NAK answers, catch-up) to all mirrors together (K, M, G suffixes; off: no limit)")
	fs.Var(&r.burst, "repair-burst", "let repair run up to `BYTES` ahead of --repair-rate (0: one full catch-up of the ring)")
	fs.Var(&r.addrRate, "repair-addr-rate", "send at most `BYTES` a second of repair to one address, an IPv6 /64 (off: no limit)")
	fs.Var(&r.addrBurst, "repair-addr-burst", "let one address's repair run up to `BYTES` ahead of --repair-addr-rate (0: one full catch-up of the ring)")
}

// apply checks the budget and sets it in cfg.
func (r *repairFlags) apply(cfg *replica.ServerConfig) error {
	for _, v := range []struct {
		name string
		f    byteFlag
	}{{"--repair-rate", r.rate}, {"--repair-addr-rate", r.addrRate}} {
		if v.f.n == 0 {
			return usagef("%s 0: want bytes a second, such as 24M, or off for no limit", v.name)
		}
	}
	for _, v := range []struct {
		name string
		f    byteFlag
	}{{"--repair-burst", r.burst}, {"--repair-addr-burst", r.addrBurst}} {
		if v.f.n != 0 && v.f.n < minRepairBurst {
			return usagef("%s %s: want 0 (one full catch-up of the ring) or at least 64K, one frame", v.name, v.f.String())
		}
	}
	cfg.RepairRate, cfg.RepairBurst = r.rate.n, r.burst.n
	cfg.RepairAddrRate, cfg.RepairAddrBurst = r.addrRate.n, r.addrBurst.n
	return nil
}

// byteFlag is a count of bytes (or bytes a second) with an optional K, M,
// G or T suffix (powers of 1024); with off set, "off" too (n = -1: no
// limit).
type byteFlag struct {
	n   int64
	off bool
}

func (b *byteFlag) String() string {
	if b == nil {
		return ""
	}
	if b.n < 0 {
		return "off"
	}
	return formatSize(b.n)
}

func (b *byteFlag) Set(s string) error {
	if b.off && strings.EqualFold(strings.TrimSpace(s), "off") {
		b.n = -1
		return nil
	}
	n, err := parseSize(s)
	if err != nil {
		if b.off {
			return fmt.Errorf("%w, or off", err)
		}
		return err
	}
	b.n = n
	return nil
}
