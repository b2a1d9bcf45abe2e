/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The control socket's main thread: listening, accepting (with the caps
 * per peer and in total), reading each client's lines and answering or
 * queueing them by the method table, writing replies that did not go
 * out at once, events for subscribers, and the server's life cycle. The
 * calls themselves run in ctl_jobs.c; the methods are in ctl_methods.c.
 */
#include "ctl_server_int.h"
#include "log.h"
#include "tools.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <inttypes.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_WORKERS 8
#define DEFAULT_MAX_CLIENTS 512
#define DEFAULT_MAX_PER_PEER 128
/* Descriptors kept for the mount, the index and the history. */
#define FD_RESERVE 256

/* ---- clients ------------------------------------------------------------ */

void ctl_client_unref(struct ctl_server *s, struct client *c)
{
	pthread_mutex_lock(&s->mu);
	bool last = --c->refs == 0;
	pthread_mutex_unlock(&s->mu);
	if (!last)
		return;
	lb_free(&c->in);
	sb_free(&c->out);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

void ctl_wake(struct ctl_server *s)
{
	uint64_t one = 1;
	if (write(s->evfd, &one, sizeof(one)) < 0) {
	}
}

/*
 * Send a line to a client, from any thread: at once when nothing is
 * waiting before it (most answers go out without a trip through the
 * main thread); what the socket does not take now is left to the main
 * thread, which is woken for it.
 */
void ctl_client_send(struct ctl_server *s, struct client *c, char *line)
{
	bool left = false;
	pthread_mutex_lock(&c->mu);
	if (!c->closed && !c->overflow) {
		if (c->out.len - c->out_off + strlen(line) > s->cfg.max_queue) {
			/* A client that does not read loses its connection,
			 * not everybody else their memory. */
			c->overflow = true;
		} else {
			bool idle = c->out_off == c->out.len;
			sb_puts(&c->out, line);
			sb_putc(&c->out, '\n');
			while (idle && c->out_off < c->out.len) {
				ssize_t w = send(c->fd, c->out.s + c->out_off,
						 c->out.len - c->out_off,
						 MSG_NOSIGNAL | MSG_DONTWAIT);
				if (w < 0 && errno == EINTR)
					continue;
				if (w <= 0)
					break; /* the main thread sees why */
				c->out_off += (size_t)w;
			}
			if (c->out_off == c->out.len)
				c->out.len = c->out_off = 0;
		}
	}
	left = c->overflow || c->out_off < c->out.len;
	pthread_mutex_unlock(&c->mu);
	free(line);
	if (left)
		ctl_wake(s);
}

void ctl_send_error(struct ctl_server *s, struct client *c, const cJSON *id,
		    int code, const char *msg)
{
	ctl_client_send(s, c, rpc_error_line(id, code, msg, NULL));
}

static void client_close(struct ctl_server *s, struct client *c)
{
	if (c->closed)
		return;
	epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	pthread_mutex_lock(&c->mu);
	c->closed = true;
	close(c->fd);
	c->fd = -1;
	pthread_mutex_unlock(&c->mu);
	pthread_mutex_lock(&s->mu);
	pv_remove(&s->clients, c);
	/* Nobody waits for its answers any more. */
	struct workq_job *dropped = ctl_cancel_jobs(s, c, NULL);
	pthread_mutex_unlock(&s->mu);
	ctl_drop_jobs(s, dropped);
	log_debug("client %u disconnected", c->id);
	/* Events of the current epoll batch may still name this client:
	 * its last reference goes after the batch (release_closed()). */
	pv_push(&s->closed, c);
}

static void release_closed(struct ctl_server *s)
{
	for (size_t i = 0; i < s->closed.n; i++)
		ctl_client_unref(s, s->closed.v[i]);
	s->closed.n = 0;
}

/* Write what can be written now; EPOLLOUT for the rest. */
static void client_flush(struct ctl_server *s, struct client *c)
{
	pthread_mutex_lock(&c->mu);
	bool overflow = c->overflow;
	while (!c->closed && c->out_off < c->out.len) {
		ssize_t w = send(c->fd, c->out.s + c->out_off,
				 c->out.len - c->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				c->close_after_flush = overflow = true;
			break;
		}
		c->out_off += (size_t)w;
	}
	bool pending = c->out_off < c->out.len;
	if (!pending) {
		c->out.len = c->out_off = 0;
	} else if (c->out_off > (1u << 20)) {
		memmove(c->out.s, c->out.s + c->out_off,
			c->out.len - c->out_off);
		c->out.len -= c->out_off;
		c->out_off = 0;
	}
	int fd = c->fd;
	bool closed = c->closed;
	bool closing = c->close_after_flush;
	pthread_mutex_unlock(&c->mu);
	/* A client that closed its side still gets the answers to what it
	 * asked before (e.g. `echo '{...}' | socat - UNIX:...`). */
	pthread_mutex_lock(&s->mu);
	bool done = closing && !pending && c->jobs == 0;
	pthread_mutex_unlock(&s->mu);
	if (closed)
		return;
	if (overflow) {
		log_warn(
			"client %u is not reading its replies; disconnecting it",
			c->id);
		client_close(s, c);
		return;
	}
	if (done) {
		client_close(s, c);
		return;
	}
	/* A closing client is not read any more (its EOF would wake us
	 * forever); it is only written to. */
	struct epoll_event ev = {
		.events = (closing ? 0 : EPOLLIN | EPOLLRDHUP) |
			  (pending ? EPOLLOUT : 0),
		.data.ptr = c,
	};
	epoll_ctl(s->epfd, EPOLL_CTL_MOD, fd, &ev);
}

static void handle_line(struct ctl_server *s, struct client *c,
			const char *line, size_t len)
{
	struct rpc_msg m;
	const char *why = NULL;
	int code = rpc_parse(line, len, &m, &why);
	if (code) {
		ctl_send_error(s, c, m.id, code, why);
		rpc_msg_clear(&m);
		return;
	}
	const struct ctl_method *md =
		m.method ? ctl_method_find(m.method) : NULL;
	if (!m.method || !m.id) {
		/* Notifications are not answered (responses neither). */
		if (md && md->notify)
			md->notify(s, c, &m);
		rpc_msg_clear(&m);
		return;
	}
	if (m.params && !cJSON_IsObject(m.params)) {
		ctl_send_error(s, c, m.id, RPC_BAD_PARAMS,
			       "Invalid params: params must be an object");
	} else if (md && md->answer) {
		md->answer(s, c, &m);
	} else if (md && md->run) {
		ctl_enqueue(s, c, m.id, md, m.params);
	} else {
		_cleanup_free_ char *e =
			xasprintf("Method not found: %s", QUOTE(m.method));
		ctl_send_error(s, c, m.id, RPC_METHOD_NOT_FOUND, e);
	}
	rpc_msg_clear(&m);
}

static void client_read(struct ctl_server *s, struct client *c)
{
	char buf[65536];
	for (;;) {
		ssize_t r = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				client_close(s, c);
			break;
		}
		if (r == 0) {
			/* EOF: answer what is queued, then close. */
			pthread_mutex_lock(&c->mu);
			c->close_after_flush = true;
			pthread_mutex_unlock(&c->mu);
			break;
		}
		lb_append(&c->in, buf, (size_t)r);
		size_t len;
		char *line;
		while ((line = lb_next(&c->in, &len)))
			if (len)
				handle_line(s, c, line, len);
		if (c->in.too_long) {
			_cleanup_free_ char *e = xasprintf(
				"Invalid Request: message longer than %zu bytes",
				s->cfg.max_line);
			ctl_send_error(s, c, NULL, RPC_INVALID_REQUEST, e);
			log_warn("client %u sent a message over %zu bytes; "
				 "closing its connection",
				 c->id, s->cfg.max_line);
			pthread_mutex_lock(&c->mu);
			c->close_after_flush = true;
			pthread_mutex_unlock(&c->mu);
			break;
		}
	}
}

