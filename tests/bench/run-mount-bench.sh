#!/bin/sh
# Mount benchmark (mount issue, fast-at-any-size issue): on a generated
# vault of each size, the vault folder natively against vaultd's guarded
# mount of it, in one run: read of every note (first time and warm),
# guarded create+write+close of 1000 notes, and vaultd's memory; on the
# first vault also stat and readdir of 10k files and a sequential read of
# 256 MB (they do not depend on the number of notes, and every file the
# kernel has looked up holds a descriptor in vaultd until it forgets it).
#   tests/bench/run-mount-bench.sh [BUILD_DIR] [SIZES...]  (1000 10000)
# VAULTD=path/to/vaultd measures another vaultd (an older build, say) with
# this build's tools.
set -eu
build=$(cd "${1:-build}" && pwd)
shift 2>/dev/null || true
vaultd=${VAULTD:-$build/fs/vaultd}
sizes=${*:-"1000 10000"}
work=${BENCH_DIR:-${TMPDIR:-/tmp}/vaultd-mount-bench}
[ -e /dev/fuse ] || { echo "no /dev/fuse"; exit 77; }
# The descriptor limit vaultd@.service gives vaultd (every file looked up
# through the mount holds one), where this shell may raise it.
ulimit -n 524288 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
pid=
finish() {
	[ -n "$pid" ] && { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }
	pid=
	rm -rf "$work"
}
trap finish EXIT
first=1
for n in $sizes; do
	finish
	V=$work/vault M=$work/mnt
	mkdir -p "$work/plain" "$M" "$work/run" "$work/cache"
	"$build/tests/bench/gen_vault" "$V" "$n" 1 >/dev/null
	md=$(find "$V" -name '*.md' -not -path '*/.*' -printf '%s\n' |
		awk '{ s += $1 } END { printf "%d", s }')
	if [ -n "$first" ]; then
		mkdir -p "$V/files"
		i=0
		while [ $i -lt 10000 ]; do
			printf 'x\n' >"$V/files/$(printf 'f%05d.txt' $i)"
			i=$((i + 1))
		done
		head -c $((256 * 1024 * 1024)) /dev/urandom >"$V/big.bin"
	fi
	first=
	XDG_RUNTIME_DIR="$work/run" XDG_CACHE_HOME="$work/cache" \
		"$vaultd" --vault "$V" --mount "$M" -f \
		2>"$work/vaultd.log" &
	pid=$!
	# Timed once vaultd is idle: indexed, searchable, history recorded.
	ok=
	for _ in $(seq 6000); do
		st=$(XDG_RUNTIME_DIR="$work/run" "$build/fs/vaultctl" \
			--vault "$V" --json status 2>/dev/null | tr -d ' \t\n') || st=
		case $st in
		*'"search_index":{"state":"ready"'*'"settled":true'*) ok=1; break ;;
		esac
		sleep 0.1
	done
	[ -n "$ok" ] || { tail "$work/vaultd.log"; echo "vaultd never settled"; exit 1; }
	echo "== $n notes"
	"$build/tests/bench/bench_mount" "$V" "$M" "$work/plain"
	awk -v md="$md" '
		/^VmHWM/ { hwm = $2 * 1024 } /^VmRSS/ { rss = $2 * 1024 }
		END { printf "vaultd RSS %.0f MB (peak %.0f MB), markdown " \
			"%.0f MB  (goal: RSS <= 1.3 x markdown + 32 MB = " \
			"%.0f MB)\n", rss / 1e6, hwm / 1e6, md / 1e6,
			(1.3 * md + 32e6) / 1e6 }' "/proc/$pid/status"
done
