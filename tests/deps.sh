#!/bin/sh
# Install the Debian packages vaultd needs, only those that are missing.
set -eu
PKGS="build-essential pkg-config meson ninja-build scdoc
libfuse3-dev fuse3 libcjson-dev libyaml-dev libcunit1-dev
libsqlite3-dev libstemmer-dev zlib1g-dev libdeflate-dev libzstd-dev libgit2-dev libutf8proc-dev libsystemd-dev
libvips-dev"
if [ "${1:-}" = test ]; then
	# Real editors for the mount tests; fuse3 for mounting; man, bash
	# and zsh to try the man pages and completion; dpkg-dev and lintian
	# to build and check the Debian package.
	PKGS="$PKGS git clang-format vim neovim emacs-nox inotify-tools
man-db bash-completion zsh dpkg-dev fakeroot lintian"
fi
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
# Node.js runs the end-to-end tests under the official MCP SDK client;
# Debian 12's nodejs (18) is enough when no newer one is installed.
if [ "${1:-}" = test ] && ! command -v node >/dev/null 2>&1; then
	missing="$missing nodejs npm"
fi
[ -z "$missing" ] && exit 0
echo "installing:$missing" >&2
SUDO=""
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null || {
		echo "need root (or sudo) to install:$missing" >&2
		exit 1
	}
	SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q </dev/null >&2
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing </dev/null >&2
