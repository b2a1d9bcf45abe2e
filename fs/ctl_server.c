/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "ctl_server.h"
#include "history.h"
#include "config.h"
#include "check.h"
#include "json.h"
#include "log.h"
#include "rpc.h"
#include "tools.h"
#include "util.h"

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

/* How long a tool call waits for the first index before giving up. */
#define INDEX_WAIT_S 120
/* Workers that slow calls leave to quick ones. */
#define QUICK_RESERVE 2
#define DEFAULT_WORKERS 8
#define DEFAULT_MAX_CLIENTS 512
#define DEFAULT_MAX_PER_PEER 128
/* Descriptors kept for the mount, the index and the history. */
#define FD_RESERVE 256

struct client {
	int fd;
	unsigned id;
	pid_t pid;
	int refs; /* under server mu */
	bool closed;
	bool subscribed;
	bool close_after_flush;
	bool overflow;
	int jobs; /* queued or running, under server mu */
	struct linebuf in;
	pthread_mutex_t mu; /* out */
	struct sbuf out;
	size_t out_off;
};

struct job {
	struct job *next;
	struct client *c;
	cJSON *id;
	char *method;
	cJSON *params;
	bool slow;
	_Atomic bool cancelled;
};

/* A queue of jobs (under server mu). */
struct lane {
	struct job *head, *tail;
	size_t n;
};

struct ctl_server {
	struct vault *v;
	struct ctl_config cfg;
	char *path;
	int lfd, epfd, evfd, sigfd;
	/* mu protects: clients, the lanes, running, slow_running, calls,
	 * stopping, next_id, every client's refs and jobs. It nests inside
	 * no other lock of the server; a client's mu may be taken inside it
	 * (never the other way round); the vault's locks are never held
	 * with it. */
	pthread_mutex_t mu;
	/* Idle workers wait here: the general ones on cv, the quick-only
	 * ones on qcv; a queued job wakes one worker that can run it. */
	pthread_cond_t cv, qcv;
	int idle_general, idle_quick;
	struct lane quick, slow;
	struct ptrvec running; /* struct job *, being run */
	int slow_running, max_slow;
	struct ptrvec clients;
	struct ptrvec closed; /* closed in this epoll batch, main thread */
	pthread_t *workers;
	int nworkers;
	bool stopping;
	unsigned next_id;
	int64_t started;
	unsigned max_clients, max_per_peer;
	int spare_fd;	     /* closed to accept (and refuse) when out of fds */
	uint64_t idle_since; /* main thread */
	uint64_t refused;    /* connections refused, main thread */
	uint64_t refused_logged;
	/* The first index. */
	pthread_mutex_t ready_mu;
	pthread_cond_t ready_cv;
	bool ready;
	char *mountpoint;
	uint64_t calls;
};

static struct job *cancel_jobs(struct ctl_server *s, struct client *c,
			       const cJSON *id);
static void drop_jobs(struct ctl_server *s, struct job *j);

/* ---- clients ------------------------------------------------------------ */

static void client_unref(struct ctl_server *s, struct client *c)
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

static void wake(struct ctl_server *s)
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
static void client_send(struct ctl_server *s, struct client *c, char *line)
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
		wake(s);
}

static void send_error(struct ctl_server *s, struct client *c, const cJSON *id,
		       int code, const char *msg)
{
	client_send(s, c, rpc_error_line(id, code, msg, NULL));
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
	struct job *dropped = cancel_jobs(s, c, NULL);
	pthread_mutex_unlock(&s->mu);
	drop_jobs(s, dropped);
	log_debug("client %u disconnected", c->id);
	/* Events of the current epoll batch may still name this client:
	 * its last reference goes after the batch (release_closed()). */
	pv_push(&s->closed, c);
}

