#!/usr/bin/env bash
# deps.sh SET...: make sure the Debian packages that SET needs are installed.
# This file is the only list of them; the Makefile (make demo, make test,
# make vmtest) and .ci/run call it. SETs:
#
#   demo    make demo: namespaces and veth pairs (ip)
#   test    make test: the above, and git (gofmt's file list, the staleness
#           check of the generated XDP program), clang, llvm and libbpf-dev
#           (make check rebuilds bpf/steer.c through bpf2go), ethtool
#           (checksum and VLAN offload of test veths), ping (ICMP through
#           an interface that carries the XDP program), systemd
#           (systemd-analyze verify on contrib/systemd's units; no systemd
#           needs to run), util-linux (setpriv and prlimit: the CLI run
#           as an unprivileged user with capabilities), prometheus
#           (promtool: promtool check rules and test rules on
#           contrib/prometheus; its server is stopped and disabled when
#           deps.sh installs it), python3 (the archive format's reader in
#           docs/archive.md is run on a real archive) and zstd (a
#           compressed segment decompresses with the standard tool)
#   vmtest  make vmtest: qemu-system-x86 (the guest, under TCG),
#           busybox-static (its userland), cpio (checks our initramfs
#           writer), and apt lists that know linux-image-amd64 (the runner
#           fetches Debian 12's kernel with apt-get download)
#
# A package counts as present when what the suite uses from it is found
# (a command on PATH, a header file). Missing ones are installed with
# apt-get when running as root; otherwise deps.sh prints one line naming
# them and the command that installs them, and exits 1.
set -euo pipefail

# Each entry: SET PACKAGE CHECK, where CHECK is cmd:NAME (NAME on PATH) or
# file:PATH (PATH exists) or deb:PACKAGE (dpkg has it installed) or
# apt:PACKAGE (apt-cache knows PACKAGE).
table='
demo   iproute2            cmd:ip
demo   make                cmd:make
test   git                 cmd:git
test   clang               cmd:clang
test   llvm                cmd:llvm-strip
test   libbpf-dev          file:/usr/include/bpf/bpf_helpers.h
test   ethtool             cmd:ethtool
test   iputils-ping        cmd:ping
test   systemd             cmd:systemd-analyze
test   util-linux          cmd:setpriv
test   util-linux          cmd:prlimit
test   prometheus          cmd:promtool
test   python3             cmd:python3
test   zstd                cmd:zstd
vmtest qemu-system-x86     cmd:qemu-system-x86_64
vmtest busybox-static      deb:busybox-static
vmtest cpio                cmd:cpio
vmtest -                   apt:linux-image-amd64
'

# present CHECK: whether CHECK holds.
present() {
	case $1 in
	cmd:*) command -v "${1#cmd:}" >/dev/null 2>&1 ;;
	file:*) [ -e "${1#file:}" ] ;;
	deb:*) dpkg-query -W -f='${Status}' "${1#deb:}" 2>/dev/null | grep -q 'ok installed' ;;
	apt:*) apt-cache show "${1#apt:}" >/dev/null 2>&1 ;;
	*) echo "deps: bad check $1" >&2; return 2 ;;
	esac
}

# wanted SET: the sets SET includes (test and vmtest build on demo).
wanted() {
	case $1 in
	demo) echo demo ;;
	test) echo demo test ;;
	vmtest) echo demo vmtest ;;
	*) echo "deps: unknown set $1 (want demo, test or vmtest)" >&2; exit 2 ;;
	esac
}

# missing SETS...: print "PACKAGE CHECK" for each missing entry.
missing() {
	local sets=" $* " set pkg check
	while read -r set pkg check; do
		[ -n "$set" ] || continue
		case $sets in *" $set "*) ;; *) continue ;; esac
		present "$check" || echo "$pkg $check"
	done <<<"$table"
}

[ $# -gt 0 ] || { echo "usage: deps.sh demo|test|vmtest..." >&2; exit 2; }
sets=()
for s in "$@"; do read -ra w <<<"$(wanted "$s")"; sets+=("${w[@]}"); done

miss=$(missing "${sets[@]}")
[ -n "$miss" ] || exit 0
pkgs=$(awk '$1 != "-" {print $1}' <<<"$miss" | sort -u | tr '\n' ' ')
pkgs=${pkgs% }

if [ "$(id -u)" != 0 ]; then
	if [ -n "$pkgs" ]; then
		echo "deps: missing Debian packages: $pkgs; install them with: sudo apt-get install -y $pkgs" >&2
	else
		echo "deps: apt lists missing; refresh them with: sudo apt-get update" >&2
	fi
	exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "deps: missing packages: $pkgs (Debian names; this machine has no apt-get: install the equivalents)" >&2
	exit 1
fi
echo "deps: installing ${pkgs:-apt lists}" >&2
apt-get update -qq
if [ -n "$pkgs" ]; then
	# shellcheck disable=SC2086 # the list is words
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $pkgs >/dev/null
fi
# The suite needs only promtool; Debian's prometheus package also enables
# and starts a Prometheus server (port 9090) where systemd runs.
case " $pkgs " in *" prometheus "*)
	if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
		systemctl disable --now prometheus.service >/dev/null 2>&1 || true
		echo "deps: stopped and disabled prometheus.service (the tests use only promtool)" >&2
	fi
	;;
esac
still=$(missing "${sets[@]}")
if [ -n "$still" ]; then
	echo "deps: installed $pkgs, but still not found: $(tr '\n' ' ' <<<"$still")" >&2
	exit 1
fi
