package shm

// Helpers shared by the package's tests: the common 56-byte record, the
// constructors that fail the test on error and close what they open when it
// ends, draining a reader into its list of sequences, raw file writes, the
// foreign fixtures, the ring file built from the spec alone, the
// checksummed record of the multi-process tests, and the command line that
// re-executes the test binary as a child process.

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
	"time"
)

// le is the byte order of every ring and blackboard file.
var le = binary.LittleEndian

// tick is the 56-byte fixed record of most tests and of the Python fixture
// (one 64-byte slot): seq u64 @0, value u64 @8, text [40]byte @16.
type tick struct {
	Seq   uint64
	Value uint64
	Text  [40]byte
}

// ringPath is a fresh ring file name in a temp dir of tb.
func ringPath(tb testing.TB) string {
	tb.Helper()
	return filepath.Join(tb.TempDir(), "ring")
}

// closeAtEnd fails tb on err and otherwise closes v when tb ends: the
// common tail of the constructors below.
func closeAtEnd[V interface{ Close() error }](tb testing.TB, v V, err error) V {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { v.Close() })
	return v
}

func producer[T any](tb testing.TB, path string, opts ProducerOptions) *Producer[T] {
	tb.Helper()
	p, err := NewProducer[T](path, opts)
	return closeAtEnd(tb, p, err)
}

func consumer[T any](tb testing.TB, path string, opts ReadOptions) *Consumer[T] {
	tb.Helper()
	c, err := NewConsumer[T](path, opts)
	return closeAtEnd(tb, c, err)
}

func blobProducer[M any](tb testing.TB, path string, opts BlobOptions) *BlobProducer[M] {
	tb.Helper()
	p, err := NewBlobProducer[M](path, opts)
	return closeAtEnd(tb, p, err)
}

func blobConsumer[M any](tb testing.TB, path string, opts ReadOptions) *BlobConsumer[M] {
	tb.Helper()
	c, err := NewBlobConsumer[M](path, opts)
	return closeAtEnd(tb, c, err)
}

func openRing(tb testing.TB, path string, opts OpenOptions) *Ring {
	tb.Helper()
	r, err := Open(path, opts)
	return closeAtEnd(tb, r, err)
}

// createRing creates a raw ring with cfg at a fresh path.
func createRing(tb testing.TB, cfg RingConfig) (*Writer, string) {
	tb.Helper()
	path := ringPath(tb)
	w, err := Create(path, cfg, CreateOptions{})
	return closeAtEnd(tb, w, err), path
}

// openWriter takes over the ring at path as its writer.
func openWriter(tb testing.TB, path string) *Writer {
	tb.Helper()
	w, err := OpenWriter(path)
	return closeAtEnd(tb, w, err)
}

// unregisteredReader attaches a raw reader with NoRegister set (whatever
// opts says), which maps the ring read-only.
func unregisteredReader(tb testing.TB, path string, opts ReadOptions) *Reader {
	tb.Helper()
	opts.NoRegister = true
	rd, err := OpenReader(path, opts)
	return closeAtEnd(tb, rd, err)
}

// newTickRing creates a ring of ticks with opts at a fresh path.
func newTickRing(tb testing.TB, opts ProducerOptions) (*Producer[tick], string) {
	tb.Helper()
	path := ringPath(tb)
	return producer[tick](tb, path, opts), path
}

// pushTicks pushes ticks from..to (value 3*seq), each of which must get its
// own sequence.
func pushTicks(tb testing.TB, p *Producer[tick], from, to uint64) {
	tb.Helper()
	for i := from; i <= to; i++ {
		v := tick{Seq: i, Value: 3 * i}
		if s, err := p.Push(&v); err != nil || s != i {
			tb.Fatalf("push %d: got seq %d, %v", i, s, err)
		}
	}
}

// drainSeqs calls next until it reports no record and returns the
// sequences it reported; it fails tb if what has not run dry after limit
// records.
func drainSeqs(tb testing.TB, what string, limit int, next func() (uint64, bool)) []uint64 {
	tb.Helper()
	var got []uint64
	for range limit {
		seq, ok := next()
		if !ok {
			return got
		}
		got = append(got, seq)
	}
	tb.Fatalf("%s never ran dry (%d records)", what, limit)
	return nil
}

// drain receives ticks from c until it runs dry, checking that each is
// whole (value 3*seq) and returned as its own sequence.
func drain(tb testing.TB, c *Consumer[tick]) []uint64 {
	tb.Helper()
	var v tick
	return drainSeqs(tb, "drain", 1<<20, func() (uint64, bool) {
		tb.Helper()
		if !c.TryRecv(&v) {
			return 0, false
		}
		if v.Seq != c.Seq() || v.Value != 3*v.Seq {
			tb.Fatalf("record %+v returned as sequence %d", v, c.Seq())
		}
		return v.Seq, true
	})
}

