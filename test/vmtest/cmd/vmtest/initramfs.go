package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// guestTools are the host programs copied into the guest with their shared
// libraries and dynamic loader: internal/netns runs ip and ethtool, tests
// run ss and bridge, the netem tests run tc. busybox's ip has no netns.
var guestTools = []struct{ name, pkg string }{
	{"ip", "iproute2"}, {"tc", "iproute2"}, {"ss", "iproute2"}, {"bridge", "iproute2"},
	{"ethtool", "ethtool"},
}

// guestModules are the modules the guest loads (with their dependencies):
// the NICs, veth pairs and bridges of internal/netns, VLANs, netem, the
// socket diagnostics ss uses, and tc's BPF classifier.
var guestModules = []string{
	"virtio_pci", "virtio_net", "veth", "bridge", "8021q", "sch_netem",
	"inet_diag", "tcp_diag", "udp_diag", "unix_diag", "af_packet_diag",
	"sch_ingress", "cls_bpf",
}

// initramfs is what goes into the guest's root file system.
type initramfs struct {
	Init     string            // the static guest init (this program)
	Busybox  string            // a static busybox
	Modules  []module          // in load order
	Tests    map[string]string // guest path → host test binary
	Testdata map[string]string // guest directory → host testdata directory
	Plan     *plan
}

// write writes the archive to out (uncompressed: the TCG guest unpacks it
// faster than it would decompress it).
func (r *initramfs) write(out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	c := newCPIO(f)
	for _, d := range []string{"/dev", "/proc", "/sys", "/run", "/tmp", "/root", "/etc", "/usr/sbin", "/sbin", "/var/tmp"} {
		c.Mkdir(d)
	}
	c.Bytes("/etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\n"))
	c.Bytes("/etc/group", 0o644, []byte("root:x:0:\n"))
	c.Bytes("/etc/hosts", 0o644, []byte("127.0.0.1 localhost\n"))
	c.File("/init", r.Init)

	// busybox applets in /bin, except where a real tool goes to /usr/bin.
	c.File("/bin/busybox", r.Busybox)
	applets, err := busyboxApplets(r.Busybox)
	if err != nil {
		return err
	}
	real := map[string]bool{}
	for _, t := range guestTools {
		real[t.name] = true
	}
	for _, a := range applets {
		if !real[a] && a != "busybox" {
			c.Symlink("/bin/"+a, "busybox")
		}
	}

	files, err := toolFiles()
	if err != nil {
		return err
	}
	for _, g := range sortedKeys(files) {
		c.File(g, files[g])
	}
	for _, m := range r.Modules {
		c.File("/lib/modules/"+m.Name+".ko", m.Path)
		r.Plan.Modules = append(r.Plan.Modules, "/lib/modules/"+m.Name+".ko")
	}
	for _, g := range sortedKeys(r.Tests) {
		c.File(g, r.Tests[g])
	}
	for _, g := range sortedKeys(r.Testdata) {
		if err := copyTree(c, g, r.Testdata[g]); err != nil {
			return err
		}
	}
	for _, p := range r.Plan.Packages {
		c.Mkdir(p.Dir)
	}
	pj, err := json.MarshalIndent(r.Plan, "", "  ")
	if err != nil {
		return err
	}
	c.Bytes(planPath, 0o644, pj)
	if err := c.Close(); err != nil {
		return fmt.Errorf("vmtest: writing %s: %w", out, err)
	}
	return f.Close()
}

func busyboxApplets(bb string) ([]string, error) {
	out, err := exec.Command(bb, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("vmtest: %s --list: %w (install busybox-static)", bb, err)
	}
	return strings.Fields(string(out)), nil
}

// toolFiles maps guest paths to host files: each guest tool as
// /usr/bin/<name>, the shared libraries and loader ldd names for them at
// their host paths, and tc's netem distribution tables.
func toolFiles() (map[string]string, error) {
	files := map[string]string{}
	for _, t := range guestTools {
		p, err := lookTool(t.name)
		if err != nil {
			return nil, fmt.Errorf("vmtest: the guest needs the host's %s: %w (install %s)", t.name, err, t.pkg)
		}
		files["/usr/bin/"+t.name] = p
		libs, err := sharedLibs(p)
		if err != nil {
			return nil, err
		}
		for _, l := range libs {
			files[l] = l
		}
	}
	// tc reads these for "netem delay ... distribution <name>".
	dists, _ := filepath.Glob("/usr/lib/x86_64-linux-gnu/tc/*.dist")
	for _, d := range dists {
		files[d] = d
	}
	return files, nil
}

func lookTool(name string) (string, error) {
	for _, dir := range []string{"/usr/sbin", "/usr/bin", "/sbin", "/bin"} {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return exec.LookPath(name)
}

var lddRE = regexp.MustCompile(`(?:=>\s*)?(/\S+)\s+\(0x`)

// sharedLibs returns the libraries (and the loader) ldd lists for a
// dynamically linked program; none for a static one.
func sharedLibs(prog string) ([]string, error) {
	out, err := exec.Command("ldd", prog).CombinedOutput()
	if err != nil {
		if bytes.Contains(out, []byte("not a dynamic executable")) {
			return nil, nil
		}
		return nil, fmt.Errorf("vmtest: ldd %s: %w: %s", prog, err, bytes.TrimSpace(out))
	}
	var libs []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "not found") {
			return nil, fmt.Errorf("vmtest: ldd %s: %s", prog, strings.TrimSpace(line))
		}
		if m := lddRE.FindStringSubmatch(line); m != nil {
			libs = append(libs, m[1])
		}
	}
	return libs, nil
}

// copyTree writes host directory src as guest directory dst.
func copyTree(c *cpioWriter, dst, src string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		g := path.Join(dst, filepath.ToSlash(rel))
		switch {
		case d.IsDir():
			c.Mkdir(g)
		case d.Type()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			c.Symlink(g, t)
		case d.Type().IsRegular():
			c.File(g, p)
		}
		return nil
	})
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
