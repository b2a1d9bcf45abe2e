/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "ctl_client.h"
#include "util.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

struct ctl_client {
	int fd;
	long next_id;
	struct linebuf in;
};

int ctl_connect(const char *socket_path, struct ctl_client **ret)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(socket_path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, socket_path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	struct ctl_client *c = xcalloc(1, sizeof(*c));
	c->fd = fd;
	lb_init(&c->in, 1u << 30);
	*ret = c;
	return 0;
}

struct ctl_client *ctl_close(struct ctl_client *c)
{
	if (!c)
		return NULL;
	close(c->fd);
	lb_free(&c->in);
	free(c);
	return NULL;
}

int ctl_fd(const struct ctl_client *c)
{
	return c->fd;
}

static int send_line(struct ctl_client *c, char *line);

long ctl_send(struct ctl_client *c, const char *method, cJSON *params)
{
	long id = ++c->next_id;
	int r = send_line(c, rpc_request_line(id, method, params));
	return r < 0 ? r : id;
}

int ctl_send_id(struct ctl_client *c, long id, const char *method,
		cJSON *params)
{
	return send_line(c, rpc_request_line(id, method, params));
}

int ctl_notify(struct ctl_client *c, const char *method, cJSON *params)
{
	return send_line(c, rpc_notify_line(method, params));
}

/* Send one line (taking it); 0 or -errno. */
static int send_line(struct ctl_client *c, char *line)
{
	size_t n = strlen(line), off = 0;
	line[n] = '\n'; /* replaces the NUL; length is known */
	n++;
	int r = 0;
	while (off < n) {
		ssize_t w = send(c->fd, line + off, n - off, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		off += (size_t)w;
	}
	free(line);
	return r;
}

int ctl_pump(struct ctl_client *c, bool block, ctl_msg_fn fn, void *ud)
{
	char buf[65536];
	for (;;) {
		size_t len;
		char *line;
		bool got = false;
		while ((line = lb_next(&c->in, &len))) {
			struct rpc_msg m;
			const char *why;
			got = true;
			if (rpc_parse(line, len, &m, &why) != 0) {
				rpc_msg_clear(&m);
				return -EPROTO;
			}
			fn(&m, ud);
			rpc_msg_clear(&m);
		}
		if (got && !block)
			return 0;
		ssize_t r =
			recv(c->fd, buf, sizeof(buf), block ? 0 : MSG_DONTWAIT);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return 0;
			return -EPIPE;
		}
		if (r == 0)
			return -EPIPE;
		lb_append(&c->in, buf, (size_t)r);
		if (block) {
			/* One pass over what arrived, then return. */
			block = false;
			continue;
		}
	}
}

struct waiter {
	long id;
	bool done;
	cJSON *result;
	int code;
	char *msg;
	ctl_msg_fn fn;
	void *ud;
};

static void on_msg(struct rpc_msg *m, void *ud)
{
	struct waiter *w = ud;
	/* An error without an id answers nothing in particular: vaultd
	 * refusing the connection (too many), or not understanding it. */
	bool refusal =
		!m->method && m->error && (!m->id || cJSON_IsNull(m->id));
	if (refusal || (!m->method && m->id && cJSON_IsNumber(m->id) &&
			(long)m->id->valuedouble == w->id)) {
		w->done = true;
		if (m->error) {
			const cJSON *code =
				cJSON_GetObjectItem(m->error, "code");
			const cJSON *msg =
				cJSON_GetObjectItem(m->error, "message");
			w->code = cJSON_IsNumber(code) ? (int)code->valuedouble
						       : RPC_INTERNAL;
			w->msg = xstrdup(cJSON_IsString(msg) ? msg->valuestring
							     : "error");
		} else {
			w->result = cJSON_Duplicate(m->result, 1);
		}
		return;
	}
	if (w->fn)
		w->fn(m, w->ud);
}

int ctl_call(struct ctl_client *c, const char *method, cJSON *params,
	     ctl_msg_fn fn, void *ud, cJSON **ret_result, char **ret_msg)
{
	long id = ctl_send(c, method, params);
	if (id < 0) {
		/* vaultd may have said why it hung up. */
		struct waiter w = {.id = -1};
		ctl_pump(c, false, on_msg, &w);
		cJSON_Delete(w.result);
		if (w.done && w.code) {
			*ret_msg = w.msg;
			return w.code;
		}
		free(w.msg);
		return -EPIPE;
	}
	struct waiter w = {.id = id, .fn = fn, .ud = ud};
	while (!w.done) {
		int r = ctl_pump(c, true, on_msg, &w);
		if (r < 0) {
			cJSON_Delete(w.result);
			free(w.msg);
			return r;
		}
	}
	if (w.code) {
		*ret_msg = w.msg;
		return w.code;
	}
	*ret_result = w.result;
	return 0;
}
