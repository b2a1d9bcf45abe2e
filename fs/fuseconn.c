/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * FUSE connections seen from outside the mount (see fuseconn.h). The code
 * the reaper runs after fork() allocates nothing and calls only system
 * calls and plain string code: vaultd has threads by the time it dies.
 */
#include "fuseconn.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define FUSECTL "/sys/fs/fuse/connections"

/* ---- /proc/self/mountinfo, line by line, without malloc ---------------- */

struct mi_line {
	int mnt_id;
	unsigned major, minor;
	char *mountpoint; /* unescaped in place */
	char *fstype;
	char *source;
};

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape(char *s)
{
	char *o = s;
	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
				      (s[3] - '0'));
			s += 4;
		} else {
			*o++ = *s++;
		}
	}
	*o = 0;
}

static char *field(char **p)
{
	char *s = *p;
	while (*s == ' ')
		s++;
	if (!*s)
		return NULL;
	char *e = s;
	while (*e && *e != ' ')
		e++;
	if (*e)
		*e++ = 0;
	*p = e;
	return s;
}

static bool parse_line(char *line, struct mi_line *ret)
{
	char *p = line, *f[6];
	for (int i = 0; i < 6; i++)
		if (!(f[i] = field(&p)))
			return false;
	/* Optional fields up to "-", then fstype and source. */
	char *x;
	while ((x = field(&p)) && strcmp(x, "-") != 0)
		;
	char *fstype = x ? field(&p) : NULL;
	char *source = fstype ? field(&p) : NULL;
	if (!source)
		return false;
	char *colon = strchr(f[2], ':');
	if (!colon)
		return false;
	ret->mnt_id = atoi(f[0]);
	ret->major = (unsigned)strtoul(f[2], NULL, 10);
	ret->minor = (unsigned)strtoul(colon + 1, NULL, 10);
	unescape(f[4]);
	unescape(source);
	ret->mountpoint = f[4];
	ret->fstype = fstype;
	ret->source = source;
	return true;
}

/* The last matching line (the topmost mount): 0, or -ENOENT. */
static int scan(const char *mountpoint, const char *fstype, const char *source,
		struct fuseconn *ret)
{
	int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	static _Thread_local char buf[16384];
	size_t have = 0;
	bool found = false, eof = false;
	while (!eof || have) {
		if (!eof && have < sizeof(buf) - 1) {
			ssize_t r =
				read(fd, buf + have, sizeof(buf) - 1 - have);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				eof = true;
			else
				have += (size_t)r;
		}
		char *nl = memchr(buf, '\n', have);
		if (!nl && !eof && have < sizeof(buf) - 1)
			continue;
		size_t len = nl ? (size_t)(nl - buf) : have;
		if (!nl && !eof) { /* a line longer than the buffer */
			have = 0;
			continue;
		}
		buf[len] = 0;
		struct mi_line l;
		if (parse_line(buf, &l) && !strcmp(l.mountpoint, mountpoint) &&
		    !strcmp(l.fstype, fstype) &&
		    (!source || !strcmp(l.source, source))) {
			found = true;
			ret->mnt_id = l.mnt_id;
			ret->dev = l.major ? 0 : l.minor;
		}
		size_t used = nl ? len + 1 : have;
		memmove(buf, buf + used, have - used);
		have -= used;
	}
	close(fd);
	return found ? 0 : -ENOENT;
}

int fuseconn_find(const char *mountpoint, const char *fstype,
		  const char *source, struct fuseconn *ret)
{
	struct fuseconn c = {0};
	int r = scan(mountpoint, fstype, source, &c);
	if (r == 0)
		*ret = c;
	return r;
}

/* ---- abort and detach ---------------------------------------------------- */

static void abort_path(char *out, size_t cap, unsigned dev)
{
	snprintf(out, cap, FUSECTL "/%u/abort", dev);
}

static int write_abort(const char *path)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = write(fd, "1", 1) == 1 ? 0 : -errno;
	close(fd);
	return r;
}

int fuseconn_abort(unsigned dev)
{
	if (!dev)
		return -EINVAL;
	char p[128];
	abort_path(p, sizeof(p), dev);
	int r = write_abort(p);
	/* fusectl is mounted by systemd; where it is not, root mounts it. */
	if (r == -ENOENT && geteuid() == 0 &&
	    mount("fusectl", FUSECTL, "fusectl", 0, NULL) == 0)
		r = write_abort(p);
	return r;
}

