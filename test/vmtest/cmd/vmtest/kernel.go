package main

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// kernel is an unpacked Debian kernel package: the image to boot and the
// module tree to pick modules from.
type kernel struct {
	Pkg     string // package name, linux-image-6.1.0-57-amd64
	Root    string // where the .deb was unpacked
	Release string // uname -r, 6.1.0-57-amd64
	Image   string // Root/boot/vmlinuz-<Release>
}

// metaPackage is the Debian package that depends on the current 6.1 kernel
// of Debian 12 (the full -amd64 flavour: the -cloud one lacks drivers and
// file systems a test may want).
const metaPackage = "linux-image-amd64"

var kernelPkgRE = regexp.MustCompile(`^linux-image-[0-9][^ ]*-amd64$`)

// findKernel returns the unpacked kernel package pkg from the cache,
// fetching it with apt-get download and unpacking it with dpkg-deb first if
// needed. An empty pkg means the package linux-image-amd64 depends on now;
// when apt cannot say (offline, another distribution), the newest kernel
// already in the cache.
func findKernel(cache, pkg string, logf func(string, ...any)) (*kernel, error) {
	if pkg == "" {
		var err error
		if pkg, err = resolveKernelPkg(); err != nil {
			k, cerr := newestCached(cache)
			if cerr != nil {
				return nil, fmt.Errorf("%w (and %w)", err, cerr)
			}
			logf("vmtest: %v; using the cached %s", err, k.Pkg)
			return k, nil
		}
	}
	if !kernelPkgRE.MatchString(pkg) {
		return nil, fmt.Errorf("vmtest: %q is not a linux-image-*-amd64 package", pkg)
	}
	root := filepath.Join(cache, pkg)
	if _, err := os.Stat(filepath.Join(root, ".unpacked")); err != nil {
		// Another run may be fetching it too: one at a time.
		unlock, err := lockCache(cache)
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	if _, err := os.Stat(filepath.Join(root, ".unpacked")); err != nil {
		if err := fetchKernel(cache, pkg, root, logf); err != nil {
			return nil, err
		}
	}
	return openKernel(pkg, root)
}

// lockCache takes an exclusive lock on the cache directory.
func lockCache(cache string) (unlock func(), err error) {
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(cache, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("vmtest: lock %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil
}

// resolveKernelPkg asks apt which kernel linux-image-amd64 depends on.
func resolveKernelPkg() (string, error) {
	out, err := exec.Command("apt-cache", "depends", metaPackage).Output()
	if err != nil {
		return "", fmt.Errorf("vmtest: apt-cache depends %s: %w", metaPackage, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "Depends:" && kernelPkgRE.MatchString(f[1]) {
			return f[1], nil
		}
	}
	return "", fmt.Errorf("vmtest: apt-cache depends %s names no linux-image-*-amd64 (is this Debian 12 with apt lists? run apt-get update)", metaPackage)
}

// fetchKernel downloads pkg's .deb into cache and unpacks it into root.
func fetchKernel(cache, pkg, root string, logf func(string, ...any)) error {
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return err
	}
	debs, _ := filepath.Glob(filepath.Join(cache, pkg+"_*.deb"))
	if len(debs) == 0 {
		logf("vmtest: apt-get download %s into %s", pkg, cache)
		// Root downloads unsandboxed: the cache is not _apt's to write.
		cmd := exec.Command("apt-get", "download", "-q", "-o", "APT::Sandbox::User=root", pkg)
		cmd.Dir, cmd.Stdout, cmd.Stderr = cache, os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("vmtest: apt-get download %s: %w", pkg, err)
		}
		if debs, _ = filepath.Glob(filepath.Join(cache, pkg+"_*.deb")); len(debs) == 0 {
			return fmt.Errorf("vmtest: apt-get download %s left no .deb in %s", pkg, cache)
		}
	}
	sort.Strings(debs)
	deb := debs[len(debs)-1]
	logf("vmtest: unpacking %s", filepath.Base(deb))
	tmp := root + ".tmp"
	os.RemoveAll(tmp)
	if out, err := exec.Command("dpkg-deb", "-x", deb, tmp).CombinedOutput(); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("vmtest: dpkg-deb -x %s: %w: %s", deb, err, bytes.TrimSpace(out))
	}
	if err := os.WriteFile(filepath.Join(tmp, ".unpacked"), []byte(filepath.Base(deb)+"\n"), 0o644); err != nil {
		return err
	}
	os.RemoveAll(root)
	return os.Rename(tmp, root)
}

// newestCached returns the unpacked kernel of the cache with the highest
// package name (the ABI number sorts last).
func newestCached(cache string) (*kernel, error) {
	marks, _ := filepath.Glob(filepath.Join(cache, "linux-image-*", ".unpacked"))
	if len(marks) == 0 {
		return nil, fmt.Errorf("vmtest: no unpacked kernel in %s", cache)
	}
	sort.Slice(marks, func(i, j int) bool { return abiLess(marks[i], marks[j]) })
	root := filepath.Dir(marks[len(marks)-1])
	return openKernel(filepath.Base(root), root)
}

// abiLess orders linux-image-6.1.0-9-amd64 before linux-image-6.1.0-10-amd64.
func abiLess(a, b string) bool {
	na, nb := lastNumber(a), lastNumber(b)
	if na != nb {
		return na < nb
	}
	return a < b
}

func lastNumber(s string) int {
	m := regexp.MustCompile(`-([0-9]+)-amd64`).FindStringSubmatch(s)
	if m == nil {
		return -1
	}
	n := 0
	fmt.Sscan(m[1], &n)
	return n
}

func openKernel(pkg, root string) (*kernel, error) {
	dirs, _ := filepath.Glob(filepath.Join(root, "lib/modules/*"))
	if len(dirs) != 1 {
		return nil, fmt.Errorf("vmtest: %s: want one lib/modules/<release>, found %d", root, len(dirs))
	}
	k := &kernel{Pkg: pkg, Root: root, Release: filepath.Base(dirs[0])}
	k.Image = filepath.Join(root, "boot", "vmlinuz-"+k.Release)
	if _, err := os.Stat(k.Image); err != nil {
		return nil, fmt.Errorf("vmtest: %s has no kernel image: %w", pkg, err)
	}
	return k, nil
}

// module is a loadable module of the kernel.
type module struct {
	Name string // as the kernel names it (underscores)
	Path string // the .ko file
}

// modules returns the named modules and everything they depend on, each
// after its dependencies: the order to load them in. Dependencies come
// from each module's .modinfo section, so no depmod output is needed.
func (k *kernel) modules(names []string) ([]module, error) {
	byName := map[string]string{}
	dir := filepath.Join(k.Root, "lib/modules", k.Release, "kernel")
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if n, ok := strings.CutSuffix(d.Name(), ".ko"); ok && !d.IsDir() {
			byName[modName(n)] = p
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("vmtest: module tree: %w", err)
	}
	if len(byName) == 0 {
		return nil, fmt.Errorf("vmtest: no uncompressed .ko modules under %s", dir)
	}
	var order []module
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(name, from string) error
	visit = func(name, from string) error {
		switch state[name] {
		case 1:
			return fmt.Errorf("vmtest: module dependency cycle through %s", name)
		case 2:
			return nil
		}
		p, ok := byName[name]
		if !ok {
			if from == "" {
				return fmt.Errorf("vmtest: kernel %s has no module %s (built in? check boot/config-%s)", k.Release, name, k.Release)
			}
			return fmt.Errorf("vmtest: module %s needs %s, which is missing", from, name)
		}
		state[name] = 1
		deps, err := modDepends(p)
		if err != nil {
			return err
		}
		for _, d := range deps {
			if err := visit(d, name); err != nil {
				return err
			}
		}
		state[name] = 2
		order = append(order, module{Name: name, Path: p})
		return nil
	}
	for _, n := range names {
		if err := visit(modName(n), ""); err != nil {
			return nil, err
		}
	}
	return order, nil
}

func modName(s string) string { return strings.ReplaceAll(s, "-", "_") }

// modDepends reads the depends= entry of a module's .modinfo section.
func modDepends(path string) ([]string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("vmtest: module %s: %w", path, err)
	}
	defer f.Close()
	s := f.Section(".modinfo")
	if s == nil {
		return nil, fmt.Errorf("vmtest: module %s has no .modinfo", path)
	}
	b, err := s.Data()
	if err != nil {
		return nil, fmt.Errorf("vmtest: module %s: .modinfo: %w", path, err)
	}
	return parseDepends(b), nil
}

// parseDepends extracts the module names of "depends=a,b" from a .modinfo
// section (NUL-separated key=value strings).
func parseDepends(modinfo []byte) []string {
	for _, kv := range bytes.Split(modinfo, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("depends=")); ok {
			var deps []string
			for _, d := range strings.Split(string(v), ",") {
				if d != "" {
					deps = append(deps, modName(d))
				}
			}
			return deps
		}
	}
	return nil
}
