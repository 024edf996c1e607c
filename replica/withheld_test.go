package replica_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/replica/wire"
)

// lateDatagram holds back the datagram carrying record target until the
// mirror has heard of target from a heartbeat and stepped steps more
// times, then hands it over: a datagram that is late, not lost, as
// AF_PACKET's receive ring makes the frames of a block that has not
// retired yet. It runs on the mirror's goroutine only (target and mirror
// are set before the datagram comes).
type lateDatagram struct {
	replica.Transport
	target  atomic.Uint64
	mirror  atomic.Pointer[replica.Mirror]
	held    []byte // the datagram held back (nil: none)
	after   int    // RecvBatch calls since the mirror heard of target
	handed  atomic.Bool
	steps   int
	waiting atomic.Bool // a datagram is held back
}

func (l *lateDatagram) RecvBatch(ms []replica.Message, wait time.Duration) (int, error) {
	if l.held != nil {
		if m := l.mirror.Load(); m.Stats().Heartbeat >= l.target.Load() {
			l.after++
		}
		if l.after < l.steps {
			return 0, nil // keep the mirror stepping, not parked
		}
		ms[0].N = copy(ms[0].Buf[:cap(ms[0].Buf)], l.held)
		l.held = nil
		l.waiting.Store(false)
		l.handed.Store(true)
		return 1, nil
	}
	n, err := l.Transport.RecvBatch(ms, wait)
	for i := range n {
		b := ms[i].Buf[:ms[i].N]
		h, perr := wire.ParseHeader(b, len(b))
		s := l.target.Load()
		if perr != nil || h.Kind != wire.KindData || s == 0 || l.handed.Load() || h.Seq > s || s >= h.Seq+uint64(h.Count) {
			continue
		}
		// Hold it back with everything after it in this batch.
		l.held = append([]byte(nil), b...)
		l.waiting.Store(true)
		return i, err
	}
	return n, err
}

// withholding is a lateDatagram that says so (replica.Withholder).
type withholding struct{ *lateDatagram }

func (w withholding) Withheld() bool { return w.waiting.Load() }

// TestWithheldDatagramsAreNotNaked: the datagram carrying the last record
// of a burst is late, and a heartbeat announces that record first. A
// transport that says it holds datagrams back keeps the mirror from
// NAKing them; one that does not say so costs a NAK and a retransmission
// of records that then arrive anyway (what AF_PACKET's late blocks cause
// without Withholder).
func TestWithheldDatagramsAreNotNaked(t *testing.T) {
	for _, say := range []bool{true, false} {
		name := map[bool]string{true: "withheld", false: "silent"}[say]
		t.Run(name, func(t *testing.T) {
			p, src := pairSource(t, 8192)
			scfg, mcfg := transportConfigs("unicast")
			src.serve(scfg)
			late := &lateDatagram{steps: 5}
			mcfg.Wait = replica.WaitYield
			mcfg.NewTransport = wrapMirrorUDP(func(tr replica.Transport) replica.Transport {
				late.Transport = tr
				if say {
					return withholding{late}
				}
				return late
			})
			mr := startMirror(t, p.B, p.BAddr, src, mcfg, nil)
			late.mirror.Store(mr.m)
			mr.connected()
			src.pushPaced(1000, 50, 200*time.Microsecond)
			waitDatagrams(t, mr)
			before := mr.waitFor(1000, 10*time.Second)

			late.target.Store(1200)
			src.push(200) // one burst: its last datagram carries 1200
			st := mr.waitFor(1200, 10*time.Second)
			if !late.handed.Load() {
				t.Fatalf("the datagram carrying 1200 was never held back (mirror %+v)", st)
			}
			naks, retx := st.NaksSent-before.NaksSent, st.Retransmitted-before.Retransmitted
			t.Logf("%d NAKs, %d records retransmitted", naks, retx)
			if say && (naks != 0 || retx != 0) {
				t.Fatalf("NAKed a datagram the transport said it held back: before %+v, after %+v", before, st)
			}
			if !say && naks == 0 {
				t.Fatalf("a late datagram nobody announced was not NAKed: the test shows nothing (before %+v, after %+v)", before, st)
			}
			wantAll(t, st, 1200, "")
			sameSlots(t, src.path, mr.path, 1)
		})
	}
}
