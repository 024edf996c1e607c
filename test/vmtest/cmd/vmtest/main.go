package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// defaultPkgs are the kernel-facing packages; ones missing from the tree
// are skipped, so a package that is being written joins when it lands.
const defaultPkgs = "./shm ./replica ./xdp ./bpf ./transport ./afpacket ./test/vmtest"

// The guest's NICs: MAC, namespace, address, environment prefix.
var guestNICs = []nic{
	{MAC: "52:54:00:76:6d:01", NS: "vmA", Addr: "10.99.0.1/24", Env: "VMTEST_A"},
	{MAC: "52:54:00:76:6d:02", NS: "vmB", Addr: "10.99.0.2/24", Env: "VMTEST_B"},
}

type options struct {
	pkgs        string
	run         string
	pkgRun      map[string]string
	pkgSkip     map[string]string
	all         bool
	testFlags   string
	verbose     bool
	bootLog     bool
	timeout     time.Duration
	testTimeout time.Duration
	cache       string
	kernelPkg   string
	mem, cpus   int
	accel       string
	qemu        string
	busybox     string
	keep        bool
	shell       bool
}

func main() {
	if os.Getpid() == 1 {
		guestMain()
	}
	o := options{pkgRun: map[string]string{}, pkgSkip: map[string]string{}}
	flag.StringVar(&o.pkgs, "pkgs", envOr("VMTEST_PKGS", defaultPkgs), "test packages, space or comma separated (missing ones are skipped)")
	flag.StringVar(&o.run, "run", "", "-test.run for every package (replaces the built-in filters' -test.run)")
	flag.Func("pkg-run", "`pkg=regexp`: -test.run for one package (repeatable; overrides -run)", pkgFlag(o.pkgRun))
	flag.Func("pkg-skip", "`pkg=regexp`: -test.skip for one package (repeatable)", pkgFlag(o.pkgSkip))
	flag.BoolVar(&o.all, "all", false, "drop the built-in per-package filters (the whole suites; slow)")
	flag.StringVar(&o.testFlags, "testflags", "", "more -test.* flags for every package")
	flag.BoolVar(&o.verbose, "v", true, "run the tests with -test.v")
	flag.BoolVar(&o.bootLog, "boot-log", false, "show the kernel's boot messages too")
	flag.DurationVar(&o.timeout, "timeout", 15*time.Minute, "kill the guest after this (boot and all packages)")
	flag.DurationVar(&o.testTimeout, "test-timeout", 6*time.Minute, "-test.timeout of each package")
	flag.StringVar(&o.cache, "cache", defaultCache(), "where the kernel package is downloaded and unpacked")
	flag.StringVar(&o.kernelPkg, "kernel", os.Getenv("VMTEST_KERNEL"), "kernel package (default: what linux-image-amd64 depends on)")
	flag.IntVar(&o.mem, "mem", 2048, "guest memory, MiB")
	flag.IntVar(&o.cpus, "smp", 2, "guest CPUs")
	flag.StringVar(&o.accel, "accel", "tcg", "tcg or kvm (/dev/kvm does not work on the CI host: it is itself a guest)")
	flag.StringVar(&o.qemu, "qemu", "qemu-system-x86_64", "QEMU binary")
	flag.StringVar(&o.busybox, "busybox", "/bin/busybox", "a static busybox (busybox-static)")
	flag.BoolVar(&o.keep, "keep", false, "keep the work directory (initramfs, binaries, console log)")
	flag.BoolVar(&o.shell, "shell", false, "open a shell on the guest console after the tests (interactive)")
	flag.Parse()
	if flag.NArg() > 0 {
		o.pkgs = strings.Join(flag.Args(), " ")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := host(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func pkgFlag(m map[string]string) func(string) error {
	return func(s string) error {
		k, v, ok := strings.Cut(s, "=")
		if !ok {
			return errors.New("want pkg=regexp")
		}
		m[strings.TrimPrefix(path.Clean(k), "./")] = v
		return nil
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func defaultCache() string {
	if v := os.Getenv("VMTEST_CACHE"); v != "" {
		return v
	}
	if os.Geteuid() == 0 {
		return "/var/cache/ringfire-vmtest"
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "ringfire-vmtest")
	}
	return ".cache"
}

func logf(format string, args ...any) { fmt.Printf(format+"\n", args...) }

func host(ctx context.Context, o options) error {
	t0 := time.Now()
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "vmtest-")
	if err != nil {
		return err
	}
	if o.keep {
		logf("vmtest: work directory %s", work)
	} else {
		defer os.RemoveAll(work)
	}

	// The kernel (download and unpack on the first run) while Go builds.
	type kres struct {
		k   *kernel
		err error
	}
	kc := make(chan kres, 1)
	go func() {
		k, err := findKernel(o.cache, o.kernelPkg, logf)
		kc <- kres{k, err}
	}()
	pkgs, err := buildTests(ctx, root, work, o)
	if err != nil {
		return err
	}
	initBin := filepath.Join(work, "init")
	if err := goBuild(ctx, root, "build", "-o", initBin, "./test/vmtest/cmd/vmtest"); err != nil {
		return err
	}
	kr := <-kc
	if kr.err != nil {
		return kr.err
	}
	k := kr.k
	mods, err := k.modules(guestModules)
	if err != nil {
		return err
	}
	tok := make([]byte, 6)
	rand.Read(tok)
	p := &plan{Token: hex.EncodeToString(tok), NICs: guestNICs, Shell: o.shell,
		Env: []string{"VMTEST_GUEST=1", "VMTEST_KERNEL=" + k.Release}}
	r := &initramfs{Init: initBin, Busybox: o.busybox, Modules: mods, Plan: p,
		Tests: map[string]string{}, Testdata: map[string]string{}}
	for _, tp := range pkgs {
		r.Tests[tp.guest.Binary] = tp.binary
		if fi, err := os.Stat(filepath.Join(tp.dir, "testdata")); err == nil && fi.IsDir() {
			r.Testdata[tp.guest.Dir+"/testdata"] = filepath.Join(tp.dir, "testdata")
		}
		p.Packages = append(p.Packages, tp.guest)
	}
	initrd := filepath.Join(work, "initramfs.cpio")
	if err := r.write(initrd); err != nil {
		return err
	}
	fi, _ := os.Stat(initrd)
	logf("vmtest: %s, initramfs %d MiB (%d modules, %d test binaries), ready after %.1fs",
		k.Pkg, fi.Size()>>20, len(mods), len(pkgs), time.Since(t0).Seconds())

	v := &vm{QEMU: o.qemu, Kernel: k.Image, Initrd: initrd, Mem: o.mem, CPUs: o.cpus, Accel: o.accel,
		Timeout: o.timeout, Shell: o.shell, Log: filepath.Join(work, "console.log"),
		Verbose: o.bootLog, Token: p.Token}
	for _, n := range guestNICs {
		v.MACs = append(v.MACs, n.MAC)
	}
	if o.shell {
		v.Timeout = 24 * time.Hour
	}
	t1 := time.Now()
	res, err := v.run(ctx)
	report(res, time.Since(t1), time.Since(t0))
	if err != nil {
		if !o.keep {
			tail(v.Log, 40)
		}
		return err
	}
	if !res.Finished {
		if !o.keep {
			tail(v.Log, 40)
		}
		return errors.New("vmtest: the guest stopped without reporting a result (kernel panic? see the console above)")
	}
	if res.RC != 0 {
		return fmt.Errorf("vmtest: FAIL (guest exit status %d)", res.RC)
	}
	logf("vmtest: PASS")
	return nil
}

func report(res *result, vmTime, total time.Duration) {
	if res == nil {
		return
	}
	logf("vmtest: summary (guest up after %.1fs, VM ran %.1fs, %.1fs in all)", res.Started.Seconds(), vmTime.Seconds(), total.Seconds())
	for _, p := range res.Packages {
		verdict := "ok"
		if p.RC != 0 {
			verdict = fmt.Sprintf("FAIL (rc %d)", p.RC)
		}
		logf("vmtest:   %-48s %-12s %8s  %d skipped", p.ImportPath, verdict, p.Elapsed, p.Skips)
	}
}

// tail prints the last n lines of the console log.
func tail(file string, n int) {
	b, err := os.ReadFile(file)
	if err != nil {
		return
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	fmt.Fprintf(os.Stderr, "vmtest: last %d console lines:\n%s\n", len(lines), strings.Join(lines, "\n"))
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("vmtest: go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("vmtest: run inside the ringfire module")
	}
	return filepath.Dir(mod), nil
}
