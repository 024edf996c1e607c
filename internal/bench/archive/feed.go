package archive

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"

	rfa "github.com/ringfire/ringfire/archive"
	"github.com/ringfire/ringfire/internal/synth"
)

// A feed makes the records the in-process measurements write (replay,
// seek, compression): 64 bytes each, with the time it was seen.
type feed interface {
	name() string
	// next writes the record of sequence seq into rec (Record bytes) and
	// returns its time, unix ns, never less than the last.
	next(rec []byte, seq uint64) int64
}

// feedStart is the feeds' first time: a fixed instant, so that archives
// of a run are alike.
const feedStart = int64(1_700_000_000) * 1e9

// synthFeed is what ringfire gen writes (internal/synth): sequence,
// timestamp, checksum and filler derived from the sequence, one record
// a microsecond.
type synthFeed struct{}

func (synthFeed) name() string { return "synthetic (ringfire gen)" }

func (synthFeed) next(rec []byte, seq uint64) int64 {
	t := feedStart + int64(seq)*1000
	synth.Fill(rec, seq, uint64(t))
	return t
}

// marketFeed is a realistic market-data feed: a few hundred symbols, the
// busy ones far more often (a power law), each with a price that moves a
// tick or two at a time, as integers (1/10,000ths); sizes in round lots;
// the time increasing by a few hundred nanoseconds to a few
// microseconds. Little-endian, 64 bytes:
//
//	0 time i64 (unix ns)   8 symbol [8]byte   16 price i64   24 bid i64
//	32 ask i64   40 size u32   44 side u8   45 venue u8   46 flags u16
//	48 order id u64   56 symbol's update count u32   60 zero
type marketFeed struct {
	rng    *rand.Rand
	t      int64
	order  uint64
	syms   [][8]byte
	prices []int64
	counts []uint32
	zipf   *rand.Zipf
}

// marketSymbols is how many symbols the feed quotes.
const marketSymbols = 300

func newMarketFeed() *marketFeed {
	src := rand.NewPCG(39, 1)
	m := &marketFeed{rng: rand.New(src), t: feedStart, order: 1 << 40}
	m.zipf = rand.NewZipf(m.rng, 1.1, 4, marketSymbols-1)
	for i := range marketSymbols {
		var s [8]byte
		copy(s[:], fmt.Sprintf("%c%c%c%d", 'A'+i%26, 'A'+i/26%26, 'K'+i%7, i%10))
		m.syms = append(m.syms, s)
		m.prices = append(m.prices, 10_0000+int64(m.rng.IntN(5000_0000))) // $10 to $5,010
		m.counts = append(m.counts, 0)
	}
	return m
}

func (*marketFeed) name() string { return "market data (300 symbols)" }

func (m *marketFeed) next(rec []byte, _ uint64) int64 {
	i := int(m.zipf.Uint64())
	m.t += 200 + m.rng.Int64N(3000)
	m.prices[i] += int64(m.rng.IntN(5)) - 2 // -2..+2 ticks
	m.prices[i] = max(m.prices[i], 1)
	m.counts[i]++
	m.order++
	p, spread := m.prices[i], int64(1+m.rng.IntN(3))
	le := binary.LittleEndian
	le.PutUint64(rec[0:], uint64(m.t))
	copy(rec[8:16], m.syms[i][:])
	le.PutUint64(rec[16:], uint64(p))
	le.PutUint64(rec[24:], uint64(p-spread))
	le.PutUint64(rec[32:], uint64(p+spread))
	le.PutUint32(rec[40:], uint32(100*(1+m.rng.IntN(20))))
	rec[44], rec[45] = byte(m.rng.IntN(2)), byte(m.rng.IntN(4))
	le.PutUint16(rec[46:], 0)
	le.PutUint64(rec[48:], m.order)
	le.PutUint32(rec[56:], m.counts[i])
	clear(rec[60:])
	return m.t
}

// source is the ring the in-process archives say they record.
var source = rfa.Source{Geometry: rfa.Geometry{PayloadSize: Record, Capacity: 1 << 20}, Dev: 1, Ino: 1}

// build writes n records of f into a new archive in dir with opts and
// calls each (if set) around every append that sealed a segment. It
// returns the writer's counters.
func build(dir string, n int, f feed, opts rfa.Options, sealed func(d int64)) (rfa.WriterStats, error) {
	w, err := rfa.OpenWriter(dir, opts)
	if err != nil {
		return rfa.WriterStats{}, err
	}
	rec := make([]byte, Record)
	t := f.next(rec, 1)
	if _, err := w.Begin(source, 1, t); err != nil {
		w.Close()
		return rfa.WriterStats{}, err
	}
	for seq := uint64(1); seq <= uint64(n); seq++ {
		if seq > 1 {
			t = f.next(rec, seq)
		}
		if err := appendTimed(w, seq, t, rec, sealed); err != nil {
			w.Close()
			return rfa.WriterStats{}, err
		}
	}
	if err := w.Close(); err != nil {
		return rfa.WriterStats{}, err
	}
	return w.Stats(), nil
}
