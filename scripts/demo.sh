#!/usr/bin/env bash
# make demo: a synthetic producer writes a ring on a "source host", ringfire
# serve multicasts it, and ringfire mirror keeps a copy on a "mirror host"
# (a second network namespace joined by a veth pair) where a validating
# reader and a rate monitor read the mirror ring. Needs root (namespaces).
# Datagrams travel over AF_XDP on both hosts (DEMO_XDP=veth0, the default);
# where AF_XDP cannot run, serve and mirror fall back to kernel UDP and the
# summary says why. DEMO_XDP= (empty) runs kernel UDP from the start.
#
# The programs' logs and counters go to files; the terminal shows the
# mirror ring's rate once a second, any warning, and one closing line: what
# ran, over which transport, how many records, how many lost, and the
# one-way latency tail measured (gen's timestamp in each record to tail's
# read; the namespaces share the clock). A failed run prints the logs.
set -euo pipefail
BIN=${BIN:-bin/ringfire}
SECS=${DEMO_SECONDS:-10}
RATE=${DEMO_RATE:-200000}
XDP=${DEMO_XDP-veth0}
xdp=()
if [ -n "$XDP" ]; then
	xdp=(--xdp "$XDP")
fi
tag=rfdemo$$
src=/dev/shm/$tag-source
dst=/dev/shm/$tag-mirror
logs=$(mktemp -d "/tmp/$tag.XXXXXX")
pids=()

cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	ip netns del "$tag-src" 2>/dev/null || true
	ip netns del "$tag-mir" 2>/dev/null || true
	rm -f "$src" "$dst"
	rm -rf "$logs"
}
trap cleanup EXIT

# fail prints what went wrong and every log, then exits with status 1.
fail() {
	echo "demo: FAILED: $*" >&2
	for f in "$logs"/*; do
		echo "---- ${f##*/}" >&2
		cat "$f" >&2
	done
	exit 1
}

if [ "$(id -u)" != 0 ]; then
	echo "demo: needs root to create network namespaces" >&2
	exit 1
fi
ip netns add "$tag-src"
ip netns add "$tag-mir"
ip link add veth0 netns "$tag-src" type veth peer name veth0 netns "$tag-mir"
ip -n "$tag-src" addr add 10.99.0.1/24 dev veth0
ip -n "$tag-mir" addr add 10.99.0.2/24 dev veth0
for ns in "$tag-src" "$tag-mir"; do
	ip -n "$ns" link set lo up
	ip -n "$ns" link set veth0 up
done
in_src() { ip netns exec "$tag-src" "$@"; }
in_mir() { ip netns exec "$tag-mir" "$@"; }

echo "== source host 10.99.0.1: gen writes $RATE records/s into $src; serve multicasts it to 239.255.0.1:7401"
echo "== mirror host 10.99.0.2: mirror keeps $dst; tail validates every record; top prints the mirror ring's rate"
in_src "$BIN" gen "$src" --capacity 262144 --size 56 --rate "$RATE" --count $((RATE * (SECS + 2))) >"$logs/gen" 2>&1 &
pids+=($!)
sleep 0.3
in_src "$BIN" serve "$src" --bind 10.99.0.1:7400 --multicast 239.255.0.1:7401 --iface 10.99.0.1 "${xdp[@]}" \
	--duration $((SECS + 3))s >"$logs/serve" 2>&1 &
pids+=($!)
sleep 0.3
in_mir "$BIN" mirror 10.99.0.1:7400 "$dst" --from latest --iface 10.99.0.2 "${xdp[@]}" \
	--duration $((SECS + 2))s >"$logs/mirror" 2>&1 &
mirror=$!
pids+=($mirror)
for _ in $(seq 50); do [ -e "$dst" ] && break; sleep 0.1; done
[ -e "$dst" ] || fail "the mirror never created $dst"
in_mir "$BIN" tail "$dst" --from oldest --quiet --timeout 3s >"$logs/tail" 2>&1 &
tailpid=$!
pids+=($tailpid)
in_mir "$BIN" top "$dst" --interval-ms 1000 --iterations "$SECS" || fail "top failed"
wait "$mirror" || fail "mirror exited with status $?"
wait "$tailpid" || fail "tail exited with status $? (a record failed validation)"

# The mirror's counters name the transport ("xdp multicast", "udp
# multicast", ...); a fallback to kernel UDP is logged once, with why.
transport=$(sed -n 's/^mirror: \([^,]*\),.*/\1/p' "$logs/mirror" | tail -n 1)
case "$transport" in
xdp\ *) transport="AF_XDP ${transport#xdp }" ;;
afpacket\ *) transport="AF_PACKET ${transport#afpacket }" ;;
udp\ *) transport="kernel UDP ${transport#udp }" ;;
"") fail "the mirror printed no counters" ;;
esac
why=$(sed -n 's/.*falling back to kernel UDP.* reason="\([^"]*\)".*/\1/p' "$logs/serve" "$logs/mirror" | head -n 1)
[ -z "$why" ] || transport="$transport (AF_XDP unavailable: $why)"

# tail's totals: received N, lapped L, gaps G, checksum errors C,
# sequence errors S (seq A..B)[; started at ...][; latency from gen's
# stamp p50 X, p99 Y, max Z (...)]
totals=$(grep '^received ' "$logs/tail" | tail -n 1)
[ -n "$totals" ] || fail "tail printed no totals"
received=$(sed -n 's/^received \([0-9]*\),.*/\1/p' <<<"$totals")
lost=$(sed -n 's/.* lapped \([0-9]*\),.*/\1/p' <<<"$totals")
latency=$(sed -n 's/.*latency from gen.s stamp \(p50 [^,]*\), \(p99 [^,]*\),.*/\1, \2/p' <<<"$totals")
[ "$received" -gt 0 ] || fail "tail received no record"

# Warnings, but the fallback the summary already tells.
if grep -h 'level=WARN' "$logs/serve" "$logs/mirror" | grep -v 'falling back to kernel UDP'; then
	echo "demo: the warnings above came from serve or mirror" >&2
fi
line="demo: $received records went from gen on the source host to tail on the mirror host"
line="$line (serve -> $transport over veth0 -> mirror), $lost lost"
if [ -n "$latency" ]; then
	line="$line, one-way latency $latency"
fi
echo "$line"
if [ "$lost" != 0 ]; then
	echo "demo: tail lost $lost records after it started: $totals" >&2
fi
