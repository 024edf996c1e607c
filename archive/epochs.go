package archive

import (
	"errors"
	"fmt"
	"io"
)

// EpochInfo describes one epoch of an archive: the records of one ring
// (one producer's incarnation), from First to Last.
type EpochInfo struct {
	Epoch     uint64
	Source    Source
	First     uint64 // the first sequence held (a record or a gap)
	Last      uint64 // the last sequence held; First-1 when none is
	FirstTime int64  // unix ns of the first entry (0 when none)
	LastTime  int64
	Segments  []SegmentInfo
}

// SegmentInfo describes one segment file.
type SegmentInfo struct {
	Path       string
	First      uint64
	Last       uint64
	Sealed     bool // indexed, and never written again
	Compressed bool
	Size       int64 // bytes on disk of its data
	DataSize   int64 // bytes of its data uncompressed
	Records    uint64
	GapEntries uint64
}

// Epochs describes the archive's epochs, oldest first.
func (r *Reader) Epochs() ([]EpochInfo, error) {
	segs, err := listSegments(r.dir)
	if err != nil {
		return nil, err
	}
	var out []EpochInfo
	for _, s := range segs {
		x, err := r.index(s)
		if err != nil {
			return nil, fmt.Errorf("archive: %s: %w", s.data(), err)
		}
		if len(out) == 0 || out[len(out)-1].Epoch != s.epoch {
			h, err := segHeader(s, x)
			if err != nil {
				return nil, fmt.Errorf("archive: %s: %w", s.data(), err)
			}
			out = append(out, EpochInfo{Epoch: s.epoch, Source: h.Source, First: s.first})
		}
		ep := &out[len(out)-1]
		ep.Segments = append(ep.Segments, SegmentInfo{Path: s.data(), First: s.first, Last: x.last, Sealed: s.sealed,
			Compressed: s.compressed, Size: s.size, DataSize: x.size, Records: x.records, GapEntries: x.gapEntries})
		if len(x.points) > 0 {
			if ep.FirstTime == 0 {
				ep.FirstTime = x.points[0].Time
			}
			ep.Last, ep.LastTime = x.last, x.lastTime
		}
	}
	for i := range out {
		if out[i].Last == 0 {
			out[i].Last = out[i].First - 1
		}
	}
	return out, nil
}

// VerifyReport is what Verify found.
type VerifyReport struct {
	Segments   int
	Records    uint64
	Gaps       uint64 // gap entries
	GapRecords uint64 // sequences they cover
	Bytes      int64  // data bytes read (uncompressed)
	// Problems lists every segment whose bytes fail a check (a CRC, a
	// length, an index that disagrees with the data), with what failed.
	Problems []error
	// Tail is set when the unsealed last segment ends in a torn entry: a
	// write under way, or a crash the next writer recovers from.
	Tail error
}

// Verify reads every entry of every segment, checking its CRC, its
// fields and its order, and each sealed segment's index against its
// data. A problem in one segment does not stop the others being read.
func (r *Reader) Verify() (VerifyReport, error) {
	segs, err := listSegments(r.dir)
	if err != nil {
		return VerifyReport{}, err
	}
	var rep VerifyReport
	for i, s := range segs {
		rep.Segments++
		err := r.verifySegment(s, &rep)
		switch {
		case err == nil:
		case !s.sealed && i == len(segs)-1 && errors.Is(err, errTorn):
			rep.Tail = fmt.Errorf("%s: %w", s.data(), err)
		default:
			rep.Problems = append(rep.Problems, fmt.Errorf("%s: %w", s.data(), err))
		}
	}
	return rep, nil
}

func (r *Reader) verifySegment(s segment, rep *VerifyReport) error {
	var x *index
	if s.sealed {
		var err error
		if x, err = readIndex(s); err != nil {
			return err
		}
	}
	d, err := openData(s, x, &r.st)
	if err != nil {
		return err
	}
	defer d.Close()
	h, err := readHeader(d)
	if err != nil {
		return err
	}
	if h.Epoch != s.epoch || h.First != s.first {
		return fmt.Errorf("%w: header says epoch %d from %d, the name epoch %d from %d", ErrCorrupt, h.Epoch, h.First, s.epoch, s.first)
	}
	got, end, err := scanAll(d, h)
	rep.Records += got.records
	rep.Gaps += got.gapEntries
	rep.GapRecords += got.gapRecords
	rep.Bytes += end
	if err != nil {
		return err
	}
	if x != nil {
		if _, err := io.ReadFull(io.NewSectionReader(d, end, 1), make([]byte, 1)); err == nil {
			return fmt.Errorf("%w: data past the last entry at %d", ErrCorrupt, end)
		}
		if got.size != x.size || got.last != x.last || got.records != x.records || got.gapEntries != x.gapEntries || len(got.points) != len(x.points) {
			return fmt.Errorf("%w: index says %d bytes to %d (%d records, %d gaps), data %d bytes to %d (%d records, %d gaps)",
				ErrCorrupt, x.size, x.last, x.records, x.gapEntries, got.size, got.last, got.records, got.gapEntries)
		}
	}
	return nil
}
