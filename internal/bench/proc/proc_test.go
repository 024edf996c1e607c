package proc

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	// A command name with a space and a parenthesis; utime 250, stime 50.
	stat := "4242 (ring fire) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 99 1000 10"
	got, err := parseStatCPU(stat)
	if err != nil || got != 3*time.Second {
		t.Fatalf("parseStatCPU = %v, %v; want 3s", got, err)
	}
	if _, err := parseStatCPU("4242 (short) S 1"); err == nil {
		t.Error("a short stat line parsed")
	}
	own, err := CPUTime(os.Getpid())
	if err != nil || own < 0 {
		t.Fatalf("CPUTime(self) = %v, %v", own, err)
	}
}

func TestTailBuffer(t *testing.T) {
	b := &tailBuffer{max: 8}
	b.Write([]byte("hello, "))
	b.Write([]byte("world"))
	if got := b.String(); got != "o, world" {
		t.Fatalf("tail %q, want the last 8 bytes %q", got, "o, world")
	}
}

func TestLastLines(t *testing.T) {
	if got := LastLines("a\nb\nc\nd\n", 2); got != "c | d" {
		t.Errorf("LastLines = %q, want %q", got, "c | d")
	}
	if got := LastLines("only", 6); got != "only" {
		t.Errorf("LastLines = %q, want %q", got, "only")
	}
}

// Pin binds every thread of a process to one CPU.
func TestPin(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sleep: %v", err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	cpu := runtime.NumCPU() - 1
	if err := Pin(cmd.Process.Pid, cpu); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	want := "Cpus_allowed_list:\t" + strconv.Itoa(cpu) + "\n"
	if !strings.Contains(string(b), want) {
		t.Errorf("status lacks %q:\n%s", want, b)
	}
	if err := Pin(1<<30, 0); err == nil {
		t.Error("pinned a process that does not exist")
	}
}
