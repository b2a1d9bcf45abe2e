#!/bin/sh
# Run the end-to-end MCP tests (node --test) against the built binaries.
#   run.sh BUILD_DIR [FILES...]
set -eu
build=$(cd "$1" && pwd)
shift
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v node >/dev/null 2>&1 || [ ! -d "$here/node_modules/@modelcontextprotocol/sdk" ]; then
	echo "node or the pinned MCP SDK is missing (npm ci --prefix tests/mcp); skipping" >&2
	exit 77
fi
export VAULTD_BIN="$build/fs/vaultd"
export VAULT_MCP_BIN="$build/mcp/vault-mcp"
export VAULTCTL_BIN="$build/fs/vaultctl"
export GEN_VAULT_BIN="$build/tests/bench/gen_vault"
cd "$here"
if [ $# -eq 0 ]; then
	set -- *.test.mjs
fi
exec node --test --test-reporter=spec "$@"
