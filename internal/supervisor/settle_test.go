package supervisor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A run file in two halves: the first half parses on its own (one table
// fewer), which a reload must never apply.
const (
	firstHalf  = "[[serve]]\nring = \"/dev/shm/a\"\nbind = \"127.0.0.1:7400\"\n"
	secondHalf = "\n[[serve]]\nring = \"/dev/shm/b\"\nbind = \"127.0.0.1:7401\"\n"
)

// settleClock is a Settle whose clock starts at base and moves only when
// Read sleeps; each sleep first calls hook with its number (1, 2, ...).
func settleClock(base time.Time, hook func(n int)) (*Settle, *int) {
	n := 0
	offset := time.Duration(0)
	s := &Settle{Quiet: time.Second, Max: 10 * time.Second,
		now: func() time.Time { return base.Add(offset) },
		sleep: func(ctx context.Context, d time.Duration) bool {
			n++
			hook(n)
			offset += d
			return ctx.Err() == nil
		}}
	return s, &n
}

// readInto is a read function storing path's contents in *data.
func readInto(path string, data *string) func() error {
	return func() error {
		b, err := os.ReadFile(path)
		*data = string(b)
		return err
	}
}

// A file rewritten in place in two halves, its reader woken between them:
// Read waits and reads the whole file, never the half that parses.
func TestSettleWaitsForTheWholeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ringfire.toml")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(firstHalf); err != nil {
		t.Fatal(err)
	}
	if c, err := Parse(path, []byte(firstHalf)); err != nil || len(c.Tables) != 1 {
		t.Fatalf("the first half does not parse to one table: %v", err)
	}
	s, sleeps := settleClock(time.Now(), func(n int) {
		if n == 1 {
			if _, err := f.WriteString(secondHalf); err != nil {
				t.Error(err)
			}
		}
	})
	var ages []time.Duration
	s.Waiting = func(age time.Duration) { ages = append(ages, age) }
	var data string
	if err := s.Read(context.Background(), path, readInto(path, &data)); err != nil {
		t.Fatal(err)
	}
	if data != firstHalf+secondHalf {
		t.Fatalf("read %q, want the whole file", data)
	}
	if *sleeps < 1 || len(ages) != *sleeps || ages[0] >= time.Second {
		t.Fatalf("%d waits, ages %v: want one at least, the first for a change under a second old", *sleeps, ages)
	}
}

// A file whose last change is Quiet old is read at once; one changed
// while read is read again once settled.
func TestSettleRereadsAFileChangedWhileRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ringfire.toml")
	if err := os.WriteFile(path, []byte(firstHalf), 0o644); err != nil {
		t.Fatal(err)
	}
	s, sleeps := settleClock(time.Now().Add(time.Hour), func(int) {})
	var data string
	if err := s.Read(context.Background(), path, readInto(path, &data)); err != nil || data != firstHalf || *sleeps != 0 {
		t.Fatalf("settled file: %v, %d waits, read %q", err, *sleeps, data)
	}
	reads := 0
	err := s.Read(context.Background(), path, func() error {
		reads++
		if reads == 1 {
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteString(secondHalf)
			return err
		}
		return readInto(path, &data)()
	})
	if err != nil || reads != 2 || data != firstHalf+secondHalf {
		t.Fatalf("changed while read: %v, %d reads, read %q", err, reads, data)
	}
}

// A change time ahead of the clock: the file is read once seen unchanged
// for Quiet.
func TestSettleFutureChangeTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ringfire.toml")
	if err := os.WriteFile(path, []byte(firstHalf), 0o644); err != nil {
		t.Fatal(err)
	}
	s, sleeps := settleClock(time.Now().Add(-time.Hour), func(int) {})
	var data string
	if err := s.Read(context.Background(), path, readInto(path, &data)); err != nil || data != firstHalf || *sleeps != 1 {
		t.Fatalf("%v, %d waits, read %q", err, *sleeps, data)
	}
}

// A file that never stops changing is ErrUnsettled after Max, unread; a
// context that ends stops the wait; a missing file is stat's error. (The
// clock is an hour behind the files' change times, so that only what Read
// sees counts: the writes between its waits happen at the clock's start.)
func TestSettleGivesUp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ringfire.toml")
	if err := os.WriteFile(path, []byte(firstHalf), 0o644); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Hour)
	s, sleeps := settleClock(past, func(n int) {
		if err := os.WriteFile(path, []byte(strings.Repeat("#\n", n)), 0o644); err != nil {
			t.Error(err)
		}
	})
	read := func() error { return errors.New("read a file still changing") }
	err := s.Read(context.Background(), path, read)
	if !errors.Is(err, ErrUnsettled) || !strings.Contains(err.Error(), path) || *sleeps > 11 {
		t.Fatalf("%v after %d waits, want ErrUnsettled naming the file", err, *sleeps)
	}

	ctx, cancel := context.WithCancel(context.Background())
	s, _ = settleClock(past, func(int) { cancel() })
	if err := os.WriteFile(path, []byte(firstHalf), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Read(ctx, path, read); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if err := s.Read(context.Background(), path+".gone", read); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}
