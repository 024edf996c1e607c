//go:build !amd64

package shm

import "sync/atomic"

// markWriting stores SlotWriting into *p with a swap: a full barrier, so
// that on weakly ordered CPUs no later payload store is seen before it.
func markWriting(p *uint64) { atomic.SwapUint64(p, SlotWriting) }

// storeRelease stores v into *p after every earlier access (an atomic
// store, release on every architecture Go supports). See storerel_amd64.go.
func storeRelease(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
