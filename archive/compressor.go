package archive

import (
	"errors"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
)

// compressor compresses sealed segments on a goroutine of its own, so
// that the writer (and the recorder reading the ring behind it) never
// waits for zstd: a segment is sealed plain, readable at once, and
// replaced by its compressed form when that is done (".rfa.zst", its
// index again with the blocks, then the ".rfa" removed; readers follow,
// see openData). The writer's Close waits for what was queued; a crash
// leaves it plain, and the next writer's open queues it again.
//
// Who wakes whom: the writer's goroutine queues a segment (add) and
// signals cond; the compressor's goroutine waits on cond for work or
// stop. Retention, on the writer's goroutine, removes a segment the
// compressor holds by marking it doomed; the compressor removes it when
// its job ends.
type compressor struct {
	durable bool // sync what it writes (the writer's Options.Sync is not SyncNone)
	dir     string

	mu     sync.Mutex
	cond   *sync.Cond
	queue  []job
	busy   string // the base of the segment being compressed ("" none)
	doomed bool   // retention removed busy: the job removes it as it ends
	stop   bool
	done   chan struct{}

	compressed, errs atomic.Uint64
}

type job struct {
	s segment
	x *index // its plain index
}

func newCompressor(dir string, durable bool) *compressor {
	c := &compressor{dir: dir, durable: durable, done: make(chan struct{})}
	c.cond = sync.NewCond(&c.mu)
	go c.run()
	return c
}

// add queues the sealed plain segment s, of index x.
func (c *compressor) add(s segment, x *index) {
	c.mu.Lock()
	c.queue = append(c.queue, job{s, x})
	c.mu.Unlock()
	c.cond.Signal()
}

// remove takes segment base out of the compressor's hands before
// retention removes it; false when the compressor has it now (it is
// then removed when its job ends: retention counts it as removed).
func (c *compressor) remove(base string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, j := range c.queue {
		if j.s.base == base {
			c.queue = append(c.queue[:i], c.queue[i+1:]...)
			break
		}
	}
	if c.busy == base {
		c.doomed = true
		return false
	}
	return true
}

// close stops the compressor once it has compressed what was queued.
func (c *compressor) close() {
	c.mu.Lock()
	c.stop = true
	c.mu.Unlock()
	c.cond.Signal()
	<-c.done
}

func (c *compressor) run() {
	defer close(c.done)
	for {
		c.mu.Lock()
		for len(c.queue) == 0 && !c.stop {
			c.cond.Wait()
		}
		if len(c.queue) == 0 { // stopped, and nothing left
			c.mu.Unlock()
			return
		}
		j := c.queue[0]
		c.queue = c.queue[1:]
		c.busy, c.doomed = j.s.base, false
		c.mu.Unlock()

		err := c.compress(j)

		c.mu.Lock()
		doomed := c.doomed
		c.busy, c.doomed = "", false
		c.mu.Unlock()
		switch {
		case doomed:
			removeSegment(j.s)
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			c.errs.Add(1) // the segment stays plain, whole and indexed
		case err == nil:
			c.compressed.Add(1)
		}
	}
}

// compress writes segment j's compressed data, then its index with the
// blocks, then removes its plain data: at every step the segment reads
// whole (a crash between leaves both data files, and the next open's
// adoptSealed keeps the one its index describes).
func (c *compressor) compress(j job) error {
	blocks, err := compressSegment(j.s, j.x.size, c.durable)
	if err != nil {
		os.Remove(j.s.base + zstExt)
		return err
	}
	x := *j.x
	x.blockSize, x.blocks = blockSize, blocks
	if err := writeFileAtomic(j.s.base+idxExt, x.encode(), c.durable); err != nil {
		os.Remove(j.s.base + zstExt)
		return err
	}
	if err := os.Remove(j.s.base + dataExt); err != nil {
		return err
	}
	if c.durable {
		return syncDir(c.dir)
	}
	return nil
}
