#!/bin/sh
# Property query benchmark: query_notes with typed properties and a DQL
# TABLE query through vault-mcp on a generated vault.
#   tests/bench/run-query-bench.sh [BUILD_DIR] [N]
# Goals: property query <= 5 ms median, DQL TABLE ... SORT <= 10 ms median
# (10k notes).
set -eu
exec sh "$(dirname "$0")/node-bench.sh" "${1:-build}" bench-query.mjs "${2:-10000}"
