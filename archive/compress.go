package archive

import (
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// A compressed segment (".rfa.zst") is the segment's data cut into blocks
// of blockSize bytes, each one zstd frame: concatenated, they are one
// valid zstd stream (zstd -d gives the plain segment back), and the index
// says where each frame starts, so that a seek decompresses one block.
// klauspost/compress is used rather than a cgo binding: pure Go, kept,
// and as fast as the reference library for these sizes.
const blockSize = 128 << 10

var (
	encOnce sync.Once
	enc     *zstd.Encoder
	decOnce sync.Once
	dec     *zstd.Decoder
)

// encoder and decoder are shared: EncodeAll and DecodeAll are safe for
// concurrent use.
func encoder() *zstd.Encoder {
	encOnce.Do(func() { enc, _ = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1)) })
	return enc
}

func decoder() *zstd.Decoder {
	decOnce.Do(func() { dec, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(8<<20)) })
	return dec
}

// compressSegment writes the plain data file of s (size bytes) as
// compressed blocks to the segment's ".rfa.zst" (through a temporary file
// and a rename) and returns the blocks' offsets.
func compressSegment(s segment, size int64, sync bool) ([]int64, error) {
	in, err := os.Open(s.base + dataExt)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	tmp := s.base + zstExt + tmpExt
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	blocks, err := writeBlocks(out, in, size)
	if err == nil && sync {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, s.base+zstExt)
	}
	if err != nil {
		os.Remove(tmp)
		return nil, fmt.Errorf("compress %s: %w", s.base+dataExt, err)
	}
	return blocks, nil
}

func writeBlocks(out io.Writer, in io.ReaderAt, size int64) ([]int64, error) {
	raw := make([]byte, blockSize)
	var z []byte
	var blocks []int64
	var at int64
	for off := int64(0); off < size; off += blockSize {
		n := int(min(blockSize, size-off))
		if _, err := in.ReadAt(raw[:n], off); err != nil {
			return nil, err
		}
		z = encoder().EncodeAll(raw[:n], z[:0])
		if _, err := out.Write(z); err != nil {
			return nil, err
		}
		blocks = append(blocks, at)
		at += int64(len(z))
	}
	return blocks, nil
}

// zstData reads a compressed segment's data as if it were plain (an
// io.ReaderAt of the uncompressed bytes), keeping the last block it
// decompressed.
type zstData struct {
	f     *os.File
	x     *index
	end   int64 // the compressed file's size
	cur   int   // the block in buf; -1 none
	buf   []byte
	zbuf  []byte
	stats *readStats
}

func openZst(s segment, x *index, st *readStats) (*zstData, error) {
	f, err := os.Open(s.base + zstExt)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &zstData{f: f, x: x, end: fi.Size(), cur: -1, stats: st}, nil
}

func (z *zstData) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		at := off + int64(n)
		if at >= z.x.size {
			return n, io.EOF
		}
		i := int(at / int64(z.x.blockSize))
		if err := z.load(i); err != nil {
			return n, err
		}
		n += copy(p[n:], z.buf[at-int64(i)*int64(z.x.blockSize):])
	}
	return n, nil
}

// load decompresses block i into buf.
func (z *zstData) load(i int) error {
	if i == z.cur {
		return nil
	}
	from, to := z.x.blocks[i], z.end
	if i+1 < len(z.x.blocks) {
		to = z.x.blocks[i+1]
	}
	if to <= from || to-from > 2*blockSize+1024 {
		return fmt.Errorf("%w: compressed block %d of %s spans %d..%d", ErrCorrupt, i, z.f.Name(), from, to)
	}
	if int64(cap(z.zbuf)) < to-from {
		z.zbuf = make([]byte, to-from)
	}
	z.zbuf = z.zbuf[:to-from]
	if _, err := z.f.ReadAt(z.zbuf, from); err != nil {
		return err
	}
	out, err := decoder().DecodeAll(z.zbuf, z.buf[:0])
	if err != nil {
		return fmt.Errorf("%w: block %d of %s: %w", ErrCorrupt, i, z.f.Name(), err)
	}
	want := min(int64(z.x.blockSize), z.x.size-int64(i)*int64(z.x.blockSize))
	if int64(len(out)) != want {
		return fmt.Errorf("%w: block %d of %s holds %d bytes, want %d", ErrCorrupt, i, z.f.Name(), len(out), want)
	}
	z.buf, z.cur = out, i
	if z.stats != nil {
		z.stats.blocks.Add(1)
	}
	return nil
}

func (z *zstData) Close() error { return z.f.Close() }
