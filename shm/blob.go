package shm

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"
)

// Descriptor locates a blob in the arena. It is the last 16 bytes of a blob
// ring's slot payload: offset u64 (cumulative arena position), len u32,
// flags u32.
type Descriptor struct {
	Offset uint64
	Len    uint32
	Flags  uint32
}

// DecodeDescriptor reads a descriptor from the last 16 bytes of payload.
func DecodeDescriptor(payload []byte) Descriptor {
	d := payload[len(payload)-DescriptorSize:]
	return Descriptor{Offset: binary.LittleEndian.Uint64(d), Len: binary.LittleEndian.Uint32(d[8:]), Flags: binary.LittleEndian.Uint32(d[12:])}
}

// Encode writes the descriptor into the last 16 bytes of payload.
func (d Descriptor) Encode(payload []byte) {
	b := payload[len(payload)-DescriptorSize:]
	binary.LittleEndian.PutUint64(b, d.Offset)
	binary.LittleEndian.PutUint32(b[8:], d.Len)
	binary.LittleEndian.PutUint32(b[12:], d.Flags)
}

// BlobPayloadSize is the slot payload of a blob ring whose metadata is
// metaSize bytes: the metadata rounded up to 8, then the descriptor.
func BlobPayloadSize(metaSize int) int { return int(roundUp(uint64(metaSize), 8)) + DescriptorSize }

// AppendBlob copies b into the arena and returns its cumulative offset. The
// reservation counter is advanced (Swap) before any byte is overwritten, so
// a reader that copies an old blob sees the overwrite when it re-checks.
// The caller then stores a slot whose descriptor points at the offset.
func (w *Writer) AppendBlob(b []byte) (uint64, error) {
	r := w.r
	if r.closed {
		return 0, ErrClosed
	}
	if r.reserved == nil {
		return 0, fmt.Errorf("%w: ring has no arena", ErrInvalid)
	}
	capa := r.layout.ArenaSize
	n := roundUp(uint64(len(b)), BlobAlign)
	if n > capa || uint64(len(b)) > 1<<32-1 {
		return 0, fmt.Errorf("%w: blob of %d bytes, arena holds %d", ErrInvalid, len(b), capa)
	}
	start := r.reserved.Load() // the producer is the only writer of reserved
	if pos := start & (capa - 1); pos+n > capa {
		start += capa - pos // never split a blob across the end of the arena
	}
	r.reserved.Swap(start + n)
	r.m.storeBytes(r.arenaData()+start&(capa-1), b)
	return start, nil
}

func (r *Ring) arenaData() uint64 { return r.layout.ArenaOffset + ArenaHeaderSize }

// blobSpan validates d against the arena and returns where its bytes are
// mapped; ok is false when the blob was overwritten or the descriptor
// cannot describe a blob of this arena.
func (r *Ring) blobSpan(d Descriptor) (off uint64, ok bool) {
	capa := r.layout.ArenaSize
	pos := d.Offset & (capa - 1)
	if d.Offset%BlobAlign != 0 || pos+uint64(d.Len) > capa || r.blobLost(d) {
		return 0, false
	}
	return r.arenaData() + pos, true
}

// blobLost reports whether the arena has been reserved past d's bytes.
func (r *Ring) blobLost(d Descriptor) bool {
	return r.reserved.Load()-d.Offset > r.layout.ArenaSize
}

// ReadBlob copies the blob d describes into dst[:d.Len] and reports whether
// the copy is whole: false when the arena lapped it before or during the
// copy (the bytes in dst are then garbage), never torn bytes reported good.
func (r *Ring) ReadBlob(d Descriptor, dst []byte) (bool, error) {
	if r.closed {
		return false, ErrClosed
	}
	if r.reserved == nil {
		return false, fmt.Errorf("%w: ring has no arena", ErrInvalid)
	}
	if len(dst) < int(d.Len) {
		return false, fmt.Errorf("%w: blob of %d bytes, buffer of %d", ErrShortBuffer, d.Len, len(dst))
	}
	off, ok := r.blobSpan(d)
	if !ok {
		return false, nil
	}
	r.m.loadWords(dst[:d.Len], off)
	return !r.blobLost(d), nil
}