/* Say why, then hang up. */
static void refuse(struct ctl_server *s, int fd, const char *why)
{
	_cleanup_free_ char *line =
		rpc_error_line(NULL, RPC_SERVER_ERROR, why, NULL);
	_cleanup_free_ char *nl = xasprintf("%s\n", line);
	if (send(fd, nl, strlen(nl), MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
	}
	close(fd);
	s->refused++;
	uint64_t now = now_ns();
	if (now - s->refused_logged > 10000000000ull) {
		s->refused_logged = now;
		log_warn("refused a connection: %s (%" PRIu64
			 " refused so far)",
			 why, s->refused);
	}
}

/* Connections of one process (mu held). */
static unsigned peer_clients(struct ctl_server *s, pid_t pid)
{
	unsigned n = 0;
	for (size_t i = 0; i < s->clients.n; i++)
		n += ((struct client *)s->clients.v[i])->pid == pid;
	return n;
}

static void accept_clients(struct ctl_server *s)
{
	for (;;) {
		int fd = accept4(s->lfd, NULL, NULL,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0 && (errno == EMFILE || errno == ENFILE) &&
		    s->spare_fd >= 0) {
			/* Out of descriptors: the spare one lets us say so
			 * instead of leaving the client hanging (and the
			 * listening socket readable forever). */
			close(s->spare_fd);
			fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0)
				refuse(s, fd,
				       "vaultd is out of file descriptors; try "
				       "again later");
			s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
			if (fd >= 0)
				continue;
		}
		if (fd < 0)
			return;
		struct ucred cred;
		socklen_t cl = sizeof(cred);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0 ||
		    cred.uid != getuid()) {
			log_warn("refused a connection from uid %d",
				 (int)cred.uid);
			close(fd);
			continue;
		}
		pthread_mutex_lock(&s->mu);
		size_t total = s->clients.n;
		unsigned mine = peer_clients(s, cred.pid);
		pthread_mutex_unlock(&s->mu);
		if (total >= s->max_clients) {
			_cleanup_free_ char *why = xasprintf(
				"Too many connections to vaultd (%u); close "
				"some and try again",
				s->max_clients);
			refuse(s, fd, why);
			continue;
		}
		if (mine >= s->max_per_peer) {
			_cleanup_free_ char *why = xasprintf(
				"Too many connections from process %d (%u); "
				"close some and try again",
				(int)cred.pid, s->max_per_peer);
			refuse(s, fd, why);
			continue;
		}
		struct client *c = xcalloc(1, sizeof(*c));
		c->fd = fd;
		c->pid = cred.pid;
		c->refs = 1;
		pthread_mutex_init(&c->mu, NULL);
		lb_init(&c->in, s->cfg.max_line);
		pthread_mutex_lock(&s->mu);
		c->id = ++s->next_id;
		pv_push(&s->clients, c);
		pthread_mutex_unlock(&s->mu);
		struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP,
					 .data.ptr = c};
		epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev);
		log_debug("client %u connected (pid %d)", c->id, (int)cred.pid);
	}
}

