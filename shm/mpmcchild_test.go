package shm

// The child processes of the multi-producer test (mpmcproc_test.go): a
// producer, a competing (queue) consumer and a broadcast consumer of one
// MPMC ring. Records are mpEncode's checksummed ones whose key is
// producer << 40 | n.

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

const (
	mpmcEnvRole = "RINGFIRE_MPMC_ROLE" // producer:ID:COUNT (0: until killed) | queue:I | broadcast:I
	mpmcEnvRing = "RINGFIRE_MPMC_RING"

	mpmcResultPrefix = "MPMCRESULT "
)

type mpmcResult struct {
	Pushed, Dropped  uint64 // producer: records written, ErrDropped pushes
	Received, Lost   uint64 // consumers: records returned, Dropped (+ Lapped for broadcast)
	Torn, OutOfOrder uint64
	PerProducerLast  map[uint64]uint64 `json:",omitempty"` // broadcast: last n seen per producer
	ElapsedMs        int64
	Err              string `json:",omitempty"`
}

func mpmcChildMain(role string) error {
	ring := os.Getenv(mpmcEnvRing)
	kind, arg, _ := strings.Cut(role, ":")
	var res mpmcResult
	var err error
	start := time.Now()
	switch kind {
	case "producer":
		res, err = mpmcProduce(ring, arg)
	case "queue":
		res, err = mpmcQueue(ring, arg)
	case "broadcast":
		res, err = mpmcBroadcast(ring, arg)
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		return err
	}
	res.ElapsedMs = time.Since(start).Milliseconds()
	b, _ := json.Marshal(res)
	fmt.Printf("%s%s\n", mpmcResultPrefix, b)
	return nil
}

func mpmcProduce(ring, arg string) (mpmcResult, error) {
	var res mpmcResult
	ids, counts, _ := strings.Cut(arg, ":")
	id, err1 := strconv.ParseUint(ids, 10, 32)
	count, err2 := strconv.ParseUint(counts, 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return res, err
	}
	w, err := OpenMultiWriter(ring)
	if err != nil {
		return res, err
	}
	defer w.Close()
	if err := mpmcReady(ring, "p"+ids); err != nil {
		return res, err
	}
	p := make([]byte, mpPayload)
	for n := uint64(0); count == 0 || n < count; n++ {
		if count == 0 && n == 1000 { // an unbounded producer (the one to be killed) says it is under way
			if err := mpTouch(ring + ".pushing.p" + ids); err != nil {
				return res, err
			}
		}
		mpEncode(p, id<<40|n, 0)
		if _, err := w.Push(p); errors.Is(err, ErrDropped) {
			res.Dropped++
		} else if err != nil {
			return res, err
		} else {
			res.Pushed++
		}
	}
	return res, nil
}

// mpmcDone reports whether the parent said every producer is gone.
func mpmcDone(ring string) bool {
	_, err := os.Stat(ring + ".done")
	return err == nil
}

func mpmcQueue(ring, arg string) (mpmcResult, error) {
	var res mpmcResult
	ws := FutexWait(32)
	q, err := OpenQueueReader(ring, QueueOptions{Wait: &ws})
	if err != nil {
		return res, err
	}
	defer q.Close()
	if err := mpmcReady(ring, "q"+arg); err != nil {
		return res, err
	}
	var keys []byte
	p := make([]byte, mpPayload)
	for {
		if recvWithin(20*time.Millisecond, q.RecvContext, p) {
			key, _, ok := mpCheck(p)
			if !ok {
				res.Torn++
			}
			keys = binary.LittleEndian.AppendUint64(keys, key)
			continue
		}
		if mpmcDone(ring) && q.pending == 0 && q.r.ReadSeq() >= q.r.ClaimSeq() {
			break
		}
	}
	res.Received, res.Lost = q.Received(), q.Dropped()
	return res, os.WriteFile(ring+".keys."+arg, keys, 0o644)
}

// recvWithin receives into p with recv, waiting at most d, and reports
// whether it got a record.
func recvWithin(d time.Duration, recv func(context.Context, []byte) (uint64, error), p []byte) bool {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_, err := recv(ctx, p)
	return err == nil
}

// mpmcReady tells the parent this child is attached, and waits for go.
func mpmcReady(ring, name string) error {
	if err := mpTouch(ring + ".ready." + name); err != nil {
		return err
	}
	return mpWaitFile(ring+".go", 60*time.Second)
}

func mpmcBroadcast(ring, arg string) (mpmcResult, error) {
	res := mpmcResult{PerProducerLast: map[uint64]uint64{}}
	ws := FutexWait(32)
	rd, err := OpenReader(ring, ReadOptions{Start: StartOldest, Wait: &ws, NoRegister: true})
	if err != nil {
		return res, err
	}
	defer rd.Close()
	if err := mpmcReady(ring, "b"+arg); err != nil {
		return res, err
	}
	p := make([]byte, mpPayload)
	for {
		if recvWithin(20*time.Millisecond, rd.RecvContext, p) {
			key, _, ok := mpCheck(p)
			if !ok {
				res.Torn++
				continue
			}
			id, n := key>>40, key&(1<<40-1)
			if last, ok := res.PerProducerLast[id]; ok && n <= last {
				res.OutOfOrder++
			}
			res.PerProducerLast[id] = n
			continue
		}
		if mpmcDone(ring) && rd.Next() > rd.r.WriteSeq() {
			break
		}
	}
	res.Received, res.Lost = rd.Received(), rd.Dropped()+rd.Lapped()
	return res, nil
}
