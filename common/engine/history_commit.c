/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Committing: the pending batch becomes one commit of h->idx's tree with
 * the message history.h describes (a summary line, then one line per
 * change), appended to the in-memory log. Also the history thread's wait
 * for a batch to be due, the commit a stop forces, and the failure that a
 * commit in error leaves for status to show.
 */
#include "history_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- committing ------------------------------------------------------- */

static void sum_note_name(struct sbuf *b, const char *path)
{
	size_t n = strlen(path);
	if (n > 3 && !strcmp(path + n - 3, ".md"))
		n -= 3;
	sb_add(b, path, n);
}

/* Write h->idx's tree and commit it on HEAD (no commit when nothing
 * changed). 1: committed, 0: nothing to do, <0: error. */
int hist_commit_locked(struct history *h, const char *author,
		       const char *summary, const char *body)
{
	git_oid tree_id, id;
	if (git_index_write_tree_to(&tree_id, h->idx, h->repo) < 0) {
		hist_set_err(h, "cannot write the recorded state");
		return -EIO;
	}
	git_commit *parent = NULL;
	if (h->have_head) {
		if (git_commit_lookup(&parent, h->repo, &h->head) < 0) {
			hist_set_err(h, "cannot read the last version");
			return -EIO;
		}
		if (git_oid_equal(git_commit_tree_id(parent), &tree_id)) {
			git_commit_free(parent);
			return 0;
		}
	}
	git_tree *tree = NULL;
	git_signature *sig = NULL;
	/* The writer signs; the MCP session it came from is a line of the
	 * message (list_changes and undo_changes select by it). */
	const char *session = source_session(author);
	_cleanup_free_ char *writer =
		xstrndup(author, source_writer_len(author));
	_cleanup_free_ char *msg =
		session ? xasprintf("%s\n\n%sSession: %s\n", summary, body,
				    session)
			: xasprintf("%s\n\n%s", summary, body);
	int64_t t = time(NULL);
	int r = git_tree_lookup(&tree, h->repo, &tree_id);
	if (r == 0)
		r = git_signature_new(&sig, writer, EMAIL, t, 0);
	const git_commit *parents[1] = {parent};
	if (r == 0)
		r = git_commit_create(&id, h->repo, "HEAD", sig, sig, NULL, msg,
				      tree, parent ? 1 : 0, parents);
	git_signature_free(sig);
	git_tree_free(tree);
	if (r < 0) {
		git_commit_free(parent);
		hist_set_err(h, "cannot commit");
		return -EIO;
	}
	h->head = id;
	h->have_head = true;
	uint32_t ci = hist_log_commit(h, &id, t, writer, summary);
	hist_log_message(h, ci, body);
	if (session)
		h->commits[ci].session = xstrdup(session);
	h->idx_tree = tree_id;
	h->idx_tree_valid = true;
	git_commit_free(parent);
	h->since_pack++;
	if (now_ns() - h->index_saved_ns > INDEX_SAVE_NS)
		hist_save_index(h);
	return 1;
}

/* "Update note: a" / "Update 3 notes: a, b, c" and the change lines. */
int hist_commit_pending_locked(struct history *h)
{
	if (!h->npend)
		return 0;
	struct sbuf sum = {0}, body = {0};
	size_t live = 0, one = 0;
	for (size_t i = 0; i < h->npend; i++)
		if (h->pend[i].kind != 'X') {
			if (!live)
				one = i;
			live++;
		}
	if (live == 1) {
		const struct change *c = &h->pend[one];
		sb_puts(&sum, c->kind == 'D'   ? "Delete note: "
			      : c->kind == 'R' ? "Rename note: "
					       : "Update note: ");
		if (c->kind == 'R') {
			sum_note_name(&sum, c->from);
			sb_puts(&sum, " -> ");
		}
		sum_note_name(&sum, c->path);
	} else {
		sb_printf(&sum, "Update %zu notes: ", live);
		size_t shown = 0;
		for (size_t i = 0; i < h->npend && shown < 5; i++) {
			if (h->pend[i].kind == 'X')
				continue;
			if (shown++)
				sb_puts(&sum, ", ");
			sum_note_name(&sum, h->pend[i].path);
		}
		if (live > 5)
			sb_printf(&sum, " and %zu more", live - 5);
	}
	for (size_t i = 0; i < h->npend; i++) {
		const struct change *c = &h->pend[i];
		if (c->kind == 'X')
			continue;
		if (c->kind == 'R')
			sb_printf(&body, "Renamed-From: %s\nRenamed-To: %s\n",
				  c->from, c->path);
		else
			sb_printf(&body, "%s: %s\n",
				  c->kind == 'D' ? "Deleted" : "Changed",
				  c->path);
	}
	/* Nothing pending while committing (a pack may follow). */
	size_t n = h->npend;
	struct change *pendv = h->pend;
	h->pend = NULL;
	h->npend = h->cappend = 0;
	hmap_free(h->pend_at);
	h->pend_at = hmap_new();
	int r = hist_write_texts(h);
	if (r == 0)
		r = hist_commit_locked(h, h->author ? h->author : "unknown",
				       sum.s ? sum.s : "",
				       body.s ? body.s : "");
	for (size_t i = 0; i < n; i++) {
		free(pendv[i].path);
		free(pendv[i].from);
	}
	free(pendv);
	sb_free(&sum);
	sb_free(&body);
	return r;
}

