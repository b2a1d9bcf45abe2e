#!/bin/sh
# Big-note benchmark (issue 10): full-text, content search and replace_all
# with a 5 MB and a 20 MB note in a generated vault, through MCP.
#   tests/bench/run-bignote-bench.sh [BUILD_DIR] [N]   (default N: 10000)
set -eu
build=$(cd "${1:-build}" && pwd)
[ $# -gt 0 ] && shift
cd "$(dirname "$0")/../mcp"
[ -d node_modules/@modelcontextprotocol/sdk ] || npm ci --no-audit --no-fund --loglevel=error >/dev/null
export VAULTD_BIN="$build/fs/vaultd" VAULT_MCP_BIN="$build/mcp/vault-mcp" \
	VAULTCTL_BIN="$build/fs/vaultctl" GEN_VAULT_BIN="$build/tests/bench/gen_vault"
exec node bench-bignote.mjs "$@"