/* Async-signal-safe: runs in the reaper too. */
static int detach(const char *mountpoint)
{
	if (geteuid() == 0 &&
	    umount2(mountpoint, MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
		return 0;
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		char *const argv[] = {"fusermount3",	  "-u", "-z", "-q",
				      (char *)mountpoint, NULL};
		int null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EBUSY;
}

int fuseconn_detach(const char *mountpoint)
{
	return detach(mountpoint);
}

int fuseconn_clean_stale(const char *mountpoint, const char *fstype,
			 const char *source)
{
	int n = 0;
	struct fuseconn c = {0};
	/* Stacked mounts go one by one, topmost first. */
	for (int i = 0; i < 64; i++) {
		if (fuseconn_find(mountpoint, fstype, source, &c) < 0)
			break;
		fuseconn_abort(c.dev);
		if (detach(mountpoint) < 0)
			break;
		n++;
	}
	return n;
}

/* ---- the reaper --------------------------------------------------------- */

struct reaper_msg {
	uint32_t armed;
	uint32_t dev;
	char abort_path[128];
	char mountpoint[3840];
};
_Static_assert(sizeof(struct reaper_msg) <= PIPE_BUF,
	       "a reaper message is written in one piece");

static int reaper_wfd = -1;

static void reap(const struct reaper_msg *m)
{
	if (!m->armed)
		return;
	write_abort(m->abort_path);
	/* Only our own mount: a new vaultd may be mounted there already. */
	struct fuseconn c = {0};
	if (m->mountpoint[0] &&
	    scan(m->mountpoint, "fuse.vaultd", NULL, &c) == 0 &&
	    c.dev == m->dev)
		detach(m->mountpoint);
}

/*
 * A crashing vaultd dumping core waits for all its threads; one blocked
 * in a kernel cache notification (which needs a folder lock held by a
 * request only vaultd could answer) never comes: the dump, the mount and
 * everyone using it would hang for good. The reaper sees the dump begin.
 */
static bool dumping_core(pid_t pid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	const char *c = strstr(buf, "\nCoreDumping:");
	return c && atoi(c + 14) == 1;
}

static _Noreturn void reaper_main(int rfd, pid_t parent)
{
	struct sigaction ign = {.sa_handler = SIG_IGN};
	/* A terminal's ^C or systemd's SIGTERM is for vaultd: the reaper
	 * stays until vaultd is gone. */
	sigaction(SIGINT, &ign, NULL);
	sigaction(SIGTERM, &ign, NULL);
	sigaction(SIGHUP, &ign, NULL);
	sigaction(SIGPIPE, &ign, NULL);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	int sfd = signalfd(-1, &set, SFD_CLOEXEC);
	prctl(PR_SET_NAME, "vaultd-reaper");
	prctl(PR_SET_PDEATHSIG, SIGUSR1);
	static struct reaper_msg cur;
	if (getppid() == parent) {
		for (;;) {
			struct pollfd p[2] = {{.fd = rfd, .events = POLLIN},
					      {.fd = sfd, .events = POLLIN}};
			int r = poll(p, sfd >= 0 ? 2 : 1, cur.armed ? 250 : -1);
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0 || (sfd >= 0 && p[1].revents))
				break;
			if (r == 0) {
				if (dumping_core(parent))
					break;
				continue;
			}
			static struct reaper_msg m;
			ssize_t n = read(rfd, &m, sizeof(m));
			if (n < 0 && errno == EINTR)
				continue;
			if (n != (ssize_t)sizeof(m))
				break; /* EOF: vaultd is gone */
			cur = m;
		}
	}
	reap(&cur);
	_exit(0);
}

int reaper_start(void)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int e = -errno;
		close(p[0]);
		close(p[1]);
		return e;
	}
	if (pid == 0) {
		/* Nothing of vaultd's stays open here (the lock above all). */
		int rfd = p[0];
		for (int fd = 3; fd < rfd; fd++)
			close(fd);
		syscall(SYS_close_range, (unsigned)rfd + 1, ~0u, 0u);
		reaper_main(rfd, parent);
	}
	close(p[0]);
	reaper_wfd = p[1];
	return 0;
}

static void reaper_send(const struct reaper_msg *m)
{
	if (reaper_wfd < 0)
		return;
	ssize_t r;
	do
		r = write(reaper_wfd, m, sizeof(*m));
	while (r < 0 && errno == EINTR);
}

void reaper_arm(unsigned dev, const char *mountpoint)
{
	struct reaper_msg m = {.armed = 1};
	m.dev = dev;
	abort_path(m.abort_path, sizeof(m.abort_path), dev);
	if (strlen(mountpoint) < sizeof(m.mountpoint))
		strcpy(m.mountpoint, mountpoint);
	reaper_send(&m);
}

void reaper_disarm(void)
{
	struct reaper_msg m = {0};
	reaper_send(&m);
}