/* Everything queued and pending committed now (mu held): for readers of
 * the history, which see every change made before they asked. */
void hist_flush_locked(struct history *h)
{
	if (!atomic_load(&h->recorded))
		return;
	hist_drain_locked(h);
	hist_commit_pending_locked(h);
	hist_publish_pending(h);
}

int history_commit(struct history *h, bool force)
{
	pthread_mutex_lock(&h->mu);
	int r = 0, made = 0;
	if (atomic_load(&h->recorded))
		r = hist_drain_locked(h);
	if (r > 0)
		made = r;
	if (h->npend && (force || now_ns() - h->first_ns >=
					  HISTORY_BATCH_MS * 1000000ull)) {
		int c = hist_commit_pending_locked(h);
		if (c < 0)
			r = c;
		else
			made += c;
	}
	if (r < 0)
		h->failed_commits++;
	else if (made > 0)
		h->failed_commits = 0;
	hist_publish_pending(h);
	pthread_mutex_unlock(&h->mu);
	return r < 0 ? r : made;
}

char *history_failing(struct history *h)
{
	pthread_mutex_lock(&h->mu);
	char *r = h->failed_commits
			  ? xasprintf("%zu commits failed in a row; the last: "
				      "%s",
				      h->failed_commits, h->err)
			  : NULL;
	pthread_mutex_unlock(&h->mu);
	return r;
}

bool history_wait_due(struct history *h)
{
	pthread_mutex_lock(&h->qmu);
	for (;;) {
		if (h->qstop)
			break;
		/* The batch is due HISTORY_BATCH_MS after its first change,
		 * pending or still queued. */
		uint64_t first = h->pend_ns;
		if (h->qhead && (!first || h->qhead->ns < first))
			first = h->qhead->ns;
		if (!first) {
			pthread_cond_wait(&h->qcv, &h->qmu);
			continue;
		}
		uint64_t due = first + HISTORY_BATCH_MS * 1000000ull;
		uint64_t now = now_ns();
		if (now >= due)
			break;
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		uint64_t left = due - now;
		until.tv_sec += (time_t)(left / 1000000000ull);
		until.tv_nsec += (long)(left % 1000000000ull);
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&h->qcv, &h->qmu, &until);
	}
	bool go = !h->qstop;
	pthread_mutex_unlock(&h->qmu);
	return go;
}

void history_stop(struct history *h)
{
	atomic_store(&h->quit, true);
	pthread_mutex_lock(&h->idle_mu);
	if (h->idle_running) {
		struct sched_param sp = {0};
		pthread_setschedparam(h->idle_thread, SCHED_OTHER, &sp);
	}
	pthread_mutex_unlock(&h->idle_mu);
	pthread_mutex_lock(&h->qmu);
	h->qstop = true;
	pthread_cond_broadcast(&h->qcv);
	pthread_mutex_unlock(&h->qmu);
	pthread_mutex_lock(&h->mu);
	hist_flush_locked(h);
	hist_save_index(h);
	pthread_mutex_unlock(&h->mu);
}
