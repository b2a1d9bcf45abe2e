#!/bin/sh
# The Debian package (systemd/deb.sh): its control data and contents,
# lintian with no error, and the programs as installed. As root on a
# machine where no vaultd package is installed, `apt-get install ./deb`
# installs it for real (and the test removes it after); otherwise the
# package is unpacked with dpkg-deb -x into a temporary folder.
#   test-deb.sh DEB EXAMPLE_VAULT
set -u
. "$(dirname "$0")/lib.sh"
[ -f "$1" ] || { echo "FAIL: no package at '$1'"; exit 1; }
deb=$(abs "$1")
example=$(abs "$2")
make_tmp

info=$(dpkg-deb --field "$deb")
field() { dpkg-deb --field "$deb" "$1"; }
[ "$(field Package)" = vaultd ] || fail "Package: $(field Package)"
[ "$(field Architecture)" = "$(dpkg --print-architecture)" ] || fail "Architecture: $(field Architecture)"
# What the programs link, by Debian's names, and fusermount3.
for p in libc6 libfuse3-3 fuse3 libcjson1 libyaml-0-2 libsqlite3-0 libstemmer0d zlib1g \
	libgit2-1.5 libutf8proc2 libvips42; do
	field Depends | tr ',' '\n' | sed 's/^ *//; s/ .*//' | grep -qx "$p" ||
		fail "Depends lacks $p: $(field Depends)"
done
echo "$info" | grep -q '^Maintainer: .*<.*@.*>' || fail "no Maintainer address"

dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|' >"$tmp/files"
for f in /usr/bin/vaultd /usr/bin/vaultctl /usr/bin/vault-mcp \
	/usr/libexec/vaultd/vaultd-image /usr/lib/systemd/user/vaultd@.service \
	/usr/share/man/man8/vaultd.8.gz /usr/share/man/man1/vaultctl.1.gz \
	/usr/share/man/man1/vault-mcp.1.gz /usr/share/man/man5/vaultd-policy.5.gz \
	/usr/share/bash-completion/completions/vaultctl \
	/usr/share/zsh/vendor-completions/_vaultctl \
	/usr/share/doc/vaultd/copyright /usr/share/doc/vaultd/changelog.gz; do
	grep -qxF "$f" "$tmp/files" || fail "the package lacks $f"
done
dpkg-deb -c "$deb" | awk '$2 != "root/root" { print }' | grep . &&
	fail "files not owned by root"

# lintian: no error (its warnings and notes are printed).
if command -v lintian >/dev/null; then
	lintian --info "$deb" >"$tmp/lintian" 2>&1
	sed 's/^/lintian: /' "$tmp/lintian" | grep -v 'running with root privileges'
	grep -q '^E: ' "$tmp/lintian" && fail "lintian reports errors"
else
	fail "lintian is not installed (tests/deps.sh test installs it)"
fi

# The programs as the package puts them.
installed=0
if [ "$(id -u)" = 0 ] && ! dpkg-query -W -f='${Status}' vaultd 2>/dev/null |
	grep -q "ok installed"; then
	cleanup_more() {
		[ $installed = 1 ] &&
			DEBIAN_FRONTEND=noninteractive apt-get purge -y -q vaultd \
				>"$tmp/purge" 2>&1
	}
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		"$deb" </dev/null >"$tmp/apt" 2>&1 || {
		cat "$tmp/apt"
		fail "apt-get install $deb failed"
	}
	dpkg-query -W -f='${Status}' vaultd | grep -q "ok installed" && installed=1
	R=""
	echo "installed with apt-get install (removed at the end)"
else
	dpkg-deb -x "$deb" "$tmp/root"
	R=$tmp/root
	echo "unpacked with dpkg-deb -x (not root, or a vaultd package is installed)"
fi
bin=$R/usr/bin
for p in vaultd vaultctl vault-mcp; do
	"$bin/$p" --version | grep -q "^$p $(field Version)$" ||
		fail "$p --version: $("$bin/$p" --version 2>&1)"
done
grep -q "^ExecStart=/usr/bin/vaultd " "$R/usr/lib/systemd/user/vaultd@.service" ||
	fail "the unit does not run /usr/bin/vaultd"
if command -v systemd-analyze >/dev/null; then
	sed "s|/usr/bin/vaultd|$bin/vaultd|" "$R/usr/lib/systemd/user/vaultd@.service" \
		>"$tmp/vaultd@x.service"
	MANPATH="$R/usr/share/man:$(manpath 2>/dev/null)" \
		systemd-analyze verify "$tmp/vaultd@x.service" 2>&1 | grep "vaultd@x.service" |
		grep -vi "Failed to open\|is not executable" && fail "the unit does not verify"
fi
if [ -z "$R" ] && command -v man >/dev/null; then
	[ "$(man -w vaultd-policy 2>/dev/null)" = /usr/share/man/man5/vaultd-policy.5.gz ] ||
		fail "man does not find vaultd-policy(5)"
fi
zcat "$R/usr/share/man/man8/vaultd.8.gz" | grep -q -- '--create' || fail "vaultd.8 is not the current page"

# The packaged programs serve a vault, images through the packaged
# decoder (found in /usr/libexec/vaultd once installed; named when unpacked),
# and init points clients at them.
export XDG_RUNTIME_DIR=$tmp/run XDG_CACHE_HOME=$tmp/cache HOME=$tmp/home
mkdir -p "$XDG_RUNTIME_DIR" "$HOME/.cursor"
cp -a "$example" "$tmp/vault"
# A 2 x 1 PNG.
printf '\211PNG\15\12\32\12\0\0\0\15IHDR\0\0\0\2\0\0\0\1\10\0\0\0\0\321I V\0\0\0\13IDATx\332c`\370\17\0\1\2\1\0\321\32\313\217\0\0\0\0IEND\256B`\202' \
	>"$tmp/vault/dot.png"
[ -n "$R" ] && export VAULTD_IMAGE_HELPER=$R/usr/libexec/vaultd/vaultd-image
"$bin/vaultd" --vault "$tmp/vault" --no-mount -f 2>"$tmp/log" &
dpid=$!
for _ in $(seq 100); do
	"$bin/vaultctl" --vault "$tmp/vault" status >/dev/null 2>&1 && break
	sleep 0.05
done
"$bin/vaultctl" --vault "$tmp/vault" call read_note name=Home | grep -q . ||
	fail "the packaged vaultd does not serve: $(cat "$tmp/log")"
"$bin/vaultctl" --vault "$tmp/vault" call read_attachment path=dot.png >"$tmp/img" 2>&1
grep -q "^dot.png: image/png, 2 x 1 pixels" "$tmp/img" ||
	fail "the packaged vaultd does not read an image: $(cat "$tmp/img")"
unset VAULTD_IMAGE_HELPER
"$bin/vaultctl" --vault "$tmp/vault" stop >/dev/null 2>&1
wait "$dpid"
dpid=
"$bin/vaultctl" init --vault "$tmp/vault" --client cursor --write >"$tmp/init" 2>&1 ||
	fail "init: $(cat "$tmp/init")"
grep -qF "\"command\": \"$bin/vault-mcp\"" "$HOME/.cursor/mcp.json" ||
	fail "init does not point at the packaged vault-mcp: $(cat "$HOME/.cursor/mcp.json")"

if [ "$failures" -gt 0 ]; then
	echo "$failures failures"
	exit 1
fi
echo "Debian package $(basename "$deb"): contents, dependencies, lintian, programs: all good"
