#!/bin/sh
# tools/list size benchmark: the bytes of vault-mcp's tool list for
# --tools all, core and --read-only, split by field (name, description,
# inputSchema, outputSchema, annotations).
#   tests/bench/run-toollist-bench.sh [BUILD_DIR]
# Goals: all <= 16 KB, core <= 8 KB (issue 16).
set -eu
exec sh "$(dirname "$0")/node-bench.sh" "${1:-build}" bench-toollist.mjs
