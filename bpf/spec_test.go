package bpf

import (
	"testing"

	"github.com/cilium/ebpf"
)

// TestSpecMatchesConstants: the map sizes and types the Go side relies on
// (MaxQueues, MaxFlows, the number of counters) are the ones compiled into
// steer_bpfel.o, which takes them from steer.c's own #defines.
func TestSpecMatchesConstants(t *testing.T) {
	spec, err := loadSteer()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct {
		name    string
		typ     ebpf.MapType
		entries uint32
		key     uint32
		value   uint32
	}{
		{"flows", ebpf.Hash, MaxFlows, 8, 4},
		{"xsks", ebpf.XSKMap, MaxQueues, 4, 4},
		{"counters", ebpf.PerCPUArray, cntMax, 4, 8},
		{"fault", ebpf.Array, 1, 4, 8},
		{"fault_seq", ebpf.Array, 1, 4, 8},
	} {
		ms, ok := spec.Maps[m.name]
		if !ok {
			t.Errorf("map %s missing from the compiled program", m.name)
			continue
		}
		if ms.Type != m.typ || ms.MaxEntries != m.entries || ms.KeySize != m.key || ms.ValueSize != m.value {
			t.Errorf("map %s: %v, %d entries, key %d, value %d bytes; the Go side wants %v, %d, %d, %d",
				m.name, ms.Type, ms.MaxEntries, ms.KeySize, ms.ValueSize, m.typ, m.entries, m.key, m.value)
		}
	}

}
