#!/bin/sh
# The man pages and the programs agree: each program's --help lists the
# same options as its man page (vaultctl: the commands and init's options
# too), the pages render without warnings, every policy key is described
# and every policy example in vaultd-policy(5) is a policy vaultd accepts.
#   test-man.sh VAULTD VAULTCTL VAULT_MCP vaultd.8 vaultctl.1 vault-mcp.1 vaultd-policy.5
set -u
. "$(dirname "$0")/lib.sh"
vaultd=$(abs "$1") vaultctl=$(abs "$2") mcp=$(abs "$3")
man_vaultd=$(abs "$4") man_vaultctl=$(abs "$5") man_mcp=$(abs "$6") man_policy=$(abs "$7")
policy_src=$(dirname "$0")/../fs/vaultd-policy.5.scd
make_tmp

# Options in a help text: the option column ("  --opt", "  -x, --opt").
help_opts() {
	sed -n 's/^  \(-[a-zA-Z]\), \(--[a-z-]*\).*/\1\n\2/p; s/^  \(--[a-z-]*\).*/\1/p' | sort -u
}
# Options in a section of a man page: its entries' first lines.
man_opts() { # page SECTION
	sed -n "/^\.SH $2\$/,/^\.SH /p" "$1" | grep '^\\fB-' |
		grep -o '\\fB-[-a-zA-Z]*\\fR' | sed 's/\\fB//; s/\\fR//' | sort -u
}
same() { # what help-file man-file
	cmp -s "$2" "$3" ||
		fail "$1: --help and the man page differ: $(diff "$2" "$3" | grep '^[<>]' | tr '\n' ' ')"
}

"$vaultd" --help | help_opts >"$tmp/h"
man_opts "$man_vaultd" OPTIONS >"$tmp/m"
same vaultd "$tmp/h" "$tmp/m"
"$mcp" --help | help_opts >"$tmp/h"
man_opts "$man_mcp" OPTIONS >"$tmp/m"
same vault-mcp "$tmp/h" "$tmp/m"
"$vaultctl" --help | sed '/^Commands:/,/^$/d' | help_opts >"$tmp/h"
man_opts "$man_vaultctl" OPTIONS >"$tmp/m"
same vaultctl "$tmp/h" "$tmp/m"
"$vaultctl" init --help | help_opts >"$tmp/h"
man_opts "$man_vaultctl" INIT >"$tmp/m"
same "vaultctl init" "$tmp/h" "$tmp/m"
"$vaultctl" --help | sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z]*\).*/\1/p' | sort >"$tmp/h"
sed -n '/^\.SH COMMANDS$/,/^\.SH /p' "$man_vaultctl" | grep -o '^\\fB[a-z]*\\fR' |
	sed 's/\\fB//; s/\\fR//' | sort >"$tmp/m"
same "vaultctl commands" "$tmp/h" "$tmp/m"
"$vaultctl" init --help | sed -n 's/^Clients: //p' | tr ' ' '\n' | sort >"$tmp/h"
sed -n '/^\.SH INIT$/,/^\.SH /p' "$man_vaultctl" | grep -o '^\\fB[a-z][a-z-]*\\fR$' |
	sed 's/\\fB//; s/\\fR//' | sort >"$tmp/m"
same "vaultctl init clients" "$tmp/h" "$tmp/m"
for f in "$tmp/h" "$tmp/m"; do [ -s "$f" ] || fail "nothing read from $f"; done

# Rendered as man(1) does, with its warnings on (as lintian checks them).
if command -v man >/dev/null; then
	for p in "$man_vaultd" "$man_vaultctl" "$man_mcp" "$man_policy"; do
		w=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$p" 2>&1 >/dev/null)
		[ -z "$w" ] || fail "$(basename "$p"): $w"
	done
fi

# Every policy key is described (the keys vaultd itself names).
V=$tmp/vault
mkdir -p "$V/.obsidian" "$V/.vaultd"
printf 'no_such_key: 1\n' >"$V/.vaultd/policy.yaml"
known=$("$vaultctl" --vault "$V" check --offline 2>&1 | sed -n 's/.*(known: \(.*\)).*/\1/p' | tr -d ',')
[ -n "$known" ] || fail "vaultd did not name the known policy keys"
for k in $known name_prefix requires message; do
	sed -n '/^\.SH KEYS$/,/^\.SH /p' "$man_policy" | grep -q "^\\\\fB$k\\\\fR:" ||
		fail "vaultd-policy(5) does not describe '$k'"
done
# Every example in it is a policy vaultd accepts.
awk '/^\t*```/ { if (inb) { close(f); inb = 0 } else { n++; f = dir "/ex" n; inb = 1 } next }
     inb { sub(/^\t/, ""); print > f }' dir="$tmp" "$policy_src"
n=0
for ex in "$tmp"/ex*; do
	grep -q '^\(allowed_tags\|tag_rules\|on_violation\|delete_links\|ignore\|# \.vaultd\)' "$ex" || continue
	n=$((n + 1))
	cp "$ex" "$V/.vaultd/policy.yaml"
	out=$("$vaultctl" --vault "$V" check --offline 2>&1 >/dev/null)
	case $out in *policy.yaml*) fail "a vaultd-policy(5) example is refused: $out: $(cat "$ex")" ;; esac
done
[ $n -ge 5 ] || fail "only $n policy examples found in vaultd-policy(5)"

if [ "$failures" -gt 0 ]; then
	echo "$failures failures"
	exit 1
fi
echo "man pages: options as in --help, $n policy examples accepted"
