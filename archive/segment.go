package archive

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// A segment of epoch E starting at sequence S is the file
// "EEEEEEEEEEEEEEEE-SSSSSSSSSSSSSSSS.rfa" (hex, so that names sort as
// segments do); sealed, it has an index beside it (".rfi"), and
// compressed, its data is ".rfa.zst" instead. Only the last segment of
// an archive is ever unsealed: the one the writer appends to.
const (
	dataExt = ".rfa"
	zstExt  = ".rfa.zst"
	idxExt  = ".rfi"
	tmpExt  = ".tmp"
	lockExt = "lock"
)

// segment is one segment file as listed.
type segment struct {
	epoch, first uint64
	base         string // dir/EEEE-SSSS, without extension
	compressed   bool   // its data is base+zstExt
	sealed       bool   // base+idxExt exists
	size         int64  // bytes of the data file as listed
}

func (s segment) data() string {
	if s.compressed {
		return s.base + zstExt
	}
	return s.base + dataExt
}

func segBase(dir string, epoch, first uint64) string {
	return filepath.Join(dir, fmt.Sprintf("%016x-%016x", epoch, first))
}

// parseSegName parses "EEEE-SSSS" (the name without extension).
func parseSegName(name string) (epoch, first uint64, ok bool) {
	if len(name) != 33 || name[16] != '-' {
		return 0, 0, false
	}
	epoch, err1 := strconv.ParseUint(name[:16], 16, 64)
	first, err2 := strconv.ParseUint(name[17:], 16, 64)
	return epoch, first, err1 == nil && err2 == nil && first != 0
}

// listSegments returns the archive's segments in order (epoch, then first
// sequence). A segment with both a plain and a compressed data file (a
// crash while compressing it) is listed with the plain one, which is
// whole: the compressed file is complete only once the plain one is gone.
//
// A directory read while the writer creates and renames files may miss
// one, so the directory is read until two readings agree.
func listSegments(dir string) ([]segment, error) {
	prev, err := listOnce(dir)
	for i := 0; err == nil && i < 8; i++ {
		var segs []segment
		if segs, err = listOnce(dir); err == nil && slices.Equal(segs, prev) {
			return segs, nil
		}
		prev = segs
	}
	return prev, err
}

func listOnce(dir string) ([]segment, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	byBase := map[string]*segment{}
	var out []*segment
	for _, e := range ents {
		name := e.Name()
		stem, ext, ok := splitExt(name)
		if !ok {
			continue
		}
		ep, first, ok := parseSegName(stem)
		if !ok {
			continue
		}
		s := byBase[stem]
		if s == nil {
			s = &segment{epoch: ep, first: first, base: filepath.Join(dir, stem), compressed: true}
			byBase[stem] = s
			out = append(out, s)
		}
		switch ext {
		case idxExt:
			s.sealed = true
		case dataExt:
			s.compressed = false
			s.size = sizeOf(e)
		case zstExt:
			if s.size == 0 {
				s.size = sizeOf(e)
			}
		}
	}
	segs := make([]segment, 0, len(out))
	for _, s := range out {
		if s.compressed && !fileExists(s.base+zstExt) {
			continue // an index alone: its data was removed (retention under way)
		}
		segs = append(segs, *s)
	}
	slices.SortFunc(segs, func(a, b segment) int {
		if a.epoch != b.epoch {
			return cmpU64(a.epoch, b.epoch)
		}
		return cmpU64(a.first, b.first)
	})
	return segs, nil
}

func splitExt(name string) (stem, ext string, ok bool) {
	for _, x := range []string{zstExt, dataExt, idxExt} {
		if strings.HasSuffix(name, x) {
			return strings.TrimSuffix(name, x), x, true
		}
	}
	return "", "", false
}

func sizeOf(e fs.DirEntry) int64 {
	if fi, err := e.Info(); err == nil {
		return fi.Size()
	}
	return 0
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// removeSegment removes a segment's files, data first: a segment listed
// by its index alone is skipped by readers.
func removeSegment(s segment) error {
	var errs []error
	for _, p := range []string{s.base + dataExt, s.base + zstExt, s.base + idxExt} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
