#!/bin/sh
# The Debian package, built from meson (no debian/ folder): a build with
# prefix /usr and Debian's hardening flags, `meson install --destdir` into
# a staging folder, the files Debian wants beside them (copyright,
# changelog, compressed man pages, md5sums), a control file whose Depends
# come from dpkg-shlibdeps (what the programs really link) plus fuse3
# (fusermount3 mounts as a user), then dpkg-deb.
#   systemd/deb.sh BUILD_DIR      -> BUILD_DIR/vaultd_<version>_<arch>.deb
# The version is meson's; the maintainer is $DEB_MAINTAINER, else the
# author of the checked-out commit.
set -eu
umask 022
src=$(cd "$(dirname "$0")/.." && pwd)
build=$1
mkdir -p "$build"
build=$(cd "$build" && pwd)

if [ ! -f "$build/build.ninja" ]; then
	DEB_BUILD_MAINT_OPTIONS=hardening=+all
	export DEB_BUILD_MAINT_OPTIONS
	CFLAGS=$(dpkg-buildflags --get CFLAGS)
	CPPFLAGS=$(dpkg-buildflags --get CPPFLAGS)
	LDFLAGS=$(dpkg-buildflags --get LDFLAGS)
	export CFLAGS CPPFLAGS LDFLAGS
	meson setup "$build" "$src" --prefix=/usr --buildtype=plain \
		-Dtests=false >/dev/null
fi
ninja -C "$build" >/dev/null

version=$(meson introspect --projectinfo "$build" |
	sed -n 's/.*"version": *"\([^"]*\)".*/\1/p')
arch=$(dpkg --print-architecture)
maint=${DEB_MAINTAINER:-$(git -C "$src" log -1 --format='%an <%ae>' 2>/dev/null || true)}
[ -n "$maint" ] || {
	echo "deb.sh: set DEB_MAINTAINER (not a git checkout)" >&2
	exit 2
}
date=$(git -C "$src" log -1 --format=%aD 2>/dev/null || date -R)
commit=$(git -C "$src" log -1 --format=%h 2>/dev/null || echo unknown)
# The years of the project's history.
first=$(git -C "$src" log --reverse --format=%ad --date=format:%Y 2>/dev/null | head -1)
last=$(git -C "$src" log -1 --format=%ad --date=format:%Y 2>/dev/null || date +%Y)
years=${first:-$last}
[ "$years" = "$last" ] || years=$years-$last

root=$build/deb-root
rm -rf "$root"
meson install -C "$build" --destdir "$root" --strip --quiet >/dev/null
# As dh_strip does: no compiler notes either.
strip --remove-section=.comment --remove-section=.note "$root"/usr/bin/* \
	"$root"/usr/libexec/vaultd/*
# An empty folder meson leaves when nothing is installed in it.
find "$root" -depth -type d -empty -delete

doc=$root/usr/share/doc/vaultd
mkdir -p "$doc"
cat >"$doc/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: vaultd

Files: *
Copyright: $years the vaultd developers
License: GPL-2+

License: GPL-2+
 This program is free software; you can redistribute it and/or modify it
 under the terms of the GNU General Public License as published by the
 Free Software Foundation; either version 2 of the License, or (at your
 option) any later version.
 .
 On Debian systems, the complete text of the GNU General Public License
 version 2 can be found in /usr/share/common-licenses/GPL-2.
EOF
printf 'vaultd (%s) unstable; urgency=medium\n\n  * Built from commit %s with meson.\n\n -- %s  %s\n' \
	"$version" "$commit" "$maint" "$date" | gzip -9n >"$doc/changelog.gz"
find "$root/usr/share/man" -type f ! -name '*.gz' -exec gzip -9n {} +

# Dependencies: the libraries the programs link, as Debian names them
# (libvips through the image decoder in /usr/libexec/vaultd).
work=$build/deb-work
rm -rf "$work"
mkdir -p "$work/debian"
printf 'Source: vaultd\n\nPackage: vaultd\nArchitecture: any\n' >"$work/debian/control"
shlibs=$(cd "$work" && dpkg-shlibdeps -O "$root"/usr/bin/* "$root"/usr/libexec/vaultd/* 2>/dev/null |
	sed -n 's/^shlibs:Depends=//p')
[ -n "$shlibs" ] || {
	echo "deb.sh: dpkg-shlibdeps found no dependencies" >&2
	exit 1
}

mkdir -p "$root/DEBIAN"
cat >"$root/DEBIAN/control" <<EOF
Package: vaultd
Version: $version
Architecture: $arch
Maintainer: $maint
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Depends: $shlibs, fuse3
Section: utils
Priority: optional
Description: guarded Obsidian vault service with an MCP server
 vaultd owns an Obsidian vault (a folder of Markdown notes) and keeps its
 notes, tags and links consistent whoever writes to it: one daemon holds
 the index and link graph, judges every write against the vault's policy
 and records every note's history.
 .
 Programs use the vault through a guarded FUSE mount; Claude Desktop and
 other MCP clients through vault-mcp; the command line through vaultctl,
 whose "init" command sets up the MCP clients. Includes the systemd user
 unit vaultd@.service, man pages and bash and zsh completion.
EOF
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -print | sed 's|^\./||' |
	LC_ALL=C sort | xargs md5sum >DEBIAN/md5sums)

deb=$build/vaultd_${version}_$arch.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
