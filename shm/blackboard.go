package shm

// The blackboard: a table of the latest value per key, kept in its own
// shared-memory file and guarded per slot by a seqlock. One writer process
// (holding the file's flock) updates keys; any number of readers, in any
// process and any language, copy the latest value of a key without ever
// blocking the writer.
//
// File layout, version 1, little-endian (byte-compatible with ringfire's
// Rust and Python producers):
//
//	off  size  field
//	  0     8  magic       0x5249_4E47_4242_4F52 ("RINGBBOR")
//	  8     4  version     1
//	 12     4  value_size  sizeof(T)
//	 16     4  slot_size   round_up(8 + value_size, 64)
//	 20     4  slot_count  number of keys
//	 24   104  reserved    zero
//	128        slot_count slots of slot_size bytes: seqlock u64, then the value
//
// Shared words and who touches them:
//
//   - magic (header @0): written once by the creator with an atomic store,
//     after every other header field; it publishes the header. Readers load
//     it atomically before trusting the other fields, which never change
//     afterwards (a new blackboard at the same path is a new inode).
//   - version, value_size, slot_size, slot_count: written by the creator
//     before the magic (plain-ordered by the magic's store), read-only after.
//   - slot seqlock word (slot @0): written only by the writer. 0 = never
//     written; odd = write in progress; even = stable. A write moves it from
//     2n to 2n+1 with an atomic Swap (its acquire half keeps the payload
//     stores after it on weakly ordered CPUs), copies the value with plain
//     stores, then atomically Stores 2n+2, which publishes the value.
//     Readers load it atomically before and after copying the value and
//     keep the copy only if both loads saw the same even number.
//   - slot value (slot @8): written by the writer with plain stores between
//     the two seqlock updates; read by readers with 64-bit atomic loads
//     (mapping.loadWords) so the racy-by-design copy is ordered before the
//     closing re-check and stays quiet under the race detector.
//
// A slot found odd (and unchanged) for longer than StallTimeout is reported
// as a stalled writer: the writer most likely died mid-write.

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"runtime"
	"time"
)

// Blackboard header layout.
const (
	bbMagic        = 0x5249_4E47_4242_4F52 // "RINGBBOR" read as a little-endian u64
	bbVersion      = 1
	bbHeaderSize   = 128
	bbOffMagic     = 0
	bbOffVersion   = 8
	bbOffValueSize = 12
	bbOffSlotSize  = 16
	bbOffSlotCount = 20
	bbSeqSize      = 8  // the seqlock word at the start of each slot
	bbSlotAlign    = 64 // slots are rounded up to a cache line
	bbSpinCheck    = 1024
)

// StallTimeout is how long Blackboard.Read waits on a slot held mid-write
// (its seqlock word odd and unchanged) before it gives up with
// ErrStalledWriter. The layout fixes it at 100 ms; change it only before
// any Read runs (it is read without synchronisation).
var StallTimeout = 100 * time.Millisecond

// bbSlotSize is round_up(8 + valueSize, 64).
func bbSlotSize(valueSize uint64) uint64 {
	return (bbSeqSize + valueSize + bbSlotAlign - 1) &^ (bbSlotAlign - 1)
}

// BlackboardOptions tunes CreateBlackboard.
type BlackboardOptions struct {
	// Replace allows creating over an existing file that is not a
	// blackboard of the requested geometry (value size and slot count).
	// Without it such a file is left alone and ErrGeometry is returned.
	Replace bool
	// MaxSize limits the file's size as CreateOptions.MaxSize does.
	MaxSize int64
}

// bbView is the part shared by the writer and reader handles.
type bbView struct {
	m        *mapping // nil once closed
	slots    uint64   // key bound; 0 once closed, so one compare checks both
	slotSize uint64
	keys     int // slot count, kept after Close for Slots
}

