#!/bin/sh
# Index build benchmark (engine issue): generates vaults of 10k and 100k
# notes and prints build time and peak RSS for each.
#   tests/bench/run-index-bench.sh [BUILD_DIR] [SIZES...]
# Goals on a 2-core machine: 10k <= 1 s, 100k <= 10 s,
# RSS <= 2 x markdown + 64 MB.
set -eu
build=${1:-build}
shift 2>/dev/null || true
sizes=${*:-"10000 100000"}
work=${BENCH_DIR:-${TMPDIR:-/tmp}/vaultd-bench}
mkdir -p "$work"
for n in $sizes; do
	dir="$work/vault-$n"
	if [ ! -f "$dir/.generated" ]; then
		rm -rf "$dir"
		"$build/tests/bench/gen_vault" "$dir" "$n" 1 >/dev/null
		touch "$dir/.generated"
	fi
	echo "== $n notes ($dir)"
	if [ "$(id -u)" = 0 ] && [ -w /proc/sys/vm/drop_caches ]; then
		sync
		echo 3 >/proc/sys/vm/drop_caches
		echo "-- cold page cache"
		"$build/tests/bench/bench_index" "$dir" | grep -E "index build|peak RSS"
	fi
	echo "-- warm page cache"
	"$build/tests/bench/bench_index" "$dir"
done
