#!/bin/sh
# The Claude Desktop extension bundle (mcp/mcpb/pack.sh): unpacked and
# validated with the official mcpb tool, its manifest checked (version,
# binary server, the vault as a directory setting, the tool table), and
# its vault-mcp run the way a host runs it (tests/mcp/bundle-check.mjs).
#   test-mcpb.sh BUNDLE VERSION VAULTCTL EXAMPLE_VAULT
set -u
. "$(dirname "$0")/lib.sh"
[ -f "$1" ] || { echo "FAIL: no bundle at '$1'"; exit 1; }
bundle=$(abs "$1")
version=$2
vaultctl=$(abs "$3")
example=$(abs "$4")
mcpdir=$(cd "$(dirname "$0")/mcp" && pwd)
mcpb=$mcpdir/node_modules/.bin/mcpb
[ -x "$mcpb" ] || { echo "the mcpb tool is missing (npm ci --prefix tests/mcp)"; exit 1; }
make_tmp

"$mcpb" unpack "$bundle" "$tmp/x" >"$tmp/unpack" 2>&1 || fail "mcpb unpack: $(cat "$tmp/unpack")"
"$mcpb" validate "$tmp/x/manifest.json" >"$tmp/validate" 2>&1 ||
	fail "mcpb validate: $(cat "$tmp/validate")"
"$mcpb" info "$bundle" >"$tmp/info" 2>&1 || fail "mcpb info: $(cat "$tmp/info")"
"$vaultctl" tools --json >"$tmp/tools.json"
(cd "$mcpdir" && node bundle-check.mjs "$tmp/x" "$version" "$tmp/tools.json" "$example") ||
	fail "the bundle does not run as a host runs it"

if [ "$failures" -gt 0 ]; then
	echo "$failures failures"
	exit 1
fi
echo "Claude Desktop bundle $(basename "$bundle"): valid, and it serves a vault"
