package shm

import (
	"context"
	"fmt"
	"time"
)

// ProducerOptions configure NewProducer.
type ProducerOptions struct {
	Capacity  uint64 // slots, a power of two
	Lossless  bool   // LOSSLESS_BACKPRESSURE: wait for registered readers
	Readers   int    // registry entries (default 32 when lossless, else none)
	Sparse    bool   // SPARSE flag
	SchemaSig uint64
	Replace   bool  // replace an existing ring of another geometry
	MaxSize   int64 // size limit of the file (CreateOptions.MaxSize)
}

// Producer writes fixed-size records of type T, which must be pointer-free.
type Producer[T any] struct {
	w *Writer
}

// NewProducer creates a ring of T records at path (in /dev/shm or anywhere).
func NewProducer[T any](path string, opts ProducerOptions) (*Producer[T], error) {
	if err := checkType[T](); err != nil {
		return nil, fmt.Errorf("create ring %s: %w", path, err)
	}
	cfg := RingConfig{PayloadSize: int(sizeOf[T]()), Capacity: opts.Capacity,
		Readers: opts.Readers, SchemaSig: opts.SchemaSig}
	if opts.Lossless {
		cfg.Flags |= FlagLossless
	}
	if opts.Sparse {
		cfg.Flags |= FlagSparse
	}
	w, err := Create(path, cfg, CreateOptions{Replace: opts.Replace, MaxSize: opts.MaxSize})
	if err != nil {
		return nil, err
	}
	return &Producer[T]{w: w}, nil
}

// Push publishes v as the next record and returns its sequence. On a
// lossless ring it waits for the slowest live registered reader.
func (p *Producer[T]) Push(v *T) (uint64, error) { return p.w.Push(bytesOf(v)) }

// PushContext is Push whose wait for readers ends when ctx is done.
func (p *Producer[T]) PushContext(ctx context.Context, v *T) (uint64, error) {
	return p.w.PushContext(ctx, bytesOf(v))
}

// TryPush is Push that fails with ErrBackpressure instead of waiting.
func (p *Producer[T]) TryPush(v *T) (uint64, error) { return p.w.TryPush(bytesOf(v)) }

// PushBatch publishes vs as consecutive records with one write_seq store
// and returns the last sequence (Writer.PushBatch).
func (p *Producer[T]) PushBatch(vs []T) (uint64, error) {
	return p.w.PushBatch(sliceBytes(vs), int(sizeOf[T]()))
}

// Writer is the underlying byte-oriented writer.
func (p *Producer[T]) Writer() *Writer { return p.w }

// Close releases the ring.
func (p *Producer[T]) Close() error { return p.w.Close() }

// Consumer reads fixed-size records of type T.
type Consumer[T any] struct {
	rd *Reader
}

// NewConsumer attaches to the ring at path. The ring's payload size must be
// able to hold a T.
func NewConsumer[T any](path string, opts ReadOptions) (*Consumer[T], error) {
	rd, err := openFor[T](path, "open reader", func(path string) (*Reader, error) {
		return OpenReader(path, opts)
	})
	if err != nil {
		return nil, err
	}
	return &Consumer[T]{rd: rd}, nil
}

// TryRecv copies the next record into v; false when there is none yet.
func (c *Consumer[T]) TryRecv(v *T) bool {
	_, ok := c.rd.TryRecv(bytesOf(v))
	return ok
}

// Recv waits for the next record (at most timeout, 0: forever).
func (c *Consumer[T]) Recv(v *T, timeout time.Duration) error {
	_, err := c.rd.Recv(bytesOf(v), timeout)
	return err
}

// RecvContext waits for the next record until ctx is done.
func (c *Consumer[T]) RecvContext(ctx context.Context, v *T) error {
	_, err := c.rd.RecvContext(ctx, bytesOf(v))
	return err
}

// RecvBatch fills buf with up to len(buf) available records and returns how
// many it copied. The registry cursor is published once per batch.
func (c *Consumer[T]) RecvBatch(buf []T) int {
	rd := c.rd
	if rd.r.closed {
		return 0
	}
	n := 0
	for n < len(buf) {
		if _, ok := rd.poll(bytesOf(&buf[n])); !ok {
			break
		}
		n++
	}
	if n > 0 && rd.reg >= 0 {
		rd.r.entry(rd.reg).cursor.Store(rd.next)
	}
	return n
}

// Seq is the sequence of the last record returned.
func (c *Consumer[T]) Seq() uint64 { return c.rd.Seq() }

// Lapped counts records this consumer never saw.
func (c *Consumer[T]) Lapped() uint64 { return c.rd.Lapped() }

// Dropped counts records of a multi-producer ring this consumer skipped
// because their producer never finished them (Reader.Dropped).
func (c *Consumer[T]) Dropped() uint64 { return c.rd.Dropped() }

// CommitOffset writes the checkpoint file (ReadOptions.OffsetFile).
func (c *Consumer[T]) CommitOffset() error { return c.rd.CommitOffset() }

// Reader is the underlying byte-oriented reader.
func (c *Consumer[T]) Reader() *Reader { return c.rd }

// Close releases the registry entry and the mapping.
func (c *Consumer[T]) Close() error { return c.rd.Close() }
