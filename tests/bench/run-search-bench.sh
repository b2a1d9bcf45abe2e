#!/bin/sh
# Search benchmark (search issue): first build, warm restart, index size,
# full-text query latency through MCP next to grep -ril.
#   tests/bench/run-search-bench.sh [BUILD_DIR] [N...]   (default 1000 10000;
#   add 100000 for the large vault, which takes minutes)
set -eu
build=${1:-build}
[ $# -gt 0 ] && shift
exec sh "$(dirname "$0")/node-bench.sh" "$build" bench-search.mjs "$@"