static void release_closed(struct ctl_server *s)
{
	for (size_t i = 0; i < s->closed.n; i++)
		client_unref(s, s->closed.v[i]);
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

/* ---- index readiness
 * ---------------------------------------------------------- */

void ctl_server_index_ready(struct ctl_server *s)
{
	pthread_mutex_lock(&s->ready_mu);
	s->ready = true;
	pthread_cond_broadcast(&s->ready_cv);
	pthread_mutex_unlock(&s->ready_mu);
}

static int index_percent(struct ctl_server *s)
{
	size_t done, total;
	bool ready;
	vault_index_state(s->v, &done, &total, &ready);
	if (ready)
		return 100;
	return total ? (int)(done * 100 / total) : 0;
}

/* Tool calls wait for the first index (documented in README). */
static bool wait_index(struct ctl_server *s)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += INDEX_WAIT_S;
	pthread_mutex_lock(&s->ready_mu);
	while (!s->ready && !s->stopping && !cancel_requested()) {
		/* In slices: a cancelled call stops waiting. */
		struct timespec slice;
		clock_gettime(CLOCK_REALTIME, &slice);
		slice.tv_nsec += 100000000;
		if (slice.tv_nsec >= 1000000000) {
			slice.tv_sec++;
			slice.tv_nsec -= 1000000000;
		}
		if (slice.tv_sec > until.tv_sec ||
		    (slice.tv_sec == until.tv_sec &&
		     slice.tv_nsec > until.tv_nsec))
			slice = until;
		if (pthread_cond_timedwait(&s->ready_cv, &s->ready_mu,
					   &slice) &&
		    (slice.tv_sec == until.tv_sec &&
		     slice.tv_nsec == until.tv_nsec))
			break;
	}
	bool ok = s->ready;
	pthread_mutex_unlock(&s->ready_mu);
	return ok;
}

/* ---- methods
 * ------------------------------------------------------------------ */

static cJSON *status_json(struct ctl_server *s)
{
	size_t done, total;
	bool ready;
	vault_index_state(s->v, &done, &total, &ready);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "vault", vault_root(s->v));
	cJSON_AddStringToObject(o, "version", VAULTD_VERSION);
	cJSON_AddNumberToObject(o, "pid", getpid());
	cJSON_AddNumberToObject(o, "uptime_s", (double)(now_s() - s->started));
	pthread_mutex_lock(&s->mu);
	cJSON_AddNumberToObject(o, "clients", (double)s->clients.n);
	cJSON_AddNumberToObject(o, "max_clients", (double)s->max_clients);
	cJSON_AddNumberToObject(o, "calls", (double)s->calls);
	cJSON_AddNumberToObject(o, "calls_running", (double)s->running.n);
	cJSON_AddNumberToObject(o, "calls_queued",
				(double)(s->quick.n + s->slow.n));
	pthread_mutex_unlock(&s->mu);
	vault_read_lock(s->v);
	cJSON_AddNumberToObject(o, "notes",
				(double)index_count(vault_index(s->v)));
	vault_read_unlock(s->v);
	cJSON *ix = cJSON_AddObjectToObject(o, "index");
	cJSON_AddStringToObject(ix, "state", ready ? "ready" : "indexing");
	cJSON_AddNumberToObject(ix, "done", (double)done);
	cJSON_AddNumberToObject(ix, "total", (double)total);
	cJSON_AddNumberToObject(ix, "percent", index_percent(s));
	struct vault_store_state st;
	vault_store_state(s->v, &st);
	cJSON *si = cJSON_AddObjectToObject(o, "search_index");
	/* Before the index is built, the search index may not be open
	 * yet: it is on its way, not off. */
	cJSON_AddStringToObject(si, "state",
				!st.enabled ? (ready ? "off" : "building")
				: st.ready  ? "ready"
					    : "building");
	if (st.enabled) {
		cJSON_AddNumberToObject(si, "done", (double)st.done);
		cJSON_AddNumberToObject(si, "total", (double)st.total);
		cJSON_AddNumberToObject(
			si, "percent",
			st.ready   ? 100
			: st.total ? (double)(st.done * 100 / st.total)
				   : 0);
		cJSON_AddBoolToObject(si, "substrings_ready",
				      st.substrings_ready);
		cJSON_AddNumberToObject(si, "unchanged_at_start",
					(double)st.cached);
		cJSON_AddNumberToObject(si, "read_at_start", (double)st.parsed);
		cJSON_AddStringToObject(si, "path", st.path);
		cJSON_AddNumberToObject(si, "bytes", (double)st.bytes);
	}
	char *gone = vault_gone(s->v);
	if (gone) {
		cJSON_AddStringToObject(o, "gone", gone);
		free(gone);
	}
	struct history *h = vault_history(s->v);
	cJSON *hi = cJSON_AddObjectToObject(o, "history");
	cJSON_AddStringToObject(hi, "state", h ? "on" : "off");
	if (h) {
		size_t versions;
		uint64_t bytes;
		history_stats(h, &versions, &bytes);
		cJSON_AddNumberToObject(hi, "versions", (double)versions);
		cJSON_AddBoolToObject(hi, "settled", history_settled(h));
		cJSON_AddBoolToObject(hi, "recorded", history_recorded(h));
		cJSON_AddBoolToObject(hi, "packing", history_packing(h));
		char *failing = history_failing(h);
		if (failing) {
			cJSON_AddStringToObject(hi, "error", failing);
			free(failing);
		}
		cJSON_AddStringToObject(hi, "path", history_path(h));
		cJSON_AddNumberToObject(hi, "bytes", (double)bytes);
	}
	cJSON_AddNumberToObject(o, "idle_exit_s", s->cfg.idle_exit_s);
	pthread_mutex_lock(&s->mu);
	if (s->mountpoint)
		cJSON_AddStringToObject(o, "mount", s->mountpoint);
	else
		cJSON_AddNullToObject(o, "mount");
	pthread_mutex_unlock(&s->mu);
	cJSON_AddStringToObject(o, "socket", s->path);
	return o;
}

