#!/bin/sh
# Run one of the MCP benchmarks of tests/mcp against a build directory,
# with the pinned SDK installed if it is not yet.
#   tests/bench/node-bench.sh BUILD_DIR SCRIPT.mjs [ARGS...]
set -eu
build=$(cd "$1" && pwd)
script=$2
shift 2
cd "$(dirname "$0")/../mcp"
[ -d node_modules/@modelcontextprotocol/sdk ] || npm ci --no-audit --no-fund --loglevel=error >/dev/null
export VAULTD_BIN="$build/fs/vaultd" VAULT_MCP_BIN="$build/mcp/vault-mcp" \
	VAULTCTL_BIN="$build/fs/vaultctl" GEN_VAULT_BIN="${GEN_VAULT_BIN:-$build/tests/bench/gen_vault}"
exec node "$script" "$@"
