#!/bin/bash
# The hostile battery: what a careless or hostile user and a crash can do
# to a vault served by vaultd, all at once, with figures.
#
#  1. Crash cycles: vaultd is killed (kill -9, or SIGTERM) while five kinds
#     of writers work through the mount and the control socket (shell
#     redirection > and >>, cp/cat/dd/tee, sed -i, an editor's temp file +
#     rename, vaultctl update_note). After each: no note emptied or torn,
#     no acknowledged write lost, nothing hung, the mount comes back.
#  2. Guard bypass attempts through the mount: every way to get a refused
#     tag into a note (fd kept across a rename, hard links, truncate, dd
#     conv=notrunc, rename of a non-note, mmap, ...).
#  3. Path escapes: ~600 attempts to read or write outside the vault
#     through the tools and the mount (.., absolute paths, symlinks).
#  4. Hostile input: a YAML alias bomb, invalid UTF-8, malformed and huge
#     control messages; the daemon keeps serving.
#  5. Modes of everything vaultd created; online check = offline check.
#
# Needs root and /dev/fuse (else skipped, 77). CI runs 6 kill -9 and 3
# SIGTERM cycles (under a minute); VAULTD_HOSTILE_LONG=1 runs 50 and 20;
# VAULTD_HOSTILE_KILL=n and VAULTD_HOSTILE_TERM=n set each count.
# The daemon runs under a memory cap (ulimit -v; a sanitizer build, which
# reserves terabytes of address space, under the sanitizer's RSS cap).
#   battery.sh VAULTD VAULTCTL
set -u
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
vaultd=$(abs "$1")
vaultctl=$(abs "$2")
here=$(cd "$(dirname "$0")" && pwd)
[ -e /dev/fuse ] || { echo "no /dev/fuse: skipping"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "not root: skipping"; exit 77; }
command -v node >/dev/null || { echo "no node: skipping"; exit 77; }
if [ "${VAULTD_HOSTILE_LONG:-0}" = 1 ]; then
	n_kill=50 n_term=20
else
	n_kill=6 n_term=3
fi
n_kill=${VAULTD_HOSTILE_KILL:-$n_kill}
n_term=${VAULTD_HOSTILE_TERM:-$n_term}
umask 077 # anything group- or world-accessible was made so by vaultd
tmp=$(mktemp -d /tmp/vaultd-hostile.XXXXXX)
chmod 755 "$tmp"
V=$tmp/vault
M=$tmp/ro/mnt
OUT=$tmp/outside
W=$tmp/writers
mkdir -p "$V/.obsidian" "$OUT" "$W" "$tmp/run" "$tmp/cache" "$tmp/ro"
# The mount point sits in a read-only folder: a writer that runs on after
# the mount is gone gets an error instead of writing into the bare folder.
mount -t tmpfs -o size=1m,mode=755 tmpfs "$tmp/ro" || { echo "no tmpfs: skipping"; exit 77; }
mkdir "$M" && mount -o remount,ro "$tmp/ro"
export XDG_RUNTIME_DIR=$tmp/run XDG_CACHE_HOME=$tmp/cache
emptied=0 torn=0 lost=0 hangs=0 bypasses=0 escapes=0 mode_violations=0
check_mismatches=0 deaths=0
fail() { echo "FAIL: $*" >&2; }
ctl() { timeout 30 "$vaultctl" --vault "$V" "$@"; }

# ---- the daemon and its mount ---------------------------------------------