static const char *pstr(const cJSON *params, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static long pint(const cJSON *params, const char *key, long def)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, key);
	return cJSON_IsNumber(v) ? (long)v->valuedouble : def;
}

static cJSON *note_entry(const struct index *ix, const struct note *n)
{
	cJSON *o = cJSON_CreateObject();
	_cleanup_free_ char *dn = index_display_name(ix, n);
	char ts[32];
	format_iso8601(n->mtime_ns / 1000000000LL, ts);
	cJSON_AddStringToObject(o, "path", n->path);
	cJSON_AddStringToObject(o, "name", dn);
	cJSON_AddNumberToObject(o, "size", (double)n->size);
	cJSON_AddStringToObject(o, "modified", ts);
	return o;
}

static cJSON *notes_list(struct ctl_server *s, const cJSON *params)
{
	long off = pint(params, "offset", 0), lim = pint(params, "limit", 100);
	if (off < 0)
		off = 0;
	if (lim < 1 || lim > 1000)
		lim = 100;
	vault_read_lock(s->v);
	struct index *ix = vault_index(s->v);
	size_t n;
	struct note *const *all = index_sorted(ix, &n);
	cJSON *a = cJSON_CreateArray();
	for (size_t i = (size_t)off; i < n && i < (size_t)(off + lim); i++)
		cJSON_AddItemToArray(a, note_entry(ix, all[i]));
	vault_read_unlock(s->v);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "notes", a);
	cJSON_AddNumberToObject(o, "total", (double)n);
	return o;
}