// BlobOptions configure NewBlobProducer.
type BlobOptions struct {
	Capacity  uint64 // descriptor slots, a power of two
	ArenaSize uint64 // arena bytes, a power of two
	SchemaSig uint64
	Replace   bool
	MaxSize   int64 // size limit of the file (CreateOptions.MaxSize)
}

// BlobProducer writes variable-length blobs with fixed metadata M.
type BlobProducer[M any] struct {
	w       *Writer
	payload []byte // scratch slot payload: metadata, then descriptor
}

// NewBlobProducer creates a blob ring at path.
func NewBlobProducer[M any](path string, opts BlobOptions) (*BlobProducer[M], error) {
	if err := checkType[M](); err != nil {
		return nil, fmt.Errorf("create blob ring %s: %w", path, err)
	}
	cfg := RingConfig{PayloadSize: BlobPayloadSize(int(sizeOf[M]())), Capacity: opts.Capacity,
		ArenaSize: opts.ArenaSize, SchemaSig: opts.SchemaSig}
	if opts.ArenaSize == 0 {
		return nil, fmt.Errorf("create blob ring %s: %w: arena size 0", path, ErrInvalid)
	}
	w, err := Create(path, cfg, CreateOptions{Replace: opts.Replace, MaxSize: opts.MaxSize})
	if err != nil {
		return nil, err
	}
	return &BlobProducer[M]{w: w, payload: make([]byte, cfg.PayloadSize)}, nil
}

// Push copies b into the arena and publishes a record carrying meta and the
// blob's descriptor.
func (p *BlobProducer[M]) Push(meta *M, b []byte) (uint64, error) { return p.PushFlags(meta, b, 0) }

// PushFlags is Push with the descriptor's flags word set.
func (p *BlobProducer[M]) PushFlags(meta *M, b []byte, flags uint32) (uint64, error) {
	off, err := p.w.AppendBlob(b)
	if err != nil {
		return 0, err
	}
	copy(p.payload, bytesOf(meta))
	Descriptor{Offset: off, Len: uint32(len(b)), Flags: flags}.Encode(p.payload)
	return p.w.Push(p.payload)
}

// Writer is the underlying writer.
func (p *BlobProducer[M]) Writer() *Writer { return p.w }

// Close releases the ring.
func (p *BlobProducer[M]) Close() error { return p.w.Close() }

// BlobConsumer reads blobs with metadata M.
type BlobConsumer[M any] struct {
	rd      *Reader
	payload []byte
	desc    Descriptor // of the last record polled
}

// NewBlobConsumer attaches to the blob ring at path.
func NewBlobConsumer[M any](path string, opts ReadOptions) (*BlobConsumer[M], error) {
	if err := checkType[M](); err != nil {
		return nil, fmt.Errorf("open blob reader %s: %w", path, err)
	}
	rd, err := OpenReader(path, opts)
	if err != nil {
		return nil, err
	}
	want := BlobPayloadSize(int(sizeOf[M]()))
	if l := rd.r.layout; l.Flags&FlagArena == 0 || l.PayloadSize() != want {
		rd.Close()
		return nil, fmt.Errorf("open blob reader %s: %w: want a blob ring with %d-byte slot payloads, element_size is %d", path, ErrType, want, l.ElementSize)
	}
	return &BlobConsumer[M]{rd: rd, payload: make([]byte, want)}, nil
}

// next polls the next record whose blob is still in the arena, skipping (and
// counting as lapped) records whose blob was already overwritten.
func (c *BlobConsumer[M]) next() (uint64, bool) {
	for { // each turn consumes a record: this ends
		seq, ok := c.rd.poll(c.payload)
		if !ok {
			return 0, false
		}
		c.desc = DecodeDescriptor(c.payload)
		if _, ok := c.rd.r.blobSpan(c.desc); ok {
			return seq, true
		}
		c.rd.lapped++
		c.rd.recv--
	}
}

