#!/bin/sh
# The main job on the example vault: a copy of tests/example-vault (the
# checkout stays clean) served by vaultd, used through vaultctl and
# vault-mcp, and how to connect Claude Desktop to it.
set -eu
build=$(cd "${1:-build}" && pwd)
work=${VAULTD_DEMO_DIR:-${TMPDIR:-/tmp}/vaultd-demo}
vault="$work/vault"
mnt="$work/mount"
vaultctl="$build/fs/vaultctl"
mcp="$build/mcp/vault-mcp"

# A previous demo's daemon serves the old copy: stop it first.
[ -d "$vault" ] && "$vaultctl" --vault "$vault" stop >/dev/null 2>&1 || true
for _ in $(seq 50); do grep -q " $mnt " /proc/mounts || break; sleep 0.1; done
grep -q " $mnt " /proc/mounts && { fusermount3 -u -z "$mnt" 2>/dev/null || umount -l "$mnt"; }
rm -rf "$work"
mkdir -p "$work" "$mnt"
cp -a tests/example-vault "$vault"

step() { printf '\n== %s\n' "$*"; }

step "vaultd: the daemon that owns $vault, its guarded view at $mnt"
if [ -e /dev/fuse ]; then
	"$build/fs/vaultd" --vault "$vault" --mount "$mnt"
	for _ in $(seq 100); do ls "$mnt/Home.md" >/dev/null 2>&1 && break; sleep 0.1; done
else
	echo "(no /dev/fuse here: serving without the mount)"
	"$build/fs/vaultd" --no-mount --vault "$vault"
fi
"$vaultctl" --vault "$vault" status

step "vaultctl check: notes, tags, links, problems"
"$vaultctl" --vault "$vault" check || true

step "The guard: a tag that exists nowhere in the vault is refused"
"$vaultctl" --vault "$vault" call add_tag name=Inbox tag=brand-new || true
"$vaultctl" --vault "$vault" call add_tag name=Inbox tag=idea

if grep -q " $mnt " /proc/mounts; then
	step "Editors write through the mount; the same guard judges them"
	echo "- a line with a tag nobody uses, appended by dd (refused at close):"
	printf 'new line #notatag\n' | dd of="$mnt/Inbox.md" oflag=append conv=notrunc status=none 2>&1 || true
	tail -n 1 "$mnt/Inbox.md"
	"$vaultctl" --vault "$vault" violations --limit 1
	echo "- an allowed tag (accepted):"
	printf 'from the mount #idea\n' >>"$mnt/Inbox.md"
	tail -n 1 "$mnt/Inbox.md"
	echo "- mv through the mount rewrites the links:"
	mv "$mnt/projects/wiki-ai/Design Notes.md" "$mnt/projects/wiki-ai/Architecture.md"
	grep -rn "Architecture" "$mnt/projects/wiki-ai/Roadmap.md"
fi

step "Renaming a note rewrites every link to it"
"$vaultctl" --vault "$vault" call rename_note old_name=Roadmap new_name="Roadmap 2027" dry_run=true

step "Every write is a version, with who wrote it (.vaultd/history.git)"
"$vaultctl" --vault "$vault" history Inbox --limit 5

step "Ranked full-text search"
"$vaultctl" --vault "$vault" call search_notes query="ideas OR design" mode=fulltext limit=3

step "An MCP session with vault-mcp (what Claude Desktop does)"
printf '%s\n' \
	'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"demo","version":"1"}}}' \
	'{"jsonrpc":"2.0","method":"notifications/initialized"}' \
	'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_notes","arguments":{"query":"project","mode":"tag"}}}' |
	OBSIDIAN_VAULT_PATH="$vault" "$mcp" 2>/dev/null |
	sed -n '2p' | sed 's/\\n/\n/g; s/\\"/"/g' | cut -c1-200

cat <<EOF2

== Connect Claude Desktop
Add this to Claude Desktop's claude_desktop_config.json
(Linux: ~/.config/Claude/, macOS: ~/Library/Application Support/Claude/):

  {
    "mcpServers": {
      "obsidian-vault": {
        "command": "$mcp",
        "env": { "OBSIDIAN_VAULT_PATH": "$vault" }
      }
    }
  }

vault-mcp finds the running vaultd (or starts one). Point
OBSIDIAN_VAULT_PATH at your own vault to use it for real; add
"args": ["--read-only"] to let Claude only read. Or let vaultctl write it,
for Claude Desktop, Claude Code, Cursor and VS Code (--write to merge it
into their files, with a backup):
  $vaultctl init --vault $vault

vaultd keeps running for $vault (mounted at $mnt: open it in Obsidian,
vim or VS Code); stop it with:
  $vaultctl --vault $vault stop
EOF2
