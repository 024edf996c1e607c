package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ringfire/ringfire/shm"
)

// maxSize is the --max-size flag of the commands that create ring files
// (gen, mirror): bytes, with an optional K, M, G or T suffix (powers of
// 1024); 0 lifts the limit (the file must still fit the filesystem's free
// space). Its value is shm's CreateOptions.MaxSize.
type maxSize int64

func (m *maxSize) String() string {
	if m == nil {
		return ""
	}
	return formatSize(int64(*m))
}

func (m *maxSize) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	*m = maxSize(n)
	return nil
}

// opt is the value of CreateOptions.MaxSize: 0 (no limit) becomes -1.
func (m maxSize) opt() int64 {
	if m == 0 {
		return -1
	}
	return int64(m)
}

var sizeUnits = []struct {
	suffix string
	shift  uint
}{{"T", 40}, {"G", 30}, {"M", 20}, {"K", 10}}

// parseSize parses a byte count with an optional K, M, G or T suffix.
func parseSize(s string) (int64, error) {
	num, shift := strings.ToUpper(strings.TrimSpace(s)), uint(0)
	for _, u := range sizeUnits {
		if rest, ok := strings.CutSuffix(num, u.suffix); ok {
			num, shift = rest, u.shift
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > (1<<62)>>shift {
		return 0, fmt.Errorf("%q: want bytes, with an optional K, M, G or T suffix", s)
	}
	return n << shift, nil
}

// formatSize prints n with the largest suffix that divides it.
func formatSize(n int64) string {
	for _, u := range sizeUnits {
		if n != 0 && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// defaultMaxSize is --max-size's default: shm's limit.
func defaultMaxSize() maxSize { return maxSize(shm.DefaultMaxSize) }