// slot returns the offset of key's slot, or ErrClosed / ErrInvalid. It is
// small enough to inline; the error is built out of line.
func (v *bbView) slot(key int) (uint64, error) {
	if uint64(key) >= v.slots { // a negative key wraps to a huge one
		return 0, v.slotErr(key)
	}
	return bbHeaderSize + uint64(key)*v.slotSize, nil
}

// close unmaps the view; every later slot lookup fails with ErrClosed.
func (v *bbView) close() error {
	err := v.m.unmap()
	v.m, v.slots = nil, 0
	return err
}

func (v *bbView) slotErr(key int) error {
	if v.m == nil {
		return ErrClosed
	}
	return fmt.Errorf("%w: blackboard key %d out of range [0, %d)", ErrInvalid, key, v.keys)
}

// BlackboardWriter is the single writer of a blackboard file. It holds the
// file's exclusive flock until Close. Its methods must be called from one
// goroutine at a time (the seqlock has one writer).
type BlackboardWriter[T any] struct {
	f *os.File
	v bbView
}

// CreateBlackboard creates a blackboard of slots keys holding values of type
// T at path and returns its writer. T must be pointer-free (ErrType). The
// file is always a fresh inode: a stale file at path is unlinked first, so
// old mappings never see the new bytes; if that stale file is not a
// blackboard with the same value size and slot count, creation is refused
// with ErrGeometry unless opts.Replace is set. A file whose flock another
// live writer holds is never replaced (ErrLocked).
func CreateBlackboard[T any](path string, slots int, opts BlackboardOptions) (*BlackboardWriter[T], error) {
	if err := checkType[T](); err != nil {
		return nil, err
	}
	valueSize := uint64(sizeOf[T]())
	if valueSize > math.MaxUint32-bbSlotAlign-bbSeqSize {
		return nil, fmt.Errorf("%w: blackboard value of %d bytes does not fit a u32 slot_size", ErrType, valueSize)
	}
	if slots <= 0 || uint64(slots) > math.MaxUint32 {
		return nil, fmt.Errorf("%w: blackboard slot count %d not in [1, %d]", ErrInvalid, slots, uint64(math.MaxUint32))
	}
	slotSize := bbSlotSize(valueSize)
	size := bbHeaderSize + uint64(slots)*slotSize
	if size > 1<<46 {
		return nil, fmt.Errorf("%w: blackboard of %d bytes is larger than 64 TiB", ErrInvalid, size)
	}
	inspect := func(f *os.File) error {
		if opts.Replace {
			return nil
		}
		return bbSameGeometry(f, path, valueSize, uint64(slots))
	}
	f, m, err := createLocked(path, int64(size), opts.MaxSize, inspect)
	if err != nil {
		return nil, err
	}
	// The fresh file is all zeros, so the magic is already 0 while the
	// header is filled; the atomic store of the magic comes last and
	// publishes the rest.
	m.u32(bbOffVersion).Store(bbVersion)
	m.u32(bbOffValueSize).Store(uint32(valueSize))
	m.u32(bbOffSlotSize).Store(uint32(slotSize))
	m.u32(bbOffSlotCount).Store(uint32(slots))
	m.u64(bbOffMagic).Store(bbMagic)
	return &BlackboardWriter[T]{f: f, v: bbView{m: m, slots: uint64(slots), slotSize: slotSize, keys: slots}}, nil
}

