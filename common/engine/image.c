/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Images for MCP clients, decoded by the program vaultd-image (image.h
 * says what and why; fs/image/ is the decoder). Here: find the program,
 * start it without a shell on the file the caller opened and checked,
 * read its answer (image_wire.h) within bounds and a deadline, stop it if
 * it runs over, reap it, base64 what it sends. vaultd handles no
 * SIGCHLD and waits for no child but by its pid, so each request reaps
 * its own decoder.
 */
#include "image.h"
#include "base64.h"
#include "config.h"
#include "image_wire.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <time.h>

#define HELPER_NAME "vaultd-image"
/* The raw bytes whose base64 is IMAGE_MAX_DATA. */
#define RAW_MAX ((size_t)IMAGE_MAX_DATA / 4 * 3)
/* Decoders at once: each may take 1 GiB; more callers wait their turn. */
#define HELPERS_MAX 2
/* How long a decoder that has answered gets to exit before it is
 * killed. */
#define EXIT_GRACE_MS 1000

static pthread_mutex_t slots_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t slots_cv = PTHREAD_COND_INITIALIZER;
static unsigned slots_used; /* guarded by slots_mu */

static void slot_take(void)
{
	pthread_mutex_lock(&slots_mu);
	while (slots_used >= HELPERS_MAX)
		pthread_cond_wait(&slots_cv, &slots_mu);
	slots_used++;
	pthread_mutex_unlock(&slots_mu);
}

static void slot_give(void)
{
	pthread_mutex_lock(&slots_mu);
	slots_used--;
	pthread_cond_signal(&slots_cv);
	pthread_mutex_unlock(&slots_mu);
}

static int64_t now_ms(void)
{
	return (int64_t)(now_ns() / 1000000);
}

static int ms_left(int64_t deadline)
{
	int64_t left = deadline - now_ms();
	return left < 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
}

static int timeout_ms(void)
{
	const char *e = getenv("VAULTD_IMAGE_TIMEOUT_MS");
	char *end;
	long ms = e && *e ? strtol(e, &end, 10) : 0;
	if (ms <= 0 || ms > 600000 || *end)
		return IMAGE_TIMEOUT_MS;
	return (int)ms;
}

/* The decoder: VAULTD_IMAGE_HELPER if set, else next to this program
 * (the build tree, a bundle), else where meson installs it. */
static int helper_path(char **ret, char **ret_msg)
{
	const char *env = getenv("VAULTD_IMAGE_HELPER");
	if (env && *env) {
		if (access(env, X_OK) < 0) {
			*ret_msg = xasprintf("the image decoder %s "
					     "(VAULTD_IMAGE_HELPER) cannot be "
					     "run: %s",
					     env, strerror(errno));
			return -ENOSYS;
		}
		*ret = xstrdup(env);
		return 0;
	}
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash = n > 0 ? memrchr(self, '/', (size_t)n) : NULL;
	_cleanup_free_ char *near = slash ? xasprintf("%.*s/" HELPER_NAME,
						      (int)(slash - self), self)
					  : NULL;
	if (near && access(near, X_OK) == 0) {
		*ret = TAKE_PTR(near);
		return 0;
	}
	static const char installed[] = VAULTD_LIBEXECDIR "/" HELPER_NAME;
	if (access(installed, X_OK) == 0) {
		*ret = xstrdup(installed);
		return 0;
	}
	*ret_msg =
		xasprintf("the image decoder " HELPER_NAME " is not "
			  "installed (looked for %s and %s)",
			  near ? near : "it next to this program", installed);
	return -ENOSYS;
}

struct helper {
	pid_t pid;
	int out;   /* its standard output */
	int pidfd; /* -1 when the kernel has none */
};

/* fd moved above the standard ones (a closed stdin makes a pipe end 0,
 * and the child's dup2 onto 0 and 1 must not clobber it). */
static int above_stdio(int fd)
{
	if (fd > STDERR_FILENO)
		return fd;
	int hi = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
	close(fd);
	return hi;
}

/* Started with the image file as stdin, a pipe as stdout, /dev/null as
 * stderr and no other fd, an empty environment and every signal at its
 * default and unblocked (vaultd's threads block SIGTERM and ignore
 * SIGPIPE). */