/* ---- events ---- */

static void on_event(const struct vault_event *ev, void *ud)
{
	struct ctl_server *s = ud;
	static const char *const names[] = {"created", "changed", "renamed",
					    "deleted"};
	cJSON *p = cJSON_CreateObject();
	cJSON_AddStringToObject(p, "type", names[ev->type]);
	cJSON_AddStringToObject(p, "path", ev->path);
	if (ev->old_path)
		cJSON_AddStringToObject(p, "old_path", ev->old_path);
	/* The writer, and apart from it the MCP session it came from. */
	const char *src = ev->source ? ev->source : "";
	const char *session = source_session(src);
	_cleanup_free_ char *writer = xstrndup(src, source_writer_len(src));
	cJSON_AddStringToObject(p, "source", writer);
	if (session)
		cJSON_AddStringToObject(p, "session", session);
	char *line = rpc_notify_line("event", p);
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->clients.n; i++) {
		struct client *c = s->clients.v[i];
		if (c->subscribed)
			ctl_client_send(s, c, xstrdup(line));
	}
	pthread_mutex_unlock(&s->mu);
	free(line);
}

/* ---- life cycle ---- */

/* The listening socket at cfg->socket_path: 0 and *ret_fd, or -errno. */
static int listen_at(const struct ctl_config *cfg, int *ret_fd, char **ret_msg)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	/* Bound under a temporary name and renamed into place once it
	 * listens: whoever sees the socket can connect to it. */
	_cleanup_free_ char *tmp =
		xasprintf("%s.%d.tmp", cfg->socket_path, (int)getpid());
	if (strlen(tmp) >= sizeof(sa.sun_path)) {
		*ret_msg =
			xasprintf("socket path too long: %s", cfg->socket_path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, tmp);
	int lfd =
		socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (lfd < 0) {
		*ret_msg = xasprintf("socket: %s", strerror(errno));
		return -errno;
	}
	/* The caller holds the instance lock: a leftover socket is stale
	 * (rename() replaces it). */
	unlink(tmp);
	mode_t old = umask(0177);
	int r = bind(lfd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0 || chmod(tmp, 0600) < 0 || listen(lfd, 128) < 0 ||
	    rename(tmp, cfg->socket_path) < 0) {
		int e = errno;
		*ret_msg = xasprintf("cannot listen on %s: %s",
				     cfg->socket_path, strerror(e));
		unlink(tmp);
		close(lfd);
		return -e;
	}
	*ret_fd = lfd;
	return 0;
}

