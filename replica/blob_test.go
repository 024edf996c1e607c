package replica_test

// Blob rings (records with a blob in an arena) mirrored over TCP and
// multicast: large blobs, arenas that lap, late joins.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/ringfire/ringfire/internal/netns"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/shm"
)

// blobSource is a blob ring (uint32 metadata) served from a namespace.
// Record seq carries blobMeta(seq), a blob of size(seq) bytes of
// blobData(seq, size(seq)) and the descriptor flags blobFlags(seq).
type blobSource struct {
	*source
	p    *shm.BlobProducer[uint32]
	size func(seq uint64) int
}

func newBlobSource(t *testing.T, ns *netns.NS, addr netip.Addr, capacity, arena uint64, size func(uint64) int) *blobSource {
	t.Helper()
	path := filepath.Join(t.TempDir(), "blobsource")
	p, err := shm.NewBlobProducer[uint32](path, shm.BlobOptions{Capacity: capacity, ArenaSize: arena, SchemaSig: 0xB10B})
	if err != nil {
		t.Fatal(err)
	}
	s := &blobSource{source: &source{tb: t, ns: ns, addr: addr, path: path, w: p.Writer()}, p: p, size: size}
	s.publish = s.pushBlob
	t.Cleanup(func() { s.close(); p.Close() })
	return s
}

func blobMeta(seq uint64) uint32  { return uint32(seq*2654435761) ^ 0x5a5a }
func blobFlags(seq uint64) uint32 { return uint32(seq) * 7 }

// blobTable is random bytes; record seq's blob is a window of it starting
// at a place derived from seq, so a blob torn between two records, or
// moved, never matches.
var blobTable = func() []byte {
	b := make([]byte, 1<<19)
	rand.NewChaCha8([32]byte{'r', 'f'}).Read(b)
	return b
}()

func blobData(seq uint64, n int) []byte {
	off := (seq * 7919) % (1 << 18)
	return blobTable[off : off+uint64(n)]
}

// sizeMix returns a size function giving the records whose seq%every is
// at the size special(seq), and spreading the others over lo..hi.
func sizeMix(every, at uint64, special func(seq uint64) int, lo, hi int) func(uint64) int {
	spread := sizeBetween(lo, hi)
	return func(seq uint64) int {
		if seq%every == at {
			return special(seq)
		}
		return spread(seq)
	}
}

// sizeBetween returns a size function spreading sizes over lo..hi.
func sizeBetween(lo, hi int) func(uint64) int {
	return func(seq uint64) int { return lo + int((seq*0x9e3779b97f4a7c15)>>40)%(hi-lo+1) }
}

// pushBlob publishes record seq.
func (s *blobSource) pushBlob(seq uint64) error {
	meta := blobMeta(seq)
	if got, err := s.p.PushFlags(&meta, blobData(seq, s.size(seq)), blobFlags(seq)); err != nil || got != seq {
		return fmt.Errorf("push %d: got %d, %v", seq, got, err)
	}
	return nil
}

// checkBlob reports whether a record's metadata, length and bytes are
// those of seq.
func checkBlob(seq uint64, meta uint32, b []byte, size int) bool {
	return meta == blobMeta(seq) && bytes.Equal(b, blobData(seq, size))
}

// sameBlobs compares source and mirror record by record, from `from` to
// the source's write_seq: the metadata, descriptor length and flags, and
// the blob bytes must be equal (offsets differ: each ring has its arena).
// With lossy set, records whose blob the source arena lost are skipped, and
// records the mirror does not hold (gaps) are allowed. It returns how many
// records it compared.
func sameBlobs(t *testing.T, s *blobSource, dst string, from uint64, lossy bool) (n int) {
	t.Helper()
	openMirrored(t, s.path, dst, func(a, b *shm.Ring, w uint64) {
		t.Helper()
		pa := make([]byte, a.Layout().PayloadSize())
		pb := make([]byte, len(pa))
		ba := make([]byte, a.Layout().ArenaSize)
		bb := make([]byte, len(ba))
		for seq := max(from, a.Oldest()); seq <= w; seq++ {
			sa, _ := a.ReadSlot(seq, pa)
			sb, _ := b.ReadSlot(seq, pb)
			da, db := shm.DecodeDescriptor(pa), shm.DecodeDescriptor(pb)
			if sa != shm.SlotReady {
				t.Fatalf("source record %d: %v", seq, sa)
			}
			wa, _ := a.ReadBlob(da, ba)
			if lossy && (!wa || sb == shm.SlotHole) {
				continue
			}
			if sb != shm.SlotReady || !wa {
				t.Fatalf("record %d: mirror %v, source blob whole %v", seq, sb, wa)
			}
			wb, _ := b.ReadBlob(db, bb)
			if lossy && !wb {
				continue // the mirror's own arena lapped it
			}
			meta := binary.LittleEndian.Uint32(pa)
			if !wb || !bytes.Equal(pa[:len(pa)-shm.DescriptorSize], pb[:len(pb)-shm.DescriptorSize]) ||
				da.Len != db.Len || da.Flags != db.Flags || !bytes.Equal(ba[:da.Len], bb[:db.Len]) ||
				da.Flags != blobFlags(seq) || !checkBlob(seq, meta, bb[:db.Len], s.size(seq)) {
				t.Fatalf("record %d differs: source %+v, mirror %+v (mirror blob whole %v)", seq, da, db, wb)
			}
			n++
		}
	})
	return n
}