# The FUSE connection of the mount at M (its number in fusectl), if any.
conn_of() {
	awk -v m="$M" '$5 == m { split($3, d, ":"); print d[2] }' \
		/proc/self/mountinfo | tail -1
}
# Abort the mount's connection: what a user does when a mount hangs.
abort_mount() {
	[ -d /sys/fs/fuse/connections ] || return
	ls /sys/fs/fuse/connections >/dev/null 2>&1 ||
		mount -t fusectl none /sys/fs/fuse/connections 2>/dev/null
	for c in $(conn_of); do
		echo 1 >"/sys/fs/fuse/connections/$c/abort" 2>/dev/null
	done
	umount -l "$M" 2>/dev/null
}
sanitized=
grep -qa -e __asan_init -e __tsan_init "$vaultd" && sanitized=1
dpid=
start() {
	(
		if [ -n "$sanitized" ]; then
			export ASAN_OPTIONS="${ASAN_OPTIONS:-}:hard_rss_limit_mb=4096"
			export TSAN_OPTIONS="${TSAN_OPTIONS:-}:hard_rss_limit_mb=4096"
		else
			ulimit -v 4194304
		fi
		exec "$vaultd" --vault "$V" --mount "$M" --grace-ms 300 -f
	) 2>>"$tmp/log" &
	dpid=$!
	for _ in $(seq 300); do
		grep -q " $M fuse" /proc/mounts && [ -f "$M/Hub.md" ] &&
			ctl status >/dev/null 2>&1 && return 0
		sleep 0.05
	done
	fail "vaultd did not come up (mount and socket) in 15 s"
	tail -20 "$tmp/log" >&2
	return 1
}
alive() { [ -n "$dpid" ] && kill -0 "$dpid" 2>/dev/null; }
cleanup() {
	[ -n "$dpid" ] && kill -9 "$dpid" 2>/dev/null
	kill -9 $(jobs -p) 2>/dev/null
	abort_mount
	umount -l "$tmp/ro" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# ---- texts that show when they are torn -----------------------------------

# A note's text at a sequence number: every line names it, so a text
# made of two versions, cut short, or emptied is seen.
text() { # note seq
	printf 'ID %s@%s\n' "$1" "$2"
	for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
		printf 'line %s of %s with a link to [[Hub]] #known @%s\n' \
			"$i" "$1" "$2"
	done
	printf 'END %s@%s\n' "$1" "$2"
}
# One block of an appended note.
block() { printf 'BLOCK %s@%s [[Hub]] #known\nEND %s@%s\n' "$1" "$2" "$1" "$2"; }
# The sequence number of a whole text, or "torn".
seq_of() { # file note
	local first s
	first=$(head -1 "$1")
	s=${first#"ID $2@"}
	if [ "$first" = "$s" ] || ! text "$2" "$s" | cmp -s - "$1"; then
		echo torn
	else
		echo "$s"
	fi
}
# An appended note: whole blocks, in order.
blocks_ok() { # file note
	awk -v n="$2" '
	  NR % 2 == 1 { if ($1 != "BLOCK" || index($2, n "@") != 1) bad = 1; id = $2; next }
	  { if ($0 != "END " id) bad = 1 }
	  END { exit bad || NR % 2 }' "$1"
}

# ---- the vault --------------------------------------------------------------

mkdir -p "$V/.vaultd" "$V/sub"
cat >"$V/.vaultd/policy.yaml" <<'EOF'
allowed_tags: [known]
on_violation: reject
ignore: ["templates/"]
EOF
printf '# Hub\n#known\n' >"$V/Hub.md"
for i in $(seq 200); do
	printf 'filler %d [[Hub]] [[f%d]] #known\n' "$i" $((i % 37)) >"$V/sub/f$i.md"
done
KINDS="redir cp sed save sock"
for k in $KINDS; do
	for j in 1 2 3; do
		text "$k$j" 0 >"$V/$k$j.md"
	done
done
for j in 1 2; do : >"$V/app$j.md"; done
printf 'SECRET-MARKER-%s\n' "$$" >"$OUT/secret.md"
marker="SECRET-MARKER-$$"

# ---- writers ----------------------------------------------------------------

# Each writer owns its notes and logs "note seq" after each write it saw
# succeed; the last acknowledged text must survive any crash.
writer() { # kind
	local k=$1 s n f prev
	s=$(cat "$W/$k.seq" 2>/dev/null || echo 0)
	while [ ! -e "$W/stop" ]; do
		s=$((s + 1))
		for j in 1 2 3; do
			n=$k$j
			f=$W/$n.$s
			text "$n" "$s" >"$f"
			case $k in
			redir)
				# bash's > (open O_TRUNC, dup2, close): its
				# close is never checked, so no ack.
				text "$n" "$s" >"$M/$n.md" 2>/dev/null
				continue ;;
			cp)
				case $((s % 4)) in
				0) cp "$f" "$M/$n.md" ;;
				1) cat "$f" | tee "$M/$n.md" >/dev/null ;;
				2) dd if="$f" of="$M/$n.md" bs=97 status=none ;;
				*) /bin/sh -c 'exec cat "$1" >"$2"' - "$f" "$M/$n.md"
				   false ;; # no ack: a shell's close
				esac ;;
			sed)
				prev=$(head -1 "$V/$n.md" 2>/dev/null)
				prev=${prev##*@}
				[ -n "$prev" ] &&
					sed -i "s/@$prev\$/@$s/" "$M/$n.md" ;;
			save)
				cp "$f" "$M/.$n.md.swp" 2>/dev/null &&
					mv "$M/.$n.md.swp" "$M/$n.md" ;;
			sock)
				"$vaultctl" --vault "$V" call update_note \
					name="$n" content@="$f" >/dev/null 2>&1 ;;
			esac && echo "$n $s" >>"$W/$k.ack"
			rm -f "$f"
		done 2>/dev/null
		echo "$s" >"$W/$k.seq"
	done
}
appender() {
	local s j
	s=$(cat "$W/app.seq" 2>/dev/null || echo 0)
	while [ ! -e "$W/stop" ]; do
		s=$((s + 1))
		for j in 1 2; do
			block "app$j" "$s" >>"$M/app$j.md"
		done 2>/dev/null
		echo "$s" >"$W/app.seq"
	done
}

