// Package idle is how ringfire's hot loops wait when a poll found nothing:
// the serve sender between records and the mirror's receive loop between
// datagrams. Each loop runs on its own locked OS thread and chooses, with a
// Mode, how much CPU it trades for latency:
//
//	Spin      poll again at once: lowest latency, one core per loop
//	Yield     sched_yield(2) between polls: near-spin latency that holds up
//	          when busy threads outnumber cores (every loop gives its CPU
//	          to whichever thread has work)
//	Block     sleep in the kernel in ppoll(2) on the loop's descriptors
//	          (sockets, AF_XDP rings) and its Waker's eventfd: one wake-up,
//	          no Go netpoller hand-off, no CPU while idle
//	Adaptive  the default: Spin for SpinFor after the last work (no spin
//	          by default, DefaultSpinFor), then Yield until YieldFor
//	          (DefaultYieldFor), then Block
//
// A Yield or Adaptive loop whose rounds keep finding work also yields once
// every BusyYieldEvery (Idler.Busy), so that a loop with work never holds
// its CPU for a whole scheduler slice while another loop on that CPU waits
// with work of its own. A loop that waits some other way (a server's
// sender waits on its ring) keeps a Hold for the same.
//
// Who wakes whom:
//
//	data on a descriptor ──(kernel)──▶ ppoll returns in the parked loop
//	another goroutine queues work ──Waker.Notify──▶ gen++; if parked: write eventfd
//	the loop: Round (read gen) → poll its sources → nothing → Idle:
//	          parked = 1; gen changed since Round? return : ppoll; parked = 0
//	a hot loop wakes goroutines ──Relay.Kick──▶ pending = 1; if parked: write
//	          the Relay's eventfd ──(netpoller)──▶ Relay.Run calls fire on an
//	          ordinary P (not through the hot loop's P: see Relay)
//
// Sleep is the wait of the cold paths (reconnect and restart back-offs): a
// timer that a context cancels, never a hot loop's wait.
//
// The two shared words of a Waker, gen and parked, are sync/atomic
// (sequentially consistent): the loop stores parked before it loads gen,
// a notifier adds to gen before it loads parked, so at least one of them
// sees the other and a wake-up is never lost between the loop's last poll
// and its sleep.
package idle
