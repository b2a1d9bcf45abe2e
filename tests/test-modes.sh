#!/bin/sh
# What vaultd creates, and what a killed vaultd left behind:
#  - under any umask (even 000), nothing vaultd creates for itself
#    (history, rejected texts, trash, cache, socket, lock, temp files) is
#    writable by others or wider than the vault folder's own mode;
#  - an old world-writable history repository is narrowed at start;
#  - vaultd's temp files left by a crash are removed at start;
#  - one vaultd per vault folder, whatever path or socket reaches it.
# With /dev/fuse and root it also goes through the mount; else without.
#   test-modes.sh VAULTD VAULTCTL
set -u
. "$(dirname "$0")/lib.sh"
vaultd=$(abs "$1")
vaultctl=$(abs "$2")
make_tmp
mount_ok=0
[ -e /dev/fuse ] && [ "$(id -u)" = 0 ] && mount_ok=1

run_case() { # vault-mode
	vmode=$1
	R=$tmp/$vmode
	V=$R/vault
	M=$R/mnt
	mkdir -p "$V/sub" "$V/.obsidian" "$M" "$R/run" "$R/cache"
	chmod 700 "$R/run"
	printf 'known #known\n' >"$V/Known.md"
	printf 'linked [[Known]]\n' >"$V/sub/Other.md"
	# A crash's leftovers: temp files of a dead vaultd, and a history
	# repository an older version made world-writable.
	printf 'half' >"$V/.Known.md.vaultd-99999-1a2b.tmp"
	printf 'half' >"$V/sub/.Other.md.vaultd-99998-15645502.tmp"
	printf 'keep' >"$V/.mine.tmp"
	mkdir -p "$V/.vaultd/history.git/objects/aa"
	printf 'x' >"$V/.vaultd/history.git/objects/aa/junk"
	printf 'half' >"$V/.vaultd/.violations.jsonl.vaultd-99997-ff.tmp"
	chmod -R 777 "$V/.vaultd/history.git"
	chmod "$vmode" "$V"
	margs=--no-mount
	[ $mount_ok = 1 ] && margs="--mount $M"
	(umask 000 && XDG_RUNTIME_DIR=$R/run exec "$vaultd" --vault "$V" \
		--cache "$R/cache/c" $margs -f 2>"$R/log") &
	dpid=$!
	ctl() { XDG_RUNTIME_DIR=$R/run "$vaultctl" --vault "$V" "$@"; }
	for _ in $(seq 200); do
		ctl status >/dev/null 2>&1 && break
		sleep 0.05
	done
	ctl status >/dev/null 2>&1 || { cat "$R/log"; fail "$vmode: no daemon"; return; }
	for _ in $(seq 200); do
		ctl status 2>/dev/null | grep -q "^search: *ready" && break
		sleep 0.05
	done

	ctl call create_note name=Made content='made #known' >/dev/null ||
		fail "$vmode: create_note"
	ctl call create_note name=deep/er/Made content='made' >/dev/null ||
		fail "$vmode: create_note in new folders"
	ctl call create_note name=Bad content='bad #forbidden' >/dev/null 2>&1 &&
		fail "$vmode: an unknown tag was accepted"
	ctl call delete_note name=Made >/dev/null || fail "$vmode: delete_note"
	ctl call search_notes query=linked >/dev/null || fail "$vmode: search"
	if [ $mount_ok = 1 ]; then
		printf 'via mount #known\n' >"$M/ViaMount.md" ||
			fail "$vmode: write through the mount"
		(umask 000 && printf 'x #forbidden\n' >"$M/Refused.md") 2>/dev/null
		(umask 000 && mkdir "$M/open" && printf 'y\n' >"$M/open/f.txt")
		# The caller's umask 000 applies exactly through the mount.
		[ "$(stat -c %a "$V/open")" = 777 ] ||
			fail "$vmode: mkdir through the mount under umask 000 gave $(stat -c %a "$V/open")"
		[ "$(stat -c %a "$V/open/f.txt")" = 666 ] ||
			fail "$vmode: a file created through the mount under umask 000 gave $(stat -c %a "$V/open/f.txt")"
		rm "$M/ViaMount.md" || fail "$vmode: rm through the mount"
	fi
	sleep 2.5 # a history batch
	ctl call get_note_history name=Known >/dev/null ||
		fail "$vmode: history"

	# Nothing vaultd made for itself is writable by others, nor wider
	# than the vault folder.
	wider=$(printf '%o' $((0777 & ~0$vmode | 022)))
	# (A note moved to .trash keeps its own mode, the writer's choice.)
	bad=$( (find "$V/.vaultd" "$R/cache/c" "$R/run" \
		\( -type f -o -type d -o -type s \) -perm /"$wider" \
		-printf '%m %p\n'; find "$V/.trash" -type d -perm /"$wider" \
		-printf '%m %p\n') 2>/dev/null)
	[ -z "$bad" ] || fail "$vmode: wider than allowed (mask $wider):
$bad"
	for f in "$V/Made.md" "$V/deep/er/Made.md"; do
		[ -e "$f" ] || f=$(ls "$V"/.trash/Made*.md 2>/dev/null | head -1)
		[ -n "$f" ] || continue
		[ -z "$(find "$f" -perm /"$(printf '%o' $((0777 & ~0$vmode)))")" ] ||
			fail "$vmode: note $f has mode $(stat -c %a "$f")"
	done
	[ -n "$(ls "$V/.vaultd/rejected" 2>/dev/null)" ] ||
		fail "$vmode: no rejected text saved"
	[ -e "$V/.vaultd/history.git/objects/aa/junk" ] ||
		fail "$vmode: a file in history.git went away"

	# Crash leftovers are gone; other dot files stay.
	left=$(find "$V" -name '*.vaultd-*.tmp' | grep -v '/\.vaultd/shadow/')
	[ -z "$left" ] || fail "$vmode: temp files left: $left"
	[ -e "$V/.mine.tmp" ] || fail "$vmode: a file that is not vaultd's went away"

	# A second daemon on the same folder (another path, another
	# socket) is refused.
	ln -s "$V" "$R/alias"
	if XDG_RUNTIME_DIR=$R/run2 timeout 10 "$vaultd" --vault "$R/alias" \
		--socket "$R/other.sock" --no-mount -f 2>"$R/log2"; then
		fail "$vmode: a second vaultd started on the same vault"
	fi
	grep -q "another vaultd owns" "$R/log2" ||
		fail "$vmode: second daemon said: $(cat "$R/log2")"
	# ... and the first one still serves.
	ctl status >/dev/null || fail "$vmode: first daemon gone"

	# A symlink planted at .vaultd/rejected: the refused text is kept
	# in .vaultd/ instead, never outside the vault.
	if [ $mount_ok = 1 ]; then
		mkdir -p "$R/outside"
		rm -rf "$V/.vaultd/rejected"
		ln -s "$R/outside" "$V/.vaultd/rejected"
		printf 'planted #forbidden\n' >"$M/Planted.md" 2>/dev/null
		[ -z "$(ls -A "$R/outside")" ] ||
			fail "$vmode: refused text written outside the vault"
		grep -qs 'planted #forbidden' "$V"/.vaultd/rejected-* ||
			fail "$vmode: the refused text was not kept"
		grep -q "rejected cannot be used" "$R/log" ||
			fail "$vmode: the log does not say .vaultd/rejected cannot be used"
	fi

	ctl stop >/dev/null 2>&1
	for _ in $(seq 200); do
		kill -0 "$dpid" 2>/dev/null || break
		sleep 0.05
	done
	kill -0 "$dpid" 2>/dev/null && fail "$vmode: vaultd did not stop"
	dpid=
	# After a stop, the lock is free: a new daemon may start.
	if ! XDG_RUNTIME_DIR=$R/run timeout 20 sh -c \
		"'$vaultd' --vault '$V' --no-mount -f 2>'$R/log3' & p=\$!; \
		 for i in \$(seq 100); do '$vaultctl' --vault '$V' status >/dev/null 2>&1 && break; sleep 0.1; done; \
		 '$vaultctl' --vault '$V' stop >/dev/null; wait \$p"; then
		fail "$vmode: restart after stop: $(cat "$R/log3")"
	fi
}

run_case 755
run_case 700
run_case 750
if [ $failures -gt 0 ]; then
	echo "$failures failures"
	exit 1
fi
echo "modes: all good"
