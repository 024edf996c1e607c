package archive

import (
	"fmt"
	"hash/crc32"
	"os"
	"sort"
)

// A sealed segment's index (".rfi"), written once as it is sealed:
//
//	 0  magic "RFARCIDX"
//	 8  version u32 (1)          12 points u32 (n)
//	16  block size u32 (0: the data is not compressed)
//	20  blocks u32 (m)           24 last sequence u64 (a gap's Last)
//	32  last time i64            40 data bytes u64 (uncompressed)
//	48  records u64              56 gap entries u64
//	64  n points: sequence u64, time i64, offset u64 (of an entry)
//	    m block offsets u64: where each compressed block starts
//	    CRC-32C u32 of everything before it
//
// There is a point at the first entry and at the first entry after every
// indexEvery bytes of data, so that a seek reads at most that much past
// its point. Offsets count bytes of the uncompressed data, header
// included; compressed block i holds data bytes [i*blockSize,
// (i+1)*blockSize).
const (
	idxHeader  = 64
	indexEvery = 64 << 10
)

var idxMagic = [8]byte{'R', 'F', 'A', 'R', 'C', 'I', 'D', 'X'}

// point is one point of an index.
type point struct {
	Seq  uint64
	Time int64
	Off  int64
}

// index is a segment's index: its points, its summary and, compressed,
// its blocks.
type index struct {
	points     []point
	blockSize  int
	blocks     []int64 // compressed offsets
	last       uint64
	lastTime   int64
	size       int64 // data bytes, uncompressed
	records    uint64
	gapEntries uint64
	gapRecords uint64 // sequences the gaps cover (in memory only)
}

// add notes the entry e at off, whose bytes end at end, making a point
// when due.
func (x *index) add(e *Entry, off, end int64) {
	if len(x.points) == 0 || off >= x.points[len(x.points)-1].Off+indexEvery {
		x.points = append(x.points, point{e.Seq, e.Time, off})
	}
	x.last, x.lastTime, x.size = e.Last, e.Time, end
	if e.Kind == KindRecord {
		x.records++
	} else {
		x.gapEntries++
		x.gapRecords += e.Last - e.Seq + 1
	}
}

// bySeq is the offset of the last point at or before sequence seq (the
// first point's when none is).
func (x *index) bySeq(seq uint64) int64 {
	i := sort.Search(len(x.points), func(i int) bool { return x.points[i].Seq > seq })
	return x.points[max(i-1, 0)].Off
}

// byTime is the offset of the last point before time t.
func (x *index) byTime(t int64) int64 {
	i := sort.Search(len(x.points), func(i int) bool { return x.points[i].Time >= t })
	return x.points[max(i-1, 0)].Off
}

func (x *index) encode() []byte {
	b := make([]byte, idxHeader, idxHeader+24*len(x.points)+8*len(x.blocks)+4)
	copy(b, idxMagic[:])
	le.PutUint32(b[8:], version)
	le.PutUint32(b[12:], uint32(len(x.points)))
	le.PutUint32(b[16:], uint32(x.blockSize))
	le.PutUint32(b[20:], uint32(len(x.blocks)))
	le.PutUint64(b[24:], x.last)
	le.PutUint64(b[32:], uint64(x.lastTime))
	le.PutUint64(b[40:], uint64(x.size))
	le.PutUint64(b[48:], x.records)
	le.PutUint64(b[56:], x.gapEntries)
	for _, p := range x.points {
		b = le.AppendUint64(b, p.Seq)
		b = le.AppendUint64(b, uint64(p.Time))
		b = le.AppendUint64(b, uint64(p.Off))
	}
	for _, o := range x.blocks {
		b = le.AppendUint64(b, uint64(o))
	}
	return le.AppendUint32(b, crc32.Checksum(b, castagno))
}

// parseIndex decodes an index file's bytes, checking its CRC and that its
// points and blocks are in order.
func parseIndex(b []byte) (*index, error) {
	if len(b) < idxHeader+4 || [8]byte(b[:8]) != idxMagic {
		return nil, fmt.Errorf("%w: not a segment index", ErrCorrupt)
	}
	if v := le.Uint32(b[8:]); v != version {
		return nil, fmt.Errorf("%w: index version %d", ErrVersion, v)
	}
	n, m := int(le.Uint32(b[12:])), int(le.Uint32(b[20:]))
	if len(b) != idxHeader+24*n+8*m+4 {
		return nil, fmt.Errorf("%w: index of %d bytes for %d points and %d blocks", ErrCorrupt, len(b), n, m)
	}
	if got, want := crc32.Checksum(b[:len(b)-4], castagno), le.Uint32(b[len(b)-4:]); got != want {
		return nil, fmt.Errorf("%w: index CRC %08x, want %08x", ErrCorrupt, got, want)
	}
	x := &index{blockSize: int(le.Uint32(b[16:])), last: le.Uint64(b[24:]), lastTime: int64(le.Uint64(b[32:])),
		size: int64(le.Uint64(b[40:])), records: le.Uint64(b[48:]), gapEntries: le.Uint64(b[56:])}
	if n == 0 || x.size < headerSize || (m == 0) != (x.blockSize == 0) || m > 0 && int64(m) != (x.size+int64(x.blockSize)-1)/int64(x.blockSize) {
		return nil, fmt.Errorf("%w: index of %d points, %d blocks of %d bytes for %d bytes", ErrCorrupt, n, m, x.blockSize, x.size)
	}
	p := b[idxHeader:]
	x.points = make([]point, n)
	for i := range x.points {
		pt := point{le.Uint64(p), int64(le.Uint64(p[8:])), int64(le.Uint64(p[16:]))}
		if pt.Off < headerSize || pt.Off >= x.size || i > 0 && (pt.Off <= x.points[i-1].Off || pt.Seq < x.points[i-1].Seq) {
			return nil, fmt.Errorf("%w: index point %d out of order", ErrCorrupt, i)
		}
		x.points[i], p = pt, p[24:]
	}
	x.blocks = make([]int64, m)
	for i := range x.blocks {
		x.blocks[i], p = int64(le.Uint64(p)), p[8:]
		if i > 0 && x.blocks[i] <= x.blocks[i-1] {
			return nil, fmt.Errorf("%w: index block %d out of order", ErrCorrupt, i)
		}
	}
	return x, nil
}

// readIndex reads a sealed segment's index.
func readIndex(s segment) (*index, error) {
	b, err := os.ReadFile(s.base + idxExt)
	if err != nil {
		return nil, err
	}
	x, err := parseIndex(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.base+idxExt, err)
	}
	return x, nil
}

// writeFileAtomic writes b to path through a temporary file and a rename,
// syncing the file first when sync is set: a crash leaves the old file
// or the new one, never a part.
func writeFileAtomic(path string, b []byte, sync bool) error {
	tmp := path + tmpExt
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
