#!/bin/sh
# common/'s libraries depend one way (common/meson.build): vault-mcp links
# the protocol library alone, so none of the engine's libraries reach it;
# the engine library defines and calls nothing of the tools or of
# JSON-RPC, and no symbol of it is named after a tool (the names come from
# the one tool table, through `vaultctl tools`). No program but the image
# decoder vaultd-image links libvips (image.h): vaultd starts it per image.
set -eu
vault_mcp=$1
engine=$2
vaultctl=$3
vaultd=$4
vaultd_image=$5
fail() { echo "FAIL: $*" >&2; exit 1; }

for prog in "$vaultd" "$vaultctl" "$vault_mcp"; do
	if ldd "$prog" | grep -E 'libvips|libglib|libgobject'; then
		fail "$prog links libvips or GLib (images are decoded by vaultd-image)"
	fi
done
ldd "$vaultd_image" | grep -q libvips || fail "$vaultd_image does not link libvips"

libs=$(ldd "$vault_mcp")
echo "$libs"
for lib in libgit2 libsqlite3 libyaml libstemmer libz.so; do
	if echo "$libs" | grep -q "$lib"; then
		fail "vault-mcp links $lib (engine code reached it)"
	fi
done

tools=$("$vaultctl" tools | sed -n 's/^\([a-z_]*\)(.*/\1/p')
[ "$(echo "$tools" | wc -l)" -ge 30 ] || fail "vaultctl tools listed no tools"
syms=$(nm "$engine" | awk 'NF >= 2 { print $NF }' | sort -u)
[ "$(echo "$syms" | wc -l)" -ge 100 ] || fail "no symbols read from $engine"
bad=$(echo "$syms" | grep -E \
	'^(tools?_|op_|rpc_|ctl_|mcp_|lb_|cursor_|json_|context_)' || true)
[ -z "$bad" ] || fail "engine symbols of the tools or the protocol: $bad"
for t in $tools; do
	if echo "$syms" | grep -qx -e "$t" -e "op_$t"; then
		fail "engine symbol named after the tool $t"
	fi
done
echo "vaultd, vaultctl, vault-mcp: no libvips (vaultd-image has it)"
echo "vault-mcp: no engine libraries; engine: $(echo "$syms" | wc -l) symbols, none of tools or JSON-RPC"
