// Package pace drives the bench's open loops: Push pushes records at a
// fixed rate without waiting for anything, ZeroLoss steps a sweep of
// rates up to the second that loses, and Until polls a condition with a
// bound (a mirror live, a ring made, a process ready).
//
//	ZeroLoss(rates, step) ── for each rate: step(rate) ── Push(d, rate, push, between)
//	                                                      Until(DrainWait, the mirrors hold it)
//	  ◀── the last lossless rate (Capped at the top of the sweep)
//
// The stress section's sweep runs in the measuring process; the rings
// section's pushes into rings that ringfire run processes serve.
package pace