// readBlobs reads the ring at path with a BlobConsumer from the oldest
// record, checking every blob, and returns the sequences read.
func readBlobs(t *testing.T, s *blobSource, path string) (seqs []uint64, lapped uint64) {
	t.Helper()
	c, err := shm.NewBlobConsumer[uint32](path, shm.ReadOptions{Start: shm.StartOldest, NoRegister: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 1<<20)
	reported := false
	for {
		var meta uint32
		n, ok, err := c.TryRecv(&meta, buf)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			next, w := c.Reader().Next(), c.Reader().Ring().WriteSeq()
			if next > w {
				return seqs, c.Lapped()
			}
			// TryRecv promises ok false only when nothing is available.
			if !reported {
				t.Errorf("BlobConsumer.TryRecv: nothing available at %d (lapped %d) while write_seq is %d", next, c.Lapped(), w)
				reported = true
			}
			continue
		}
		seq := c.Seq()
		if !checkBlob(seq, meta, buf[:n], s.size(seq)) {
			t.Fatalf("mirror record %d: torn or wrong blob (meta %#x, %d bytes)", seq, meta, n)
		}
		seqs = appendIncreasing(t, seqs, seq)
	}
}

func TestBlobRingOverTCP(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	// Sizes 0..9000, plus a blob beyond a 64 KiB TCP frame every 500.
	size := sizeMix(500, 0, func(seq uint64) int { return 100_000 + int(seq) }, 0, 9000)
	src := newBlobSource(t, p.A, p.AAddr, 4096, 32<<20, size)
	src.push(1000)
	src.serve(replica.ServerConfig{})
	mr := startMirror(t, p.B, p.BAddr, src.source, replica.MirrorConfig{TCPOnly: true, From: fromOldest}, nil)
	src.pushPaced(2000, 20, 200*time.Microsecond)
	const last = 3000
	mr.waitFor(last, 5*time.Second)
	_, st := finish(t, src.srv, mr)
	if n := sameBlobs(t, src, mr.path, 1, false); n != last {
		t.Fatalf("compared %d records, want %d", n, last)
	}
	seqs, lapped := readBlobs(t, src, mr.path)
	if len(seqs) != last || lapped != 0 {
		t.Fatalf("a BlobConsumer on the mirror read %d records (lapped %d), want %d", len(seqs), lapped, last)
	}
	wantAll(t, st, last, "tcp")
}

// smallBlob is the size of the records that fit a datagram in the mixes
// of large blobs.
func smallBlob(seq uint64) int { return int(seq % 1000) }

func TestBlobRingOverMulticastLargePayloads(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	// Mostly blobs beyond a 1472-byte datagram; every fourth fits one.
	src := newBlobSource(t, p.A, p.AAddr, 1024, 16<<20, sizeMix(4, 1, smallBlob, 3000, 20000))
	src.serve(replica.ServerConfig{Multicast: mcastGroup(), MTU: replica.DefaultMTU})
	mr := startMirror(t, p.B, p.BAddr, src.source, replica.MirrorConfig{From: fromOldest}, nil)
	waitDatagrams(t, mr)
	const last = 600
	src.pushPaced(last-2, 4, 500*time.Microsecond)
	// The stream ends with two large blobs published on their own: the
	// sender skips them without sending any frame, and its heartbeat must
	// still make the mirror ask for them.
	time.Sleep(2 * time.Millisecond)
	src.push(2)
	mr.waitFor(last, 3*time.Second)
	sst, st := finish(t, src.srv, mr)
	if n := sameBlobs(t, src, mr.path, 1, false); n != last {
		t.Fatalf("compared %d records, want %d", n, last)
	}
	if seqs, _ := readBlobs(t, src, mr.path); len(seqs) != last {
		t.Fatalf("a BlobConsumer on the mirror read %d records, want %d", len(seqs), last)
	}
	wantAll(t, st, last, "udp multicast")
	// Large blobs were skipped on UDP and came over TCP in answer to NAKs.
	if sst.Skipped == 0 || sst.Frames == 0 || st.NaksSent == 0 || st.Retransmitted < sst.Skipped*9/10 {
		t.Fatalf("want skipped records sent over TCP on NAK: server %+v, mirror %+v", sst, st)
	}
}

