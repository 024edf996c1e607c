#!/usr/bin/env bash
# make demo: a synthetic producer writes a ring on a "source host", ringfire
# serve multicasts it, and ringfire mirror keeps a copy on a "mirror host"
# (a second network namespace joined by a veth pair) where a validating
# reader and a rate monitor read the mirror ring. Needs root (namespaces).
# Datagrams travel over AF_XDP on both hosts (DEMO_XDP=veth0, the default);
# where AF_XDP cannot run, serve and mirror say why in one log line and use
# kernel UDP. DEMO_XDP= (empty) runs kernel UDP from the start.
set -euo pipefail
BIN=${BIN:-bin/ringfire}
SECS=${DEMO_SECONDS:-10}
RATE=${DEMO_RATE:-200000}
XDP=${DEMO_XDP-veth0}
xdp=()
via="kernel UDP"
if [ -n "$XDP" ]; then
	xdp=(--xdp "$XDP")
	via="AF_XDP on $XDP"
fi
tag=rfdemo$$
src=/dev/shm/$tag-source
dst=/dev/shm/$tag-mirror
pids=()

cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	ip netns del "$tag-src" 2>/dev/null || true
	ip netns del "$tag-mir" 2>/dev/null || true
	rm -f "$src" "$dst"
}
trap cleanup EXIT

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

echo "== source host 10.99.0.1: gen writes $RATE records/s into $src; serve multicasts it to 239.255.0.1:7401 ($via)"
echo "== mirror host 10.99.0.2: mirror keeps $dst; tail validates every record; top prints rates"
in_src "$BIN" gen "$src" --capacity 262144 --size 56 --rate "$RATE" --count $((RATE * (SECS + 2))) >/dev/null &
pids+=($!)
sleep 0.3
in_src "$BIN" serve "$src" --bind 10.99.0.1:7400 --multicast 239.255.0.1:7401 --iface 10.99.0.1 "${xdp[@]}" --duration $((SECS + 3))s &
pids+=($!)
sleep 0.3
in_mir "$BIN" mirror 10.99.0.1:7400 "$dst" --from latest --iface 10.99.0.2 "${xdp[@]}" --duration $((SECS + 2))s &
mirror=$!
pids+=($mirror)
for _ in $(seq 50); do [ -e "$dst" ] && break; sleep 0.1; done
in_mir "$BIN" tail "$dst" --from oldest --quiet --timeout 3s &
tailpid=$!
in_mir "$BIN" top "$dst" --interval-ms 1000 --iterations "$SECS"
wait "$mirror"
rc=0
wait "$tailpid" || rc=$?
exit $rc
