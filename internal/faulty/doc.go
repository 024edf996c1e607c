// Package faulty wraps a replica datagram transport to inject loss,
// reordering and duplication on the receiving side, in process: a test
// host's kernel may lack netem (test/vmtest uses it in its guest), and
// tests need repeatable faults. Wrap wraps a transport, WrapPollable one a
// mirror's loop polls or sleeps on.
package faulty
