package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

// guestFilters narrow packages whose whole suite does not suit the guest,
// by -test.run and -test.skip (-pkg-run and -pkg-skip override them). The
// guest's CPU is QEMU's TCG, several times slower than the host's, so
// tests that budget wall-clock time for work fail there, and the replica
// suite alone outran a 6-minute -test.timeout with half of its 64 tests
// done. Measured in test/vmtest/README.md.
var guestFilters = map[string]filter{
	// Its producer pushes for a fixed 12 s; under TCG it reaches 74 k
	// records, short of the 101 k one reader waits for.
	"shm": {skip: "^TestMultiProcessLapping$"},
	// The tests that exercise the kernel: every datagram transport (kernel
	// UDP, AF_XDP native and generic, AF_PACKET) on veth, loss repaired
	// through the XDP fault map and by NAKs, reordering, multicast on a
	// bridge, datagrams near the MTU. The
	// protocol's pure logic (frames, sequencer) runs on the host; the
	// lapping and full-speed tests time themselves against the host's CPU.
	"replica": {run: "^(" + strings.Join([]string{
		"TestXDPCarriesDatagrams", "TestFaultMapLossRepaired", "TestAFPacketCarriesDatagrams",
		"TestRecoveryOfDroppedDatagrams", "TestLastDatagramLossRecoveredByHeartbeat",
		"TestMulticastHistoryOverTCPThenLive", "TestMulticastLAN",
		"TestUDPSendBatchTwoDestinations", "TestUDPRecvBatchWait", "TestBadInputUDP",
		"TestReorderedDatagramsWrittenInOrder", "TestMulticastLiveDelivery",
		"TestBlobRingOverMulticastLargePayloads", "TestUnicastDuplicatesDropped", "TestLargeNakAnsweredOnce",
	}, "|") + ")$"},
}

type filter struct{ run, skip string }

// testPkg is a built test binary and how the guest runs it.
type testPkg struct {
	dir    string // host package directory
	binary string // host test binary
	guest  guestPkg
}

// buildTests builds the test binary of every listed package present in the
// tree (static, stripped of DWARF) into work/tests.
func buildTests(ctx context.Context, root, work string, o options) ([]testPkg, error) {
	var pkgs []testPkg
	for _, p := range strings.FieldsFunc(o.pkgs, func(r rune) bool { return r == ' ' || r == ',' || r == '\n' || r == '\t' }) {
		rel := strings.TrimPrefix(path.Clean(p), "./")
		dir := filepath.Join(root, rel)
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			logf("vmtest: skipping %s: no such package in this tree", p)
			continue
		}
		if tests, _ := filepath.Glob(filepath.Join(dir, "*_test.go")); len(tests) == 0 {
			logf("vmtest: skipping %s: no test files", p)
			continue
		}
		name := strings.ReplaceAll(rel, "/", "_")
		args := []string{"-test.timeout=" + o.testTimeout.String(), "-test.count=1"}
		if o.verbose {
			args = append(args, "-test.v")
		}
		f := guestFilters[rel]
		if o.all {
			f = filter{}
		}
		if o.run != "" {
			f.run = o.run
		}
		if re, ok := o.pkgRun[rel]; ok {
			f.run = re
		}
		if re, ok := o.pkgSkip[rel]; ok {
			f.skip = re
		}
		if f.run != "" {
			args = append(args, "-test.run="+f.run)
		}
		if f.skip != "" {
			args = append(args, "-test.skip="+f.skip)
		}
		args = append(args, strings.Fields(o.testFlags)...)
		pkgs = append(pkgs, testPkg{
			dir:    dir,
			binary: filepath.Join(work, "tests", name+".test"),
			guest: guestPkg{ImportPath: rel, Binary: "/tests/" + name + ".test", Dir: "/src/" + rel,
				Args: args, Timeout: o.testTimeout},
		})
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("vmtest: no test packages among %q", o.pkgs)
	}
	for _, tp := range pkgs {
		logf("vmtest: go test -c ./%s", tp.guest.ImportPath)
		if err := goBuild(ctx, root, "test", "-c", "-tags", "vmtest", "-o", tp.binary, "-ldflags=-w", "./"+tp.guest.ImportPath); err != nil {
			return nil, err
		}
	}
	return pkgs, nil
}

// goBuild runs a go build or go test -c with cgo off: the guest has no
// C library to link against.
func goBuild(ctx context.Context, root string, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stderr, os.Stderr
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("vmtest: go %s: %w", strings.Join(args, " "), err)
	}
	return nil
}
