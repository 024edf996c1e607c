// Package shm is ringfire's shared-memory ring, byte-compatible with
// ringfire protocol v2, so C, Python and Rust readers attach to the rings it
// writes and it reads theirs.
//
// One process writes a ring file (usually in /dev/shm), or several do on a
// multi-producer ring (MpmcProducer); any number of processes read it
// without system calls on the hot path, each seeing every record
// (Consumer) or competing for them (MpmcQueueConsumer); a RingMultiplexer
// receives from several consumers at once. Records are
// fixed-size (Producer[T], Consumer[T]) or a fixed metadata record plus a
// variable-length blob in a byte arena (BlobProducer[M], BlobConsumer[M]).
// Writer, Reader and Ring are the byte-oriented layer underneath, used by
// replica to serve and mirror rings of any element type; MultiWriter and
// QueueReader are the same layer for multi-producer rings. A blackboard
// (BlackboardWriter[T], Blackboard[T], blackboard.go) is a second kind of
// file: the latest value per key, each slot under a seqlock.
//
// # Ring file layout (little-endian)
//
//	0       +--------------------------------------------------------------+
//	        | header, 128 bytes                                            |
//	        |  0 magic "RINGFIRE"   8 version=2   12 element_size (stride) |
//	        | 16 capacity  24 mask  32 write_seq  40 claim_seq             |
//	        | 48 flags  52 futex_word  56 waiting_consumers                |
//	        | 64 read_seq  72 schema_sig  80 arena_offset  88 arena_size   |
//	        | 96 registry_offset  100 registry_count  104 slots_offset     |
//	128     +--------------------------------------------------------------+
//	        | reader registry (WITH_REGISTRY), 64 bytes per reader:        |
//	        |  pid u32 | active u32 | cursor u64 | heartbeat u64 | name[32]|
//	slots   +--------------------------------------------------------------+
//	        | slot i = slots_offset + i*element_size:                      |
//	        |  seq u64 (0 empty, MAX writing, N holds N) | payload         |
//	        |  blob rings: payload = meta (rounded to 8) | descriptor:     |
//	        |  offset u64 | len u32 | flags u32                            |
//	arena   +--------------------------------------------------------------+
//	        | arena header, 64 bytes: capacity | mask | reserved (bytes)  |
//	        | arena data: blobs at offset & mask, 64-byte aligned          |
//	        +--------------------------------------------------------------+
//
// Fixed rings put the slots at round_up(128 + 64 × readers, 64); blob rings
// round the slots and the arena up to 128.
//
// # Protocol
//
// Message N lives in slot N & mask; the first message is 1. The writer swaps
// the slot's sequence to MAX, copies the payload, stores N, then stores
// write_seq = N and wakes futex sleepers only if waiting_consumers > 0. A
// reader wanting c loads the slot sequence: c means copy the payload and
// re-load, keeping the copy only if it still reads c; less than c (or MAX)
// means not yet; more than c means lapped: the reader jumps to the oldest
// retained record (write_seq − capacity + 1) and counts the skipped records
// in Lapped. On SPARSE rings (mirrors) a slot that still holds an older
// sequence once write_seq has passed it is a hole the reader skips.
//
// # Multi-producer rings (MODE_MPMC)
//
// Created with claim_seq = read_seq = 1 (as the reference does), flags
// MPMC | LATEST_WINS, no registry, slots at 128. A producer takes ticket t
// with a fetch-and-add on claim_seq, waits until t's slot holds the
// previous lap (t − capacity, 0 on the first lap) and swaps it to MAX with
// a CompareAndSwap, so producers one lap apart never interleave payloads;
// then it copies the payload, stores t, raises write_seq to t with an
// atomic max and wakes sleepers whenever waiting_consumers > 0 (even when
// write_seq did not move). Tickets complete out of order, so write_seq is
// the highest completed ticket, not a prefix: a dead producer's ticket
// never holds it back, and a reader wanting c ≤ write_seq whose slot still
// holds an older sequence (or MAX) knows c is in flight. Queue consumers
// take tickets with a CompareAndSwap of read_seq (read_seq < claim_seq),
// jumping past tickets a lap behind claim_seq in one CAS whose winner
// counts them dropped; each ticket thus goes to exactly one consumer, at
// most once. Broadcast consumers read MPMC rings as any other, in ticket
// order.
//
// Where the reference can hang or tear, this package bounds the wait
// instead (InFlightTimeout, 10 ms): a record in flight for longer (its
// producer died mid-write, or is descheduled) is skipped and counted in
// Dropped by whichever consumer waited on it; a slot whose previous lap
// was claimed but never written is taken over by the next lap's producer
// (CAS from whatever older value it holds); a slot left MAX is never
// taken over (its writer may be alive: two writers would tear), so that
// lap's producer drops its own record (ErrDropped) instead. The
// reference's queue consumer waits forever on a claimed ticket that is
// never written unless producers lap it; its broadcast consumer treats a
// MAX slot below write_seq as overwritten. An overwritten ticket is
// detected by the slot (a later sequence, or a torn copy) or by claim_seq
// passing ticket + capacity, and is never returned.
//
// # Waiting
//
// Blocking receives (Recv, RecvContext, All) poll with the consumer's
// WaitStrategy. FutexWait announces the sleeper in waiting_consumers,
// re-checks, then sleeps with futex_waitv (Linux ≥ 5.16) on the futex word
// of every ring it waits for (a RingMultiplexer: all its sources) and on a
// private word that the receive context's end bumps: cancellation wakes
// it at once. Without futex_waitv it sleeps on one ring's word, in slices
// of 200 µs when cancellable. A sleeping receive holds its thread in the
// kernel and no CPU; polling strategies check ctx.Done() between polls.
// ParkWait parks the receiving goroutine instead: one park hub goroutine
// per process sleeps in futex_waitv on the words of every parked receive
// (up to 127 at once, beyond that it polls every 50 µs) and wakes the
// receives whose words moved, so any number of blocked receives hold one
// OS thread, for a goroutine hand-off more per wake-up
// (BenchmarkPingPongPark against BenchmarkPingPongFutex, pingpong_test.go).
//
// On LOSSLESS_BACKPRESSURE rings registered readers publish their cursor
// after each copy and the writer never overwrites a record a live
// registered reader still wants (liveness: kill(pid, 0)).
//
// # Memory model
//
// Every shared word is 4- or 8-byte aligned and accessed with sync/atomic
// through pointers into the mapping (mapping_unsafe.go). Readers copy
// payloads with 64-bit atomic loads (ordered on weak CPUs, silent under the
// race detector); the writer copies with memmove between its two
// slot-sequence stores, which on amd64 are plain ordered stores in
// assembly (markWriting, storeRelease: total store order keeps marker,
// payload and sequence in order, and the store buffer absorbs the cache
// misses of a batch) and elsewhere a swap and an atomic store. write_seq,
// followed by the load of waiting_consumers, keeps its atomic store. The
// Go garbage collector never sees the mapping; every object fails with
// ErrClosed after Close instead of touching unmapped memory.
//
// A file cut under its mapping (truncated by another process) makes the
// next access to a lost page raise SIGBUS, which would kill the process.
// A goroutine that touches rings defers Recover(Guard(), &err) at its top
// (fault.go): the fault then panics in that goroutine only
// (runtime/debug.SetPanicOnFault) and becomes a *FaultError wrapping
// ErrTruncated that names the file. Nothing is checked per access.
//
// Choices where compat.md is silent: unknown flag bits are refused; a
// multi-producer ring cannot be lossless, sparse or a blob ring; every
// multi-producer holds a shared flock (the creator downgrades its
// exclusive one), and joins a ring whose creator holds an exclusive one
// (the reference's) without a lock; the
// reader's default start mode is StartLatest; holes of sparse rings and
// overwritten blobs count in Lapped; offset checkpoints commit the last
// returned sequence.
package shm
