package archive

import (
	"encoding/binary"
	"os"
	"testing"
)

// The market feed is what it says: a few hundred symbols, prices that
// move a few ticks at a time, round lots, times that only increase.
func TestMarketFeed(t *testing.T) {
	f := newMarketFeed()
	rec := make([]byte, Record)
	last := map[string]int64{}
	var prev int64
	for seq := uint64(1); seq <= 100_000; seq++ {
		ts := f.next(rec, seq)
		le := binary.LittleEndian
		sym, price, size := string(rec[8:16]), int64(le.Uint64(rec[16:])), le.Uint32(rec[40:])
		switch {
		case ts <= prev || int64(le.Uint64(rec[0:])) != ts:
			t.Fatalf("record %d: time %d after %d (stored %d)", seq, ts, prev, le.Uint64(rec[0:]))
		case size == 0 || size%100 != 0:
			t.Fatalf("record %d: size %d, not a round lot", seq, size)
		case price <= 0:
			t.Fatalf("record %d: price %d", seq, price)
		}
		if p, ok := last[sym]; ok && (price-p > 2 || p-price > 2) {
			t.Fatalf("record %d: %q moved from %d to %d", seq, sym, p, price)
		}
		last[sym], prev = price, ts
	}
	if len(last) < 50 || len(last) > marketSymbols {
		t.Errorf("%d symbols quoted, want a few hundred at most %d", len(last), marketSymbols)
	}
}

// A feed makes the same records each time it is made.
func TestFeedsRepeat(t *testing.T) {
	for _, mk := range []func() feed{func() feed { return synthFeed{} }, func() feed { return newMarketFeed() }} {
		a, b := mk(), mk()
		ra, rb := make([]byte, Record), make([]byte, Record)
		for seq := uint64(1); seq <= 1000; seq++ {
			if ta, tb := a.next(ra, seq), b.next(rb, seq); ta != tb || string(ra) != string(rb) {
				t.Fatalf("%s: record %d differs", a.name(), seq)
			}
		}
	}
}

func TestParseDD(t *testing.T) {
	n, s, err := parseDD("1024+0 records in\n1024+0 records out\n1073741824 bytes (1.1 GB, 1.0 GiB) copied, 0.641362 s, 1.7 GB/s\n")
	if err != nil || n != 1<<30 || s != 0.641362 {
		t.Errorf("parseDD = %d, %v, %v", n, s, err)
	}
	if _, _, err := parseDD("dd: failed to open 'x': Permission denied"); err == nil {
		t.Error("a failure parsed")
	}
}

// The ring is 64 MiB of records, at most 2^20 of them, a power of two.
func TestCapacity(t *testing.T) {
	for size, want := range map[int]uint64{64: 1 << 20, 32: 1 << 20, 4096: 16384, 1000: 65536, 1 << 20: 64} {
		if got := capacity(size); got != want {
			t.Errorf("capacity(%d) = %d, want %d", size, got, want)
		}
	}
}

// /dev/shm is tmpfs and is named so; the root is a mount point with a
// device.
func TestFilesystems(t *testing.T) {
	if name, _, err := fsType("/dev/shm"); err != nil || name != "tmpfs" {
		t.Errorf("/dev/shm: %q, %v", name, err)
	}
	if src := mountSource("/"); src == "" {
		t.Error("no device mounted at /")
	}
	if !under("/var/tmp/x", "/var/tmp") || under("/var/tmpx", "/var/tmp") || !under("/a", "/") {
		t.Error("under")
	}
	b := &Bench{cfg: Config{DiskDir: "/dev/shm"}}
	if err := b.diskReady(0); err == nil {
		t.Error("tmpfs taken for a disk")
	}
	if _, err := os.Stat("/var/tmp"); err == nil {
		if name, _, _ := fsType("/var/tmp"); name != "tmpfs" {
			b.cfg.DiskDir = "/var/tmp"
			if err := b.diskReady(1 << 20); err != nil {
				t.Errorf("/var/tmp (%s): %v", name, err)
			}
		}
	}
}
