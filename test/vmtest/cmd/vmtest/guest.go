package main

// The guest side: this program is the initramfs's /init (PID 1).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// guestMain sets the guest up, runs the test binaries and powers off. It
// never returns. The exit status reaches the host as a console marker.
func guestMain() {
	rc := 1
	p, err := guestSetup()
	if err != nil {
		fmt.Printf("vmtest guest: %v\n", err)
	} else {
		rc = runTests(p)
	}
	if p != nil {
		fmt.Printf("%s %s=%d\n", markRC, p.Token, rc)
		if p.Shell {
			shell()
		}
	} else {
		fmt.Printf("%s setup failed\n", markRC)
	}
	unix.Sync()
	unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
	select {} // PID 1 must not exit
}

func guestSetup() (*plan, error) {
	mounts := []struct{ src, dst, fstype, data string }{
		{"proc", "/proc", "proc", ""},
		{"sysfs", "/sys", "sysfs", ""},
		{"devtmpfs", "/dev", "devtmpfs", ""},
		{"tmpfs", "/dev/shm", "tmpfs", "mode=1777"},
		{"devpts", "/dev/pts", "devpts", ""},
		{"tmpfs", "/run", "tmpfs", "mode=755"},
		{"tmpfs", "/tmp", "tmpfs", "mode=1777"},
		{"bpf", "/sys/fs/bpf", "bpf", ""},
		{"tracefs", "/sys/kernel/tracing", "tracefs", ""},
		{"cgroup2", "/sys/fs/cgroup", "cgroup2", ""},
	}
	for _, m := range mounts {
		os.MkdirAll(m.dst, 0o755)
		if err := unix.Mount(m.src, m.dst, m.fstype, 0, m.data); err != nil {
			return nil, fmt.Errorf("mount %s on %s: %w", m.fstype, m.dst, err)
		}
	}
	b, err := os.ReadFile(planPath)
	if err != nil {
		return nil, err
	}
	p := new(plan)
	if err := json.Unmarshal(b, p); err != nil {
		return nil, fmt.Errorf("%s: %w", planPath, err)
	}
	var u unix.Utsname
	unix.Uname(&u)
	fmt.Printf("%s %s kernel %s\n", markStart, p.Token, unix.ByteSliceToString(u.Release[:]))
	os.Setenv("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
	os.Setenv("HOME", "/root")
	os.Setenv("TMPDIR", "/tmp")
	unix.Sethostname([]byte("vmtest"))
	for _, m := range p.Modules {
		if err := loadModule(m); err != nil {
			return p, err
		}
	}
	if _, err := run("ip", "link", "set", "lo", "up"); err != nil {
		return p, err
	}
	if err := setupNICs(p); err != nil {
		return p, err
	}
	for _, e := range p.Env {
		k, v, _ := strings.Cut(e, "=")
		os.Setenv(k, v)
	}
	return p, nil
}

func loadModule(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.FinitModule(int(f.Fd()), "", 0); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("load module %s: %w", path, err)
	}
	return nil
}

// setupNICs moves each NIC (found by MAC) into its namespace with its
// address, up, and exports where it went.
func setupNICs(p *plan) error {
	ifs, err := net.Interfaces()
	if err != nil {
		return err
	}
	for _, n := range p.NICs {
		var name string
		for _, i := range ifs {
			if strings.EqualFold(i.HardwareAddr.String(), n.MAC) {
				name = i.Name
			}
		}
		if name == "" {
			return fmt.Errorf("no NIC with MAC %s (interfaces: %v)", n.MAC, ifs)
		}
		drv, _ := os.Readlink("/sys/class/net/" + name + "/device/driver")
		steps := [][]string{
			{"netns", "add", n.NS},
			{"link", "set", name, "netns", n.NS},
			{"-n", n.NS, "addr", "add", n.Addr, "dev", name},
			{"-n", n.NS, "link", "set", "lo", "up"},
			{"-n", n.NS, "link", "set", name, "up"},
			{"-n", n.NS, "route", "add", "224.0.0.0/4", "dev", name},
		}
		for _, s := range steps {
			if _, err := run("ip", s...); err != nil {
				return err
			}
		}
		addr, _, _ := strings.Cut(n.Addr, "/")
		os.Setenv(n.Env+"_NS", n.NS)
		os.Setenv(n.Env+"_IF", name)
		os.Setenv(n.Env+"_ADDR", addr)
		fmt.Printf("vmtest guest: %s (%s, driver %s) in netns %s as %s\n", name, n.MAC, lastElem(drv), n.NS, n.Addr)
	}
	return nil
}

func lastElem(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

func run(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// runTests runs every package's binary in turn, printing a marker with its
// exit status and duration after each, and returns 0 if all passed.
func runTests(p *plan) int {
	rc := 0
	for _, pkg := range p.Packages {
		start := time.Now()
		fmt.Printf("vmtest guest: === %s\n", pkg.ImportPath)
		code := runPackage(pkg)
		fmt.Printf("%s %s %s rc=%d elapsed=%.1fs\n", markPkg, p.Token, pkg.ImportPath, code, time.Since(start).Seconds())
		if code != 0 {
			rc = 1
		}
	}
	return rc
}

func runPackage(pkg guestPkg) int {
	// -test.timeout makes the binary panic with every goroutine's stack
	// first; the kill is for a binary that cannot even do that.
	ctx, cancel := context.WithTimeout(context.Background(), pkg.Timeout+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, pkg.Binary, pkg.Args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = pkg.Dir, os.Stdout, os.Stdout
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	err := cmd.Run()
	if ctx.Err() != nil {
		fmt.Printf("vmtest guest: %s killed after %v\n", pkg.ImportPath, pkg.Timeout+30*time.Second)
		return 2
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return max(ee.ExitCode(), 1)
	default:
		fmt.Printf("vmtest guest: %s: %v\n", pkg.ImportPath, err)
		return 1
	}
}

// shell runs an interactive busybox shell on the console (-shell).
func shell() {
	fmt.Println("vmtest guest: shell; exit it to power off")
	cmd := exec.Command("/bin/sh")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "PS1=vmtest# ")
	cmd.Run()
}
