#!/bin/sh
# Task benchmark: list_tasks (every task, date, tag+status sorted, and
# text filters) through vault-mcp on a generated vault, median and p95.
#   tests/bench/run-tasks-bench.sh [BUILD_DIR] [N]
set -eu
exec sh "$(dirname "$0")/node-bench.sh" "${1:-build}" bench-tasks.mjs "${2:-10000}"
