package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// vm is one QEMU boot of the guest.
type vm struct {
	QEMU    string
	Kernel  string
	Initrd  string
	Mem     int // MiB
	CPUs    int
	Accel   string // tcg or kvm
	MACs    []string
	Append  string        // extra kernel command line
	Timeout time.Duration // the whole boot, tests included
	Shell   bool          // interactive console
	Log     string        // the whole console goes here
	Verbose bool          // echo the kernel's boot messages too
	Token   string
}

// result is what the host learned from the console.
type result struct {
	RC       int  // the guest's verdict; valid if Finished
	Finished bool // the VMTEST_RC marker came
	Started  time.Duration
	Packages []pkgResult
	TimedOut bool
}

type pkgResult struct {
	ImportPath string
	RC         int
	Elapsed    string
	Skips      int
}

func (v *vm) args() []string {
	accel := []string{"-accel", "tcg,thread=multi", "-cpu", "max"}
	if v.Accel == "kvm" {
		accel = []string{"-accel", "kvm", "-cpu", "host"}
	}
	cmdline := "console=ttyS0 panic=-1 printk.time=1 mitigations=off "
	if !v.Verbose {
		cmdline += "quiet loglevel=4 "
	}
	a := append(accel,
		"-m", strconv.Itoa(v.Mem), "-smp", strconv.Itoa(v.CPUs),
		"-nodefaults", "-no-reboot", "-display", "none", "-vga", "none",
		"-kernel", v.Kernel, "-initrd", v.Initrd,
		"-append", strings.TrimSpace(cmdline+v.Append),
	)
	if v.Shell {
		a = append(a, "-serial", "mon:stdio")
	} else {
		a = append(a, "-serial", "stdio", "-monitor", "none")
	}
	// Both NICs are ports of one QEMU hub: a frame one sends, the other
	// receives; nothing reaches the host's network.
	for i, mac := range v.MACs {
		a = append(a,
			"-netdev", fmt.Sprintf("hubport,id=n%d,hubid=0", i),
			"-device", fmt.Sprintf("virtio-net-pci,netdev=n%d,mac=%s", i, mac))
	}
	return a
}

// run boots the guest, streams its console (test output always, boot
// messages with Verbose) and returns what the markers said.
func (v *vm) run(ctx context.Context) (*result, error) {
	ctx, cancel := context.WithTimeout(ctx, v.Timeout)
	defer cancel()
	log, err := os.Create(v.Log)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd := exec.CommandContext(ctx, v.QEMU, v.args()...)
	cmd.Stderr = os.Stderr
	cmd.WaitDelay = 5 * time.Second
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGKILL) }
	var out io.Reader
	// QEMU dies with the runner, however the runner ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if v.Shell {
		cmd.Stdin = os.Stdin
	} else {
		cmd.SysProcAttr.Setpgid = true // ^C goes to the runner, which stops QEMU
	}
	pr, pw := io.Pipe()
	cmd.Stdout, out = pw, pr
	if v.Shell { // the console, raw: prompts end in no newline
		cmd.Stdout = io.MultiWriter(os.Stdout, pw)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("vmtest: %s: %w", v.QEMU, err)
	}
	res := &result{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		v.scan(out, log, res, start)
	}()
	werr := cmd.Wait()
	pw.Close()
	<-done
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		res.TimedOut = true
		return res, fmt.Errorf("vmtest: guest killed after the %v timeout", v.Timeout)
	}
	if werr != nil && !res.Finished {
		return res, fmt.Errorf("vmtest: qemu: %w", werr)
	}
	return res, nil
}

// scan copies the console to the log and stdout and parses the markers.
func (v *vm) scan(r io.Reader, log io.Writer, res *result, start time.Time) {
	br := bufio.NewReaderSize(r, 64<<10)
	started := v.Verbose
	skips := 0
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			io.WriteString(log, line)
			clean := strings.TrimRight(line, "\r\n")
			f := strings.Fields(clean)
			switch {
			case len(f) >= 2 && f[0] == markStart && f[1] == v.Token:
				started = true
				res.Started = time.Since(start)
				fmt.Printf("vmtest: guest up after %.1fs: %s\n", res.Started.Seconds(), strings.Join(f[2:], " "))
				continue
			case len(f) >= 5 && f[0] == markPkg && f[1] == v.Token:
				rc, _ := strconv.Atoi(strings.TrimPrefix(f[3], "rc="))
				res.Packages = append(res.Packages, pkgResult{ImportPath: f[2], RC: rc,
					Elapsed: strings.TrimPrefix(f[4], "elapsed="), Skips: skips})
				skips = 0
			}
			if len(f) == 2 && f[0] == markRC {
				if tok, n, ok := strings.Cut(f[1], "="); ok && tok == v.Token {
					res.RC, _ = strconv.Atoi(n)
					res.Finished = true
				}
			}
			if strings.Contains(clean, "--- SKIP:") {
				skips++
			}
			if started && !v.Shell {
				fmt.Println(clean)
			}
		}
		if err != nil {
			return
		}
	}
}
