package shm

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// Offset checkpoint file (64 bytes):
//
//	magic u64 "SHM_OFFS" @0 | version u32 = 1 @8 | pid u32 @12
//	last committed sequence u64 @16 | commit time ns u64 @24 | name [32]u8 @32
//
// The reader is the only writer. last is published with an atomic Store
// after pid, and the commit time follows it; a reader resuming from the
// file continues at last + 1.
const (
	CheckpointMagic   uint64 = 0x5348_4D5F_4F46_4653 // "SHM_OFFS"
	CheckpointVersion uint32 = 1
	CheckpointSize           = 64

	ckMagic   = 0
	ckVersion = 8
	ckPID     = 12
	ckLast    = 16
	ckTime    = 24
	ckName    = 32
)

type checkpoint struct {
	f *os.File
	m *mapping
}

// openCheckpoint opens (or creates) an offset file and returns the last
// committed sequence (0 when new).
func openCheckpoint(path, name string) (*checkpoint, uint64, error) {
	c, err := attachCheckpoint(path, true)
	if errors.Is(err, os.ErrNotExist) {
		return createCheckpoint(path, name)
	}
	if err != nil {
		return nil, 0, err
	}
	return c, c.m.u64(ckLast).Load(), nil
}

// attachCheckpoint maps an existing offset file and validates it.
func attachCheckpoint(path string, writable bool) (*checkpoint, error) {
	f, m, err := openMapped(path, writable, CheckpointSize)
	if err != nil {
		return nil, fmt.Errorf("offset file %s: %w", path, err)
	}
	c := &checkpoint{f: f, m: m}
	if mg := m.u64(ckMagic).Load(); mg != CheckpointMagic {
		c.close()
		return nil, fmt.Errorf("offset file %s: %w", path, fieldErr(ErrMagic, "magic", mg, "want %#x (\"SHM_OFFS\")", CheckpointMagic))
	}
	if v := m.u32(ckVersion).Load(); v != CheckpointVersion {
		c.close()
		return nil, fmt.Errorf("offset file %s: %w", path, fieldErr(ErrVersion, "version", uint64(v), "want %d", CheckpointVersion))
	}
	return c, nil
}

func createCheckpoint(path, name string) (*checkpoint, uint64, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return nil, 0, fmt.Errorf("offset file %s: %w", path, err)
	}
	fail := func(err error) (*checkpoint, uint64, error) {
		f.Close()
		os.Remove(path) // a half-made file would refuse the next open
		return nil, 0, fmt.Errorf("offset file %s: %w", path, err)
	}
	if err := allocate(f, CheckpointSize); err != nil {
		return fail(err)
	}
	m, err := mapFile(f, CheckpointSize, true, false)
	if err != nil {
		return fail(err)
	}
	m.u32(ckVersion).Store(CheckpointVersion)
	m.u32(ckPID).Store(uint32(os.Getpid()))
	var nb [32]byte
	copy(nb[:], name)
	m.storeBytes(ckName, nb[:])
	m.u64(ckMagic).Store(CheckpointMagic)
	return &checkpoint{f: f, m: m}, 0, nil
}

func (c *checkpoint) commit(last uint64) {
	c.m.u32(ckPID).Store(uint32(os.Getpid()))
	c.m.u64(ckLast).Store(last)
	c.m.u64(ckTime).Store(uint64(time.Now().UnixNano()))
}

func (c *checkpoint) close() {
	c.m.unmap()
	c.f.Close()
}

// ReadCheckpoint returns the last committed sequence and commit time of an
// offset file.
func ReadCheckpoint(path string) (last uint64, at time.Time, err error) {
	c, err := attachCheckpoint(path, false)
	if err != nil {
		return 0, time.Time{}, err
	}
	defer c.close()
	return c.m.u64(ckLast).Load(), time.Unix(0, int64(c.m.u64(ckTime).Load())), nil
}
