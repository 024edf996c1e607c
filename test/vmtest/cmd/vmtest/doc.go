// Command vmtest runs the kernel-facing test packages inside a QEMU guest:
// Debian 12's 6.1 kernel, two virtio-net NICs joined to each other, each
// in its own network namespace. See test/vmtest/README.md.
//
// On the host it builds the test binaries (CGO_ENABLED=0, static), fetches
// the kernel package into a cache (apt-get download, dpkg-deb -x), writes
// an initramfs holding this program as /init, busybox, the host's ip, tc,
// ss, bridge and ethtool with their libraries, the modules and the test
// binaries, boots it and returns the guest's verdict. In the guest (PID 1)
// the same program loads the modules, places the NICs and runs the tests.
package main
