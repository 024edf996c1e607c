package trace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Off, a stamp costs an atomic load and allocates nothing.
func TestStampOff(t *testing.T) {
	if On() {
		t.Skip("RINGFIRE_TRACE is set for this test binary")
	}
	if a := testing.AllocsPerRun(1000, func() { Stamp(Sent, 7) }); a != 0 {
		t.Fatalf("Stamp off: %v allocations", a)
	}
	if next.Load() != 0 {
		t.Fatalf("Stamp off kept %d stamps", next.Load())
	}
}

func BenchmarkStampOff(b *testing.B) {
	for i := range b.N {
		Stamp(Sent, uint64(i))
	}
}

// On, stamps are kept in order and Flush writes them.
func TestStampOnFlush(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(Env, dir)
	Start()
	defer on.Store(false)
	if !On() {
		t.Fatal("Start with RINGFIRE_TRACE set left tracing off")
	}
	Stamp(Picked, 1)
	Stamp(Sent, 1)
	if a := testing.AllocsPerRun(100, func() { Stamp(Recv, 2) }); a != 0 {
		t.Fatalf("Stamp on: %v allocations", a)
	}
	if err := Flush("test"); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "test-*.trace"))
	if len(files) != 1 {
		t.Fatalf("trace files %v", files)
	}
	b, _ := os.ReadFile(files[0])
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "picked 1 ") || !strings.HasPrefix(lines[1], "sent 1 ") {
		t.Fatalf("trace:\n%s", b)
	}
}
