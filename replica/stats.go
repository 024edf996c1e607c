package replica

import (
	"sync/atomic"

	"github.com/ringfire/ringfire/internal/idle"
)

// MirrorStats counts a mirror's activity.
type MirrorStats struct {
	Transport string // "tcp", "udp", or the datagram transport's name
	// History: the source serves this connection from its history what
	// its ring no longer holds (it acknowledged HelloHistory).
	History bool

	Frames    uint64 // DATA frames received (TCP and UDP)
	Datagrams uint64 // datagrams received
	Records   uint64 // records written to the mirror ring
	Bytes     uint64 // DATA payload bytes received

	NaksSent      uint64 // NAK frames sent
	CatchUp       uint64 // records written from TCP DATA catching up (from the ring or its History) or a TCP-only stream
	Retransmitted uint64 // records written from TCP DATA answering NAKs
	Gaps          uint64 // records the source no longer held (skipped by GAP)

	Duplicates   uint64 // datagrams (or held frames) already written or held
	Stale        uint64 // TCP frames already covered, held frames overtaken
	OtherSession uint64 // datagrams of another source session
	Malformed    uint64 // datagrams that failed to decode
	Overflow     uint64 // datagrams dropped because MaxHeld were held
	// Foreign counts datagrams from another address than the source's
	// (MirrorConfig.AnySource): dropped unread.
	Foreign uint64
	// FarAhead counts datagrams (DATA or HEARTBEAT) announcing a sequence
	// more than the ring's capacity past the last record applied: no source
	// sends those (it cannot hold them), so they are forged or confused,
	// and dropped without a NAK.
	FarAhead uint64
	// BadAuth counts datagrams of a keyed source that failed their tag
	// (forged, tampered, another key or source incarnation); Replayed
	// those whose counter was seen before (a replay, or a --dup copy).
	BadAuth, Replayed uint64
	// SourceErrors counts the connections ended for a protocol error of
	// the source (a malformed frame, a GEOMETRY that is not the canonical
	// layout, a GAP past what it announced left unbacked); SourceSilent
	// those ended because it sent nothing for MirrorConfig.SourceTimeout.
	SourceErrors, SourceSilent uint64
	// RingCuts counts sessions ended because the mirror ring's file was
	// cut under its mapping by another process (the next session starts
	// a fresh ring at the path).
	RingCuts uint64

	Held      int    // datagrams held ahead of a hole now
	Next      uint64 // next sequence the mirror will write
	Lag       uint64 // records behind the newest sequence heard of
	Resets    uint64 // fresh rings started (RESET, new layout, restarted source)
	Connects  uint64 // TCP connections made to the source
	Heartbeat uint64 // last sent sequence announced by the source

	// Wait counts how Run's loop waited when nothing had arrived: spins,
	// sched_yield calls, sleeps and what ended them (MirrorConfig.Wait).
	Wait WaitStats
	// Lines counts line A and line B of a mirror that takes two
	// (MirrorConfig.IfaceB; lines.go); zero without.
	Lines [2]LineStats
}

// WaitStats counts a hot loop's waiting (see MirrorStats.Wait).
type WaitStats = idle.Stats

