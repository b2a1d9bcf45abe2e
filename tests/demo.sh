#!/bin/sh
# The main job on the example vault: copy it to a scratch folder (so the
# checkout stays clean) and report on it.
set -eu
build=${1:-build}
work=${VAULTD_DEMO_DIR:-${TMPDIR:-/tmp}/vaultd-demo}
rm -rf "$work"
mkdir -p "$work"
cp -a tests/example-vault "$work/vault"
echo "== vaultctl check on the example vault ($work/vault)"
"$build/fs/vaultctl" check --vault "$work/vault"