static int notes_read(struct ctl_server *s, const cJSON *params, cJSON **ret,
		      char **ret_msg)
{
	const char *path = pstr(params, "path");
	if (!path) {
		*ret_msg = xstrdup("params.path must be a string");
		return RPC_BAD_PARAMS;
	}
	vault_read_lock(s->v);
	struct index *ix = vault_index(s->v);
	struct note *n = index_by_path(ix, path);
	int code = 0;
	char *text = NULL;
	size_t len;
	if (!n) {
		*ret_msg = xasprintf("Note %s not found", QUOTE(path));
		code = RPC_NOT_FOUND;
	} else if (cJSON_IsTrue(cJSON_GetObjectItem(params, "meta_only"))) {
		*ret = note_entry(ix, n); /* whether it is there, and what */
	} else if (vault_read_text(s->v, n, &text, &len) < 0) {
		*ret_msg = xasprintf("Cannot read %s", QUOTE(path));
		code = RPC_NOT_FOUND;
	} else {
		cJSON *o = note_entry(ix, n);
		cJSON_AddStringToObject(o, "text", text);
		free(text);
		*ret = o;
	}
	vault_read_unlock(s->v);
	return code;
}

/* Note names starting with (then containing) a prefix, for completion. */
static cJSON *notes_complete(struct ctl_server *s, const cJSON *params)
{
	const char *prefix = pstr(params, "prefix");
	bool paths = cJSON_IsTrue(cJSON_GetObjectItem(params, "paths"));
	long lim = pint(params, "limit", 100);
	_cleanup_free_ char *fp = fold_key(prefix ? prefix : "");
	vault_read_lock(s->v);
	struct index *ix = vault_index(s->v);
	size_t n, total = 0;
	struct note *const *all = index_sorted(ix, &n);
	cJSON *vals = cJSON_CreateArray();
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < n; i++) {
			const char *key =
				paths ? all[i]->fold_path : all[i]->fold_name;
			bool pre = str_has_prefix(key, fp);
			if (pass == 0 ? !pre : (pre || !strstr(key, fp)))
				continue;
			total++;
			if (cJSON_GetArraySize(vals) >= lim)
				continue;
			char *v = paths ? xstrdup(all[i]->path)
					: index_display_name(ix, all[i]);
			cJSON_AddItemToArray(vals, cJSON_CreateString(v));
			free(v);
		}
	}
	vault_read_unlock(s->v);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "values", vals);
	cJSON_AddNumberToObject(o, "total", (double)total);
	return o;
}

struct progress_ctx {
	struct ctl_server *s;
	struct client *c;
	const cJSON *id;
};

/* A long call's progress, to a client that asked for it:
 * {"method":"progress","params":{"id","done","total","message"}}. */
static void send_progress(void *ud, size_t done, size_t total,
			  const char *message)
{
	struct progress_ctx *p = ud;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "id", cJSON_Duplicate(p->id, 1));
	cJSON_AddNumberToObject(o, "done", (double)done);
	cJSON_AddNumberToObject(o, "total", (double)total);
	cJSON_AddStringToObject(o, "message", message);
	client_send(p->s, p->c, rpc_notify_line("progress", o));
}

static cJSON *tool_call(struct ctl_server *s, struct job *j, int *ret_code,
			char **ret_msg)
{
	const cJSON *params = j->params;
	const char *name = pstr(params, "name");
	if (!name) {
		*ret_code = RPC_BAD_PARAMS;
		*ret_msg = xstrdup("params.name must be the tool's name");
		return NULL;
	}
	const cJSON *args =
		cJSON_GetObjectItemCaseSensitive(params, "arguments");
	const char *source = pstr(params, "source");
	const char *session = pstr(params, "session");
	if (session && !session_id_valid(session)) {
		*ret_code = RPC_BAD_PARAMS;
		*ret_msg = xasprintf("params.session must be 1 to %d letters, "
				     "digits, '-' or '_'",
				     SESSION_ID_MAX);
		return NULL;
	}
	struct tool_result r;
	struct progress_ctx pc = {s, j->c, j->id};
	struct tool_call call = {.source = source ? source : "socket",
				 .session = session};
	if (cJSON_IsTrue(
		    cJSON_GetObjectItemCaseSensitive(params, "progress"))) {
		call.progress = send_progress;
		call.progress_ud = &pc;
	}
	tools_call_ex(s->v, name, args, &call, &r);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "isError", r.is_error);
	cJSON_AddStringToObject(o, "text", r.text);
	if (r.warning)
		cJSON_AddStringToObject(o, "warning", r.warning);
	if (r.info)
		cJSON_AddStringToObject(o, "info", r.info);
	if (r.is_error)
		cJSON_AddNumberToObject(o, "code", r.code);
	if (r.structured)
		cJSON_AddItemToObject(o, "structured", TAKE_PTR(r.structured));
	tool_result_clear(&r);
	return o;
}