// ServerStats counts a source's activity.
type ServerStats struct {
	Transport string // datagram transport: "udp", "xdp", ...; "" for TCP only
	Mirrors   int    // mirrors connected now
	Frames    uint64 // DATA frames sent (UDP frames count once, whatever the fan-out)
	Datagrams uint64 // datagrams sent (every destination, every --dup copy; counted as the send call begins)
	Records   uint64 // records sent in DATA frames over UDP
	TCPFrames uint64 // DATA frames sent over TCP (streams, catch-up, NAK answers)
	TCPRecord uint64 // records sent over TCP
	Syscalls  uint64 // sendmmsg calls

	NaksAnswered  uint64 // NAK frames answered
	Retransmitted uint64 // records sent in answer to NAKs
	Gaps          uint64 // GAP frames sent
	GapRecords    uint64 // records announced lost by GAP frames
	Heartbeats    uint64 // heartbeats sent (UDP and TCP)
	Skipped       uint64 // records too large for a datagram (sent over TCP on request)

	BadFrames   uint64 // TCP connections closed for a protocol error
	BadPunches  uint64 // PUNCH datagrams with a wrong token, session or format, or not from the session's TCP peer
	BadDatagram uint64 // other datagrams that were dropped
	Handoffs    uint64 // sender rounds run by Handoff, on a mirror's goroutine
	// DirectSends counts the sends of records a hot thread (the sender,
	// Handoff, a Loop) made itself on a parked TCP stream writer's
	// connection; SessionKicks the times it woke the writers through the
	// wake relay instead; SenderWaits the times the sender waited for
	// the ring (an idle sender waits, it never spins on a past deadline).
	DirectSends, SessionKicks, SenderWaits uint64
	// SenderBusyYields counts the sender's sched_yield calls after it had
	// found records for idle.BusyYieldEvery without waiting (adaptive and
	// yield): a busy sender lets the loops that share its CPU run.
	SenderBusyYields uint64
	// HandedSleeps counts the sender's waits, among SenderWaits, once its
	// records come by Handoff (a hub's: it no longer watches the ring, and
	// sleeps until its next heartbeat); HandedWakeups the sleeps a Handoff
	// cut short because data brought the heartbeat nearer.
	HandedSleeps, HandedWakeups uint64
	// SenderHotWaits counts the adaptive sender's waits, among
	// SenderWaits, begun hot (idle.Duty: it had been sending for at least
	// 1/idle.HotShare of its time): it yielded between polls for up to
	// idle.HotYieldFor before its futex sleep, as WaitYield does.
	SenderHotWaits uint64
	// Refused counts connections refused, or dropped before they were
	// live, for a limit: every RefusalKind. AcceptErrors counts the
	// accepts that failed for want of file descriptors or memory (Serve
	// backs off and goes on).
	Refused, AcceptErrors uint64
	// Refused by kind: past MaxConns, MaxConnsPerAddr, MaxPendingPerAddr
	// at accept; evicted from a full MaxPending pool; past the
	// HandshakeTimeout; a socket that could not be set up (RefusedOf).
	RefusedConns, RefusedAddr, RefusedAddrPending uint64
	Evicted, HandshakeTimeouts, RefusedSockets    uint64

	LastSent uint64 // last sequence sent over UDP
	WriteSeq uint64 // the ring's write_seq
	Lag      uint64 // write_seq − last sent

	// Repair is the repair budget's account (ServerConfig.RepairRate).
	Repair RepairStats
	// History counts what sessions served from ServerConfig.History.
	History HistoryStats
}

// HistoryStats counts the records sessions sent from ServerConfig.History
// (history.go): records the ring no longer held. Its frames count in
// TCPFrames and TCPRecord too, its NAK answers in Retransmitted, the GAPs
// for its holes in Gaps and GapRecords.
type HistoryStats struct {
	Records uint64 // records sent from the history
	Bytes   uint64 // bytes of the DATA frames carrying them, headers included
	Reads   uint64 // History.Read calls
	// Errors counts the reads that failed (an error, a record out of
	// order or of the wrong shape): the session sent a GAP for the rest
	// of the range, up to what the ring holds.
	Errors uint64
}

// RepairStats counts what the repair budget let through and held back
// (server_budget.go). Waits and refusals are counted once, by the bucket
// that decided them: the peer address's (the ByAddr counts) or the
// total's (the rest). Counts by address would give an attacker the
// number of series; Addresses says how many buckets there are.
type RepairStats struct {
	Bytes        uint64 // repair sent: DATA frames answering NAKs or catching up, headers included
	CatchUpBytes uint64 // of Bytes, catch-up: records the ring held when the session began, and the History's
	// NaksDeferred counts NAKs whose answer waited for the budget (the
	// mirror got it late, paced); NaksRefused those left unanswered, in
	// whole or in part, because the wait would have passed 100 ms (the
	// mirror repeats its NAK every 20 ms while the hole stays).
	NaksDeferred, NaksDeferredByAddr uint64
	NaksRefused, NaksRefusedByAddr   uint64
	// CatchUpWaits counts the waits of sessions' catch-up for the budget.
	CatchUpWaits, CatchUpWaitsByAddr uint64
	Addresses                        int // peer addresses (IPv6: /64s) with a bucket now

	// The budget in force: rates in bytes/s (0: no limit), bursts in bytes.
	Rate, AddrRate   float64
	Burst, AddrBurst int64
}

