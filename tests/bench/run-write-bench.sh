#!/bin/sh
# Write benchmark (writes and renames at the cost of the disk):
# update_note, append_note, 1,000 appends to one note and a rename with
# 1,000 referrers through vault-mcp (official SDK client), and the same
# rename on the mount (root and /dev/fuse), on generated vaults.
#   tests/bench/run-write-bench.sh [BUILD_DIR] [N...]   (default 1000 10000 100000)
# The vaults are made under $BENCH_DIR (default /tmp/vaultd-bench-writes).
set -eu
build=${1:-build}
[ $# -gt 0 ] && shift
work=${BENCH_DIR:-${TMPDIR:-/tmp}/vaultd-bench-writes}
mkdir -p "$work"
export TMPDIR="$work"
exec sh "$(dirname "$0")/node-bench.sh" "$build" bench-write.mjs "$@"
