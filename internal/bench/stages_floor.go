package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringfire/ringfire/internal/bench/report"
	"github.com/ringfire/ringfire/internal/bench/role"
	"github.com/ringfire/ringfire/internal/idle"
	"github.com/ringfire/ringfire/shm"
)

// The stages' floor: what the thread layouts of the stages cost with no
// network, no socket and no ringfire code. Relays, each a hot loop on a
// locked thread of its own, pass the source ring's records on through
// rings in /dev/shm as the stages' endpoints do, polling and calling
// sched_yield after a pass that found nothing (the yield phase in which
// adaptive's loops spend the stages). All four paths at once:
//
//	S ─▶ sender ─┬▶ X ─▶ same-host mirror ─▶ X′             (read)
//	             └▶ Y ─▶ remote mirror ───┬▶ Y′           (read)
//	                                      └▶ H ─▶ leaf ─▶ H′ (read)
//
// The remote mirror writes H itself, as a hub's mirror hands its records
// to the hub's sender on its own thread (the sender then sleeps), so the
// floor has the same five busy threads as the stages, the bench's pushing
// and reading one included. A path alone is its own part of the drawing:
// S ─▶ sender ─▶ Y ─▶ mirror ─▶ Y′ (three busy threads), or the hub's
// S ─▶ sender ─▶ Y ─▶ hub's mirror ─▶ H ─▶ leaf ─▶ H′ (four). A row's
// distance above its floor is what the sockets and ringfire's own work
// add; the hub's floor against a mirror's alone is what one more busy
// thread on two cores costs before any network.

// floorHop is one relay: it copies every record of in into each of outs.
type floorHop struct {
	in   *shm.Reader
	outs []*shm.Writer
}

// floorRings are the floor's rings, in a directory of their own.
type floorRings struct {
	dir     string
	writers map[string]*shm.Writer
	readers []*shm.Reader
}

// floorNames are the floor's rings: S the source, X, Y and H what the
// sender and the hub's mirror write, the primed ones the mirrors' rings.
var floorNames = []string{"S", "X", "X2", "Y", "Y2", "H", "H2"}

// create makes every ring of floorNames.
func (f *floorRings) create(size int) error {
	for _, name := range floorNames {
		w, err := shm.Create(filepath.Join(f.dir, name), shm.RingConfig{PayloadSize: size, Capacity: 1 << 16}, shm.CreateOptions{Replace: true})
		if err != nil {
			return err
		}
		f.writers[name] = w
	}
	return nil
}

// read opens a reader of ring name from its oldest record.
func (f *floorRings) read(name string) (*shm.Reader, error) {
	rd, err := shm.OpenReader(filepath.Join(f.dir, name), shm.ReadOptions{Start: shm.StartOldest, NoRegister: true})
	if err == nil {
		f.readers = append(f.readers, rd)
	}
	return rd, err
}

func (f *floorRings) close() {
	for _, rd := range f.readers {
		rd.Close()
	}
	for _, w := range f.writers {
		w.Close()
	}
	os.RemoveAll(f.dir)
}

// floorLayout is one thread layout of the floor: its relays (each the
// ring it reads, then the rings it writes), the rings the bench reads
// (the first unnamed: a reader the stages have but report no row of) and
// the rows they are the floor of.
type floorLayout struct {
	hops  [][]string
	reads []string
	names []string
}

// floorLayouts are the stages' thread layouts: all four paths at once
// (five busy threads, the bench's one included), a mirror alone (three:
// the same-host and the other-host path alone have the same layout) and
// the hub alone (four: the hub's mirror writes H itself).
var floorLayouts = []floorLayout{
	{
		hops:  [][]string{{"S", "X", "Y"}, {"X", "X2"}, {"Y", "Y2", "H"}, {"H", "H2"}},
		reads: []string{"S", "X2", "Y2", "H2"}, // S as the stages' source-host reader
		names: []string{"", "mirror, same host", "mirror, other host", "hub → leaf"},
	},
	{
		hops:  [][]string{{"S", "Y"}, {"Y", "Y2"}},
		reads: []string{"Y2"},
		names: []string{"a mirror alone (same host or other host)"},
	},
	{
		hops:  [][]string{{"S", "Y"}, {"Y", "Y2", "H"}, {"H", "H2"}},
		reads: []string{"H2"},
		names: []string{"hub → leaf, alone"},
	},
}