static int spawn_in(const char *path, int in, int out, pid_t *ret_pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, dfl;
	sigemptyset(&none);
	sigfillset(&dfl);
	sigdelset(&dfl, SIGKILL);
	sigdelset(&dfl, SIGSTOP);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in, STDIN_FILENO);
	posix_spawn_file_actions_adddup2(&fa, out, STDOUT_FILENO);
	posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null",
					 O_WRONLY, 0);
	posix_spawn_file_actions_addclosefrom_np(&fa, STDERR_FILENO + 1);
	posix_spawnattr_init(&at);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &dfl);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK |
					      POSIX_SPAWN_SETSIGDEF);
	char *argv[] = {(char *)HELPER_NAME, NULL};
	char *envp[] = {NULL};
	int r = posix_spawn(ret_pid, path, &fa, &at, argv, envp);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	return -r;
}

static int spawn_helper(const char *path, int fd, struct helper *ret,
			char **ret_msg)
{
	_cleanup_close_ int in_dup =
		fd > STDERR_FILENO
			? -1
			: fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
	int in = fd > STDERR_FILENO ? fd : in_dup;
	int p[2], rd = -1, wr = -1, r = 0;
	if (pipe2(p, O_CLOEXEC) < 0)
		r = -errno;
	else {
		rd = above_stdio(p[0]);
		wr = above_stdio(p[1]);
	}
	if (r == 0 && (rd < 0 || wr < 0 || in < 0))
		r = -EMFILE;
	if (r == 0)
		r = spawn_in(path, in, wr, &ret->pid);
	if (wr >= 0)
		close(wr);
	if (r < 0) {
		if (rd >= 0)
			close(rd);
		*ret_msg = xasprintf("cannot start the image decoder %s: %s",
				     path, strerror(-r));
		return r == -ENOENT || r == -EACCES ? -ENOSYS : r;
	}
	/* Fewer wake-ups for a big image (the default pipe holds 64 KiB);
	 * refused above the system's limit, which is fine. */
	fcntl(rd, F_SETPIPE_SZ, 1 << 20);
	ret->out = rd;
	ret->pidfd = pidfd_open(ret->pid, 0);
	return 0;
}

/* n bytes of the decoder's output before the deadline: 0, -ETIMEDOUT,
 * -EPIPE (it closed its output first) or another -errno. */
static int read_full(int out, void *buf, size_t n, int64_t deadline)
{
	char *p = buf;
	size_t got = 0;
	while (got < n) {
		struct pollfd pfd = {.fd = out, .events = POLLIN};
		int pr = poll(&pfd, 1, ms_left(deadline));
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0)
			return -errno;
		if (pr == 0)
			return -ETIMEDOUT;
		ssize_t k = read(out, p + got, n - got);
		if (k < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			return -EPIPE;
		got += (size_t)k;
	}
	return 0;
}

/* A header that can be believed: 0, else -EPROTO. */
static int check_head(const struct image_wire *w)
{
	if (w->magic != IMAGE_WIRE_MAGIC || w->status > 0 || w->status < -4095)
		return -EPROTO;
	if (w->status < 0)
		return w->len <= IMAGE_WIRE_MSG_MAX ? 0 : -EPROTO;
	bool sane = w->mime < IMAGE_MIMES && w->len > 0 && w->len <= RAW_MAX &&
		    w->width > 0 && w->width <= IMAGE_MAX_SIDE &&
		    w->height > 0 && w->height <= IMAGE_MAX_SIDE &&
		    w->orig_width > 0 && w->orig_height > 0;
	return sane ? 0 : -EPROTO;
}

/* The header and the bytes after it. */
static int read_answer(const struct helper *h, int64_t deadline,
		       struct image_wire *ret, char **ret_body)
{
	struct image_wire w;
	int r = read_full(h->out, &w, sizeof(w), deadline);
	if (r == 0)
		r = check_head(&w);
	if (r < 0)
		return r;
	_cleanup_free_ char *body = xmalloc(w.len + 1);
	r = read_full(h->out, body, w.len, deadline);
	if (r < 0)
		return r;
	body[w.len] = '\0';
	*ret = w;
	*ret_body = TAKE_PTR(body);
	return 0;
}