// bbSameGeometry is createLocked's inspect callback: it refuses (with
// ErrGeometry) to replace a stale file that is not a blackboard of the same
// value size and slot count.
func bbSameGeometry(f *os.File, path string, valueSize, slots uint64) error {
	var h [bbHeaderSize]byte
	if _, err := f.ReadAt(h[:], 0); err != nil {
		return fmt.Errorf("%w: %s is not a blackboard (cannot read its %d-byte header: %v); set Replace to overwrite it",
			ErrGeometry, path, bbHeaderSize, err)
	}
	le := binary.LittleEndian
	if magic := le.Uint64(h[bbOffMagic:]); magic != bbMagic {
		return fmt.Errorf("%w: %s is not a blackboard (magic %#x); set Replace to overwrite it", ErrGeometry, path, magic)
	}
	gotVersion := le.Uint32(h[bbOffVersion:])
	gotValue := uint64(le.Uint32(h[bbOffValueSize:]))
	gotSlots := uint64(le.Uint32(h[bbOffSlotCount:]))
	if gotVersion != bbVersion || gotValue != valueSize || gotSlots != slots {
		return fmt.Errorf("%w: %s holds a blackboard of version %d, value_size %d, slot_count %d; want version %d, value_size %d, slot_count %d; set Replace to overwrite it",
			ErrGeometry, path, gotVersion, gotValue, gotSlots, bbVersion, valueSize, slots)
	}
	return nil
}

// Write stores *v as the latest value of key. It never blocks and never
// allocates. Keys outside [0, Slots()) return ErrInvalid.
func (w *BlackboardWriter[T]) Write(key int, v *T) error {
	off, err := w.v.slot(key)
	if err != nil {
		return err
	}
	if v == nil {
		return fmt.Errorf("%w: nil value", ErrInvalid)
	}
	m := w.v.m
	word := m.u64(off)
	// Only this writer stores the word, so this load sees our own last
	// store: an even number (0 before the first write).
	seq := word.Load()
	word.Swap(seq + 1) // odd: write in progress; orders the copy after it
	m.storeBytes(off+bbSeqSize, bytesOf(v))
	word.Store(seq + 2) // even: publishes the value
	return nil
}

// Slots returns the number of keys. It keeps answering after Close.
func (w *BlackboardWriter[T]) Slots() int { return w.v.keys }

