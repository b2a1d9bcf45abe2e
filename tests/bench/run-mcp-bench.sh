#!/bin/sh
# MCP benchmark (daemon issue): initialize, read_note and search figures
# through vault-mcp with the official SDK client.
#   tests/bench/run-mcp-bench.sh [BUILD_DIR] [N_SMALL] [N_BIG]
set -eu
exec sh "$(dirname "$0")/node-bench.sh" "${1:-build}" bench-mcp.mjs \
	"${2:-10000}" "${3:-100000}"
