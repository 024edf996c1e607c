package archive

import "sync/atomic"

// WriterStats counts a Writer's work. Last, Records and Bytes are as of
// the last Flush (the writer's own Flush when its buffer fills).
type WriterStats struct {
	Epoch      uint64 // the epoch being written
	Last       uint64 // its last sequence written
	Epochs     uint64 // epochs begun by this writer
	Records    uint64 // records appended
	Gaps       uint64 // gap entries appended
	GapRecords uint64 // sequences they cover
	Bytes      uint64 // entry bytes appended
	Flushes    uint64 // writes of the buffer
	Syncs      uint64 // fdatasync calls
	Sealed     uint64 // segments sealed
	Removed    uint64 // sealed segments removed by retention
	TornBytes  uint64 // bytes of a torn tail cut at open
	// Compressed counts the sealed segments compressed (Options.Compress,
	// on the compressor's goroutine); CompressErrors those left plain by
	// an error (whole and readable).
	Compressed, CompressErrors uint64
	// WriteErrors counts the errors that broke the writer (a full disk).
	WriteErrors uint64
	// Direct says the segment being written bypasses the page cache
	// (O_DIRECT: Options.PageCache unset, and the filesystem takes it).
	Direct bool
}

// writerCounters are a Writer's counters: its goroutine Adds and Stores,
// Stats Loads from any goroutine.
type writerCounters struct {
	epoch, last                            atomic.Uint64
	epochs, records, gaps, gapRecords      atomic.Uint64
	bytes, flushes, syncs, sealed, removed atomic.Uint64
	tornBytes, writeErrors                 atomic.Uint64
	direct                                 atomic.Bool
}

// Stats returns the writer's counters; safe from any goroutine.
func (w *Writer) Stats() WriterStats {
	c := &w.st
	st := WriterStats{Epoch: c.epoch.Load(), Last: c.last.Load(), Epochs: c.epochs.Load(), Records: c.records.Load(),
		Gaps: c.gaps.Load(), GapRecords: c.gapRecords.Load(), Bytes: c.bytes.Load(), Flushes: c.flushes.Load(),
		Syncs: c.syncs.Load(), Sealed: c.sealed.Load(), Removed: c.removed.Load(), TornBytes: c.tornBytes.Load(),
		WriteErrors: c.writeErrors.Load(), Direct: c.direct.Load()}
	if w.comp != nil {
		st.Compressed, st.CompressErrors = w.comp.compressed.Load(), w.comp.errs.Load()
	}
	return st
}

// readStats are a Reader's counters (Added by its cursors).
type readStats struct {
	blocks, corrupt atomic.Uint64
}

// ReaderStats counts a Reader's work.
type ReaderStats struct {
	// Blocks is the compressed blocks its cursors decompressed; Corrupt
	// the errors wrapping ErrCorrupt they returned (bytes no writer made,
	// a file cut while mapped).
	Blocks, Corrupt uint64
}

// Stats returns the reader's counters; safe from any goroutine.
func (r *Reader) Stats() ReaderStats {
	return ReaderStats{Blocks: r.st.blocks.Load(), Corrupt: r.st.corrupt.Load()}
}