# After a crash and restart: every note whole, not emptied, and not older
# than its last acknowledged write.
check_notes() { # cycle
	local k j n s a
	for k in $KINDS; do
		for j in 1 2 3; do
			n=$k$j
			if [ ! -s "$V/$n.md" ]; then
				fail "cycle $1: $n.md is empty or missing"
				emptied=$((emptied + 1))
				continue
			fi
			s=$(seq_of "$V/$n.md" "$n")
			if [ "$s" = torn ]; then
				fail "cycle $1: $n.md is torn: $(head -c 300 "$V/$n.md" | tr '\n' '|')"
				torn=$((torn + 1))
				continue
			fi
			a=$(awk -v n="$n" '$1 == n { s = $2 } END { print s + 0 }' \
				"$W/$k.ack" 2>/dev/null)
			if [ "${a:-0}" -gt "$s" ]; then
				fail "cycle $1: $n.md lost acknowledged write $a (holds $s)"
				lost=$((lost + 1))
			fi
			# The next writes go on from what the note holds.
			[ "$s" -gt "$(cat "$W/$k.seq" 2>/dev/null || echo 0)" ] &&
				echo "$s" >"$W/$k.seq"
		done
	done
	for j in 1 2; do
		blocks_ok "$V/app$j.md" "app$j" || {
			fail "cycle $1: app$j.md has a torn block"
			torn=$((torn + 1))
		}
	done
}

# ---- 1. crash cycles --------------------------------------------------------

