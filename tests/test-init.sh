#!/bin/sh
# vaultctl init in temporary home folders, one per client format: the
# vault found from Obsidian's list (package, Flatpak, Snap) or --vault,
# each client's file printed or patched (other servers and keys kept,
# mode kept, a backup, a second run a no-op), broken JSON refused and left
# byte for byte, and --mount with the user service (systemctl mocked).
#   test-init.sh VAULTCTL VAULT_MCP VAULTD
set -u
. "$(dirname "$0")/lib.sh"
vaultctl=$(abs "$1")
mcp=$(cd "$(dirname "$2")" && pwd -P)/$(basename "$2")
vaultd=$(abs "$3")
command -v node >/dev/null || { echo "node is needed to read JSON; skipped"; exit 77; }
make_tmp

# systemctl, mocked: it records how it was called.
mkdir -p "$tmp/bin"
cat >"$tmp/bin/systemctl" <<EOF
#!/bin/sh
echo "\$*" >>"$tmp/systemctl.calls"
EOF
chmod +x "$tmp/bin/systemctl"

# js FILE EXPR: EXPR evaluated with j = the file's JSON.
js() {
	node -e 'const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); const v = eval(process.argv[2]); console.log(typeof v === "string" ? v : JSON.stringify(v))' "$1" "$2"
}
# A fresh home with an Obsidian vault in it.
new_home() {
	H=$tmp/$1
	mkdir -p "$H/Notes/.obsidian" "$H/work"
	V=$H/Notes
}
init() { (cd "$H/work" && env -u OBSIDIAN_VAULT_PATH -u XDG_CONFIG_HOME HOME="$H" "$vaultctl" init "$@"); }
backups() { find "$H" -name '*.bak-*' | wc -l; }

# 1. The vault from Obsidian's own list, in each install kind.
for kind in native flatpak snap; do
	new_home "reg-$kind"
	case $kind in
	native) reg=$H/.config/obsidian ;;
	flatpak) reg=$H/.var/app/md.obsidian.Obsidian/config/obsidian ;;
	snap) reg=$H/snap/obsidian/current/.config/obsidian ;;
	esac
	mkdir -p "$reg" "$H/Old/.obsidian"
	printf '{"vaults":{"a1":{"path":"%s","ts":1600000000000},"b2":{"path":"%s","ts":1700000000000,"open":true}}}\n' \
		"$H/Old" "$V" >"$reg/obsidian.json"
	init --client cursor >"$tmp/out" 2>&1 || fail "$kind: init failed: $(cat "$tmp/out")"
	grep -q "^Vault: $V (open in Obsidian)" "$tmp/out" ||
		fail "$kind: the open vault was not chosen: $(head -3 "$tmp/out")"
	grep -q "also known to Obsidian: $H/Old" "$tmp/out" ||
		fail "$kind: the other vault is not named"
	grep -q "\"OBSIDIAN_VAULT_PATH\": \"$V\"" "$tmp/out" ||
		fail "$kind: the entry does not carry the vault"
done

# 2. No list and no --vault: refused, naming where it looked.
new_home empty
init >"$tmp/out" 2>&1
[ $? = 2 ] || fail "no vault anywhere: not a usage error"
grep -q "Obsidian lists none" "$tmp/out" && grep -q "md.obsidian.Obsidian" "$tmp/out" &&
	grep -q "vaultctl init --vault DIR" "$tmp/out" || fail "no vault: $(cat "$tmp/out")"

# 3. A folder that is not a vault: refused; --create makes it one.
mkdir -p "$H/Plain"
init --vault "$H/Plain" >"$tmp/out" 2>&1
[ $? = 2 ] && grep -q "not an Obsidian vault" "$tmp/out" && grep -q -- "--create" "$tmp/out" ||
	fail "plain folder: $(cat "$tmp/out")"
[ -e "$H/Plain/.obsidian" ] && fail "a refused folder got .obsidian/"
init --vault "$H/Plain" --create --client cursor >"$tmp/out" 2>&1 || fail "--create: $(cat "$tmp/out")"
[ -d "$H/Plain/.obsidian" ] || fail "--create made no .obsidian/"

# 4. Printing changes nothing; every client is shown, with absolute paths.
new_home print
mkdir -p "$H/.config/Claude"
printf '{"mcpServers":{}}' >"$H/.config/Claude/claude_desktop_config.json"
init --vault "$V" >"$tmp/out" 2>&1 || fail "print: $(cat "$tmp/out")"
for label in "Claude Desktop: $H/.config/Claude/claude_desktop_config.json" \
	"Claude Code (user scope): $H/.claude.json" "Cursor: $H/.cursor/mcp.json" \
	"VS Code (user profile): $H/.config/Code/User/mcp.json"; do
	grep -qF "== $label" "$tmp/out" || fail "print: no section '$label'"
