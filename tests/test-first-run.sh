#!/bin/sh
# First run, as a new user meets it: a folder that is not an Obsidian
# vault is refused (nothing written in it) unless --create makes it one;
# mount points that cannot be used are refused with the reason; every
# refusal names the fix; vault-mcp passes the refusal on at once.
#   test-first-run.sh VAULTD VAULTCTL VAULT_MCP
set -u
. "$(dirname "$0")/lib.sh"
vaultd=$(abs "$1")
vaultctl=$(abs "$2")
mcp=$(abs "$3")
make_tmp
export XDG_RUNTIME_DIR=$tmp/run XDG_CACHE_HOME=$tmp/cache HOME=$tmp
mkdir -p "$XDG_RUNTIME_DIR"

# refused WHAT EXPECTED-CODE PATTERN... -- COMMAND...: the command fails
# with that code and its message matches every pattern.
refused() {
	what=$1 code=$2
	shift 2
	pats=""
	while [ "$1" != -- ]; do
		pats="$pats
$1"
		shift
	done
	shift
	timeout 20 "$@" >"$tmp/out" 2>&1
	rc=$?
	[ "$rc" = "$code" ] || fail "$what: exit $rc, not $code: $(cat "$tmp/out")"
	echo "$pats" | while IFS= read -r p; do
		[ -z "$p" ] && continue
		grep -q -- "$p" "$tmp/out" || echo "$p"
	done >"$tmp/missing"
	[ -s "$tmp/missing" ] &&
		fail "$what: the message lacks '$(head -1 "$tmp/missing")': $(cat "$tmp/out")"
	true
}

# serves DIR [vaultd options]: vaultd starts on it and answers.
serves() {
	dir=$1
	shift
	"$vaultd" --vault "$dir" --no-mount -f "$@" 2>"$tmp/log" &
	dpid=$!
	for _ in $(seq 100); do
		"$vaultctl" --vault "$dir" status >/dev/null 2>&1 && break
		sleep 0.05
	done
	"$vaultctl" --vault "$dir" status >/dev/null 2>&1 ||
		fail "vaultd $* does not serve $dir: $(cat "$tmp/log")"
	"$vaultctl" --vault "$dir" stop >/dev/null 2>&1
	wait "$dpid"
	dpid=
}

# 1. A plain folder of notes: refused, and left exactly as it was.
P=$tmp/plain
mkdir -p "$P"
printf 'a note\n' >"$P/a.md"
ls -A "$P" >"$tmp/before"
refused "plain folder" 2 "not an Obsidian vault" "no .obsidian/" "--create" \
	-- "$vaultd" --vault "$P" --no-mount -f
ls -A "$P" | cmp -s - "$tmp/before" ||
	fail "the refused folder was changed: $(ls -A "$P")"

# 2. vault-mcp on it: the same refusal, at once, not after retries.
t0=$(date +%s)
refused "vault-mcp on a plain folder" 1 "not an Obsidian vault" \
	"vaultd cannot serve" -- env OBSIDIAN_VAULT_PATH="$P" VAULTD_BIN="$vaultd" \
	"$mcp"
[ $(($(date +%s) - t0)) -le 5 ] || fail "vault-mcp took over 5 s to give up"
ls -A "$P" | cmp -s - "$tmp/before" ||
	fail "vault-mcp changed the refused folder: $(ls -A "$P")"

# 3. --create makes it a vault (and vault-mcp --create does too).
serves "$P" --create
[ -d "$P/.obsidian" ] || fail "--create made no .obsidian/"
grep -q "is an Obsidian vault now" "$tmp/log" ||
	fail "--create did not say what it made: $(cat "$tmp/log")"
serves "$P"
Q=$tmp/plain2
mkdir -p "$Q"
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' |
	VAULTD_BIN="$vaultd" VAULT_MCP_CREATE=true timeout 20 "$mcp" --vault "$Q" \
		>"$tmp/mcp.out" 2>"$tmp/mcp.err"
grep -q '"serverInfo"' "$tmp/mcp.out" ||
	fail "vault-mcp with VAULT_MCP_CREATE=true: $(cat "$tmp/mcp.err")"
[ -d "$Q/.obsidian" ] || fail "VAULT_MCP_CREATE=true made no .obsidian/"
"$vaultctl" --vault "$Q" stop >/dev/null 2>&1
printf '' | VAULTD_BIN="$vaultd" VAULT_MCP_CREATE=false timeout 20 "$mcp" \
	--vault "$tmp/plain3" >/dev/null 2>&1 && fail "VAULT_MCP_CREATE=false created"
[ -e "$tmp/plain3" ] && fail "VAULT_MCP_CREATE=false made a folder"

# 4. A folder that does not exist: refused; --create starts a new vault.
refused "missing folder" 2 "does not exist" "check the path" "--create" \
	-- "$vaultd" --vault "$tmp/new/vault" --no-mount -f
