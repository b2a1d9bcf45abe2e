#!/bin/sh
# The Claude Desktop extension bundle (.mcpb): manifest.json (from
# manifest.json.in: the version is meson's, the tools are the tool table's,
# as `vaultctl tools --json` prints it) and the packaged vault-mcp, vaultd
# and vaultd's image decoder (found next to vaultd) in server/, validated and packed with the official mcpb tool
# (tests/mcp's pinned @anthropic-ai/mcpb, installed by npm ci).
#   mcp/mcpb/pack.sh BUILD_DIR    -> BUILD_DIR/vaultd-<version>.mcpb
# BUILD_DIR is the Debian package's build (systemd/deb.sh): its staged
# /usr/bin programs are the ones bundled.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=$(cd "$1" && pwd)
bin=$build/deb-root/usr/bin
mcpb=$src/tests/mcp/node_modules/.bin/mcpb
for f in "$bin/vault-mcp" "$bin/vaultd" "$bin/vaultctl" \
	"$build/deb-root/usr/libexec/vaultd/vaultd-image"; do
	[ -x "$f" ] || {
		echo "pack.sh: $f is missing: run systemd/deb.sh $1 first" >&2
		exit 2
	}
done
[ -x "$mcpb" ] || {
	echo "pack.sh: the mcpb tool is missing: npm ci --prefix tests/mcp" >&2
	exit 2
}
version=$(meson introspect --projectinfo "$build" |
	sed -n 's/.*"version": *"\([^"]*\)".*/\1/p')

stage=$build/mcpb-root
rm -rf "$stage"
mkdir -p "$stage/server"
cp "$bin/vault-mcp" "$bin/vaultd" "$build/deb-root/usr/libexec/vaultd/vaultd-image" \
	"$stage/server/"
"$bin/vaultctl" tools --json >"$build/tools.json"
node -e '
const fs = require("fs");
const [tmpl, tools, version, out] = process.argv.slice(1);
const list = JSON.parse(fs.readFileSync(tools, "utf8"))
  .map((t) => ({ name: t.name, description: t.description }));
const text = fs.readFileSync(tmpl, "utf8")
  .replace("@VERSION@", version)
  .replace("@TOOLS@", JSON.stringify(list, null, 2).replace(/\n/g, "\n  "));
JSON.parse(text); // a template that stops being JSON fails here
fs.writeFileSync(out, text);
' "$here/manifest.json.in" "$build/tools.json" "$version" "$stage/manifest.json"

"$mcpb" validate "$stage/manifest.json" >"$build/mcpb-validate.log" 2>&1 || {
	cat "$build/mcpb-validate.log" >&2
	exit 1
}
out=$build/vaultd-$version.mcpb
rm -f "$out"
"$mcpb" pack "$stage" "$out" >"$build/mcpb-pack.log" 2>&1 || {
	cat "$build/mcpb-pack.log" >&2
	exit 1
}
echo "$out"