static bool needs_index(const char *m)
{
	return !strcmp(m, "tools/call") || !strcmp(m, "context") ||
	       !strcmp(m, "check") || !strcmp(m, "graph") ||
	       !strcmp(m, "notes/list") || !strcmp(m, "notes/read") ||
	       !strcmp(m, "notes/complete");
}

static void run_job(struct ctl_server *s, struct job *j)
{
	cJSON *res = NULL;
	int code = 0;
	char *msg = NULL;
	char *gone = needs_index(j->method) && strcmp(j->method, "tools/call")
			     ? vault_gone(s->v)
			     : NULL;
	bool indexed = gone || !needs_index(j->method) || wait_index(s);
	if (gone) {
		code = RPC_SERVER_ERROR;
		msg = gone;
	} else if (cancel_requested()) {
		code = RPC_CANCELLED;
		msg = xstrdup("Cancelled");
	} else if (!indexed) {
		code = RPC_SERVER_ERROR;
		msg = xasprintf("The vault is still being indexed (%d%%); try "
				"again in a moment",
				index_percent(s));
	} else if (!strcmp(j->method, "tools/call")) {
		res = tool_call(s, j, &code, &msg);
	} else if (!strcmp(j->method, "context")) {
		res = cJSON_CreateObject();
		char *b = context_block(s->v);
		cJSON_AddStringToObject(res, "block", b);
		free(b);
	} else if (!strcmp(j->method, "check")) {
		res = vault_check(s->v);
	} else if (!strcmp(j->method, "graph")) {
		res = vault_graph(s->v);
	} else if (!strcmp(j->method, "notes/list")) {
		res = notes_list(s, j->params);
	} else if (!strcmp(j->method, "notes/read")) {
		code = notes_read(s, j->params, &res, &msg);
	} else if (!strcmp(j->method, "notes/complete")) {
		res = notes_complete(s, j->params);
	}
	if (code) {
		send_error(s, j->c, j->id, code, msg ? msg : "error");
		cJSON_Delete(res);
	} else {
		client_send(s, j->c, rpc_result_line(j->id, res));
	}
	free(msg);
}

static void job_free(struct job *j)
{
	cJSON_Delete(j->id);
	cJSON_Delete(j->params);
	free(j->method);
	free(j);
}

static void lane_push(struct lane *l, struct job *j)
{
	j->next = NULL;
	if (l->tail)
		l->tail->next = j;
	else
		l->head = j;
	l->tail = j;
	l->n++;
}

static struct job *lane_pop(struct lane *l)
{
	struct job *j = l->head;
	if (!j)
		return NULL;
	l->head = j->next;
	if (!l->head)
		l->tail = NULL;
	l->n--;
	return j;
}

/* Take c's queued jobs (all of them, or the one with that id) out of a
 * lane, onto *dropped (mu held). */
static void lane_take(struct lane *l, struct client *c, const cJSON *id,
		      struct job **dropped)
{
	struct job **pp = &l->head;
	l->tail = NULL;
	while (*pp) {
		struct job *j = *pp;
		if (j->c == c && (!id || cJSON_Compare(j->id, id, true))) {
			*pp = j->next;
			l->n--;
			j->next = *dropped;
			*dropped = j;
		} else {
			l->tail = j;
			pp = &j->next;
		}
	}
}

