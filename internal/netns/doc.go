// Package netns gives tests their own small networks built from Linux network
// namespaces. Every namespace, veth pair and bridge is created by the test and
// removed by t.Cleanup; all links live inside the test namespaces, so the
// root namespace only ever sees the namespace files under /run/netns.
//
// Namespaces are named "rf<pid>-<k><role>", where k is a per-process counter.
// Before creating anything the package deletes "rf<pid>-*" namespaces that
// this process does not own: leftovers of an earlier, crashed process that had
// the same pid. Namespaces of other processes are never touched.
//
// # Locked-thread rules
//
// A network namespace is a property of an OS thread, not of a goroutine. The
// rules this package follows, and that callers must respect, are:
//
//   - Do runs fn in a fresh goroutine that is locked to its OS thread
//     (runtime.LockOSThread) and switched into the namespace with setns(2).
//     Afterwards the thread is switched back and unlocked. If switching back
//     fails, or fn calls runtime.Goexit, the goroutine exits still locked and
//     the Go runtime terminates that thread, so no thread in the wrong
//     namespace is ever reused.
//   - Only work done synchronously by fn's own goroutine happens in the
//     namespace. Goroutines started by fn run on other threads in the root
//     namespace. Use IP literals: name resolution and dual-stack dialing may
//     run on other goroutines.
//   - Sockets are bound to the namespace they were created in. A socket
//     created inside Do stays there and may be used, and closed, from any
//     goroutine afterwards.
//   - fn must not call t.FailNow, t.Fatal or t.Skip; return an error instead.
//   - Go locks a new goroutine to a thread, switches it into the namespace
//     for fn's whole life and never switches back; when fn returns the
//     goroutine exits still locked, which kills the thread. Use it for
//     long-running loops that create sockets later (reconnects).
//   - Threads created by the runtime while a goroutine is locked are cloned
//     from the runtime's template thread, so they start in the root namespace.
package netns
