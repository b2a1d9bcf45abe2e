#!/bin/sh
# Big-note benchmark (issue 10): full-text, content search and replace_all
# with a 5 MB and a 20 MB note in a generated vault, through MCP.
#   tests/bench/run-bignote-bench.sh [BUILD_DIR] [N]   (default N: 10000)
set -eu
build=${1:-build}
[ $# -gt 0 ] && shift
exec sh "$(dirname "$0")/node-bench.sh" "$build" bench-bignote.mjs "$@"
