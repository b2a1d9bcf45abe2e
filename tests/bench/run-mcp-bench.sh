#!/bin/sh
# MCP benchmark (daemon issue): initialize, read_note and search figures
# through vault-mcp with the official SDK client.
#   tests/bench/run-mcp-bench.sh [BUILD_DIR] [N_SMALL] [N_BIG]
set -eu
build=$(cd "${1:-build}" && pwd)
cd "$(dirname "$0")/../mcp"
[ -d node_modules/@modelcontextprotocol/sdk ] || npm ci --no-audit --no-fund --loglevel=error >/dev/null
export VAULTD_BIN="$build/fs/vaultd" VAULT_MCP_BIN="$build/mcp/vault-mcp" \
	VAULTCTL_BIN="$build/fs/vaultctl" GEN_VAULT_BIN="$build/tests/bench/gen_vault"
exec node bench-mcp.mjs "${2:-10000}" "${3:-100000}"
