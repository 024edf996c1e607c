// Package vmtest holds the tests that only make sense inside the vmtest
// guest (test/vmtest/cmd/vmtest; see README.md): AF_XDP in native mode on
// the guest's virtio-net NICs, and replication across them under netem
// delay, jitter, loss and reordering. The guest's init sets VMTEST_GUEST=1
// and places the two NICs, which a QEMU hub joins, in network namespaces
// named by VMTEST_A_NS and VMTEST_B_NS; elsewhere the tests skip.
package vmtest
