#!/bin/sh
# Search benchmark (search issue): first build, warm restart, index size,
# full-text query latency through MCP next to grep -ril.
#   tests/bench/run-search-bench.sh [BUILD_DIR] [N...]   (default 10000 100000)
set -eu
build=$(cd "${1:-build}" && pwd)
[ $# -gt 0 ] && shift
cd "$(dirname "$0")/../mcp"
[ -d node_modules/@modelcontextprotocol/sdk ] || npm ci --no-audit --no-fund --loglevel=error >/dev/null
export VAULTD_BIN="$build/fs/vaultd" VAULT_MCP_BIN="$build/mcp/vault-mcp" \
	VAULTCTL_BIN="$build/fs/vaultctl" GEN_VAULT_BIN="$build/tests/bench/gen_vault"
exec node bench-search.mjs "$@"
