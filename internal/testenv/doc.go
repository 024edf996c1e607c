// Package testenv decides what a test does when this machine lacks
// something it needs (root, a command, a kernel feature): on a developer's
// machine it skips with the reason; under CI (the CI environment variable
// set, as CI=true) it fails, because CI runs on the machine the product
// targets, where every test can run and a skip would count as a pass. The
// same rule as cilium/ebpf's test helpers: Skipf, and CI to ask.
//
// Await and Until are the bounded waits for a condition that tests use
// instead of a sleep; Polled lists the descriptors some epoll instance of
// the process watches (tests check with it whether a socket is in Go's
// poller).
package testenv
