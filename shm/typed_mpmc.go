package shm

import (
	"context"
	"fmt"
	"time"
)

// MpmcOptions configure NewMpmcProducer.
type MpmcOptions struct {
	Capacity  uint64 // slots, a power of two
	SchemaSig uint64
	Replace   bool  // replace an existing ring of another geometry
	MaxSize   int64 // size limit of the file (CreateOptions.MaxSize)
}

// MpmcProducer is one of several producers of fixed-size records of type T
// (pointer-free) in one multi-producer ring.
type MpmcProducer[T any] struct {
	w *MultiWriter
}

// NewMpmcProducer creates a multi-producer ring of T records at path and
// returns its first producer.
func NewMpmcProducer[T any](path string, opts MpmcOptions) (*MpmcProducer[T], error) {
	if err := checkType[T](); err != nil {
		return nil, fmt.Errorf("create ring %s: %w", path, err)
	}
	cfg := RingConfig{PayloadSize: int(sizeOf[T]()), Capacity: opts.Capacity, SchemaSig: opts.SchemaSig}
	w, err := CreateMPMC(path, cfg, CreateOptions{Replace: opts.Replace, MaxSize: opts.MaxSize})
	if err != nil {
		return nil, err
	}
	return &MpmcProducer[T]{w: w}, nil
}

// AttachMpmcProducer joins the multi-producer ring at path as another
// producer of T records.
func AttachMpmcProducer[T any](path string) (*MpmcProducer[T], error) {
	w, err := openFor[T](path, "open producer", OpenMultiWriter)
	if err != nil {
		return nil, err
	}
	return &MpmcProducer[T]{w: w}, nil
}

// openFor opens a byte-oriented producer or consumer with open, for records
// of type T: T must be pointer-free and fill the ring's slots exactly. op
// names the caller in errors.
func openFor[T any, C interface {
	Ring() *Ring
	Close() error
}](path, op string, open func(string) (C, error)) (C, error) {
	var zero C
	if err := checkType[T](); err != nil {
		return zero, fmt.Errorf("%s %s: %w", op, path, err)
	}
	c, err := open(path)
	if err != nil {
		return zero, err
	}
	if err := checkRecord[T](c.Ring()); err != nil {
		c.Close()
		return zero, fmt.Errorf("%s %s: %w", op, path, err)
	}
	return c, nil
}

// checkRecord refuses a ring whose slots do not hold exactly a T.
func checkRecord[T any](r *Ring) error {
	size := sizeOf[T]()
	if l := r.layout; uint64(l.ElementSize) != roundUp(8+uint64(size), 8) || l.Flags&FlagArena != 0 {
		return fmt.Errorf("%w: %d-byte records do not match element_size %d", ErrType, size, l.ElementSize)
	}
	return nil
}

// Push publishes v and returns its sequence; ErrDropped (see
// MultiWriter.Push) when it could not be written without tearing another.
func (p *MpmcProducer[T]) Push(v *T) (uint64, error) { return p.w.Push(bytesOf(v)) }

// Writer is the underlying byte-oriented producer.
func (p *MpmcProducer[T]) Writer() *MultiWriter { return p.w }

// Close releases the ring.
func (p *MpmcProducer[T]) Close() error { return p.w.Close() }

// MpmcQueueConsumer is a competing consumer of T records: each record of
// the ring goes to exactly one of the ring's queue consumers, at most once.
type MpmcQueueConsumer[T any] struct {
	q *QueueReader
}

// NewMpmcQueueConsumer attaches a competing consumer to the multi-producer
// ring at path.
func NewMpmcQueueConsumer[T any](path string, opts QueueOptions) (*MpmcQueueConsumer[T], error) {
	q, err := openFor[T](path, "open queue consumer", func(path string) (*QueueReader, error) {
		return OpenQueueReader(path, opts)
	})
	if err != nil {
		return nil, err
	}
	return &MpmcQueueConsumer[T]{q: q}, nil
}

// TryRecv copies the next record into v; false when none is ready.
func (c *MpmcQueueConsumer[T]) TryRecv(v *T) bool {
	_, ok := c.q.TryRecv(bytesOf(v))
	return ok
}

// Recv waits for the next record until ctx is done (ctx's error then).
func (c *MpmcQueueConsumer[T]) Recv(ctx context.Context, v *T) error {
	_, err := c.q.RecvContext(ctx, bytesOf(v))
	return err
}

// RecvTimeout waits for the next record at most timeout (0: forever).
func (c *MpmcQueueConsumer[T]) RecvTimeout(v *T, timeout time.Duration) error {
	_, err := c.q.Recv(bytesOf(v), timeout)
	return err
}

// Seq is the sequence (ticket) of the last record returned.
func (c *MpmcQueueConsumer[T]) Seq() uint64 { return c.q.Seq() }

// Dropped counts records this consumer took but could not deliver.
func (c *MpmcQueueConsumer[T]) Dropped() uint64 { return c.q.Dropped() }

// Reader is the underlying byte-oriented queue consumer.
func (c *MpmcQueueConsumer[T]) Reader() *QueueReader { return c.q }

// Close releases the mapping.
func (c *MpmcQueueConsumer[T]) Close() error { return c.q.Close() }
