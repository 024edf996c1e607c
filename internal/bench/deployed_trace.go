package bench

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Hop is one stage-to-stage leg of the ring-to-ring round trip, from the
// stamps the processes took (internal/trace; ringfire-bench --trace).
type Hop struct {
	From string      `json:"from"`
	To   string      `json:"to"`
	Lat  Percentiles `json:"latency"`
}

// traceStage is one stamp of the loop: which process file, which stage.
type traceStage struct{ file, stage, name string }

// traceChain is the six-process loop's stamps in order (the file
// prefixes are the names the processes flush under).
var traceChain = []traceStage{
	{"pinger", "push", "pinger push"},
	{"serve-A", "picked", "serve A picked"}, {"serve-A", "sending", "serve A sendmmsg"}, {"serve-A", "sent", "serve A sent"},
	{"mirror-A-mirror", "recv", "mirror A' recv"}, {"mirror-A-mirror", "published", "mirror A' published"},
	{"echo", "read", "echo read"}, {"echo", "push", "echo push"},
	{"serve-B", "picked", "serve B picked"}, {"serve-B", "sending", "serve B sendmmsg"}, {"serve-B", "sent", "serve B sent"},
	{"mirror-B-mirror", "recv", "mirror B' recv"}, {"mirror-B-mirror", "published", "mirror B' published"},
	{"pinger", "read", "pinger read"},
}

// readStamps reads the first stamp of each (stage, seq) of the trace file
// of process prefix in dir.
func readStamps(dir, prefix string) (map[string]map[uint64]int64, error) {
	files, err := filepath.Glob(filepath.Join(dir, prefix+"-*.trace"))
	if err != nil || len(files) != 1 {
		return nil, fmt.Errorf("bench: trace of %s: %d files (%v)", prefix, len(files), err)
	}
	f, err := os.Open(files[0])
	if err != nil {
		return nil, err
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
	return m, sc.Err()
}

// traceHops turns the trace files in dir into the hops of chain, over
// the records after warmUp (records keep their sequence from A to B').
func traceHops(dir string, warmUp int, chain []traceStage) ([]Hop, error) {
	files := map[string]map[string]map[uint64]int64{}
	for _, st := range chain {
		if files[st.file] != nil {
			continue
		}
		m, err := readStamps(dir, st.file)
		if err != nil {
			return nil, err
		}
		files[st.file] = m
	}
	hists := make([]hist, len(chain)-1)
	for i := range hists {
		hists[i] = newHist()
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
		if !complete {
			continue
		}
		for i := range hists {
			hists[i].record(time.Duration(ts[i+1] - ts[i]))
		}
	}
	hops := make([]Hop, len(hists))
	for i, h := range hists {
		hops[i] = Hop{From: chain[i].name, To: chain[i+1].name, Lat: h.percentiles()}
	}
	return hops, nil
}
