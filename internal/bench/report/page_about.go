package report

// What the page says about how the figures are taken: the method, each
// section, and the floors. It describes the code of ringfire-bench, not
// a run; a run's own facts (machine, command) come from the Report.

// aboutMethod is the page's method: where the endpoints run and how the
// figures are taken.
const aboutMethod = `ringfire-bench creates two network namespaces joined by veth pairs (and,
for the fan-out, a bridge with one namespace per mirror) and measures, in
one run and with one record size, every datagram path the replica layer can
use: TCP only, kernel UDP (sendmmsg and recvmmsg) unicast and multicast,
AF_PACKET rings and AF_XDP (copy mode on a veth, the program attached
native). Outside the deployed and rings sections every endpoint runs in the
one ringfire-bench process with GOMAXPROCS 8, where in production each is a
process of its own with its own Ps. The deployed and rings sections start
every endpoint as a process of its own: ringfire serve, mirror or run, and
a pinger and an echo that are ringfire-bench re-executed in a hidden role.

Latencies come from HDR histograms (3 significant digits), timed from the
push (the record carries its push time) to the read. Before the run, one
thread reads the clock in a loop for twice the stage time: the gaps it
sees are the machine's own stalls ("stalls" below), which no figure of the
run can avoid. Benchmarks report; they never fail on a time.`