/* Workers and connections: as many as asked, but never so many
 * connections that the mount runs out of descriptors. */
static void set_limits(struct ctl_server *s, const struct ctl_config *cfg)
{
	s->nworkers = cfg->workers > 0 ? cfg->workers : DEFAULT_WORKERS;
	if (s->nworkers < QUICK_RESERVE + 1)
		s->nworkers = QUICK_RESERVE + 1;
	struct rlimit rl;
	unsigned fds = 1024;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		if (rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
			getrlimit(RLIMIT_NOFILE, &rl);
		}
		fds = rl.rlim_cur > 1u << 20 ? 1u << 20 : (unsigned)rl.rlim_cur;
	}
	s->max_clients =
		cfg->max_clients ? cfg->max_clients : DEFAULT_MAX_CLIENTS;
	if (fds < FD_RESERVE + 32)
		s->max_clients = 16;
	else if (s->max_clients > fds - FD_RESERVE)
		s->max_clients = fds - FD_RESERVE;
	s->max_per_peer =
		cfg->max_per_peer ? cfg->max_per_peer : DEFAULT_MAX_PER_PEER;
}

int ctl_server_new(struct vault *v, const struct ctl_config *cfg,
		   struct ctl_server **ret, char **ret_msg)
{
	int lfd = -1;
	int r = listen_at(cfg, &lfd, ret_msg);
	if (r < 0)
		return r;
	struct ctl_server *s = xcalloc(1, sizeof(*s));
	s->v = v;
	s->cfg = *cfg;
	s->path = xstrdup(cfg->socket_path);
	s->lfd = lfd;
	s->started = now_s();
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->ready_mu, NULL);
	pthread_cond_init(&s->ready_cv, NULL);
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	s->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	s->sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &s->lfd};
	epoll_ctl(s->epfd, EPOLL_CTL_ADD, lfd, &ev);
	ev.data.ptr = &s->evfd;
	epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->evfd, &ev);
	ev.data.ptr = &s->sigfd;
	epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->sigfd, &ev);
	set_limits(s, cfg);
	s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int started = ctl_workers_start(s, s->nworkers);
	if (started < s->nworkers)
		log_warn("control socket: %d of %d workers started", started,
			 s->nworkers);
	s->nworkers = started;
	if (s->epfd < 0 || s->evfd < 0 || s->sigfd < 0 ||
	    started <= QUICK_RESERVE) {
		*ret_msg = xasprintf("cannot serve %s: out of descriptors or "
				     "threads",
				     cfg->socket_path);
		ctl_server_free(s);
		return -EAGAIN;
	}
	vault_add_listener(v, on_event, s);
	*ret = s;
	return 0;
}

void ctl_server_set_mount(struct ctl_server *s, const char *mountpoint)
{
	char *copy = mountpoint ? xstrdup(mountpoint) : NULL;
	pthread_mutex_lock(&s->mu);
	char *old = s->mountpoint;
	s->mountpoint = copy;
	pthread_mutex_unlock(&s->mu);
	free(old);
}

/* Whatever runs is cancelled: a stop takes as long as the slowest call
 * needs to reach its next check, not to finish. */
void ctl_server_stop(struct ctl_server *s)
{
	pthread_mutex_lock(&s->mu);
	s->stopping = true;
	pthread_mutex_unlock(&s->mu);
	/* No queued call starts any more; the running ones are told. */
	if (s->q) {
		workq_stop(s->q, false);
		ctl_cancel_running(s);
	}
	pthread_mutex_lock(&s->ready_mu);
	s->ready_stopping = true;
	pthread_cond_broadcast(&s->ready_cv);
	pthread_mutex_unlock(&s->ready_mu);
	ctl_wake(s);
}