/* Cancel c's requests (all, or the one with that id): running ones are
 * told to stop; queued ones are returned (mu held). */
static struct job *cancel_jobs(struct ctl_server *s, struct client *c,
			       const cJSON *id)
{
	struct job *dropped = NULL;
	lane_take(&s->quick, c, id, &dropped);
	lane_take(&s->slow, c, id, &dropped);
	for (size_t i = 0; i < s->running.n; i++) {
		struct job *j = s->running.v[i];
		if (j->c == c && (!id || cJSON_Compare(j->id, id, true)))
			atomic_store(&j->cancelled, true);
	}
	return dropped;
}

/* Answer dropped jobs (if their client still listens) and free them. */
static void drop_jobs(struct ctl_server *s, struct job *j)
{
	while (j) {
		struct job *next = j->next;
		send_error(s, j->c, j->id, RPC_CANCELLED, "Cancelled");
		pthread_mutex_lock(&s->mu);
		j->c->jobs--;
		pthread_mutex_unlock(&s->mu);
		client_unref(s, j->c);
		job_free(j);
		j = next;
	}
}

/* Wake one worker that can run a job just queued (mu held). */
static void wake_worker(struct ctl_server *s, bool slow)
{
	if (!slow && s->idle_quick)
		pthread_cond_signal(&s->qcv);
	else if (s->idle_general)
		pthread_cond_signal(&s->cv);
}

/* The next job a worker may run (mu held): quick ones first; a slow one
 * only on a general worker, while fewer than max_slow run. */
static struct job *next_job(struct ctl_server *s, bool general)
{
	struct job *j = lane_pop(&s->quick);
	if (!j && general && s->slow_running < s->max_slow) {
		j = lane_pop(&s->slow);
		if (j)
			s->slow_running++;
	}
	return j;
}

struct worker_arg {
	struct ctl_server *s;
	bool general;
};

/*
 * The first QUICK_RESERVE workers run quick calls only; the others run
 * both, at a lower CPU priority (nice +5, this thread only): slow work
 * yields the CPU to quick calls, the mount and the user's programs.
 */
static void *worker(void *arg)
{
	struct worker_arg *wa = arg;
	struct ctl_server *s = wa->s;
	bool general = wa->general;
	free(wa);
	if (general)
		setpriority(PRIO_PROCESS, (id_t)gettid(), 5);
	for (;;) {
		pthread_mutex_lock(&s->mu);
		struct job *j = NULL;
		while (!s->stopping && !(j = next_job(s, general))) {
			int *idle = general ? &s->idle_general : &s->idle_quick;
			(*idle)++;
			pthread_cond_wait(general ? &s->cv : &s->qcv, &s->mu);
			(*idle)--;
		}
		if (!j) {
			pthread_mutex_unlock(&s->mu);
			return NULL;
		}
		/* More queued than the one woken for: pass it on. */
		if (s->quick.n)
			wake_worker(s, false);
		else if (s->slow.n && s->slow_running < s->max_slow)
			wake_worker(s, true);
		pv_push(&s->running, j);
		s->calls++;
		pthread_mutex_unlock(&s->mu);
		cancel_bind(&j->cancelled);
		run_job(s, j);
		cancel_bind(NULL);
		pthread_mutex_lock(&s->mu);
		pv_remove(&s->running, j);
		if (j->slow) {
			s->slow_running--;
			/* A slot for a queued slow job. */
			if (s->slow.n)
				wake_worker(s, true);
		}
		j->c->jobs--;
		pthread_mutex_unlock(&s->mu);
		/* A client that closed its side is closed by the main
		 * thread once its last answer is out. */
		pthread_mutex_lock(&j->c->mu);
		bool closing = j->c->close_after_flush;
		pthread_mutex_unlock(&j->c->mu);
		if (closing)
			wake(s);
		client_unref(s, j->c);
		job_free(j);
	}
}

