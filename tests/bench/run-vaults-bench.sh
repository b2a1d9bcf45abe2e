#!/bin/sh
# Several-vaults benchmark: read_note with and without the vault argument,
# load_vault of a generated vault with a warm cache, through vault-mcp
# with the official SDK client.
#   tests/bench/run-vaults-bench.sh [BUILD_DIR] [N_NOTES]
set -eu
exec sh "$(dirname "$0")/node-bench.sh" "${1:-build}" bench-vaults.mjs "${2:-10000}"
