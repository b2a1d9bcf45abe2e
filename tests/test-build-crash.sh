#!/bin/sh
# vaultd killed (kill -9) during a cold build of the search index, cycle
# after cycle, on a generated vault (with its big notes). The cache a kill
# leaves must never be trusted as complete: after the last restart has
# finished, what vaultd answers (full-text and substring searches, the
# index's counts) equals what a vaultd that built its cache from scratch
# answers, and its online check equals the offline one.
#   test-build-crash.sh VAULTD VAULTCTL GEN_VAULT [CYCLES]
set -u
. "$(dirname "$0")/lib.sh"
vaultd=$(abs "$1")
vaultctl=$(abs "$2")
gen=$(abs "$3")
cycles=${4:-4}
command -v node >/dev/null || { echo "no node: skipping"; exit 77; }
make_tmp
V=$tmp/vault
mkdir -p "$tmp/run"
chmod 700 "$tmp/run"
export XDG_RUNTIME_DIR=$tmp/run
"$gen" "$V" 3000 1 >/dev/null || { echo "gen_vault failed"; exit 1; }
mkdir -p "$V/.obsidian"
ctl() { timeout 120 "$vaultctl" --vault "$V" "$@"; }

start() { # cache
	"$vaultd" --vault "$V" --no-mount --no-history --cache "$1" -f \
		2>>"$tmp/log" &
	dpid=$!
	for _ in $(seq 1500); do
		ctl status 2>/dev/null | grep -q "^index: *ready" && return 0
		kill -0 "$dpid" 2>/dev/null || break
		sleep 0.02
	done
	fail "vaultd did not come up"
	return 1
}

# Until the search index and its substring part are complete.
settle() {
	for _ in $(seq 3000); do
		ctl --json status 2>/dev/null | grep -q '"substrings_ready": *true' &&
			return 0
		sleep 0.05
	done
	fail "the search index was not completed"
	return 1
}

stop() {
	ctl stop >/dev/null
	wait "$dpid" 2>/dev/null
	dpid=
}

# What the index answers, in one file: each search's total and its notes
# (sorted: notes of equal score may come in another order), the counts.
answers() { # out
	: >"$1"
	for q in meeting loveni "review AND project" '"garden river"' quartz \
		'tag:project' проект 計画; do
		ctl call search_notes query="$q" mode=fulltext limit:=100 >"$tmp/a.json" ||
			fail "fulltext search $q"
		node -e "$summary" "$tmp/a.json" >>"$1"
	done
	for q in lov "den riv" idea; do
		ctl call search_notes query="$q" mode=content limit:=100 >"$tmp/a.json" ||
			fail "content search $q"
		node -e "$summary" "$tmp/a.json" >>"$1"
	done
	ctl check --json >>"$1"
}
summary='const a = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const p = a.results.map((r) => r.path).sort();
console.log(a.total, a.total <= 100 ? p.join(" ") : p.length);'

killed=0
for cycle in $(seq "$cycles"); do
	start "$tmp/cache" || break
	# 0 to 0.6 s into the build of the search index.
	sleep "0.$(printf '%03d' $(($(od -An -N2 -tu2 /dev/urandom) % 600)))"
	ctl status 2>/dev/null | grep -q "^search: *ready" || killed=$((killed + 1))
	kill -9 "$dpid"
	wait "$dpid" 2>/dev/null
	dpid=
done
start "$tmp/cache" && settle && {
	answers "$tmp/after-kills"
	ctl check --json >"$tmp/on.json"
	stop
}
ctl check --offline --json >"$tmp/off.json"
node "$(dirname "$0")/same-check.js" "$tmp/on.json" "$tmp/off.json" ||
	fail "after the kills, the index differs from the folder"
start "$tmp/fresh" && settle && {
	answers "$tmp/fresh-answers"
	stop
}
cmp -s "$tmp/after-kills" "$tmp/fresh-answers" ||
	fail "after the kills, the answers differ from a fresh build's: $(diff "$tmp/after-kills" "$tmp/fresh-answers" | head -c 600)"
[ "$(awk '$1 > 0' "$tmp/fresh-answers" | wc -l)" -ge 8 ] ||
	fail "the searches found too little to compare: $(head -c 300 "$tmp/fresh-answers")"
[ "$killed" -gt 0 ] || fail "no kill landed in a build (the build was too quick)"
if [ "$failures" -ne 0 ]; then
	echo "---- vaultd log ----" >&2
	tail -30 "$tmp/log" >&2
	exit 1
fi
echo "build crash: $killed of $cycles kill -9 during the cold build; the cache finished afterwards answers as a fresh build's"