/* Quick: answered from memory in bounded time. */
static bool is_quick(const char *method, const cJSON *params)
{
	if (!strcmp(method, "tools/call")) {
		const char *name = pstr(params, "name");
		const struct tool *t = name ? tools_find(name) : NULL;
		return t && (t->flags & TOOL_QUICK);
	}
	return !strcmp(method, "context") || !strcmp(method, "notes/read") ||
	       !strcmp(method, "notes/list") ||
	       !strcmp(method, "notes/complete");
}

static void enqueue(struct ctl_server *s, struct client *c, const cJSON *id,
		    const char *method, const cJSON *params)
{
	struct job *j = xcalloc(1, sizeof(*j));
	j->c = c;
	j->id = cJSON_Duplicate(id, 1);
	j->method = xstrdup(method);
	j->params = params ? cJSON_Duplicate(params, 1) : cJSON_CreateObject();
	j->slow = !is_quick(method, j->params);
	pthread_mutex_lock(&s->mu);
	c->refs++;
	c->jobs++;
	lane_push(j->slow ? &s->slow : &s->quick, j);
	wake_worker(s, j->slow);
	pthread_mutex_unlock(&s->mu);
}

static void handle_line(struct ctl_server *s, struct client *c,
			const char *line, size_t len)
{
	struct rpc_msg m;
	const char *why = NULL;
	int code = rpc_parse(line, len, &m, &why);
	if (code) {
		send_error(s, c, m.id, code, why);
		rpc_msg_clear(&m);
		return;
	}
	if (m.method && !m.id && !strcmp(m.method, "cancel")) {
		const cJSON *id = cJSON_GetObjectItem(m.params, "id");
		if (id) {
			pthread_mutex_lock(&s->mu);
			struct job *dropped = cancel_jobs(s, c, id);
			pthread_mutex_unlock(&s->mu);
			drop_jobs(s, dropped);
		}
		rpc_msg_clear(&m);
		return;
	}
	if (!m.method || !m.id) {
		/* Responses and other notifications need no answer. */
		rpc_msg_clear(&m);
		return;
	}
	if (m.params && !cJSON_IsObject(m.params)) {
		send_error(s, c, m.id, RPC_BAD_PARAMS,
			   "Invalid params: params must be an object");
	} else if (!strcmp(m.method, "ping")) {
		client_send(s, c, rpc_result_line(m.id, NULL));
	} else if (!strcmp(m.method, "status")) {
		client_send(s, c, rpc_result_line(m.id, status_json(s)));
	} else if (!strcmp(m.method, "tools/list")) {
		const char *prof = cJSON_GetStringValue(
			cJSON_GetObjectItem(m.params, "profile"));
		if (prof && strcmp(prof, "core") && strcmp(prof, "all")) {
			send_error(s, c, m.id, RPC_BAD_PARAMS,
				   "Invalid params: profile is core or all");
			rpc_msg_clear(&m);
			return;
		}
		cJSON *o = cJSON_CreateObject();
		unsigned need = 0;
		if (cJSON_IsTrue(cJSON_GetObjectItem(m.params, "read_only")))
			need |= TOOL_READ_ONLY;
		if (prof && !strcmp(prof, "core"))
			need |= TOOL_CORE;
		cJSON_AddItemToObject(o, "tools", tools_list_json(need));
		client_send(s, c, rpc_result_line(m.id, o));
	} else if (!strcmp(m.method, "shutdown")) {
		log_info("shutdown requested by client %u", c->id);
		client_send(s, c, rpc_result_line(m.id, NULL));
		ctl_server_stop(s);
	} else if (!strcmp(m.method, "subscribe")) {
		pthread_mutex_lock(&c->mu);
		c->subscribed = true;
		pthread_mutex_unlock(&c->mu);
		cJSON *o = cJSON_CreateObject();
		cJSON_AddBoolToObject(o, "subscribed", true);
		client_send(s, c, rpc_result_line(m.id, o));
	} else if (needs_index(m.method)) {
		enqueue(s, c, m.id, m.method, m.params);
	} else {
		_cleanup_free_ char *e =
			xasprintf("Method not found: %s", QUOTE(m.method));
		send_error(s, c, m.id, RPC_METHOD_NOT_FOUND, e);
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
			send_error(s, c, NULL, RPC_INVALID_REQUEST, e);
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

/* ---- events
 * ------------------------------------------------------------------- */

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
			client_send(s, c, xstrdup(line));
	}
	pthread_mutex_unlock(&s->mu);
	free(line);
}

