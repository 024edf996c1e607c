package main

import "time"

// plan is what the host tells the guest's init, as /vmtest/plan.json in
// the initramfs.
type plan struct {
	// Token makes the console markers unique to this boot: test output
	// cannot fake them.
	Token    string
	Modules  []string // module files to load, in order
	NICs     []nic    // the virtio-net NICs and where they go
	Packages []guestPkg
	Env      []string // extra environment for the tests
	Shell    bool     // run a shell on the console after the tests
}

// nic is one virtio-net NIC of the guest, found by its MAC address, moved
// into network namespace NS and given address Addr (CIDR).
type nic struct {
	MAC  string
	NS   string
	Addr string
	// Env names the variables telling the tests about it: <Env>_NS,
	// <Env>_IF and <Env>_ADDR (VMTEST_A_NS=vmA, VMTEST_A_IF=eth0, ...).
	Env string
}

// guestPkg is one test binary to run in the guest.
type guestPkg struct {
	ImportPath string
	Binary     string        // path in the guest
	Dir        string        // working directory (the package's, with its testdata)
	Args       []string      // -test.* flags
	Timeout    time.Duration // the guest kills the binary after this
}

// Console markers (followed by the token): the guest prints them, the host
// parses them.
const (
	markStart = "VMTEST_START"
	markPkg   = "VMTEST_PKG"
	markRC    = "VMTEST_RC"
)

const planPath = "/vmtest/plan.json"
