package replica_test

import (
	"testing"
	"time"

	"github.com/ringfire/ringfire/archive"
	"github.com/ringfire/ringfire/internal/faulty"
	"github.com/ringfire/ringfire/internal/synth"
	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/replica/wire"
)

// TestArchiveCatchUp: TestHistoryCatchUpFromOverwritten with a real
// archive on disk (package archive's History, as serve --archive wires
// it) in place of the in-memory one: a mirror started at sequence 100 of
// a 1,024-slot ring that took 50,000 records gets every one of them and
// the 20,000 pushed during its catch-up, while datagrams lose one in 13.
func TestArchiveCatchUp(t *testing.T) {
	eachMode(t, []string{"tcp", "multicast", "xdp-unicast"}, func(t *testing.T, mode string) {
		p, src := pairSource(t, histRing)
		dir := t.TempDir()
		w, err := archive.OpenWriter(dir, archive.Options{SegmentSize: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		id, err := archive.SourceOf(src.w.Ring())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Begin(id, src.w.Next(), time.Now().UnixNano()); err != nil {
			t.Fatal(err)
		}
		src.publish = func(seq uint64) error { // the recorder, hooked on the pushes: it never falls behind
			synth.Fill(src.rec, seq, uint64(time.Now().UnixNano()))
			if _, err := src.w.Push(src.rec); err != nil {
				return err
			}
			if err := w.Append(seq, time.Now().UnixNano(), src.rec); err != nil {
				return err
			}
			return w.Flush()
		}
		src.push(50000)
		r, err := archive.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		var data uint64
		faults := &faulty.Faults{Drop: func(k wire.Kind, _, _ uint64) bool {
			if k != wire.KindData {
				return false
			}
			data++
			return data%13 == 0
		}}
		const from = 100
		srv, mr := serveMirrored(t, p, src, mode, replica.From{Mode: replica.FromSeq, Seq: from}, faults, withHistory(r.History(id)))
		mr.connected()
		src.pushPaced(20000, 20, time.Millisecond)
		last := src.w.Next() - 1
		mr.waitFor(last, 60*time.Second)
		sst, st := finish(t, srv, mr)
		if want := last - from + 1; st.Records != want || st.Gaps != 0 || st.Duplicates != 0 || !st.History {
			t.Fatalf("mirror: %d records, %d gaps, %d duplicates, history %v; want %d records, no gap or duplicate", st.Records, st.Gaps, st.Duplicates, st.History, want)
		}
		if sst.History.Records < 40000 || sst.History.Errors != 0 {
			t.Fatalf("server: %+v: want the archive to carry the overwritten records", sst.History)
		}
		sameSlots(t, src.path, mr.path, 1)
	})
}