// serverCounters are ServerStats' counters. Each is only ever Added to, by
// the goroutine that did what it counts (the sender, whichever goroutine
// runs its round: frames, datagrams, records, syscalls, skipped, UDP
// heartbeats, all but syscalls and skipped counted as the send call
// begins and the datagrams it did not send taken off after it; Handoff:
// handoffs; a session's reader or writer: TCP frames and records, NAK
// answers, gaps, TCP heartbeats; serveConn: badConn; Serve and serveConn:
// refused, refusedBy; Serve: acceptErrors; punchLoop: badPunch, badDgram),
// and Loaded by Stats. They publish nothing but their count: no code
// orders other memory by them.
type serverCounters struct {
	frames, datagrams, records, tcpFrames, tcpRecords, syscalls   atomic.Uint64
	naks, retrans, gaps, gapRecords, heartbeats, skipped, badConn atomic.Uint64
	badPunch, badDgram, handoffs, refused, acceptErrors           atomic.Uint64
	// The history's (history.go): a session's reader or writer.
	histRecords, histBytes, histReads, histErrors atomic.Uint64

	refusedBy [refusalKinds]atomic.Uint64 // refused, by kind
	// repair is the repair budget, with its counters (server_budget.go).
	repair repairBudget
}

// Stats returns a snapshot of the counters.
func (s *Server) Stats() ServerStats {
	defer s.guardRing(guard()) // a scrape may come before the watcher saw a cut
	s.mu.Lock()
	n := len(s.sessions)
	s.mu.Unlock()
	st := &s.st
	out := ServerStats{Mirrors: n, Frames: st.frames.Load(), Datagrams: st.datagrams.Load(),
		Records: st.records.Load(), TCPFrames: st.tcpFrames.Load(), TCPRecord: st.tcpRecords.Load(),
		Syscalls: st.syscalls.Load(), NaksAnswered: st.naks.Load(), Retransmitted: st.retrans.Load(),
		Gaps: st.gaps.Load(), GapRecords: st.gapRecords.Load(), Heartbeats: st.heartbeats.Load(),
		Skipped: st.skipped.Load(), BadFrames: st.badConn.Load(), BadPunches: st.badPunch.Load(),
		BadDatagram: st.badDgram.Load(), Handoffs: st.handoffs.Load(), Refused: st.refused.Load(),
		AcceptErrors: st.acceptErrors.Load(), LastSent: s.lastSent.Load(), WriteSeq: s.ring.WriteSeq(),
		DirectSends: s.directSends.Load(), SessionKicks: s.sessionKicks.Load(), SenderWaits: s.senderWaits.Load(),
		SenderBusyYields: s.senderBusyYields.Load(), Repair: st.repair.stats(),
		History: HistoryStats{Records: st.histRecords.Load(), Bytes: st.histBytes.Load(),
			Reads: st.histReads.Load(), Errors: st.histErrors.Load()}}
	s.refusalStats(&out)
	if sn := s.sender.Load(); sn != nil {
		out.HandedSleeps, out.HandedWakeups = sn.hand.sleeps.Load(), sn.hand.wakeups.Load()
		out.SenderHotWaits = sn.hotWaits.Load()
	}
	if s.udp != nil {
		out.Transport = TransportName(s.udp)
	}
	if out.WriteSeq > out.LastSent && s.udp != nil {
		out.Lag = out.WriteSeq - out.LastSent
	}
	return out
}