/* --idle-exit: no client and no call for that long stops the server. */
static void check_idle(struct ctl_server *s)
{
	if (!s->cfg.idle_exit_s)
		return;
	size_t running, queued;
	workq_counts(s->q, &running, &queued);
	pthread_mutex_lock(&s->mu);
	bool busy = s->clients.n || running || queued;
	pthread_mutex_unlock(&s->mu);
	uint64_t now = now_ns();
	if (busy || !s->idle_since) {
		s->idle_since = busy ? 0 : now;
		return;
	}
	if (now - s->idle_since >= s->cfg.idle_exit_s * 1000000000ull) {
		log_info("no client for %u s: stopping (--idle-exit)",
			 s->cfg.idle_exit_s);
		ctl_server_stop(s);
	}
}

int ctl_server_run(struct ctl_server *s)
{
	struct epoll_event evs[64];
	s->idle_since = now_ns();
	for (;;) {
		pthread_mutex_lock(&s->mu);
		bool stop = s->stopping;
		pthread_mutex_unlock(&s->mu);
		if (stop)
			break;
		check_idle(s);
		int n = epoll_wait(s->epfd, evs, 64,
				   s->cfg.idle_exit_s ? 1000 : -1);
		if (n < 0 && errno != EINTR)
			return -errno;
		for (int i = 0; i < n; i++) {
			void *p = evs[i].data.ptr;
			if (p == &s->lfd) {
				accept_clients(s);
			} else if (p == &s->sigfd) {
				struct signalfd_siginfo si;
				if (read(s->sigfd, &si, sizeof(si)) > 0) {
					log_info("signal %d: stopping",
						 (int)si.ssi_signo);
					ctl_server_stop(s);
				}
			} else if (p == &s->evfd) {
				uint64_t x;
				if (read(s->evfd, &x, sizeof(x)) < 0) {
				}
				/* Flush every client with queued output. */
				pthread_mutex_lock(&s->mu);
				struct ptrvec todo = {0};
				for (size_t k = 0; k < s->clients.n; k++) {
					struct client *c = s->clients.v[k];
					c->refs++;
					pv_push(&todo, c);
				}
				pthread_mutex_unlock(&s->mu);
				for (size_t k = 0; k < todo.n; k++) {
					client_flush(s, todo.v[k]);
					ctl_client_unref(s, todo.v[k]);
				}
				pv_free(&todo);
			} else {
				struct client *c = p;
				pthread_mutex_lock(&s->mu);
				c->refs++;
				pthread_mutex_unlock(&s->mu);
				if (evs[i].events &
				    (EPOLLIN | EPOLLRDHUP | EPOLLHUP))
					if (!c->closed && !c->close_after_flush)
						client_read(s, c);
				if (!c->closed)
					client_flush(s, c);
				if (!c->closed &&
				    (evs[i].events & (EPOLLERR | EPOLLHUP)) &&
				    !(evs[i].events & EPOLLIN))
					client_close(s, c);
				ctl_client_unref(s, c);
			}
		}
		release_closed(s);
	}
	return 0;
}

struct ctl_server *ctl_server_free(struct ctl_server *s)
{
	if (!s)
		return NULL;
	vault_remove_listener(s->v, on_event, s);
	ctl_server_stop(s);
	ctl_server_index_ready(s); /* release waiters */
	/* Joins the workers and drops the jobs that never ran. */
	s->q = workq_free(s->q);
	if (s->spare_fd >= 0)
		close(s->spare_fd);
	while (s->clients.n)
		client_close(s, s->clients.v[s->clients.n - 1]);
	release_closed(s);
	pv_free(&s->clients);
	pv_free(&s->closed);
	close(s->lfd);
	unlink(s->path);
	close(s->epfd);
	close(s->evfd);
	close(s->sigfd);
	free(s->path);
	free(s->mountpoint);
	pthread_mutex_destroy(&s->mu);
	pthread_mutex_destroy(&s->ready_mu);
	pthread_cond_destroy(&s->ready_cv);
	free(s);
	return NULL;
}