// Close unmaps the file and releases the flock. The file stays on disk with
// the last values, readable by attached and future readers, until a new
// writer replaces it. Further calls return ErrClosed. Close must not run
// concurrently with Write.
func (w *BlackboardWriter[T]) Close() error {
	if w.v.m == nil {
		return ErrClosed
	}
	err := w.v.close()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Blackboard is a read-only view of a blackboard file. Read may be called
// from any number of goroutines at once; Close must not run concurrently
// with Read (after Close returns, every call returns ErrClosed).
type Blackboard[T any] struct {
	v bbView
}

// OpenBlackboard maps the blackboard at path read-only. It validates the
// magic (ErrMagic), the version (ErrVersion), that value_size equals
// sizeof(T) (ErrType), slot_size (ErrCorrupt), slot_count (ErrCorrupt when
// 0) and that the slots fit in the file (ErrTruncated); every failure is a
// *FieldError naming the field.
func OpenBlackboard[T any](path string) (*Blackboard[T], error) {
	if err := checkType[T](); err != nil {
		return nil, err
	}
	f, m, err := openMapped(path, false, bbHeaderSize)
	if err != nil {
		return nil, fmt.Errorf("open blackboard %s: %w", path, err)
	}
	f.Close() // the mapping outlives the descriptor; readers hold no lock
	v, err := bbValidate(m, uint64(sizeOf[T]()), fmt.Sprintf("%T", *new(T)))
	if err != nil {
		m.unmap()
		return nil, fmt.Errorf("open blackboard %s: %w", path, err)
	}
	return &Blackboard[T]{v: v}, nil
}

// bbValidate checks a mapped blackboard header against the reader's value
// size. m holds at least the header (openMapped checked the file size).
func bbValidate(m *mapping, valueSize uint64, typeName string) (bbView, error) {
	if magic := m.u64(bbOffMagic).Load(); magic != bbMagic {
		return bbView{}, fieldErr(ErrMagic, "magic", magic, "want %#x (\"RINGBBOR\"); 0 means the creator has not finished", uint64(bbMagic))
	}
	if ver := m.u32(bbOffVersion).Load(); ver != bbVersion {
		return bbView{}, fieldErr(ErrVersion, "version", uint64(ver), "this reader understands blackboard version %d", bbVersion)
	}
	if vs := uint64(m.u32(bbOffValueSize).Load()); vs != valueSize {
		return bbView{}, fieldErr(ErrType, "value_size", vs, "reader type %s is %d bytes", typeName, valueSize)
	}
	slotSize := uint64(m.u32(bbOffSlotSize).Load())
	if want := bbSlotSize(valueSize); slotSize != want {
		return bbView{}, fieldErr(ErrCorrupt, "slot_size", slotSize, "want round_up(8 + value_size, 64) = %d", want)
	}
	slots := uint64(m.u32(bbOffSlotCount).Load())
	if slots == 0 {
		return bbView{}, fieldErr(ErrCorrupt, "slot_count", 0, "a blackboard has at least one slot")
	}
	fileSize := uint64(len(m.data))
	if need := bbHeaderSize + slots*slotSize; need > fileSize {
		return bbView{}, fieldErr(ErrTruncated, "slot_count", slots, "%d slots of %d bytes need %d bytes; the file has %d",
			slots, slotSize, need, fileSize)
	}
	return bbView{m: m, slots: slots, slotSize: slotSize, keys: int(slots)}, nil
}

// Read copies the latest value of key into *v. ok is false (and *v is left
// untouched) when the key was never written. It retries while the slot is
// being written or changes under the copy, and returns ErrStalledWriter
// (naming the key) if the slot stays mid-write for longer than
// StallTimeout; on an error *v is unspecified. Read never allocates on
// success: the clock is consulted only every 1024 retries.
func (b *Blackboard[T]) Read(key int, v *T) (ok bool, err error) {
	off, err := b.v.slot(key)
	if err != nil {
		return false, err
	}
	if v == nil {
		return false, fmt.Errorf("%w: nil value", ErrInvalid)
	}
	// Fast path: one stable copy, no loop.
	word := b.v.m.u64(off)
	dst := bytesOf(v)
	if seq := word.Load(); seq&1 == 0 {
		if seq == 0 {
			return false, nil
		}
		b.v.m.loadWords(dst, off+bbSeqSize)
		if word.Load() == seq {
			return true, nil
		}
	}
	return b.v.readSlow(key, off, dst)
}

// readSlow is Read's retry loop, for a slot being written or changing
// under the copy.
func (v *bbView) readSlow(key int, off uint64, dst []byte) (bool, error) {
	word := v.m.u64(off)
	var (
		spins      uint32
		stallSeq   uint64 // odd word seen at the last clock check, 0 if none
		stallSince time.Time
	)
	for {
		seq := word.Load()
		if seq == 0 { // cannot happen (the word never returns to 0); be safe
			return false, nil
		}
		if seq&1 == 0 {
			v.m.loadWords(dst, off+bbSeqSize)
			if word.Load() == seq {
				return true, nil
			}
		}
		if spins++; spins%bbSpinCheck != 0 {
			continue
		}
		if seq&1 == 0 {
			// Changing under us but not stuck: the writer is busy.
			stallSeq = 0
		} else if now := time.Now(); seq != stallSeq {
			stallSeq, stallSince = seq, now
		} else if d := now.Sub(stallSince); d > StallTimeout {
			return false, fmt.Errorf("%w: blackboard key %d: seqlock word %d odd for %v (over %v)",
				ErrStalledWriter, key, seq, d.Round(time.Millisecond), StallTimeout)
		}
		runtime.Gosched() // let an in-process writer finish
	}
}

// Slots returns the number of keys. It keeps answering after Close.
func (b *Blackboard[T]) Slots() int { return b.v.keys }

// Close unmaps the blackboard. Further calls return ErrClosed.
func (b *Blackboard[T]) Close() error {
	if b.v.m == nil {
		return ErrClosed
	}
	return b.v.close()
}
