/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The vault folder under vaultd's feet: the path it was started on must
 * still name the folder it holds. Replaced there (a restored backup, a
 * fresh clone): vaultd starts over on the new folder (re-executes itself:
 * new index, mount and history, same socket). Moved or deleted: every
 * answer says so for a moment, then vaultd stops with an error.
 */
#pragma once

#include "ctl_server.h"
#include "vault.h"

#include <pthread.h>
#include <stdbool.h>

struct rootwatch {
	struct vault *v;
	struct ctl_server *srv;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop; /* under mu */
	pthread_t th;
	bool started;
	bool replaced, gone; /* read after the join */
};

/* Start watching w->v's folder (w->v and w->srv set by the caller). */
void rootwatch_start(struct rootwatch *w);
/* Stop the watch and wait for it; then replaced and gone may be read. */
void rootwatch_stop(struct rootwatch *w);
