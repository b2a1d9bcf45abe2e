/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Inside the control socket (ctl_*.c), not for its users: the server,
 * its clients and jobs, and the method table. ctl_server.c owns the
 * connections and the main loop, ctl_jobs.c the jobs on the work queue
 * (two lanes, quick and slow, and the workers), ctl_methods.c the
 * methods. The interface is ctl_server.h.
 */
#pragma once

#include "ctl_server.h"
#include "rpc.h"
#include "util.h"
#include "workq.h"

#include <pthread.h>
#include <stdatomic.h>

/* Workers that slow calls leave to quick ones. */
#define QUICK_RESERVE 2

/* The work queue's lanes: quick calls go first. */
enum { LANE_QUICK, LANE_SLOW };

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

struct ctl_method;

struct job {
	struct workq_job wq; /* its lane: LANE_QUICK or LANE_SLOW */
	struct client *c;
	cJSON *id;
	const struct ctl_method *m;
	cJSON *params;
	_Atomic bool cancelled;
};

struct ctl_server {
	struct vault *v;
	struct ctl_config cfg;
	char *path;
	int lfd, epfd, evfd, sigfd;
	/* mu protects: clients, stopping, next_id, every client's refs and
	 * jobs. It nests inside no other lock of the server; a client's mu
	 * and the work queue's lock may be taken inside it (never the other
	 * way round); the vault's locks are never held with it. */
	pthread_mutex_t mu;
	/* The calls, queued and running (its own lock, innermost). Set
	 * before the main loop starts. */
	struct workq *q;
	struct ptrvec clients;
	struct ptrvec closed; /* closed in this epoll batch, main thread */
	int nworkers;
	bool stopping;
	unsigned next_id;
	int64_t started;
	unsigned max_clients, max_per_peer;
	int spare_fd;	     /* closed to accept (and refuse) when out of fds */
	uint64_t idle_since; /* main thread */
	uint64_t refused;    /* connections refused, main thread */
	uint64_t refused_logged;
	/* The first index. ready_mu protects ready, names_ready (its
	 * notes are in place, its links not yet bound: vault_on_names())
	 * and ready_stopping (stopping as the waiters for the index see
	 * it); it nests inside the vault's writer lock only (the vault
	 * calls ctl_server_names_ready() holding it). */
	pthread_mutex_t ready_mu;
	pthread_cond_t ready_cv;
	bool ready;
	bool names_ready;
	bool ready_stopping;
	char *mountpoint;
	_Atomic uint64_t calls; /* calls started */
};

/*
 * A method of the socket, the one place that says how each is served.
 * A request has answer (the main thread answers it at once) or run (a
 * worker runs it once the first index is there); a notification (no
 * id) calls notify and is not answered. A name with none of these is
 * "Method not found".
 */
struct ctl_method {
	const char *name;
	void (*notify)(struct ctl_server *s, struct client *c,
		       const struct rpc_msg *m);
	void (*answer)(struct ctl_server *s, struct client *c,
		       const struct rpc_msg *m);
	/* 0 and *ret (the result), or an RPC error code and *ret_msg. */
	int (*run)(struct ctl_server *s, struct job *j, cJSON **ret,
		   char **ret_msg);
	/* run: whether the call may take the quick lane (NULL: never). */
	bool (*quick)(const cJSON *params);
	/* run: runs even when the vault's folder is gone (it says so in
	 * its own result). */
	bool gone_ok;
	/* run: whether the call reads no link, so that it may run once
	 * the first index's notes are in place, before its links are bound
	 * (NULL: never). */
	bool (*names_only)(const cJSON *params);
};

/* ctl_methods.c: the method called name, or NULL. */
const struct ctl_method *ctl_method_find(const char *name);

/* ctl_server.c: a client's replies, from any thread. */
void ctl_client_send(struct ctl_server *s, struct client *c, char *line);
void ctl_send_error(struct ctl_server *s, struct client *c, const cJSON *id,
		    int code, const char *msg);
void ctl_client_unref(struct ctl_server *s, struct client *c);
/* Wake the main thread. */
void ctl_wake(struct ctl_server *s);

/* ctl_jobs.c: the index's progress, 0 to 100. */
int ctl_index_percent(struct ctl_server *s);
/* Queue a call of method m for a worker. */
void ctl_enqueue(struct ctl_server *s, struct client *c, const cJSON *id,
		 const struct ctl_method *m, const cJSON *params);
/* Cancel c's requests (all, or the one with that id): running ones are
 * told to stop; queued ones are returned as a list (mu held). */
struct workq_job *ctl_cancel_jobs(struct ctl_server *s, struct client *c,
				  const cJSON *id);
/* Tell every running call to stop. */
void ctl_cancel_running(struct ctl_server *s);
/* Answer dropped jobs (if their client still listens) and free them. */
void ctl_drop_jobs(struct ctl_server *s, struct workq_job *j);
/* Make the work queue and start n workers (the quick-only reserve
 * first): how many started, 0 when none is left for slow calls. Jobs
 * that never ran are freed with the queue (workq_free). */
int ctl_workers_start(struct ctl_server *s, int n);
