package afpacket

// rxState is the receive side's state (owned by the receiving goroutine):
// one of the two rings, chosen by Config.RX.
type rxState struct {
	blocks bool      // a BlockRing (b), else a FrameRing (f)
	b      blockRing // TPACKET_V3
	f      frameRing // TPACKET_V2

	frames, bytes, released counter
}

// Receive hands out up to len(frames) received frames, each a slice of the
// receive ring valid until Release (or the next Receive, which releases
// first). It never blocks and does not allocate.
func (s *Socket) Receive(frames [][]byte) int {
	s.Release()
	var n, nbytes int
	if s.rx.blocks {
		n, nbytes = s.receiveBlocks(frames)
	} else {
		n, nbytes = s.receiveFrames(frames)
	}
	s.rx.frames.add(uint64(n))
	s.rx.bytes.add(uint64(nbytes))
	return n
}

// Release gives what Receive handed out back to the kernel: every frame
// of a frame ring; the blocks of a block ring whose frames were all handed
// out (a block partly handed out stays until its last frame is).
func (s *Socket) Release() {
	if s.rx.blocks {
		s.rx.released.add(uint64(s.releaseBlocks()))
	} else {
		s.releaseFrames()
	}
}

// Readable reports whether Receive would hand out a frame.
func (s *Socket) Readable() bool {
	if s.rx.blocks {
		return s.readableBlocks()
	}
	return s.readableFrames()
}

// Filling reports whether the kernel has put frames in the block it is
// filling, the next one Receive reads: they reach Receive only when that
// block is handed over, full or when BlockTimeout retires it, and until
// then a reader that finds the ring empty has not seen everything that
// arrived. Called by the receiving goroutine. A frame ring hands each
// frame over as soon as it is written and withholds nothing: false.
func (s *Socket) Filling() bool {
	return s.rx.blocks && s.fillingBlocks()
}