done
grep -qF "claude mcp add --scope user --transport stdio --env OBSIDIAN_VAULT_PATH=$V obsidian-vault -- $mcp" "$tmp/out" ||
	fail "print: no claude mcp add line: $(grep -A1 'or run' "$tmp/out")"
grep -qF "\"command\": \"$mcp\"" "$tmp/out" || fail "print: vault-mcp is not $mcp"
[ "$(cat "$H/.config/Claude/claude_desktop_config.json")" = '{"mcpServers":{}}' ] ||
	fail "print changed a file"
[ -e "$H/.claude.json" ] || [ -e "$H/.cursor" ] && fail "print created files"
grep -q "Nothing was changed" "$tmp/out" || fail "print does not say nothing changed"

# 5. --write into each client's own format.
# check_entry FILE KEY [type]: vault-mcp's entry is there, as it should be.
check_entry() {
	[ "$(js "$1" "j['$2']['obsidian-vault'].command")" = "$mcp" ] ||
		fail "$1: command is not $mcp"
	[ "$(js "$1" "j['$2']['obsidian-vault'].env.OBSIDIAN_VAULT_PATH")" = "$V" ] ||
		fail "$1: the vault is not $V"
	if [ "${3:-}" = typed ]; then
		[ "$(js "$1" "j['$2']['obsidian-vault'].type")" = stdio ] ||
			fail "$1: no \"type\": \"stdio\""
	fi
}
# Claude Desktop on Linux: other servers and keys stay, mode 0640 stays.
new_home desktop
C=$H/.config/Claude/claude_desktop_config.json
mkdir -p "$(dirname "$C")"
printf '{\n  "globalShortcut": "Alt+Space",\n  "mcpServers": {\n    "fs": {"command": "npx", "args": ["-y", "srv", "/tmp"]}\n  }\n}\n' >"$C"
chmod 640 "$C"
cp "$C" "$tmp/orig"
init --vault "$V" --write >"$tmp/out" 2>&1 || fail "desktop --write: $(cat "$tmp/out")"
check_entry "$C" mcpServers
[ "$(js "$C" 'j.globalShortcut')" = Alt+Space ] || fail "desktop: another key was lost"
[ "$(js "$C" 'j.mcpServers.fs.args.join(" ")')" = "-y srv /tmp" ] || fail "desktop: another server changed"
[ "$(js "$C" 'Object.keys(j).join(",")')" = globalShortcut,mcpServers ] || fail "desktop: key order changed"
[ "$(stat -c %a "$C")" = 640 ] || fail "desktop: mode $(stat -c %a "$C"), not 640"
b=$(find "$H/.config/Claude" -name 'claude_desktop_config.json.bak-*')
[ -n "$b" ] && cmp -s "$b" "$tmp/orig" || fail "desktop: no backup of the old text"
grep -q "Cursor: not installed here" "$tmp/out" || fail "desktop: clients not installed are not skipped"
[ -e "$H/.cursor" ] && fail "desktop: a client not installed got a file"
# Again: nothing changes, no second backup.
cp "$C" "$tmp/after1"
init --vault "$V" --write >"$tmp/out" 2>&1 || fail "desktop second run: $(cat "$tmp/out")"
cmp -s "$C" "$tmp/after1" || fail "desktop: a second run changed the file"
[ "$(backups)" = 1 ] || fail "desktop: a second run made another backup"
grep -q "Already set up" "$tmp/out" || fail "desktop: the second run does not say so"
# The configured command really serves the vault.
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' |
	XDG_RUNTIME_DIR=$tmp/run VAULTD_BIN=$vaultd OBSIDIAN_VAULT_PATH=$(js "$C" "j.mcpServers['obsidian-vault'].env.OBSIDIAN_VAULT_PATH") \
		timeout 30 "$(js "$C" "j.mcpServers['obsidian-vault'].command")" >"$tmp/mcp.out" 2>"$tmp/mcp.err"
grep -q '"serverInfo"' "$tmp/mcp.out" || fail "the configured vault-mcp does not answer: $(cat "$tmp/mcp.err")"
mkdir -p "$tmp/run"
XDG_RUNTIME_DIR=$tmp/run "$vaultctl" --vault "$V" stop >/dev/null 2>&1

# Claude Desktop on macOS: its folder under Library/Application Support.
new_home mac
mkdir -p "$H/Library/Application Support/Claude"
init --vault "$V" --write --client claude-desktop >"$tmp/out" 2>&1 || fail "mac: $(cat "$tmp/out")"
check_entry "$H/Library/Application Support/Claude/claude_desktop_config.json" mcpServers
[ "$(stat -c %a "$H/Library/Application Support/Claude/claude_desktop_config.json")" = 600 ] ||
	fail "mac: a new config file is not private"