/* Whether the decoder has exited (not yet reaped) by the deadline. */
static bool exited_by(const struct helper *h, int64_t deadline)
{
	for (;;) {
		int left = ms_left(deadline);
		if (h->pidfd >= 0) {
			struct pollfd p = {.fd = h->pidfd, .events = POLLIN};
			int r = poll(&p, 1, left);
			if (r < 0 && errno == EINTR)
				continue;
			return r > 0;
		}
		siginfo_t si = {0};
		if (waitid(P_PID, (id_t)h->pid, &si,
			   WEXITED | WNOHANG | WNOWAIT) == 0 &&
		    si.si_pid)
			return true;
		if (!left)
			return false;
		nanosleep(&(struct timespec){.tv_nsec = 2000000}, NULL);
	}
}

/* The decoder gone and reaped: waited for until the deadline (not at
 * all when kill_now), then killed. Its wait status, -1 if unknown. */
static int reap(struct helper *h, int64_t deadline, bool kill_now)
{
	if (kill_now || !exited_by(h, deadline))
		kill(h->pid, SIGKILL);
	int st = -1;
	while (waitpid(h->pid, &st, 0) < 0 && errno == EINTR)
		;
	if (h->pidfd >= 0)
		close(h->pidfd);
	close(h->out);
	return st;
}

/* Why the decoder gave no answer, from how it ended. */
static char *no_answer(int r, int st, int timeout)
{
	if (r == -ETIMEDOUT)
		return xasprintf("the image decoder did not finish within "
				 "%d ms and was stopped",
				 timeout);
	if (r == -EPROTO)
		return xstrdup("the image decoder's answer is not one vaultd "
			       "understands");
	if (st != -1 && WIFSIGNALED(st))
		return xasprintf("the image decoder crashed (signal %d, %s)",
				 WTERMSIG(st), strsignal(WTERMSIG(st)));
	if (st != -1 && WIFEXITED(st))
		return xasprintf("the image decoder ended (exit status %d) "
				 "without an answer",
				 WEXITSTATUS(st));
	return xasprintf("reading the image decoder's answer failed: %s",
			 strerror(-r));
}

static int run_helper(const char *path, int fd, struct image_out *ret,
		      char **ret_msg)
{
	int timeout = timeout_ms();
	int64_t deadline = now_ms() + timeout;
	struct helper h;
	int r = spawn_helper(path, fd, &h, ret_msg);
	if (r < 0)
		return r;
	struct image_wire w = {0};
	_cleanup_free_ char *body = NULL;
	r = read_answer(&h, deadline, &w, &body);
	int64_t grace = now_ms() + EXIT_GRACE_MS;
	int st = reap(&h, grace < deadline ? grace : deadline, r < 0);
	if (r < 0) {
		*ret_msg = no_answer(r, st, timeout);
		return r == -ETIMEDOUT ? r : -EIO;
	}
	if (w.status < 0) {
		for (char *p = body; *p; p++)
			if ((unsigned char)*p < ' ')
				*p = ' ';
		*ret_msg = w.len ? TAKE_PTR(body) : xstrdup("unknown error");
		return w.status;
	}
	*ret = (struct image_out){
		.mime = IMAGE_WIRE_MIMES[w.mime],
		.width = w.width,
		.height = w.height,
		.orig_width = w.orig_width,
		.orig_height = w.orig_height,
		.bytes = w.len,
		.scaled = w.scaled ? 1 : 0,
	};
	ret->data = base64_encode(body, w.len, &ret->data_len);
	return 0;
}

int image_for_client(int fd, struct image_out *ret, char **ret_msg)
{
	_cleanup_free_ char *path = NULL;
	int r = helper_path(&path, ret_msg);
	if (r < 0)
		return r;
	slot_take();
	r = run_helper(path, fd, ret, ret_msg);
	slot_give();
	return r;
}

void image_out_clear(struct image_out *o)
{
	free(o->data);
	memset(o, 0, sizeof(*o));
}
