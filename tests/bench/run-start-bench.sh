#!/bin/sh
# Start benchmark: spawn -> first name, tag, backlinks and full-text answer
# through vault-mcp, cold (no cache) and warm (cache present, vault
# unchanged); the cache's size across restarts; vaultd's peak RSS.
#   tests/bench/run-start-bench.sh [BUILD_DIR] [SIZES...]
#                                  (default sizes: 1000 10000 100000)
# Vaults are generated once under BENCH_DIR (default /tmp/vaultd-bench).
# Goals at 100k on a 2-core machine: warm <= 1.5 s to the first full-text
# answer; cold <= 12 s to it, name/tag/backlinks within 3 s; the cache
# never grows across restarts and is <= 1.2 x the markdown bytes; peak
# RSS <= 1.3 x markdown + 32 MB. Run as root, the cold start is measured
# with the page cache dropped too.
set -eu
build=${1:-build}
[ $# -gt 0 ] && shift
exec sh "$(dirname "$0")/node-bench.sh" "$build" bench-start.mjs "$@"