# Claude Code: ~/.claude.json, a large file of its own, user scope.
new_home code
printf '{"numStartups": 12, "projects": {"/p": {"mcpServers": {"x": {"command": "y"}}}}, "mcpServers": {}}\n' >"$H/.claude.json"
init --vault "$V" --write >"$tmp/out" 2>&1 || fail "code: $(cat "$tmp/out")"
check_entry "$H/.claude.json" mcpServers typed
[ "$(js "$H/.claude.json" 'j.numStartups')" = 12 ] &&
	[ "$(js "$H/.claude.json" "j.projects['/p'].mcpServers.x.command")" = y ] ||
	fail "code: its other settings changed"
[ "$(js "$H/.claude.json" "j.projects['/p'].mcpServers['obsidian-vault']")" = undefined ] ||
	fail "code: the entry went into a project"

# Cursor, through a symlink (dotfiles): the target changes, the link stays.
new_home cursor
mkdir -p "$H/.cursor" "$H/dotfiles"
printf '{"mcpServers": {"gh": {"url": "https://example.invalid/mcp"}}}\n' >"$H/dotfiles/mcp.json"
ln -s ../dotfiles/mcp.json "$H/.cursor/mcp.json"
init --vault "$V" --write --client cursor >"$tmp/out" 2>&1 || fail "cursor: $(cat "$tmp/out")"
[ -L "$H/.cursor/mcp.json" ] || fail "cursor: the symlink was replaced"
check_entry "$H/dotfiles/mcp.json" mcpServers
[ "$(js "$H/dotfiles/mcp.json" 'j.mcpServers.gh.url')" = https://example.invalid/mcp ] ||
	fail "cursor: another server changed"

# VS Code: "servers", typed; the user profile and a workspace.
new_home vscode
mkdir -p "$H/.config/Code/User" "$H/work/.vscode"
init --vault "$V" --write >"$tmp/out" 2>&1 || fail "vscode: $(cat "$tmp/out")"
check_entry "$H/.config/Code/User/mcp.json" servers typed
[ "$(js "$H/.config/Code/User/mcp.json" 'j.mcpServers')" = undefined ] || fail "vscode: mcpServers written"
[ -e "$H/work/.vscode/mcp.json" ] && fail "vscode: the workspace was written without being asked"
printf '{"inputs": [], "servers": {}}\n' >"$H/work/.vscode/mcp.json"
init --vault "$V" --write --client vscode-workspace >"$tmp/out" 2>&1 || fail "workspace: $(cat "$tmp/out")"
check_entry "$H/work/.vscode/mcp.json" servers typed

# Any client, by its config file; a second vault under another name.
new_home other
printf '{"mcpServers": {"obsidian-vault": {"command": "/x/vault-mcp", "env": {"OBSIDIAN_VAULT_PATH": "/elsewhere"}}}}\n' >"$H/client.json"
cp "$H/client.json" "$tmp/orig"
init --vault "$V" --write --config "$H/client.json" >"$tmp/out" 2>&1
[ $? = 1 ] && grep -q "serves another vault (/elsewhere)" "$tmp/out" && grep -q -- "--name NAME" "$tmp/out" ||
	fail "another vault under the name: $(cat "$tmp/out")"
cmp -s "$H/client.json" "$tmp/orig" || fail "the other vault's entry was changed"
init --vault "$V" --write --config "$H/client.json" --name notes >"$tmp/out" 2>&1 || fail "--name: $(cat "$tmp/out")"
[ "$(js "$H/client.json" 'j.mcpServers.notes.env.OBSIDIAN_VAULT_PATH')" = "$V" ] &&
	[ "$(js "$H/client.json" "j.mcpServers['obsidian-vault'].env.OBSIDIAN_VAULT_PATH")" = /elsewhere ] ||
	fail "--name: $(cat "$H/client.json")"

# A home reached through a symlink (an absolute one): folders are made
# and files written where it leads.
mkdir -p "$tmp/realhome/Notes/.obsidian"
ln -s "$tmp/realhome" "$tmp/linkhome"
(cd "$tmp" && env -u XDG_CONFIG_HOME HOME="$tmp/linkhome" PATH="$tmp/bin:$PATH" \
	"$vaultctl" init --vault "$tmp/linkhome/Notes" --client cursor --write \
	--mount "$tmp/linkhome/guarded") >"$tmp/out" 2>&1 ||
	fail "symlinked home: $(cat "$tmp/out")"
[ -f "$tmp/realhome/.cursor/mcp.json" ] && [ -d "$tmp/realhome/guarded" ] &&
	ls "$tmp/realhome/.config/vaultd/"*.env >/dev/null 2>&1 ||
	fail "symlinked home: files not made: $(cat "$tmp/out")"

# 6. Broken JSON: refused with the place, never overwritten, no backup.
new_home broken
mkdir -p "$H/.cursor"
printf '{\n  "mcpServers": {\n    "a": {"command": "b"},\n  }\n' >"$H/.cursor/mcp.json"
cp "$H/.cursor/mcp.json" "$tmp/orig"
init --vault "$V" --write --client cursor >"$tmp/out" 2>&1
[ $? = 1 ] || fail "broken: not a failure"
grep -q "is not valid JSON (line 4, column 3)" "$tmp/out" && grep -q "left as it is" "$tmp/out" ||
	fail "broken: $(cat "$tmp/out")"
cmp -s "$H/.cursor/mcp.json" "$tmp/orig" || fail "broken: the file was changed"
[ "$(backups)" = 0 ] || fail "broken: a backup was made"
grep -q '"OBSIDIAN_VAULT_PATH"' "$tmp/out" || fail "broken: the entry to add by hand is not shown"
mkdir -p "$H/.config/Code/User"
printf '// my servers\n{"servers": {}}\n' >"$H/.config/Code/User/mcp.json"
init --vault "$V" --write --client vscode >"$tmp/out" 2>&1
grep -q "has comments" "$tmp/out" || fail "JSONC: $(cat "$tmp/out")"
[ "$(head -1 "$H/.config/Code/User/mcp.json")" = "// my servers" ] || fail "JSONC: rewritten"

# 7. --mount: the env file the unit reads, the unit enabled (mocked).
new_home mount
: >"$tmp/systemctl.calls"
inst=$(systemd-escape --path "$V")
envf=$H/.config/vaultd/$inst.env
init --vault "$V" --client cursor --mount "$H/Notes guarded" >"$tmp/out" 2>&1 || fail "mount print: $(cat "$tmp/out")"
grep -qF "systemctl --user enable --now vaultd@$inst" "$tmp/out" && grep -qF "$envf" "$tmp/out" ||
	fail "mount print: $(cat "$tmp/out")"
[ -e "$envf" ] || [ -e "$H/Notes guarded" ] && fail "mount print: changed something"
mkdir -p "$H/.config/vaultd"
printf 'VAULTD_OPTIONS=--grace-ms 3000\n' >"$envf"
PATH=$tmp/bin:$PATH init --vault "$V" --client cursor --mount "$H/Notes guarded" --write >"$tmp/out" 2>&1 ||
	fail "mount --write: $(cat "$tmp/out")"
[ "$(cat "$envf")" = "VAULTD_OPTIONS=--grace-ms 3000
VAULTD_MOUNT=\"$H/Notes guarded\"" ] || fail "env file: $(cat "$envf")"
[ -d "$H/Notes guarded" ] || fail "the mount point was not made"
[ "$(cat "$tmp/systemctl.calls")" = "--user enable --now vaultd@$inst" ] ||
	fail "systemctl called as: $(cat "$tmp/systemctl.calls")"
grep -qF "Open $H/Notes guarded in Obsidian" "$tmp/out" || fail "mount: does not say where to point Obsidian"
cp "$envf" "$tmp/env1"
PATH=$tmp/bin:$PATH init --vault "$V" --client cursor --mount "$H/Notes guarded" --write >"$tmp/out" 2>&1 ||
	fail "mount second run: $(cat "$tmp/out")"
cmp -s "$envf" "$tmp/env1" || fail "mount: a second run changed the env file"
grep -q "is already so" "$tmp/out" || fail "mount: the second run does not say so"
mkdir -p "$tmp/full" && printf 'x\n' >"$tmp/full/x"
PATH=$tmp/bin:$PATH init --vault "$V" --client cursor --mount "$tmp/full" --write >"$tmp/out" 2>&1
[ $? = 1 ] && grep -q "is not empty" "$tmp/out" || fail "a full mount point: $(cat "$tmp/out")"
# No user session manager: the failure says what to run instead.
printf '#!/bin/sh\necho "Failed to connect to bus" >&2\nexit 1\n' >"$tmp/bin/systemctl"
PATH=$tmp/bin:$PATH init --vault "$V" --client cursor --mount "$H/m2" --write >"$tmp/out" 2>&1
[ $? = 1 ] && grep -qF "run vaultd --vault $V --mount $H/m2 yourself" "$tmp/out" ||
	fail "no systemd: $(cat "$tmp/out")"

# 8. Unknown client, and init in vaultctl's help.
init --client notepad >"$tmp/out" 2>&1
[ $? = 2 ] && grep -q "known: claude-desktop" "$tmp/out" || fail "unknown client: $(cat "$tmp/out")"
"$vaultctl" --help | grep -q "^  init " || fail "vaultctl --help does not list init"
"$vaultctl" init --help | grep -q -- "--write" || fail "vaultctl init --help"

if [ "$failures" -gt 0 ]; then
	echo "$failures failures"
	exit 1
fi
echo "vaultctl init: every client format, printed and patched"
