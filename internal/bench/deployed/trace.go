package deployed

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ringfire/ringfire/internal/bench/hist"
	"github.com/ringfire/ringfire/internal/bench/report"
)

// traceStage is one stamp of the loop: which process file, which stage.
type traceStage struct{ file, stage, name string }

// traceProc is a process of a round trip's trace: the prefix of its trace
// file (the name it flushes under) and its name in the hops.
type traceProc struct{ file, name string }

// roundTripChain is a round trip's stamps in order: the pinger's push, the
// way out (the sender of A picks, sends and has sent; the mirror of A
// receives and publishes), the echo, the way back (B), the pinger's read.
func roundTripChain(serveA, mirrorA, serveB, mirrorB traceProc) []traceStage {
	st := func(p traceProc, stage, label string) traceStage {
		return traceStage{p.file, stage, p.name + " " + label}
	}
	pinger, echo := traceProc{"pinger", "pinger"}, traceProc{"echo", "echo"}
	return []traceStage{
		st(pinger, "push", "push"),
		st(serveA, "picked", "picked"), st(serveA, "sending", "sendmmsg"), st(serveA, "sent", "sent"),
		st(mirrorA, "recv", "recv"), st(mirrorA, "published", "published"),
		st(echo, "read", "read"), st(echo, "push", "push"),
		st(serveB, "picked", "picked"), st(serveB, "sending", "sendmmsg"), st(serveB, "sent", "sent"),
		st(mirrorB, "recv", "recv"), st(mirrorB, "published", "published"),
		st(pinger, "read", "read"),
	}
}

// traceChain is the six-process round trip's stamps: serve and mirror
// flush as "serve-" and "mirror-" and their ring's base name.
var traceChain = roundTripChain(traceProc{"serve-A", "serve A"}, traceProc{"mirror-A-mirror", "mirror A'"},
	traceProc{"serve-B", "serve B"}, traceProc{"mirror-B-mirror", "mirror B'"})

// readStamps reads the first stamp of each (stage, seq) of the trace file
// of process prefix in dir, and the process's pid (the file's name ends
// with it).
func readStamps(dir, prefix string) (map[string]map[uint64]int64, int, error) {
	files, err := filepath.Glob(filepath.Join(dir, prefix+"-*.trace"))
	if err != nil || len(files) != 1 {
		return nil, 0, fmt.Errorf("deployed: trace of %s: %d files (%v)", prefix, len(files), err)
	}
	name := strings.TrimSuffix(filepath.Base(files[0]), ".trace")
	pid, _ := strconv.Atoi(name[strings.LastIndexByte(name, '-')+1:])
	f, err := os.Open(files[0])
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	m := map[string]map[uint64]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 3 {
			continue
		}
		seq, err1 := strconv.ParseUint(fs[1], 10, 64)
		ns, err2 := strconv.ParseInt(fs[2], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		if m[fs[0]] == nil {
			m[fs[0]] = map[uint64]int64{}
		}
		if _, seen := m[fs[0]][seq]; !seen {
			m[fs[0]][seq] = ns
		}
	}
	return m, pid, sc.Err()
}

// traceRun is a traced round trip: every complete sample's stamps in
// chain order, and the process that took each stage's.
type traceRun struct {
	chain   []traceStage
	pids    []int
	samples [][]int64
}

// readTrace reads the trace files in dir: the samples after warmUp
// (records keep their sequence from A to B').
func readTrace(dir string, warmUp int, chain []traceStage) (*traceRun, error) {
	files := map[string]map[string]map[uint64]int64{}
	pids := map[string]int{}
	for _, st := range chain {
		if files[st.file] != nil {
			continue
		}
		m, pid, err := readStamps(dir, st.file)
		if err != nil {
			return nil, err
		}
		files[st.file], pids[st.file] = m, pid
	}
	tr := &traceRun{chain: chain}
	for _, st := range chain {
		tr.pids = append(tr.pids, pids[st.file])
	}
	for seq := range files["pinger"]["push"] {
		if seq <= uint64(warmUp) {
			continue
		}
		ts := make([]int64, len(chain))
		complete := true
		for i, st := range chain {
			t, ok := files[st.file][st.stage][seq]
			complete = complete && ok
			ts[i] = t
		}
		if complete {
			tr.samples = append(tr.samples, ts)
		}
	}
	return tr, nil
}

// hops is each hop's latency.
func (tr *traceRun) hops() []report.Hop {
	hops := make([]report.Hop, len(tr.chain)-1)
	for i := range hops {
		h := hist.New()
		for _, ts := range tr.samples {
			h.Record(time.Duration(ts[i+1] - ts[i]))
		}
		hops[i] = report.Hop{From: tr.chain[i].name, To: tr.chain[i+1].name, Lat: h.Percentiles()}
	}
	return hops
}

// traceHops turns the trace files in dir into the hops of chain.
func traceHops(dir string, warmUp int, chain []traceStage) ([]report.Hop, error) {
	tr, err := readTrace(dir, warmUp, chain)
	if err != nil {
		return nil, err
	}
	return tr.hops(), nil
}