// stagesFloor measures the floor of the stages' rows at rate for d, each
// layout of floorLayouts in turn: the bench's reads, named after the rows
// they are the floor of.
func (r *rig) stagesFloor(size int, d time.Duration, rate int) ([]report.Latency, error) {
	var out []report.Latency
	for _, lay := range floorLayouts {
		ls, err := r.floorOf(lay, size, d, rate)
		out = append(out, ls...)
		if err != nil {
			return out, fmt.Errorf("bench: stages floor: %w", err)
		}
	}
	return out, nil
}

// floorOf measures one layout in rings of a directory of its own.
func (r *rig) floorOf(lay floorLayout, size int, d time.Duration, rate int) ([]report.Latency, error) {
	dir, err := os.MkdirTemp(r.dir, "floor-")
	if err != nil {
		return nil, err
	}
	f := &floorRings{dir: dir, writers: map[string]*shm.Writer{}}
	defer f.close()
	hops, reads, err := f.layout(lay, size)
	if err != nil {
		return nil, err
	}
	src := &source{w: f.writers["S"], rec: make([]byte, size)}
	stop := runFloor(hops, size)
	hs, err := r.measure(src, reads, d, rate)
	stop()
	if err != nil {
		return nil, err
	}
	for _, name := range lay.reads { // measure's drain gave the relays time
		if got, want := f.writers[name].Next(), src.w.Next(); got != want {
			return nil, fmt.Errorf("ring %s has %d records of %d: a relay fell behind", name, got-1, want-1)
		}
	}
	var out []report.Latency
	for i, h := range hs {
		if lay.names[i] != "" {
			out = append(out, report.Latency{Name: fmt.Sprintf("floor of %s: the hand-offs alone at %s/s", lay.names[i], report.FormatSI(float64(rate))), Lat: h.Percentiles()})
		}
	}
	return out, nil
}

// layout creates the floor's rings and returns lay's relays and readers.
func (f *floorRings) layout(lay floorLayout, size int) ([]floorHop, []*shm.Reader, error) {
	if err := f.create(size); err != nil {
		return nil, nil, err
	}
	var hops []floorHop
	for _, h := range lay.hops {
		rd, err := f.read(h[0])
		if err != nil {
			return nil, nil, err
		}
		hop := floorHop{in: rd}
		for _, o := range h[1:] {
			hop.outs = append(hop.outs, f.writers[o])
		}
		hops = append(hops, hop)
	}
	var reads []*shm.Reader
	for _, name := range lay.reads {
		rd, err := f.read(name)
		if err != nil {
			return nil, nil, err
		}
		reads = append(reads, rd)
	}
	return hops, reads, nil
}

// runFloor starts a hot loop per hop and returns what stops them all.
func runFloor(hops []floorHop, size int) (stop func()) {
	var done atomic.Bool
	var wg sync.WaitGroup
	for _, h := range hops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if unlock, err := idle.LockThread(-1); err == nil {
				defer unlock()
			}
			h.run(&done, make([]byte, size))
		}()
	}
	return func() { done.Store(true); wg.Wait() }
}

// run copies until done is set, yielding after a pass that found nothing.
func (h floorHop) run(done *atomic.Bool, buf []byte) {
	yield := idle.NewIdler(idle.Strategy{Mode: idle.Yield}, nil)
	for !done.Load() {
		// Lossy rings: Push fails only once closed, after done.
		if moved, _ := role.CopyRecords(buf, h.in, 64, h.outs...); !moved {
			yield.Idle(0)
		}
	}
}
