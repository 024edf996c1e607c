// Package archive keeps what a ring overwrote: every record of a ring, in
// segment files on disk, indexed by sequence and by time, to replay into
// a ring or to serve to a mirror that asks for records its source's ring
// no longer holds.
//
//	ring (/dev/shm) ──Recorder──▶ Writer ──▶ DIR/EEEE-SSSS.rfa  (the segment being written)
//	                                         DIR/EEEE-SSSS.rfa[.zst] + .rfi  (sealed, indexed)
//	                                                 │
//	                 Reader.Seek / SeekTime ◀────────┘──▶ Cursor.Next ──▶ replay, serve --archive
//
// An archive is a directory of segments. A segment holds a header (the
// ring's geometry and identity, the epoch, its first sequence) and
// entries: each record with its sequence and the time the recorder saw
// it, or a gap (sequences the recorder could not read: it fell a ring
// behind), framed with a length and a CRC-32C. Every sequence of an epoch
// is in the archive once, as a record or in a gap. An epoch is one ring's
// incarnation: a producer that restarts (a new file at the path) starts a
// new one, so that two streams are never mixed.
//
// A segment is sealed once it reaches Options.SegmentSize: its index
// (".rfi": a point every 64 KiB of data, sequence and time to offset) is
// written, its data compressed if asked (zstd blocks that a seek reads
// one of). A seek is a binary search over the segments' names, one over
// an index, and a scan of at most 64 KiB.
//
// Crash safety: the writer appends in large writes (whole blocks with
// O_DIRECT where the filesystem takes it) and syncs as Options.Sync says; a reopened Writer cuts a torn last entry (found by
// its length and CRC) and resumes after the last whole one. Sealing and
// compressing go through temporary files and renames.
//
// One goroutine appends (Writer, one per directory: a lock file); a
// second writes its full buffers, so that a write(2) that stalls does not
// stall the appends (the flusher), and with Options.Compress a third
// compresses what it sealed, so that the writer never waits for zstd.
// Readers and their Cursors read concurrently, also from other processes,
// and see what the writer flushed; a cursor reads a sealed plain segment
// through a read-only mapping, in place, and any other through a buffer.
//
// Files:
//
//	format.go     the segment header and entry bytes, Geometry, Source, Entry
//	segment.go    segment file names and listing
//	listing.go    a Reader's listing, kept while the directory is unchanged
//	index.go      the sealed segment's index (.rfi)
//	scan.go       reading entries in order from a segment's data
//	compress.go   zstd blocks of a sealed segment
//	compressor.go compressing sealed segments on a goroutine of its own
//	flusher.go    writing full buffers on a goroutine of its own
//	direct.go     the segment being written, opened O_DIRECT where it can be
//	mapped.go     a sealed plain segment mapped for a cursor
//	memory_unsafe.go aligned buffers, and addresses inside a mapping
//	options.go    Options and Sync
//	writer.go     Writer: Begin, Append, Gap, Flush, Close
//	seal.go       sealing a segment, recovery at open
//	retention.go  removing old sealed segments by size and age
//	reader.go     Reader: Seek, SeekTime
//	cursor.go     Cursor: Next, across segments, following a writer
//	epochs.go     Epochs and Verify
//	history.go    History: one ring's records, for serve --archive
//	recorder.go   Recorder: follows a ring into a Writer; Start, ParseStart
//	ringread.go   the Recorder's reads of the ring: records, gaps, flushes
//	replay.go     Replay: an epoch back into a (sparse) ring, paced
//	stats.go      WriterStats, ReaderStats
//	errors.go     the sentinel errors
package archive
