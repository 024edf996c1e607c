package shm

// The seqlock writer's two slot-sequence stores. On amd64 (total store
// order) both are plain MOVs: stores become visible in program order, so
// the marker is seen before the payload and the payload before the new
// sequence. Unlike atomic Swap and Store (XCHG, a full barrier each) they
// let the store buffer absorb the cache misses of consecutive slot writes
// instead of waiting for every one, which is what bounds a batch's rate.
// They are assembly functions so that the compiler cannot move other
// memory accesses across them. Neither gives StoreLoad ordering: the futex
// handshake (write_seq, then waiting_consumers) keeps its atomic Store.

// markWriting stores SlotWriting into *p, ordered before every later store.
//
//go:noescape
func markWriting(p *uint64)

// storeRelease stores v into *p, ordered after every earlier load and store.
//
//go:noescape
func storeRelease(p *uint64, v uint64)