t0=$(date +%s)
start || exit 1
cycles=$((n_kill + n_term))
acked=0
for c in $(seq "$cycles"); do
	sig=KILL
	[ "$c" -gt "$n_kill" ] && sig=TERM
	rm -f "$W/stop" "$W"/*.ack
	pids=
	for k in $KINDS; do
		writer "$k" &
		pids="$pids $!"
	done
	appender &
	pids="$pids $!"
	sleep "0.$((RANDOM % 9 + 3))$((RANDOM % 10))"
	sleep $((RANDOM % 2))
	kill -"$sig" "$dpid"
	if [ "$sig" = TERM ]; then
		# 30 s: a stop under writers on a loaded 2-core machine
		# has taken over 10 s; a hang never ends.
		for _ in $(seq 300); do alive || break; sleep 0.1; done
		if alive; then
			fail "cycle $c: SIGTERM did not stop vaultd within 30 s"
			for t in /proc/"$dpid"/task/*; do
				echo "  thread $(cat "$t/comm"): $(cat "$t/wchan" 2>/dev/null) $(awk '/^State/ { print $2 }' "$t/status")"
			done >&2
			if [ -n "${VAULTD_HOSTILE_GDB:-}" ] && command -v gdb >/dev/null; then
				gdb -p "$dpid" -batch -ex 'thread apply all bt' >&2 2>&1
			fi
			tail -5 "$tmp/log" >&2
			hangs=$((hangs + 1))
			kill -9 "$dpid"
		fi
	fi
	wait "$dpid" 2>/dev/null
	dpid=
	touch "$W/stop"
	# Writers end by themselves: nothing may block on the dead mount.
	for _ in $(seq 100); do
		busy=
		for p in $pids; do kill -0 "$p" 2>/dev/null && busy=1; done
		[ -z "$busy" ] && break
		sleep 0.1
	done
	if [ -n "$busy" ]; then
		fail "cycle $c ($sig): writers still blocked 10 s after the daemon died"
		grep -l '^State:.*D' /proc/[0-9]*/status 2>/dev/null | head -5 >&2
		hangs=$((hangs + 1))
		abort_mount
	fi
	for p in $pids; do wait "$p" 2>/dev/null; done
	if ! timeout 5 stat "$M" >/dev/null 2>&1 && ! timeout 5 ls "$M" >/dev/null 2>&1; then
		# Not a hang as long as it answers (ENOTCONN is an answer).
		timeout 5 ls "$M" >/dev/null 2>&1
		[ $? = 124 ] && {
			fail "cycle $c ($sig): the mount point hangs after the daemon died"
			hangs=$((hangs + 1))
			abort_mount
		}
	fi
	start || { hangs=$((hangs + 1)); abort_mount; start || exit 1; }
	mounts=$(grep -c " $M fuse" /proc/mounts)
	[ "$mounts" = 1 ] || fail "cycle $c: $mounts mounts stacked on the mount point"
	[ "$mounts" = 1 ] || hangs=$((hangs + 1))
	check_notes "$c"
	acked=$((acked + $(cat "$W"/*.ack 2>/dev/null | wc -l)))
done
echo "crash cycles: $n_kill kill -9, $n_term SIGTERM in $(($(date +%s) - t0)) s;" \
	"$acked acknowledged writes checked"

# ---- 2. guard bypass attempts -----------------------------------------------

t1=$(date +%s)
for i in $(seq 12); do printf 'target %d #known\n' "$i" >"$M/T$i.md"; done
printf 'forbidden #forbidden\n' >"$tmp/forb.md"
sleep 0.3
(
	cd "$M" || exit 1
	echo 'x #forbidden' >T1.md
	echo 'x #forbidden' >>T2.md
	# A descriptor kept across a rename onto a note.
	exec 3<>x.tmp
	printf 'harmless\n' >&3
	mv x.tmp T3.md
	printf '#forbidden\n' >&3
	exec 3>&-
	# Hard links: refused on the mount, judged when made in the folder.
	ln T4.md t4.txt
	ln "$V/T4.md" "$V/t4b.txt"
	sleep 0.3
	printf '#forbidden\n' >>t4b.txt
	truncate -s 0 T5.md && printf '#forbidden\n' >>T5.md
	cp "$tmp/forb.md" T6.md
	printf '#forbidden\n' >plain.txt && mv plain.txt T7.md
	printf '#forbidden' | dd of=T8.md conv=notrunc status=none
	sed -i 's/^/#forbidden /' T9.md
	printf '#forbidden\n' | tee -a T10.md >/dev/null
	mv T11.md T11.md~ && cp "$tmp/forb.md" T11.md
	ln -s "$tmp/forb.md" T12link.md
	printf '#forbidden\n' >New1.md
	mkdir -p nd && cp "$tmp/forb.md" nd/New2.md
	# Folders the guard does not look into, moved into the vault.
	mkdir .hidden && cp "$tmp/forb.md" .hidden/n.md && mv .hidden visible
	mkdir -p .h2/deep/er && cp "$tmp/forb.md" .h2/deep/er/n.md &&
		mv .h2/deep visible2
	mkdir -p templates/t && cp "$tmp/forb.md" templates/t/n.md &&
		mv templates/t fromtemplates
	# Two notes swapped, one forbidden under its new name.
	cp "$tmp/forb.md" T12.tmp && mv -T T12.tmp T12.md
	if [ -x /usr/bin/python3 ]; then
		/usr/bin/python3 - T2.md <<'EOF'
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    m = mmap.mmap(fd, 0)
    m[0:10] = b"#forbidden"
    m.flush()
    m.close()
except Exception:
    pass
os.close(fd)
EOF
	fi
) >/dev/null 2>&1
ctl call update_note name=T1 'content=sock #forbidden' >/dev/null 2>&1
ctl call append_note name=T2 'text=#forbidden' >/dev/null 2>&1
ctl call create_note name=New3 'content=#forbidden' >/dev/null 2>&1
sleep 1
# Hidden and ignored folders may hold anything: they are not the vault's.
bypassed=$(grep -rl --include='*.md' -e '#forbidden' "$V" |
	grep -v -e "^$V/.*/\." -e "^$V/\." -e "^$V/templates/")
bypasses=$(echo "$bypassed" | grep -c .)
[ "$bypasses" = 0 ] || fail "the guard let #forbidden into: $bypassed"
echo "guard bypass attempts: 25 in $(($(date +%s) - t1)) s"

# ---- 3. path escapes ---------------------------------------------------------

t2=$(date +%s)
ln -s "$OUT" "$V/outlink"
ln -s "$OUT/secret.md" "$V/sneaky.md"
ln -s "/etc/passwd" "$V/passwd.md"
sleep 0.5
attempts=0
: >"$tmp/escape.out"
heads=(".." "../.." "../../.." "/" "//" "./.." "sub/../.." "%2e%2e" "..%2f.."
	"outlink" "outlink/." "sub/../outlink" ".vaultd/.." "..\\.." ".../.."
	"$tmp" "$OUT" "$V/.." "sub/./../..")
tails=("outside/secret" "outside/secret.md" "secret" "secret.md"
	"etc/passwd" "escprobe" "escprobe.md" "sneaky" "passwd")
for h in "${heads[@]}"; do
	for t in "${tails[@]}"; do
		p="$h/$t"
		{
			ctl call read_note name="$p"
			ctl call get_note_metadata name="$p"
			ctl call get_note_history name="$p"
			ctl call create_note name="$p-escprobe" content=escprobe
			ctl call append_note name="$p" text=escprobe
		} >>"$tmp/escape.out" 2>&1
		attempts=$((attempts + 5))
	done
done
# Through the mount, the kernel resolves ".." and symlinks before vaultd
# sees a name: what reaches vaultd is names that only look like paths.
mheads=("%2e%2e" "..%2f.." "..%2F..%2F.." "..\\.." "..." "...." " .." ".. "
	"sub/%2e%2e" "sub/..%2f.." ".vaultd/%2e%2e" "%2fetc")
for h in "${mheads[@]}"; do
	for t in "${tails[@]}"; do
		p="$h${t:+_}${t//\//%2f}"
		{
			cat "$M/$p"
			cat "$M/$p.md"
			echo escprobe >"$M/$p-escprobe.md"
			ls "$M/$h"
		} >>"$tmp/escape.out" 2>&1
		attempts=$((attempts + 4))
	done
done
{
	ctl call read_note name=sneaky
	ctl call read_note name=passwd
	ctl call read_note name=outlink/secret
	ctl call search_notes query=SECRET-MARKER mode=fulltext
	ctl call search_notes query=root mode=content
	ctl call list_notes folder=outlink
	ctl call update_note name=sneaky content=escprobe
	ctl call append_note name=outlink/secret text=escprobe
} >>"$tmp/escape.out" 2>&1
attempts=$((attempts + 8))
# Symlinks in the vault are shown as symlinks (the kernel follows them for
# the reader, as on any folder): never as notes holding the target's text.
for l in sneaky.md passwd.md outlink; do
	[ -L "$M/$l" ] || {
		fail "$l is not shown as a symlink on the mount"
		escapes=$((escapes + 1))
	}
done
if grep -q "$marker" "$tmp/escape.out" || grep -q '^root:' "$tmp/escape.out"; then
	fail "a file outside the vault was read: $(grep -m3 -e "$marker" -e '^root:' "$tmp/escape.out")"
	escapes=$((escapes + $(grep -c -e "$marker" -e '^root:' "$tmp/escape.out")))
fi
made=$({
	find / /etc -maxdepth 1 -name '*escprobe*'
	find /tmp -maxdepth 4 -path "$V" -prune -o -path "$tmp/ro" -prune -o \
		-path "/tmp/vaultd-hostile.*" ! -path "$tmp*" -prune -o \
		-name '*escprobe*' -print
} 2>/dev/null | head -20)
if [ -n "$made" ]; then
	fail "files made outside the vault: $made"
	escapes=$((escapes + $(echo "$made" | wc -l)))
fi
[ "$(ls "$OUT")" = secret.md ] || {
	fail "the outside folder changed: $(ls "$OUT")"
	escapes=$((escapes + 1))
}
echo "path escape attempts: $attempts in $(($(date +%s) - t2)) s"
rm -f "$V/outlink" "$V/sneaky.md" "$V/passwd.md"

# ---- 4. hostile input --------------------------------------------------------

bomb='---
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
---
bomb'
printf '%s\n' "$bomb" >"$V/bomb1.md"
printf '%s\n' "$bomb" >"$M/bomb2.md" 2>/dev/null
printf 'bad \xff\xfe utf8 #known\n' >"$V/badutf8.md"
head -c 3000000 /dev/zero | tr '\0' '[' >"$V/brackets.md"
sleep 1
ctl call read_note name=badutf8 >/dev/null 2>&1
ctl call read_note name="$(head -c 100000 /dev/zero | tr '\0' a)" >/dev/null 2>&1
sock=$(ctl --json status | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).socket))')
node - "$sock" <<'EOF'
// Malformed and hostile control messages, each on its own connection.
const net = require("net");
const msgs = [
  "{not json}\n",
  '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":' + "[".repeat(5000) + "\n",
  "\xff\xfe\xfd\n",
  '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_note","arguments":{"name":7}}}\n',
  '{"jsonrpc":"2.0","id":3,"method":"nope"}\n',
  "x".repeat(1 << 20) + "\n",
];
let left = msgs.length;
for (const m of msgs) {
  const c = net.createConnection(process.argv[2], () => c.write(m));
  c.on("data", () => c.end());
  c.on("error", () => {});
  c.setTimeout(5000, () => c.destroy());
  c.on("close", () => { if (--left === 0) process.exit(0); });
}
EOF
if ! alive || ! ctl status >/dev/null 2>&1; then
	fail "vaultd died or stopped answering after hostile input"
	tail -20 "$tmp/log" >&2
	deaths=$((deaths + 1))
	start || exit 1
fi
rm -f "$V/bomb1.md" "$V/bomb2.md" "$V/brackets.md"

# ---- 5. modes, online check = offline check ----------------------------------

# The watcher takes the removals above in its own time (a loaded machine
# may need seconds): the daemon's view must come to equal a fresh reading
# of the folder, and stay equal after the stop.
same=0
for _ in $(seq 40); do
	ctl check --json >"$tmp/on.json"
	ctl check --offline --json >"$tmp/off.json"
	if node "$here/../same-check.js" "$tmp/on.json" "$tmp/off.json" >/dev/null; then
		same=1
		break
	fi
	sleep 0.5
done
[ $same = 1 ] || {
	node "$here/../same-check.js" "$tmp/on.json" "$tmp/off.json"
	fail "online check never came to equal the offline check (20 s)"
	check_mismatches=$((check_mismatches + 1))
}
ctl stop >/dev/null
for _ in $(seq 100); do alive || break; sleep 0.1; done
alive && { fail "vaultctl stop did not stop vaultd"; hangs=$((hangs + 1)); kill -9 "$dpid"; }
wait "$dpid" 2>/dev/null
dpid=
grep -q " $M fuse" /proc/mounts && {
	fail "the mount is still there after vaultctl stop"
	hangs=$((hangs + 1))
}
timeout 5 ls "$M" >/dev/null 2>&1 || {
	fail "the mount point is not usable after stop"
	hangs=$((hangs + 1))
}
ctl check --offline --json >"$tmp/off.json"
if ! node "$here/../same-check.js" "$tmp/on.json" "$tmp/off.json"; then
	fail "online check differs from offline check"
	check_mismatches=1
fi
wide=$(find "$V" "$XDG_RUNTIME_DIR" "$XDG_CACHE_HOME" ! -type l -perm /077 \
	! -path "$V" ! -path "$XDG_RUNTIME_DIR" ! -path "$XDG_CACHE_HOME" \
	-printf '%m %p\n' 2>/dev/null)
if [ -n "$wide" ]; then
	fail "created with modes wider than the owner's: $(echo "$wide" | head -5)"
	mode_violations=$(echo "$wide" | wc -l)
fi

echo "hostile battery: cycles kill9=$n_kill sigterm=$n_term ($(($(date +%s) - t0)) s)"
echo "emptied=$emptied torn=$torn lost=$lost hangs=$hangs bypasses=$bypasses" \
	"escapes=$escapes mode_violations=$mode_violations" \
	"check_mismatches=$check_mismatches daemon_deaths=$deaths"
total=$((emptied + torn + lost + hangs + bypasses + escapes + mode_violations +
	check_mismatches + deaths))
[ "$total" = 0 ]
