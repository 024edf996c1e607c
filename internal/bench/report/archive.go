package report

// Archive is the archive section: recording a ring into an archive and
// replaying it, each endpoint a process of its own (a producer, the
// recorder, the replayer), and a seek and compression measured in the
// bench's own process.
type Archive struct {
	// Record is one zero-gap sweep per medium, sync mode and record size:
	// tmpfs first, then the disk.
	Record []ArchiveRecord `json:"record"`
	// Disk is the disk's own sequential write bandwidth, measured on the
	// filesystem of the disk sweeps in the same run.
	Disk *DiskBandwidth `json:"disk,omitempty"`
	// Tmpfs is tmpfs's write bandwidth to new pages (no O_DIRECT),
	// measured just before the tmpfs sweep.
	Tmpfs    *DiskBandwidth    `json:"tmpfs,omitempty"`
	Replay   *ArchiveReplay    `json:"replay,omitempty"`
	Seek     *ArchiveSeek      `json:"seek,omitempty"`
	Compress []ArchiveCompress `json:"compress,omitempty"`
	// Catchup is a mirror catching up from the archive, then live.
	Catchup *ArchiveCatchup `json:"catchup,omitempty"`
}

// ArchiveRecord is a recorder following a producer's ring at each offered
// rate of a sweep: the highest rate it kept up with, no gap entry.
type ArchiveRecord struct {
	Medium   string        `json:"medium"` // tmpfs or disk
	Dir      string        `json:"dir"`    // where the archive was written: path, filesystem, device
	Sync     string        `json:"sync"`   // the recorder's --sync
	Record   int           `json:"record_bytes"`
	Capacity uint64        `json:"ring_capacity"`
	Best     ArchiveStep   `json:"best"` // the last zero-gap step (Rate 0: none)
	Capped   bool          `json:"capped"`
	Sweep    []ArchiveStep `json:"sweep"`
}

// ArchiveStep is one rate of a recording sweep.
type ArchiveStep struct {
	Rate       int     `json:"offered_per_s"`
	Pushed     uint64  `json:"pushed"`
	Records    uint64  `json:"records"` // recorded
	Gaps       uint64  `json:"gaps"`    // gap entries
	GapRecords uint64  `json:"gap_records"`
	Bytes      uint64  `json:"bytes"`          // entry bytes written
	Written    bool    `json:"written"`        // every record written within the drain bound
	Achieved   float64 `json:"achieved_per_s"` // pushed ÷ time until written
	// Elapsed: the producer's go to every record written; Synced adds
	// the syncfs that followed (the disk sweeps).
	Elapsed Duration  `json:"elapsed"`
	Synced  Duration  `json:"synced,omitempty"`
	CPU     []ProcCPU `json:"cpu"` // producer, recorder
}

// ZeroGap reports whether the recorder wrote every record pushed, no gap.
func (s ArchiveStep) ZeroGap() bool {
	return s.Written && s.Gaps == 0 && s.Records == s.Pushed && s.Pushed > 0
}

// DiskBandwidth is `dd if=/dev/zero of=FILE bs=1M count=N [oflag=direct]`.
type DiskBandwidth struct {
	Dir     string   `json:"dir"`
	Tool    string   `json:"tool"` // the command line
	Bytes   uint64   `json:"bytes"`
	Elapsed Duration `json:"elapsed"`
	Fio     string   `json:"fio"` // "absent", or its path (not run)
}

// PerSec is the bandwidth in bytes/s.
func (d DiskBandwidth) PerSec() float64 { return perSec(d.Bytes, d.Elapsed) }

// ArchiveReplay is archive.Replay at speed 0 (as fast as it can) from a
// warm page cache into a ring, in a process of its own.
type ArchiveReplay struct {
	Dir     string    `json:"dir"`
	Records uint64    `json:"records"`
	Bytes   uint64    `json:"bytes"` // the archive's data bytes
	Elapsed Duration  `json:"elapsed"`
	CPU     []ProcCPU `json:"cpu"` // replayer
}

// ArchiveSeek is Seek or SeekTime and the first Next, to random targets
// of an archive built for it.
type ArchiveSeek struct {
	Dir      string        `json:"dir"`
	Records  uint64        `json:"records"`
	Bytes    uint64        `json:"bytes"`
	Segments int           `json:"segments"`
	Build    Duration      `json:"build"` // writing it and syncing it
	Lat      []SeekLatency `json:"latency"`
}

// SeekLatency is one kind of seek (by sequence or by time) from a cold or
// a warm page cache.
type SeekLatency struct {
	By    string      `json:"by"`
	Cache string      `json:"cache"`
	Lat   Percentiles `json:"latency"`
}

// ArchiveCompress is one feed written twice, plain and compressed: the
// sealed segments' sizes, the time sealing took and a cursor's read rate.
type ArchiveCompress struct {
	Feed       string   `json:"feed"`
	Records    uint64   `json:"records"` // in the sealed segments
	Payload    uint64   `json:"payload_bytes"`
	Plain      uint64   `json:"plain_bytes"`      // the sealed segments' data
	Compressed uint64   `json:"compressed_bytes"` // the same, compressed
	SealPlain  Duration `json:"seal_plain"`
	SealZstd   Duration `json:"seal_zstd"`
	ReadPlain  Duration `json:"read_plain"` // a cursor over every sealed record
	ReadZstd   Duration `json:"read_zstd"`
}