// TryRecv copies the next record's metadata into meta and its blob into buf
// and returns the blob's length. ok is false when nothing is available. A
// buffer too small for the blob returns ErrShortBuffer and leaves the record
// unconsumed. Blobs overwritten before or during the copy are skipped and
// counted in Lapped, never returned torn.
func (c *BlobConsumer[M]) TryRecv(meta *M, buf []byte) (n int, ok bool, err error) {
	rd := c.rd
	if rd.r.closed {
		return 0, false, ErrClosed
	}
	for {
		saved := *rd
		if _, ok := c.next(); !ok {
			return 0, false, nil
		}
		if int(c.desc.Len) > len(buf) {
			*rd = saved
			return int(c.desc.Len), false, fmt.Errorf("%w: blob of %d bytes, buffer of %d", ErrShortBuffer, c.desc.Len, len(buf))
		}
		whole, err := rd.r.ReadBlob(c.desc, buf)
		if err != nil {
			return 0, false, err
		}
		if !whole {
			rd.lapped++
			rd.recv--
			continue
		}
		copy(bytesOf(meta), c.payload)
		c.publishCursor()
		return int(c.desc.Len), true, nil
	}
}

func (c *BlobConsumer[M]) publishCursor() {
	if c.rd.reg >= 0 {
		c.rd.r.entry(c.rd.reg).cursor.Store(c.rd.next)
	}
}

// Recv waits for the next blob (at most timeout, 0: forever).
func (c *BlobConsumer[M]) Recv(meta *M, buf []byte, timeout time.Duration) (int, error) {
	deadline := deadlineAfter(timeout)
	return waitFor(c.rd, nil, deadline, func() (int, bool, error) { return c.TryRecv(meta, buf) })
}

// RecvContext waits for the next blob until ctx is done.
func (c *BlobConsumer[M]) RecvContext(ctx context.Context, meta *M, buf []byte) (int, error) {
	deadline, _ := ctx.Deadline()
	return waitFor(c.rd, ctx, deadline, func() (int, bool, error) { return c.TryRecv(meta, buf) })
}

// View calls fn with the next record's metadata and its blob bytes in place
// in the arena (no copy). If the arena laps the blob while fn runs, fn's
// result is discarded, the record counts as lapped, and View moves on to the
// next record. ok is false when nothing is available. fn must not retain b.
func View[M, R any](c *BlobConsumer[M], fn func(meta *M, b []byte) R) (res R, ok bool, err error) {
	rd := c.rd
	if rd.r.closed {
		return res, false, ErrClosed
	}
	var meta M
	for {
		if _, ok := c.next(); !ok {
			return res, false, nil
		}
		off, live := rd.r.blobSpan(c.desc)
		if !live {
			rd.lapped++
			rd.recv--
			continue
		}
		copy(bytesOf(&meta), c.payload)
		out := fn(&meta, rd.r.m.data[off:off+uint64(c.desc.Len)])
		if rd.r.blobLost(c.desc) {
			rd.lapped++
			rd.recv--
			continue
		}
		c.publishCursor()
		return out, true, nil
	}
}

// Seq is the sequence of the last record returned.
func (c *BlobConsumer[M]) Seq() uint64 { return c.rd.Seq() }

// Lapped counts records skipped: overwritten slots or overwritten blobs.
func (c *BlobConsumer[M]) Lapped() uint64 { return c.rd.Lapped() }

// Reader is the underlying reader.
func (c *BlobConsumer[M]) Reader() *Reader { return c.rd }

// Close releases the reader.
func (c *BlobConsumer[M]) Close() error { return c.rd.Close() }

// BlobLive reports whether the blob d describes is still whole in the arena.
func (r *Ring) BlobLive(d Descriptor) bool {
	if r.closed || r.reserved == nil {
		return false
	}
	_, ok := r.blobSpan(d)
	return ok
}
