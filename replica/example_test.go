package replica_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ringfire/ringfire/replica"
	"github.com/ringfire/ringfire/shm"
)

// exampleSource creates a ring of 8-byte records 1..n in a temporary
// directory, each holding its own sequence number, and serves it on
// loopback TCP (TCP only: no datagrams, no namespaces needed). stop ends
// the server and removes the directory.
func exampleSource(n int) (srv *replica.Server, dir string, stop func(), err error) {
	if dir, err = os.MkdirTemp("", "ringfire-example"); err != nil {
		return nil, "", nil, err
	}
	path := filepath.Join(dir, "source")
	w, err := shm.Create(path, shm.RingConfig{PayloadSize: 8, Capacity: 1024}, shm.CreateOptions{})
	if err == nil {
		for seq := 1; seq <= n && err == nil; seq++ {
			_, err = w.Push(binary.LittleEndian.AppendUint64(nil, uint64(seq)))
		}
		if err == nil {
			srv, err = replica.NewServer(replica.ServerConfig{Ring: path, Bind: "127.0.0.1:0"})
		}
		if err != nil {
			w.Close()
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", nil, err
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background()) }()
	return srv, dir, func() { srv.Close(); <-done; w.Close(); os.RemoveAll(dir) }, nil
}

// exampleRun runs m until stop, which closes it.
func exampleRun(m *replica.Mirror) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- m.Run(ctx) }()
	return func() { cancel(); <-ran; m.Close() }
}

// A Server serves a ring; AwaitApplied blocks until mirrors have applied a record,
// and Mirrors lists what they report.
func ExampleServer() {
	srv, dir, stop, err := exampleSource(100)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	m, err := replica.NewMirror(replica.MirrorConfig{Source: srv.Addr().String(),
		Ring: filepath.Join(dir, "mirror"), From: replica.From{Mode: replica.FromOldest}, TCPOnly: true, Name: "example"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer exampleRun(m)()

	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	n, err := srv.AwaitApplied(wctx, 1, 100)
	fmt.Println("mirrors that applied record 100:", n, err)
	for _, mi := range srv.Mirrors() {
		fmt.Println(mi.Name, "applied", mi.Applied, "over", mi.Transport)
	}
	// Output:
	// mirrors that applied record 100: 1 <nil>
	// example applied 100 over tcp
}

// A Mirror keeps a local ring identical to the source's; local readers
// read it like any ring.
func ExampleMirror() {
	srv, dir, stop, err := exampleSource(100)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	connected := make(chan struct{}, 1)
	path := filepath.Join(dir, "mirror")
	m, err := replica.NewMirror(replica.MirrorConfig{Source: srv.Addr().String(), Ring: path,
		From: replica.From{Mode: replica.FromOldest}, TCPOnly: true,
		Events: func(e replica.MirrorEvent) {
			if e.Kind == replica.MirrorConnected {
				select {
				case connected <- struct{}{}:
				default:
				}
			}
		}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer exampleRun(m)()

	select { // the mirror ring exists once the handshake is done
	case <-connected:
	case <-time.After(10 * time.Second):
		fmt.Println("not connected")
		return
	}
	rd, err := shm.OpenReader(path, shm.ReadOptions{Start: shm.StartOldest, NoRegister: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rd.Close()
	buf := make([]byte, 8)
	var sum uint64
	for range 100 {
		seq, err := rd.Recv(buf, 10*time.Second)
		if err != nil {
			fmt.Println(err)
			return
		}
		if v := binary.LittleEndian.Uint64(buf); v != seq {
			fmt.Printf("record %d holds %d\n", seq, v)
		}
		sum += seq
	}
	fmt.Println("records 1..100 mirrored, sequence sum", sum)
	// Output:
	// records 1..100 mirrored, sequence sum 5050
}