// seqs is the list from, from+1, ..., to (nil when to < from).
func seqs(from, to uint64) []uint64 {
	var s []uint64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

// writeRing writes b as the file "ring" in dir, replacing it, and returns
// its path.
func writeRing(tb testing.TB, dir string, b []byte) string {
	tb.Helper()
	path := filepath.Join(dir, "ring")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

// pokeFile overwrites the bytes at off of the file at path with b, through
// the file (the page cache is shared with every mapping).
func pokeFile(path string, off int64, b []byte) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteAt(b, off)
	return err
}

// fixtureDir holds files written by the reference implementation's Python
// producer, described in its README.md (go test runs in shm/).
const fixtureDir = "testdata"

// fixtureCopy copies the read-only fixture name into a temp dir so that the
// test can map it read-write, and returns the copy's path and the fixture's
// bytes. A missing fixture fails the test: they are part of the repository.
func fixtureCopy(tb testing.TB, name string) (string, []byte) {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, name))
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(tb.TempDir(), name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		tb.Fatal(err)
	}
	return path, b
}

// specRing builds a ring file from compat.md §1 with encoding/binary alone.
type specRing struct {
	capacity uint64
	payload  uint64 // bytes; the stride is round_up(8 + payload, 8)
	flags    uint32
	writeSeq uint64
	slots    map[uint64]uint64 // slot index → slot sequence word (0 when absent)
}

// specRoundUp rounds v up to a multiple of to, independently of the library.
func specRoundUp(v, to uint64) uint64 { return (v + to - 1) / to * to }

// specPayload is the 56-byte payload of record seq in the rings these tests
// build or check byte by byte (tick{seq, 7*seq, "lay-%04d"}), encoded
// without going through the library.
func specPayload(seq uint64) []byte {
	b := make([]byte, 56)
	le.PutUint64(b[0:], seq)
	le.PutUint64(b[8:], 7*seq)
	copy(b[16:], fmt.Sprintf("lay-%04d", seq))
	return b
}

func (s specRing) elem() uint64 { return specRoundUp(8+s.payload, 8) }

func (s specRing) bytes() []byte {
	elem := s.elem()
	b := make([]byte, 128+s.capacity*elem)
	le.PutUint64(b[0:], 0x5249_4E47_4649_5245)
	le.PutUint32(b[8:], 2)
	le.PutUint32(b[12:], uint32(elem))
	le.PutUint64(b[16:], s.capacity)
	le.PutUint64(b[24:], s.capacity-1)
	le.PutUint64(b[32:], s.writeSeq)
	le.PutUint32(b[48:], s.flags)
	le.PutUint64(b[104:], 128)
	for i, seq := range s.slots {
		off := 128 + i*elem
		le.PutUint64(b[off:], seq)
		if seq != 0 && seq != ^uint64(0) {
			copy(b[off+8:], specPayload(seq))
		}
	}
	return b
}

// write writes the ring to a fresh file and returns its path.
func (s specRing) write(tb testing.TB) string {
	tb.Helper()
	return writeRing(tb, tb.TempDir(), s.bytes())
}

const (
	mpFlagLast = 1
	mpPayload  = 56
)

// The checksummed record of the multi-process tests (56-byte payload,
// 64-byte slot):
//
//	seq u64 @0 | flags u64 @8 (bit 0: last record) | checksum u64 @16
//	filler [4]u64 @24, filler[k] = mpFill(seq, k)
//
// The checksum covers every byte but itself, so a record stitched from two
// writes fails it (and the filler, derived from the sequence, fails too).
func mpFill(seq uint64, k int) uint64 {
	z := seq*4 + uint64(k) + 0x9E3779B97F4A7C15
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

func mpSum(p []byte) uint64 {
	h := uint64(14695981039346656037)
	for i, c := range p[:mpPayload] {
		if i >= 16 && i < 24 {
			continue
		}
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

func mpEncode(p []byte, seq, flags uint64) {
	le.PutUint64(p[0:], seq)
	le.PutUint64(p[8:], flags)
	for k := range 4 {
		le.PutUint64(p[24+8*k:], mpFill(seq, k))
	}
	le.PutUint64(p[16:], mpSum(p))
}

// mpCheck reports whether p is a whole record, and its sequence and flags.
func mpCheck(p []byte) (seq, flags uint64, ok bool) {
	seq, flags = le.Uint64(p[0:]), le.Uint64(p[8:])
	if le.Uint64(p[16:]) != mpSum(p) || flags&^mpFlagLast != 0 {
		return seq, flags, false
	}
	for k := range 4 {
		if le.Uint64(p[24+8*k:]) != mpFill(seq, k) {
			return seq, flags, false
		}
	}
	return seq, flags, true
}

// raceDetectorOn reports whether the test binary was built with -race.
func raceDetectorOn() bool {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" {
				return s.Value == "true"
			}
		}
	}
	return false
}

// reexecArgs is the command line that re-executes this test binary as a
// child process, with a -test.timeout bounding it when timeout is not 0.
// It runs no test (-test.run=^$): the role variable the caller adds to the
// child's environment makes TestMain (main_test.go) run the child instead.
func reexecArgs(tb testing.TB, timeout time.Duration) []string {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	args := []string{exe, "-test.run=^$", "-test.count=1"}
	if timeout > 0 {
		args = append(args, "-test.timeout="+timeout.String())
	}
	return args
}
