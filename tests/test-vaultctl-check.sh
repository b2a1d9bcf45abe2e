#!/bin/sh
# vaultctl check on a copy of the example vault: counts, JSON, exit codes.
set -eu
vaultctl=$1
example=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -a "$example" "$tmp/vault"
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$("$vaultctl" check --vault "$tmp/vault") || fail "check exited $?"
echo "$out"
echo "$out" | grep -q "^notes: *12$" || fail "notes"
echo "$out" | grep -q "^tags: *9$" || fail "tags"
echo "$out" | grep -q "^links: *25$" || fail "links"
echo "$out" | grep -q "^broken links: *1$" || fail "broken links"
echo "$out" | grep -q "Home.md:16 -> Someday Maybe" || fail "broken link line"
echo "$out" | grep -q "^policy violations: *0$" || fail "violations"

json=$("$vaultctl" check --json --vault "$tmp/vault")
echo "$json" | grep -q '"notes": 12' || fail "json notes"
echo "$json" | grep -q '"broken_links": 1' || fail "json broken"

# A violation and broken YAML make check report them and exit 1.
printf -- '---\ntags: [Person]\n---\nNo @ here\n' >"$tmp/vault/John.md"
printf -- '---\ntitle: [unclosed\n---\nbody\n' >"$tmp/vault/Broken.md"
set +e
out=$(OBSIDIAN_VAULT_PATH="$tmp/vault" "$vaultctl" check)
rc=$?
set -e
echo "$out"
[ "$rc" = 1 ] || fail "exit code $rc, want 1"
echo "$out" | grep -q "violation  John.md: Tag 'Person'" || fail "violation listed"
echo "$out" | grep -q "bad YAML   Broken.md: line 2" || fail "bad yaml listed"
# The broken note was not touched.
[ "$(cat "$tmp/vault/Broken.md")" = "$(printf -- '---\ntitle: [unclosed\n---\nbody')" ] ||
	fail "broken YAML changed"

# Usage errors: exit 2; a missing vault: exit 1.
set +e
"$vaultctl" >/dev/null 2>&1; [ $? = 2 ] || fail "no command"
"$vaultctl" frobnicate >/dev/null 2>&1; [ $? = 2 ] || fail "unknown command"
env -u OBSIDIAN_VAULT_PATH "$vaultctl" check >/dev/null 2>&1; [ $? = 2 ] || fail "no vault"
"$vaultctl" check --vault "$tmp/nope" >/dev/null 2>&1; [ $? = 1 ] || fail "missing vault"
for bad in x -3 1e2 99999999999999999999; do
	"$vaultctl" --vault "$tmp/vault" violations --limit "$bad" >/dev/null 2>"$tmp/err"
	[ $? = 2 ] || fail "--limit $bad taken"
	grep -q -- "--limit wants a whole number from 0 to 1000000, not '$bad'" "$tmp/err" ||
		fail "--limit $bad: $(cat "$tmp/err")"
done
set -e
echo "ok"
