// Package synth is the synthetic record format written by `ringfire gen`
// and validated by `ringfire tail` and the replication tests.
//
// A record is at least MinSize bytes, little-endian:
//
//	seq       u64 @0   the ring sequence the record was written at
//	timestamp u64 @8   producer clock, Unix nanoseconds
//	checksum  u64 @16  hash of seq, timestamp and filler
//	filler    @24..    deterministic bytes derived from seq
//
// The checksum hashes the record as 8-byte words (skipping the checksum
// word), each step a bijection of the running state, so any damage confined
// to one word, and in particular any single flipped bit, is always detected.
// A final partial word is zero-extended: zero bytes that pad a record to a
// multiple of 8, as a ring's slot payload does, leave the checksum unchanged,
// so a record of any size checks whether it is read at its own length or as
// a whole slot payload.
//
// Fill and Check never allocate.
package synth
