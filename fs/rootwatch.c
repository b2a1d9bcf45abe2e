/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The watch on the vault folder under vaultd's feet (rootwatch.h): a
 * thread that checks once a second that the path vaultd was started on
 * still names the folder it holds, and stops the control server when the
 * folder is gone or replaced (main() then exits or starts over).
 */
#include "rootwatch.h"
#include "log.h"
#include "sdnotify.h"
#include "util.h"

#include <errno.h>
#include <sys/stat.h>
#include <time.h>

#define ROOTWATCH_MS 1000
#define ROOTWATCH_MISSING 3 /* checks without a folder there: gone */
#define ROOTWATCH_STABLE 2  /* checks a new folder must stay the same */
#define GONE_SERVE_MS 5000  /* answering "gone" before stopping */

/* Sleep ms, or less when told to stop (true). */
static bool rootwatch_sleep(struct rootwatch *w, long ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&w->mu);
	while (!w->stop &&
	       pthread_cond_timedwait(&w->cv, &w->mu, &ts) != ETIMEDOUT) {
	}
	bool stop = w->stop;
	pthread_mutex_unlock(&w->mu);
	return stop;
}

static void *rootwatch_thread(void *arg)
{
	struct rootwatch *w = arg;
	const char *root = vault_root(w->v);
	struct stat held;
	if (fstat(vault_rootfd(w->v), &held) < 0)
		return NULL;
	int missing = 0, stable = 0;
	dev_t ndev = 0;
	ino_t nino = 0;
	while (!rootwatch_sleep(w, ROOTWATCH_MS)) {
		struct stat now;
		bool there = stat(root, &now) == 0 && S_ISDIR(now.st_mode);
		if (there && now.st_dev == held.st_dev &&
		    now.st_ino == held.st_ino) {
			missing = stable = 0;
			continue;
		}
		if (!there) {
			/* A restore (rm -rf, then cp -a) is given a moment. */
			stable = 0;
			if (++missing < ROOTWATCH_MISSING)
				continue;
			_cleanup_free_ char *why = xasprintf(
				"the vault folder %s is gone (moved or deleted): "
				"vaultd stops; start it again on the folder's "
				"new place",
				root);
			vault_set_gone(w->v, why);
			log_error("%s", why);
			sd_notifyf("STATUS=%s", why);
			w->gone = true;
			rootwatch_sleep(w, GONE_SERVE_MS);
			ctl_server_stop(w->srv);
			return NULL;
		}
		missing = 0;
		if (now.st_dev != ndev || now.st_ino != nino) {
			ndev = now.st_dev;
			nino = now.st_ino;
			stable = 0;
		}
		if (++stable < ROOTWATCH_STABLE)
			continue;
		log_warn("the vault folder %s was replaced by another folder: "
			 "starting over on it",
			 root);
		sd_notifyf("RELOADING=1\nSTATUS=The vault folder was "
			   "replaced: starting over");
		w->replaced = true;
		ctl_server_stop(w->srv);
		return NULL;
	}
	return NULL;
}

void rootwatch_start(struct rootwatch *w)
{
	pthread_mutex_init(&w->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cv, &ca);
	pthread_condattr_destroy(&ca);
	w->started = pthread_create(&w->th, NULL, rootwatch_thread, w) == 0;
}

void rootwatch_stop(struct rootwatch *w)
{
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	if (w->started)
		pthread_join(w->th, NULL);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->cv);
}
