package shm_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ringfire/ringfire/shm"
)

type Ticker struct {
	AssetID   uint32
	_         uint32
	BidPx     uint64
	AskPx     uint64
	Timestamp uint64
}

func ExampleNewProducer() {
	dir, _ := os.MkdirTemp("", "ringfire-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "ticks") // usually /dev/shm/<name>

	p, err := shm.NewProducer[Ticker](path, shm.ProducerOptions{Capacity: 1024})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	c, err := shm.NewConsumer[Ticker](path, shm.ReadOptions{Start: shm.StartOldest})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	p.Push(&Ticker{AssetID: 42, BidPx: 64_250, AskPx: 64_251})
	var t Ticker
	if c.TryRecv(&t) {
		fmt.Println(c.Seq(), t.AssetID, t.BidPx, t.AskPx)
	}
	// Output: 1 42 64250 64251
}

func ExampleNewBlobProducer() {
	dir, _ := os.MkdirTemp("", "ringfire-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "books")

	p, err := shm.NewBlobProducer[uint32](path, shm.BlobOptions{Capacity: 1024, ArenaSize: 1 << 20})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	c, err := shm.NewBlobConsumer[uint32](path, shm.ReadOptions{Start: shm.StartOldest})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	symbol := uint32(42)
	p.Push(&symbol, []byte(`{"bids":[[82000.5,1.2]]}`))
	p.Push(&symbol, []byte(`{"asks":[[82001.0,0.8]]}`))

	var meta uint32
	buf := make([]byte, 4096)
	if n, ok, err := c.TryRecv(&meta, buf); ok && err == nil {
		fmt.Println(meta, string(buf[:n]))
	}
	// View inspects the blob in place; the result is discarded if the
	// arena laps it meanwhile.
	size, ok, _ := shm.View(c, func(sym *uint32, b []byte) int { return len(b) })
	fmt.Println(size, ok)
	// Output:
	// 42 {"bids":[[82000.5,1.2]]}
	// 24 true
}

func ExampleCreateBlackboard() {
	dir, _ := os.MkdirTemp("", "ringfire-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "bbo")

	type BBO struct{ Bid, Ask uint64 }
	w, err := shm.CreateBlackboard[BBO](path, 512, shm.BlackboardOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close()
	w.Write(7, &BBO{Bid: 100, Ask: 101})

	b, err := shm.OpenBlackboard[BBO](path)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	var v BBO
	ok, err := b.Read(7, &v)
	fmt.Println(ok, err, v.Bid, v.Ask)
	ok, _ = b.Read(8, &v)
	fmt.Println(ok)
	// Output:
	// true <nil> 100 101
	// false
}

func ExampleOpenReader() {
	dir, _ := os.MkdirTemp("", "ringfire-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "raw")

	// The byte-oriented layer: any element type, as replica uses it.
	w, err := shm.Create(path, shm.RingConfig{PayloadSize: 24, Capacity: 8}, shm.CreateOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close()
	for i := range 10 {
		w.Push([]byte{byte(i)})
	}
	rd, err := shm.OpenReader(path, shm.ReadOptions{Start: shm.StartSequence, Sequence: 1, NoRegister: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rd.Close()
	buf := make([]byte, 24)
	seq, ok := rd.TryRecv(buf)
	fmt.Println(seq, ok, buf[0], rd.Lapped())
	// Output: 3 true 2 2
}