func TestArenaLappingNeverCorrupts(t *testing.T) {
	eachMode(t, []string{"tcp", "multicast"}, func(t *testing.T, mode string) {
		p := netns.NewPair(t)
		// Every tenth blob fits a datagram, so that every burst of ten
		// ends with one (a stream ending with blobs beyond a datagram is
		// TestBlobRingOverMulticastLargePayloads' business).
		src := newBlobSource(t, p.A, p.AAddr, 1024, 64<<10, sizeMix(10, 0, smallBlob, 64, 3000))
		src.push(500) // laps the 64 KiB arena: most of these blobs are gone
		srv, mr := serveMirrored(t, p, src.source, mode, fromOldest, nil)
		waitUntil(t, 5*time.Second, "the mirror ring", func() bool { return mr.m.Stats().Connects > 0 })
		// A live reader of the mirror checks every blob it gets.
		stop, done := make(chan struct{}), make(chan error, 1)
		var live int
		go func() {
			c, err := shm.NewBlobConsumer[uint32](mr.path, shm.ReadOptions{Start: shm.StartOldest, NoRegister: true})
			if err != nil {
				done <- err
				return
			}
			defer c.Close()
			buf := make([]byte, 4096)
			for {
				select {
				case <-stop:
					done <- nil
					return
				default:
				}
				var meta uint32
				n, err := c.Recv(&meta, buf, 20*time.Millisecond)
				if errors.Is(err, shm.ErrTimeout) {
					continue
				}
				if err != nil {
					done <- err
					return
				}
				if seq := c.Seq(); !checkBlob(seq, meta, buf[:n], src.size(seq)) {
					done <- fmt.Errorf("live reader: record %d torn or wrong (meta %#x, %d bytes)", seq, meta, n)
					return
				}
				live++
			}
		}()
		const last = 4500
		src.pushPaced(last-500, 10, 100*time.Microsecond)
		mr.waitFor(last, 5*time.Second)
		close(stop)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		sst, st := finish(t, srv, mr)
		t.Logf("live reader checked %d blobs", live)
		if st.Records+st.Gaps != last || st.Gaps == 0 || st.Connects != 1 {
			t.Fatalf("mirror wrote %d and skipped %d of %d records", st.Records, st.Gaps, last)
		}
		if live == 0 || sst.GapRecords == 0 {
			t.Fatalf("live reader checked %d blobs; server announced %d lost", live, sst.GapRecords)
		}
		n := sameBlobs(t, src, mr.path, 1, true)
		seqs, _ := readBlobs(t, src, mr.path)
		if n == 0 || len(seqs) == 0 {
			t.Fatalf("compared %d records, read %d", n, len(seqs))
		}
	})
}

func TestBlobLateJoinSkipsHole(t *testing.T) {
	netns.Require(t)
	p := netns.NewPair(t)
	src := newBlobSource(t, p.A, p.AAddr, 4096, 16<<20, sizeBetween(0, 1400)) // each fits a datagram
	src.push(1000)
	src.serve(replica.ServerConfig{Multicast: mcastGroup()})
	mr := startMirror(t, p.B, p.BAddr, src.source, replica.MirrorConfig{From: replica.From{Mode: replica.FromLatest}}, nil)
	mr.waitFor(1000, 5*time.Second)
	const last = 2000
	src.pushPaced(last-1000, 20, 200*time.Microsecond)
	mr.waitFor(last, 5*time.Second)
	_, st := finish(t, src.srv, mr)
	if st.Records != last-999 || st.Gaps != 0 {
		t.Fatalf("mirror stats %+v, want records 1000..%d", st, last)
	}
	seqs, lapped := readBlobs(t, src, mr.path)
	if len(seqs) != last-999 || seqs[0] != 1000 || lapped != 999 {
		t.Fatalf("BlobConsumer from the oldest read %d records from %v, skipping %d; want 1000..%d skipping 999", len(seqs), seqs[:min(1, len(seqs))], lapped, last)
	}
	if n := sameBlobs(t, src, mr.path, 1000, false); n != last-999 {
		t.Fatalf("compared %d records", n)
	}
}