/* ---- life cycle
 * ------------------------------------------------------------------ */

int ctl_server_new(struct vault *v, const struct ctl_config *cfg,
		   struct ctl_server **ret, char **ret_msg)
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
	struct ctl_server *s = xcalloc(1, sizeof(*s));
	s->v = v;
	s->cfg = *cfg;
	s->path = xstrdup(cfg->socket_path);
	s->lfd = lfd;
	s->started = now_s();
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	pthread_cond_init(&s->qcv, NULL);
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
	s->nworkers = cfg->workers > 0 ? cfg->workers : DEFAULT_WORKERS;
	if (s->nworkers < QUICK_RESERVE + 1)
		s->nworkers = QUICK_RESERVE + 1;
	s->max_slow = s->nworkers - QUICK_RESERVE;
	/* Connections: as many as asked, but never so many that the mount
	 * runs out of descriptors. */
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
	s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	s->workers = xcalloc((size_t)s->nworkers, sizeof(pthread_t));
	int started = 0;
	for (int i = 0; i < s->nworkers; i++) {
		struct worker_arg *wa = xcalloc(1, sizeof(*wa));
		wa->s = s;
		/* The reserve first: a failed start costs general ones. */
		wa->general = started >= QUICK_RESERVE;
		if (pthread_create(&s->workers[started], NULL, worker, wa) == 0)
			started++;
		else
			free(wa);
	}
	if (started < s->nworkers)
		log_warn("control socket: %d of %d workers started", started,
			 s->nworkers);
	pthread_mutex_lock(&s->mu);
	s->nworkers = started;
	s->max_slow = started - QUICK_RESERVE;
	pthread_mutex_unlock(&s->mu);
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
	for (size_t i = 0; i < s->running.n; i++)
		atomic_store(&((struct job *)s->running.v[i])->cancelled, true);
	pthread_cond_broadcast(&s->cv);
	pthread_cond_broadcast(&s->qcv);
	pthread_mutex_unlock(&s->mu);
	pthread_mutex_lock(&s->ready_mu);
	pthread_cond_broadcast(&s->ready_cv);
	pthread_mutex_unlock(&s->ready_mu);
	wake(s);
}

/* --idle-exit: no client and no call for that long stops the server. */
static void check_idle(struct ctl_server *s)
{
	if (!s->cfg.idle_exit_s)
		return;
	pthread_mutex_lock(&s->mu);
	bool busy = s->clients.n || s->running.n || s->quick.n || s->slow.n;
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
					client_unref(s, todo.v[k]);
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
				client_unref(s, c);
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
	pthread_mutex_lock(&s->mu);
	pthread_cond_broadcast(&s->cv);
	pthread_cond_broadcast(&s->qcv);
	pthread_mutex_unlock(&s->mu);
	for (int i = 0; i < s->nworkers; i++)
		pthread_join(s->workers[i], NULL);
	/* Drop queued jobs that never ran. */
	struct job *j;
	while ((j = lane_pop(&s->quick)) || (j = lane_pop(&s->slow))) {
		j->c->jobs--;
		client_unref(s, j->c);
		job_free(j);
	}
	pv_free(&s->running);
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
	free(s->workers);
	free(s->path);
	free(s->mountpoint);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	pthread_cond_destroy(&s->qcv);
	pthread_mutex_destroy(&s->ready_mu);
	pthread_cond_destroy(&s->ready_cv);
	free(s);
	return NULL;
}
