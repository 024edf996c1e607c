package archive

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ringfire/ringfire/internal/bench/report"
	"golang.org/x/sys/unix"
)

// ErrNotDisk: the disk directory is on tmpfs (or cannot be told).
var ErrNotDisk = errors.New("archive: not a disk")

// fsNames names the filesystems statfs may report here.
var fsNames = map[int64]string{
	unix.TMPFS_MAGIC: "tmpfs", unix.EXT4_SUPER_MAGIC: "ext2/3/4", unix.XFS_SUPER_MAGIC: "xfs",
	unix.BTRFS_SUPER_MAGIC: "btrfs", unix.OVERLAYFS_SUPER_MAGIC: "overlay", unix.RAMFS_MAGIC: "ramfs",
}

// fsType is the name of dir's filesystem type (its magic in hex when
// unknown) and the bytes free on it.
func fsType(dir string) (name string, free uint64, err error) {
	var s unix.Statfs_t
	if err := unix.Statfs(dir, &s); err != nil {
		return "", 0, fmt.Errorf("archive: statfs %s: %w", dir, err)
	}
	name, ok := fsNames[int64(s.Type)]
	if !ok {
		name = fmt.Sprintf("fs %#x", s.Type)
	}
	return name, s.Bavail * uint64(s.Bsize), nil
}

// mountSource is the device mounted where dir is (the longest mount
// point of /proc/self/mountinfo above it), "" when not found.
func mountSource(dir string) string {
	abs, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return ""
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	best, src := "", ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options... - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fs, ps := strings.Fields(post), strings.Fields(pre)
		if !ok || len(fs) < 2 || len(ps) < 5 {
			continue
		}
		mp := ps[4]
		if under(abs, mp) && len(mp) >= len(best) {
			best, src = mp, fs[1]
		}
	}
	return src
}

func under(path, mp string) bool {
	return mp == "/" || path == mp || strings.HasPrefix(path, mp+"/")
}

// describe is dir with its filesystem type and device.
func describe(dir string) string {
	name, _, err := fsType(dir)
	if err != nil {
		return dir
	}
	if src := mountSource(dir); src != "" {
		return fmt.Sprintf("%s (%s on %s)", dir, name, src)
	}
	return fmt.Sprintf("%s (%s)", dir, name)
}

// diskReady checks that the disk directory is on a disk (not tmpfs or
// ramfs) with need bytes free and 1 GiB more.
func (b *Bench) diskReady(need uint64) error {
	name, free, err := fsType(b.cfg.DiskDir)
	if err != nil {
		return err
	}
	if name == "tmpfs" || name == "ramfs" {
		return fmt.Errorf("%w: %s is %s", ErrNotDisk, b.cfg.DiskDir, name)
	}
	if free < need+1<<30 {
		return fmt.Errorf("archive: %s has %d MiB free, want %d", b.cfg.DiskDir, free>>20, (need+1<<30)>>20)
	}
	return nil
}

// ddCopied reads dd's summary: "N bytes (...) copied, S s, ...".
var ddCopied = regexp.MustCompile(`(\d+) bytes .*copied, ([0-9.eE+-]+) s`)

// ddWait bounds the dd run.
const ddWait = 2 * time.Minute

// DD measures the disk's sequential write bandwidth where the disk sweeps
// write: dd of Config.DDMiB MiB in 1 MiB direct writes (O_DIRECT: the
// page cache bypassed), its file removed. fio is not run: the report
// says whether it is there.
func (b *Bench) DD() (report.DiskBandwidth, error) {
	if err := b.diskReady(uint64(b.cfg.DDMiB) << 20); err != nil {
		return report.DiskBandwidth{Dir: describe(b.cfg.DiskDir), Fio: "absent"}, err
	}
	return b.dd(b.cfg.DiskDir, "oflag=direct")
}

// TmpfsDD measures what the tmpfs sweep's files cost the memory: dd of
// Config.DDMiB MiB in 1 MiB writes to a new file in tmpfs, every page
// allocated by the write as a recorder's new segments are. On a virtual
// machine whose host takes freed memory back, the same writes run at
// 0.3–2.4 GB/s from one minute to the next (dd to /dev/shm, this
// machine kind), so the tmpfs sweep is read against this figure of the
// same run.
func (b *Bench) TmpfsDD() (report.DiskBandwidth, error) {
	return b.dd(b.shm)
}

// dd writes Config.DDMiB MiB of zeros in 1 MiB writes to a file in a new
// directory under dir, with dd's extra arguments, and times it.
func (b *Bench) dd(dir string, extra ...string) (report.DiskBandwidth, error) {
	n := uint64(b.cfg.DDMiB)
	d := report.DiskBandwidth{Dir: describe(dir), Fio: "absent"}
	if p, err := exec.LookPath("fio"); err == nil {
		d.Fio = p + " (not run)"
	}
	work, err := os.MkdirTemp(dir, "ringfire-bench-dd-")
	if err != nil {
		return d, err
	}
	defer os.RemoveAll(work)
	args := append([]string{"if=/dev/zero", "of=" + filepath.Join(work, "dd"), "bs=1M", "count=" + strconv.FormatUint(n, 10)}, extra...)
	d.Tool = "dd " + strings.Join(args, " ")
	ctx, cancel := context.WithTimeout(context.Background(), ddWait)
	defer cancel()
	out, err := exec.CommandContext(ctx, "dd", args...).CombinedOutput()
	if err != nil {
		return d, fmt.Errorf("archive: %s: %w: %s", d.Tool, err, strings.TrimSpace(string(out)))
	}
	bytes, secs, err := parseDD(string(out))
	if err != nil {
		return d, err
	}
	d.Bytes, d.Elapsed = bytes, report.Duration(secs*float64(time.Second))
	return d, nil
}

// parseDD reads the bytes and seconds of dd's summary line.
func parseDD(out string) (uint64, float64, error) {
	m := ddCopied.FindStringSubmatch(out)
	if m == nil {
		return 0, 0, fmt.Errorf("archive: dd said %q: no summary", strings.TrimSpace(out))
	}
	n, err1 := strconv.ParseUint(m[1], 10, 64)
	s, err2 := strconv.ParseFloat(m[2], 64)
	if err := errors.Join(err1, err2); err != nil || s <= 0 {
		return 0, 0, fmt.Errorf("archive: dd summary %q: %v", m[0], err)
	}
	return n, s, nil
}
