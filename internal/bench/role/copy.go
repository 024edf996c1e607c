package role

import (
	"github.com/ringfire/ringfire/shm"
)

// CopyRecords moves up to limit records of in into each of outs (buf holds
// one record) and reports whether it moved any: one pass of a relay that
// polls its rings (the rings section's echo, the stages' floor).
func CopyRecords(buf []byte, in *shm.Reader, limit int, outs ...*shm.Writer) (bool, error) {
	n := 0
	for ; n < limit; n++ {
		if _, ok := in.TryRecv(buf); !ok {
			break
		}
		for _, w := range outs {
			if _, err := w.Push(buf); err != nil {
				return n > 0, err
			}
		}
	}
	return n > 0, nil
}