[ -e "$tmp/new" ] && fail "a refused missing folder was created"
serves "$tmp/new/vault" --create
[ -d "$tmp/new/vault/.obsidian" ] || fail "--create made no new vault"
printf 'x\n' >"$tmp/file"
refused "a file as vault" 2 "is not a folder" -- \
	"$vaultd" --vault "$tmp/file" --no-mount -f
refused "no vault at all" 2 "use --vault DIR" -- env -u OBSIDIAN_VAULT_PATH \
	"$vaultd" --no-mount -f
refused "unknown argument" 2 "see vaultd --help" -- \
	"$vaultd" --vault "$P" --no-mount -f stray
# Numbers: a word, a negative, an overflow, a hostile size are each
# named with the range taken, never read as 0 or as a huge value.
refused "workers not a number" 2 "--workers wants a whole number from 0 to 256, not 'many'" -- \
	"$vaultd" --vault "$P" --no-mount -f --workers many
refused "too many workers" 2 "from 0 to 256, not '100000'" -- \
	"$vaultd" --vault "$P" --no-mount -f --workers 100000
refused "negative message size" 2 "--max-message wants a whole number" "not '-5'" -- \
	"$vaultd" --vault "$P" --no-mount -f --max-message -5
refused "overflowing grace" 2 "--grace-ms wants a whole number" -- \
	"$vaultd" --vault "$P" --no-mount -f --grace-ms 99999999999999999999999
refused "idle-exit as a float" 2 "--idle-exit wants a whole number" -- \
	"$vaultd" --vault "$P" --no-mount -f --idle-exit 1e3
refused "vault-mcp max-result" 2 "--max-result wants a whole number" "not 'lots'" -- \
	"$mcp" --vault "$P" --max-result lots
refused "vault-mcp max-result from the environment" 2 \
	"VAULT_MCP_MAX_RESULT wants a whole number" -- \
	env VAULT_MCP_MAX_RESULT=12q "$mcp" --vault "$P"
refused "vault-mcp idle-exit" 2 "--idle-exit wants a whole number" "(seconds)" -- \
	"$mcp" --vault "$P" --idle-exit -1

# 5. Mount points: checked before anything starts (no FUSE needed).
mkdir -p "$tmp/full" "$P/inside"
printf 'x\n' >"$tmp/full/left-here.txt"
refused "mount point not empty" 2 "is not empty" "left-here.txt" \
	"give an empty folder" -- "$vaultd" --vault "$P" --mount "$tmp/full" -f
refused "mount point missing" 2 "does not exist" "mkdir -p $tmp/none" -- \
	"$vaultd" --vault "$P" --mount "$tmp/none" -f
refused "mount point inside the vault" 2 "inside the vault" \
	"choose a folder outside it" -- "$vaultd" --vault "$P" --mount "$P/inside" -f
refused "vault inside the mount point" 2 "inside the mount point" -- \
	"$vaultd" --vault "$P" --mount "$tmp" -f
refused "mount point is a file" 2 "not a folder" -- \
	"$vaultd" --vault "$P" --mount "$tmp/file" -f
[ "$(ls -A "$tmp/full")" = left-here.txt ] ||
	fail "a refused mount point was written to: $(ls -A "$tmp/full")"

# 6. Already running, and a policy that does not parse: the fix is named.
"$vaultd" --vault "$P" --no-mount -f 2>"$tmp/log" &
dpid=$!
for _ in $(seq 100); do
	"$vaultctl" --vault "$P" status >/dev/null 2>&1 && break
	sleep 0.05
done
refused "already running" 1 "already running" "vaultctl --vault" "stop" -- \
	"$vaultd" --vault "$P" --no-mount -f
refused "another owner" 1 "another vaultd owns" "stop it first" -- \
	env XDG_RUNTIME_DIR="$tmp/run2" "$vaultd" --vault "$P" --no-mount -f \
	--socket "$tmp/other.sock"
"$vaultctl" --vault "$P" stop >/dev/null 2>&1
wait "$dpid"
dpid=
mkdir -p "$P/.vaultd"
printf 'allowed_tags: [a\n' >"$P/.vaultd/policy.yaml"
refused "broken policy" 1 "policy.yaml line" "vaultd-policy(5)" -- \
	"$vaultd" --vault "$P" --no-mount -f
printf 'colour: blue\n' >"$P/.vaultd/policy.yaml"
refused "unknown policy key" 1 "unknown key 'colour'" "vaultd-policy(5)" -- \
	"$vaultd" --vault "$P" --no-mount -f
rm "$P/.vaultd/policy.yaml"

# 7. The example vault is an Obsidian vault: it is served as it is.
cp -a "$(dirname "$0")/example-vault" "$tmp/example"
serves "$tmp/example"

if [ "$failures" -gt 0 ]; then
	echo "$failures failures"
	exit 1
fi
echo "first run: every refusal says why and what to do"
