package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ringfire/ringfire/internal/testenv"
)

// readCPIO parses a newc archive into name → (mode, data).
func readCPIO(t *testing.T, b []byte) (names []string, modes map[string]uint32, data map[string]string) {
	t.Helper()
	modes, data = map[string]uint32{}, map[string]string{}
	pad := func(n int) int { return (n + 3) &^ 3 }
	for off := 0; ; {
		h := string(b[off : off+110])
		if h[:6] != "070701" {
			t.Fatalf("bad magic at %d: %q", off, h[:6])
		}
		field := func(i int) int {
			v, err := strconv.ParseUint(h[6+8*i:14+8*i], 16, 32)
			if err != nil {
				t.Fatal(err)
			}
			return int(v)
		}
		mode, size, nsize := field(1), field(6), field(11)
		name := string(b[off+110 : off+110+nsize-1])
		off = pad(off + 110 + nsize)
		if name == "TRAILER!!!" {
			if off != len(b) {
				t.Fatalf("%d bytes after the trailer", len(b)-off)
			}
			return
		}
		names = append(names, name)
		modes[name] = uint32(mode)
		data[name] = string(b[off : off+size])
		off = pad(off + size)
	}
}

func TestCPIO(t *testing.T) {
	dir := t.TempDir()
	host := filepath.Join(dir, "prog")
	if err := os.WriteFile(host, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	c := newCPIO(&buf)
	c.File("/usr/bin/prog", host)
	c.Bytes("/etc/x", 0o644, []byte("abcde"))
	c.Symlink("/bin/sh", "busybox")
	c.Mkdir("/usr/bin")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	names, modes, data := readCPIO(t, buf.Bytes())
	want := []string{"usr", "usr/bin", "usr/bin/prog", "etc", "etc/x", "bin", "bin/sh"}
	if !slices.Equal(names, want) {
		t.Fatalf("entries %q, want %q (parents first, each once)", names, want)
	}
	if modes["usr/bin/prog"] != modeFile|0o755 || data["usr/bin/prog"] != "#!/bin/sh\necho hi\n" {
		t.Errorf("prog: mode %o data %q", modes["usr/bin/prog"], data["usr/bin/prog"])
	}
	if modes["etc/x"] != modeFile|0o644 || data["etc/x"] != "abcde" {
		t.Errorf("etc/x: mode %o data %q", modes["etc/x"], data["etc/x"])
	}
	if modes["bin/sh"] != modeLink|0o777 || data["bin/sh"] != "busybox" {
		t.Errorf("bin/sh: mode %o target %q", modes["bin/sh"], data["bin/sh"])
	}
	if modes["usr"] != modeDir|0o755 {
		t.Errorf("usr: mode %o", modes["usr"])
	}
	// The system's cpio, when there is one, agrees.
	if cpio, err := exec.LookPath("cpio"); err == nil {
		cmd := exec.Command(cpio, "-t")
		cmd.Stdin = bytes.NewReader(buf.Bytes())
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("cpio -t: %v", err)
		}
		if got := strings.Fields(string(out)); !slices.Equal(got, want) {
			t.Errorf("cpio -t lists %q", got)
		}
	}
}

func TestParseDepends(t *testing.T) {
	info := []byte("license=GPL\x00depends=virtio,virtio_ring,net-failover\x00retpoline=Y\x00name=virtio_net\x00")
	if got, want := parseDepends(info), []string{"virtio", "virtio_ring", "net_failover"}; !slices.Equal(got, want) {
		t.Errorf("depends %q, want %q", got, want)
	}
	if got := parseDepends([]byte("depends=\x00name=veth\x00")); len(got) != 0 {
		t.Errorf("empty depends gave %q", got)
	}
}

func TestABIOrder(t *testing.T) {
	names := []string{"linux-image-6.1.0-10-amd64", "linux-image-6.1.0-9-amd64", "linux-image-6.1.0-57-amd64"}
	slices.SortFunc(names, func(a, b string) int {
		if abiLess(a, b) {
			return -1
		}
		if abiLess(b, a) {
			return 1
		}
		return 0
	})
	if names[0] != "linux-image-6.1.0-9-amd64" || names[2] != "linux-image-6.1.0-57-amd64" {
		t.Errorf("order %q", names)
	}
}

// The libraries of a dynamically linked tool include the loader.
func TestSharedLibs(t *testing.T) {
	if _, err := exec.LookPath("ldd"); err != nil {
		testenv.Skipf(t, "no ldd")
	}
	libs, err := sharedLibs("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	loader := false
	for _, l := range libs {
		if !filepath.IsAbs(l) {
			t.Errorf("relative library path %q", l)
		}
		loader = loader || strings.Contains(l, "ld-linux")
	}
	if !loader {
		t.Errorf("no dynamic loader among %q", libs)
	}
}