// aboutSection says what each section (by its --sections name) measures
// and how.
var aboutSection = map[string]string{
	"pingpong": `A closed loop, one record in flight: push into ring A, serve, mirror A' on
the other host, an echo pushes it into ring B, serve, mirror B', the
pinger reads it. Two replication hops and an echo, each direction on its
own link. Beside it, the datagram round trip of the transport alone (one
datagram A → B → A, no ring).`,
	"stress": `An open loop at each offered rate of --rates for --stress each: the
producer never waits, echoes are matched by sequence. Delivered share,
disorder, round-trip percentiles, NAKs, retransmitted records and gaps, up
to the second rate in a row that loses. The zero-loss rate is the highest
offered rate a mirror on the other host receives whole, in order, with no
gap and no NAK-repaired record (one hop), once per wait of --waits (a
loop's wait name runs a replica.Loop per host); every record the mirror
ring still holds after a lossless step is checked (sequence and checksum).
≥ marks a rate that was lossless at the top of the sweep: a lower bound.`,
	"stages": `Push-to-read latency at each producer rate of --stage-rates: on the source
host (a reader of the ring itself), on a mirror on the same host (TCP to
the source), on a mirror on the other host, and through a hub (the other
host mirrors and serves again; a leaf on the source host mirrors the hub).
All four at once with a thread per endpoint; each mirror path alone (the
same-host mirror on TCP, then on the source's Unix socket); all four at
once with the same-host mirror on the Unix socket; all four at once with a
replica.Loop per host; then the floors of those layouts (below). At the
first rate, the source's Wait for 1 and for 2 of its mirrors is timed too,
push to return.`,
	"fanout": `One source and 1, 4 and 16 mirrors (--fanout), each on a host of its own,
over kernel UDP unicast (sendmmsg to every mirror) and multicast, AF_PACKET
and AF_XDP: push-to-read at each mirror (the spread across mirrors), and
the producer's Push cost with the mirrors attached against a ring nobody
serves (alternating rounds, medians of 7).`,
	"sendcost": `One sendmmsg to N destinations against N sendto calls, per mirror, for
each mirror count of --fanout.`,
	"deployed": `The ping-pong loop as deployed, every endpoint its own process: a pinger
(ring A, namespace N1), ringfire serve A (N1), ringfire mirror into A'
(N2), an echo (A' → ring B, N2), ringfire serve B (N2), ringfire mirror
into B' (N1), over two veth pairs (one per direction, so that no interface
end has two AF_XDP users). Each transport in each wait of --waits
("default" passes no flag, "spin" passes --spin, any other X passes
--wait X; the pinger and echo wait on their rings to match). A loop's wait
name (loop-yield) runs four processes instead: the pinger, one ringfire run
per namespace carrying that host's serve and mirror on one replica.Loop,
and the echo. Beside it, the datagram alone between two processes over the
same veth in each waiting style, and the CPU each process used per second
of the measurement (utime+stime of /proc/PID/stat). Hiccup is the longest
a thread of the bench sleeping 1 ms at a time woke late meanwhile: a max
far above the p99.9 with a hiccup as long is the machine's stall, not the
endpoints'. Warm-up and samples are --warmup and --samples round trips,
bounded in time by 10 s and --deployed-for.`,
	"rings": `N rings (1 and each count of --rings) served and mirrored by one ringfire
run process per side over AF_XDP unicast, in the deployed section's two
namespaces, once per wait of --rings-waits; one ring alone is the base of
the ratios. Zero-loss: ringfire-bench writes all N rings at once, round
robin, the aggregate rate of --rates split evenly, and a rate is lossless
when every mirror ring holds every record within 2 s and the run
processes' NAK, gap and retransmission counters (their /metrics) did not
move. Round trip: one pinger and one echo process for all N rings, polling
them on a locked thread, with a record in flight on every ring at once and
then one record in flight in all, ring after ring.`,
	"lines": `A/B lines (issue 41): one ringfire run per namespace, run 1 (N1) serving
one ring on line A and, with two lines, on line B too (serve --multicast
and --multicast-b, each line its own interface, group and AF_XDP socket for
--lines-transport xdp-multicast), run 2 (N2) mirroring it from both (mirror
--iface-b). Zero-loss: over direct links (veth0 for line A, veth1 for line
B), ringfire-bench writes the ring at each rate of --rates for --stress,
the rings section's sweep and criterion (every record in the mirror ring
within 2 s, no NAK, gap or retransmission), one line then two. The cases:
each line passes through a middle namespace of its own where a forwarder
process (ringfire-bench, plain AF_PACKET sockets) passes every frame
between its two veths, holding those towards the mirror for the line's
delay (an absolute clock_nanosleep with 1 ns timer slack; this kernel has
no netem) and dropping each DATA frame with the line's loss, a seeded
PRNG per line, logging each dropped frame's first sequence; the other
direction passes at once; its threads run SCHED_FIFO, so that on the busy
host a frame is forwarded when it comes, as on a wire. A producer process (N1) pushes --lines-rate
records/s, each stamped, for --lines-for after --open-warmup, and a reader
process (N2) records each record's one way, as in the openloop section.
Every case but "A direct" and "A+B direct" (line A, or both, over veth0
and veth1) goes through the forwarders (delay 0 on a clean line): A+B
direct against A direct is two lines' own cost, A against A direct a
forwarder's. The delayed cases are held against "A of A+B": the source
sends on both lines through both forwarders, as in them, and the mirror
takes line A alone (the fast line alone, under the same load; the
forwarders share the host's two cores with serve and mirror). Dropped on both
is the frames both forwarders dropped; the mirror's NAKs and gaps come
from run 2's /metrics, over the whole case.`,
	"openloop": `One-way latency under a fixed offered load, as deployed: a producer
process (namespace N1) pushes 64-byte records into a ring of 2^20 at each
rate of --open-rates and at the run's zero-loss rate (the stress section's
for the same transport and wait when the run measured it, else
--open-zero-loss), --open-step each after a warm-up of --open-warmup,
stamping every record with the time as it pushes it: it pushes what is
due, then sleeps in nanosleep with a 1 ns timer slack until the next
record is due, 250 µs at the shortest (a wake-up costs this machine kind
19–41 µs of CPU); records a burst is how many it pushed a wake-up;
ringfire serve (N1)
and ringfire mirror (N2) replicate it over --open-transport, or one
ringfire run per namespace for a loop's wait name; a reader process (N2)
reads the mirror ring, waiting as the wait says, and records each record's
one way in an HDR histogram (the namespaces share the clock). Once per
wait of --waits. Lapped is records the reader never saw (overwritten
before it got to them, or holes), lost those neither read nor lapped
within 2 s of the step's end; the sweep stops after the second rate in a
row with a p99 over 1 s or a record lapped or lost. The knee is the
highest offered rate up to which every rate kept its one-way p99 at or
under 1 ms and lost nothing (≥: the top of the sweep); it is set beside
the zero-loss rate, which says what a mirror receives whole, not how late.
CPU is utime+stime of /proc/PID/stat of each process over the step and its
drain.`,
	"archive": `Package archive as deployed: a producer process pushes 64-byte records
(ringfire gen's) into a ring of 2^20 at each offered rate of
--archive-rates for --archive-step, and a recorder process
(archive.Recorder, from the oldest record) follows it into an archive in
tmpfs; the producer is pinned to CPU 0, the recorder to CPU 1. A rate is
kept up with when the recorder wrote every record pushed, with no gap
entry, within 2 s of the producer's last; the sweep goes on to the second
rate in a row that is not. Its highest such rate is set beside the run's
highest zero-loss replication rate (the stress section's, when the run
measured it). The same sweep onto the disk (--archive-dir, checked not to
be tmpfs) for each record size of --archive-disk-records (the ring 64 MiB)
and sync mode of --archive-syncs, the rates in MB/s of payload
(--archive-disk-rates), each step ending with an fdatasync of every file of
the archive: written is the entry bytes over the time until the last was
written, durable over the time until synced, set beside what dd writes to
the same filesystem with O_DIRECT in the same run. A replayer process
replays an archive of --archive-replay records on the disk at speed max
(archive.Replay, Speed 0) into a ring, once to warm the page cache and
make the ring, once timed. Seek: an archive of --archive-seek records on
the disk (64 MiB segments, written through the page cache), a Seek or
SeekTime to a random sequence or time and the first Next, --archive-seeks
of each, warm (the page cache as the writes left it; a Reader that read
every index first) and cold (the
archive's files dropped from the page cache with posix_fadvise and a fresh
Reader). Compression: --archive-compress records of the synthetic feed and
of a market-data feed (300 symbols, power-law busy, prices moving a tick
or two as integers, round-lot sizes, increasing times) written in tmpfs
plain and compressed in 16 MiB segments: the sealed segments' sizes, the
time of the appends that sealed them, and a fresh Reader's cursor over
them. CPU is utime+stime of /proc/PID/stat over the measurement; every
file the section makes is removed.`,
}

// aboutFloors says what the floors are and how to read a figure against
// its floor.
const aboutFloors = `A floor is the same layout of busy threads or processes passing a record
on through rings in /dev/shm, with no network, no socket and no ringfire
code: the stages' "floor of …" rows (relays on locked threads, polling and
calling sched_yield between empty passes) and the deployed section's hand-offs
alone (the six processes of the round trip, or a loop's four). Beside them,
the datagram alone is the network's own share of a round trip. What a
figure takes above its floor is the sockets and ringfire's own work; a
figure below its floor would be a fault of the bench. The machine's stalls
bound every tail: no max can be lower than the longest stall of its time.`
