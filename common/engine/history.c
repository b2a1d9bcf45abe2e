/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Note history in <vault>/.vaultd/history.git (see history.h): opening and
 * closing the repository, its saved index and the in-memory log.
 *
 * State: a git index (h->idx) holds the recorded text of every note (blob
 * ids, with size, mtime and inode so that the start-up scan reads only
 * what changed); it is saved as history.git/vaultd.index. A writer only
 * queues its change with the note's text (h->qhead, history_record.c);
 * the history thread takes the queue when the batch is due, puts the
 * texts in h->idx and commits h->idx's tree (history_commit.c). Objects
 * are written loose and packed every PACK_EVERY commits (history_pack.c).
 *
 * The per-note log is in memory: every commit (oldest first) and, for each
 * path, the commits that touched it.
 */
#include "history_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void hist_set_err(struct history *h, const char *what)
{
	const git_error *e = git_error_last();
	snprintf(h->err, sizeof(h->err), "%s: %s", what,
		 e && e->message ? e->message : "unknown error");
}

const char *history_error(struct history *h)
{
	return h->err;
}

const char *history_path(const struct history *h)
{
	return h->dir;
}

void version_clear(struct history_version *v)
{
	free(v->author);
	free(v->message);
	free(v->path);
	memset(v, 0, sizeof(*v));
}

void history_versions_free(struct history_version *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		version_clear(&v[i]);
	free(v);
}

/* ---- the in-memory log ------------------------------------------------ */

struct plog *hist_plog_of(struct history *h, const char *path, bool make)
{
	struct plog *l = hmap_get(h->paths, path);
	if (!l && make) {
		l = xcalloc(1, sizeof(*l));
		hmap_put(h->paths, path, l);
	}
	return l;
}

static void log_ref(struct history *h, uint32_t ci, char kind, const char *path,
		    const char *from)
{
	struct plog *l = hist_plog_of(h, path, true);
	if (l->n && l->v[l->n - 1].ci == ci)
		return;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 4;
		l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	const char *f = NULL;
	if (from) {
		char *copy = xstrdup(from);
		pv_push(&l->froms, copy);
		f = copy;
	}
	l->v[l->n++] = (struct ref){ci, kind, f};
}

uint32_t hist_log_commit(struct history *h, const git_oid *id, int64_t t,
			 const char *author, const char *summary)
{
	if (h->ncommits == h->capcommits) {
		h->capcommits = h->capcommits ? 2 * h->capcommits : 64;
		h->commits = xrealloc(h->commits,
				      h->capcommits * sizeof(*h->commits));
	}
	struct commit_rec *c = &h->commits[h->ncommits];
	c->id = *id;
	git_oid_tostr(c->hex, sizeof(c->hex), id);
	c->time = t;
	c->author = xstrdup(author);
	c->session = NULL;
	c->summary = xstrdup(summary);
	return (uint32_t)h->ncommits++;
}

/* The "Changed: ..." lines of a message into the log. */
void hist_log_message(struct history *h, uint32_t ci, const char *msg)
{
	const char *from = NULL;
	size_t fromlen = 0;
	for (const char *p = msg; *p;) {
		const char *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		_cleanup_free_ char *line = xstrndup(p, n);
		if (!strncmp(line, "Changed: ", 9)) {
			log_ref(h, ci, 'C', line + 9, NULL);
		} else if (!strncmp(line, "Deleted: ", 9)) {
			log_ref(h, ci, 'D', line + 9, NULL);
		} else if (!strncmp(line, "Renamed-From: ", 14)) {
			from = p + 14;
			fromlen = n - 14;
		} else if (!strncmp(line, "Renamed-To: ", 12) && from) {
			_cleanup_free_ char *f = xstrndup(from, fromlen);
			log_ref(h, ci, 'D', f, NULL);
			log_ref(h, ci, 'R', line + 12, f);
			from = NULL;
		} else if (!strncmp(line, "Session: ", 9) &&
			   !h->commits[ci].session) {
			h->commits[ci].session = xstrdup(line + 9);
		} else if (!strncmp(line, "Snapshot: ", 10)) {
			h->snaps = xrealloc(
				h->snaps, (h->nsnaps + 1) * sizeof(*h->snaps));
			h->snaps[h->nsnaps++] = ci;
		}
		p = e ? e + 1 : p + n;
	}
}

/* Read every commit from HEAD back into the log (oldest first). */
static int load_log(struct history *h)
{
	if (!h->have_head)
		return 0;
	git_revwalk *w = NULL;
	if (git_revwalk_new(&w, h->repo) < 0) {
		hist_set_err(h, "cannot walk the history");
		return -EIO;
	}
	git_revwalk_sorting(w, GIT_SORT_TOPOLOGICAL | GIT_SORT_REVERSE);
	int r = git_revwalk_push(w, &h->head);
	git_oid id;
	while (r == 0 && (r = git_revwalk_next(&id, w)) == 0) {
		git_commit *c = NULL;
		if (git_commit_lookup(&c, h->repo, &id) < 0) {
			r = -1;
			break;
		}
		const git_signature *a = git_commit_author(c);
		const char *msg = git_commit_message(c);
		const char *sum = git_commit_summary(c);
		uint32_t ci = hist_log_commit(
			h, &id, git_commit_time(c),
			a && a->name ? a->name : "unknown", sum ? sum : "");
		hist_log_message(h, ci, msg ? msg : "");
		git_commit_free(c);
	}
	git_revwalk_free(w);
	if (r != GIT_ITEROVER) {
		hist_set_err(h, "cannot read the history");
		return -EIO;
	}
	return 0;
}

static void free_log(struct history *h)
{
	for (size_t i = 0; i < h->ncommits; i++) {
		free(h->commits[i].author);
		free(h->commits[i].session);
		free(h->commits[i].summary);
	}
	free(h->commits);
	h->commits = NULL;
	h->ncommits = h->capcommits = 0;
	free(h->snaps);
	h->snaps = NULL;
	h->nsnaps = 0;
	if (h->paths) {
		size_t it = 0;
		void *val;
		while (hmap_next(h->paths, &it, NULL, &val)) {
			struct plog *l = val;
			for (size_t i = 0; i < l->froms.n; i++)
				free(l->froms.v[i]);
			pv_free(&l->froms);
			free(l->v);
			free(l);
		}
		hmap_free(h->paths);
	}
	h->paths = hmap_new();
}

/* ---- opening ------------------------------------------------------------ */

static int open_repo(struct history *h)
{
	int r = git_repository_open_ext(
		&h->repo, h->dir,
		GIT_REPOSITORY_OPEN_NO_SEARCH | GIT_REPOSITORY_OPEN_BARE, NULL);
	if (r == GIT_ENOTFOUND) {
		git_repository_init_options o;
		git_repository_init_options_init(
			&o, GIT_REPOSITORY_INIT_OPTIONS_VERSION);
		o.flags = GIT_REPOSITORY_INIT_BARE |
			  GIT_REPOSITORY_INIT_MKPATH |
			  GIT_REPOSITORY_INIT_NO_REINIT;
		o.initial_head = "main";
		o.description = "vaultd: the history of this vault's notes";
		r = git_repository_init_ext(&h->repo, h->dir, &o);
	}
	if (r < 0) {
		hist_set_err(h, "cannot open the history repository");
		return -EIO;
	}
	git_reference *ref = NULL;
	r = git_repository_head(&ref, h->repo);
	if (r == 0) {
		const git_oid *id = git_reference_target(ref);
		git_commit *c = NULL;
		if (!id || git_commit_lookup(&c, h->repo, id) < 0) {
			git_reference_free(ref);
			hist_set_err(h, "the history's HEAD cannot be read");
			return -EIO;
		}
		git_commit_free(c);
		h->head = *id;
		h->have_head = true;
		git_reference_free(ref);
	} else if (r != GIT_EUNBORNBRANCH && r != GIT_ENOTFOUND) {
		hist_set_err(h, "the history's HEAD cannot be read");
		return -EIO;
	}
	return 0;
}

/* An object id kept in a file of the repository (vaultd.packed,
 * vaultd.index.tree): false when missing, unreadable or "none". */
bool hist_read_oid_file(const char *path, git_oid *ret)
{
	char buf[GIT_OID_HEXSZ + 1] = {0};
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool ok = read(fd, buf, GIT_OID_HEXSZ) == GIT_OID_HEXSZ &&
		  git_oid_fromstr(ret, buf) == 0;
	close(fd);
	return ok;
}

/* Replace the file atomically with id (NULL: "none"). */
int hist_write_oid_file(const char *path, const git_oid *id)
{
	char line[GIT_OID_HEXSZ + 2] = "none\n";
	if (id) {
		git_oid_tostr(line, GIT_OID_HEXSZ + 1, id);
		strcat(line, "\n");
	}
	_cleanup_free_ char *tmp = xasprintf("%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	bool ok = write(fd, line, strlen(line)) == (ssize_t)strlen(line) &&
		  fsync(fd) == 0;
	close(fd);
	if (!ok || rename(tmp, path) < 0) {
		unlink(tmp);
		return -EIO;
	}
	return 0;
}

/* h->idx: the saved index when it matches HEAD's tree (its stat data
 * spares the scan reading unchanged notes), else HEAD's tree. */
static int load_index(struct history *h)
{
	_cleanup_free_ char *path = xasprintf("%s/vaultd.index", h->dir);
	if (git_index_open(&h->idx, path) < 0) {
		unlink(path);
		if (git_index_open(&h->idx, path) < 0) {
			hist_set_err(h, "cannot open the history index");
			return -EIO;
		}
	}
	git_tree *head_tree = NULL;
	if (h->have_head) {
		git_commit *c = NULL;
		if (git_commit_lookup(&c, h->repo, &h->head) < 0 ||
		    git_commit_tree(&head_tree, c) < 0) {
			git_commit_free(c);
			hist_set_err(h, "cannot read the last recorded state");
			return -EIO;
		}
		git_commit_free(c);
	}
	/* The saved index is HEAD's tree when its marker says so. */
	bool same = false;
	_cleanup_free_ char *mark = xasprintf("%s/vaultd.index.tree", h->dir);
	git_oid mine;
	if (head_tree && hist_read_oid_file(mark, &mine) &&
	    git_oid_equal(&mine, git_tree_id(head_tree))) {
		same = true;
		h->idx_tree = mine;
		h->idx_tree_valid = true;
	}
	int r = 0;
	if (!same) {
		if (head_tree)
			r = git_index_read_tree(h->idx, head_tree);
		else
			r = git_index_clear(h->idx);
		if (head_tree) {
			h->idx_tree = *git_tree_id(head_tree);
			h->idx_tree_valid = true;
		}
		h->index_dirty = true;
	}
	git_tree_free(head_tree);
	if (r < 0) {
		hist_set_err(h, "cannot read the last recorded state");
		return -EIO;
	}
	return 0;
}

static void close_repo(struct history *h)
{
	git_index_free(h->idx);
	h->idx = NULL;
	git_repository_free(h->repo);
	h->repo = NULL;
	h->have_head = false;
}

/*
 * Lock files a killed vaultd left in its repository (refs/heads/main.lock,
 * index.lock, ...): while they stay, every commit fails. Only vaultd
 * writes there, and only one vaultd owns a vault (its .vaultd/lock), so
 * at open they are stale. Returns how many were removed.
 */
static int remove_stale_locks(const char *dir, int depth)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		const char *name = de->d_name;
		size_t l = strlen(name);
		if (name[0] == '.' || !strcmp(name, "objects"))
			continue;
		_cleanup_free_ char *p = xasprintf("%s/%s", dir, name);
		struct stat st;
		if (lstat(p, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode) && depth < 16)
			n += remove_stale_locks(p, depth + 1);
		else if (S_ISREG(st.st_mode) && l > 5 &&
			 !strcmp(name + l - 5, ".lock") && unlink(p) == 0)
			n++;
	}
	closedir(d);
	return n;
}

int history_open(int rootfd, const char *root, struct history **ret,
		 char **ret_note)
{
	*ret = NULL;
	*ret_note = NULL;
	git_libgit2_init();
	git_libgit2_opts(GIT_OPT_SET_OWNER_VALIDATION, 0);
	struct history *h = xcalloc(1, sizeof(*h));
	pthread_mutex_init(&h->mu, NULL);
	pthread_mutex_init(&h->idle_mu, NULL);
	pthread_mutex_init(&h->qmu, NULL);
	pthread_cond_init(&h->qcv, NULL);
	h->qtail = &h->qhead;
	h->qlast = hmap_new();
	h->rootfd = rootfd;
	h->dir = xasprintf("%s/.vaultd/history.git", root);
	h->pend_at = hmap_new();
	h->texts = hmap_new();
	h->paths = hmap_new();
	h->origs = hmap_new();
	_cleanup_free_ char *vd = xasprintf("%s/.vaultd", root);
	if (mkdir(vd, 0755) < 0 && errno != EEXIST) {
		int e = errno;
		*ret_note = xasprintf("cannot create %s: %s", vd, strerror(e));
		history_free(h);
		return -e;
	}
	int stale = remove_stale_locks(h->dir, 0);
	int r = open_repo(h);
	if (r == 0)
		r = load_index(h);
	if (r == 0)
		r = load_log(h);
	if (r < 0) {
		/* Damaged: keep it aside, start a new one. The vault itself
		 * is not touched. */
		close_repo(h);
		free_log(h);
		char stamp[32];
		format_iso8601(time(NULL), stamp);
		_cleanup_free_ char *aside =
			xasprintf("%s.damaged-%s", h->dir, stamp);
		_cleanup_free_ char *why = xstrdup(h->err);
		if (rename(h->dir, aside) < 0) {
			*ret_note = xasprintf("history repository %s cannot "
					      "be used (%s) nor moved aside: "
					      "%s",
					      h->dir, why, strerror(errno));
			history_free(h);
			return -EIO;
		}
		r = open_repo(h);
		if (r == 0)
			r = load_index(h);
		if (r < 0) {
			*ret_note = xasprintf("cannot create %s: %s", h->dir,
					      h->err);
			history_free(h);
			return r;
		}
		*ret_note = xasprintf("history repository %s was damaged (%s); "
				      "moved to %s and re-created from the "
				      "current notes",
				      h->dir, why, aside);
	}
	if (stale && !*ret_note)
		*ret_note = xasprintf("history: removed %d stale lock files a "
				      "stopped vaultd left in %s",
				      stale, h->dir);
	/* Objects written since the last pack (a pack that was cut short
	 * by a stop, say) are packed soon. */
	if (h->have_head) {
		_cleanup_free_ char *mark =
			xasprintf("%s/vaultd.packed", h->dir);
		git_oid last;
		if (!hist_read_oid_file(mark, &last) ||
		    !git_oid_equal(&last, &h->head))
			h->loose = PACK_LOOSE;
	}
	*ret = h;
	return 0;
}

void hist_save_index(struct history *h)
{
	if (!h->idx || !h->index_dirty)
		return;
	/* The marker first: a stale marker with a new index only costs a
	 * full read at the next start, never a wrong answer. */
	_cleanup_free_ char *mark = xasprintf("%s/vaultd.index.tree", h->dir);
	unlink(mark);
	if (git_index_write(h->idx) == 0) {
		h->index_dirty = false;
		h->index_saved_ns = now_ns();
		hist_write_oid_file(mark,
				    h->idx_tree_valid ? &h->idx_tree : NULL);
	}
}

void history_free(struct history *h)
{
	if (!h)
		return;
	if (h->repo)
		hist_save_index(h);
	for (size_t i = 0; i < h->npend; i++) {
		free(h->pend[i].path);
		free(h->pend[i].from);
	}
	free(h->pend);
	free(h->author);
	hmap_free(h->pend_at);
	hist_drop_texts(h);
	hmap_free(h->texts);
	hist_drop_prepared(h);
	hist_drop_held(h);
	hmap_free(h->origs);
	while (h->qhead) {
		struct qitem *q = h->qhead;
		h->qhead = q->next;
		hist_qitem_free(q);
	}
	hmap_free(h->qlast);
	free(h->qauthor);
	free_log(h);
	hmap_free(h->paths);
	close_repo(h);
	pthread_mutex_destroy(&h->mu);
	pthread_mutex_destroy(&h->idle_mu);
	pthread_mutex_destroy(&h->qmu);
	pthread_cond_destroy(&h->qcv);
	free(h->dir);
	free(h);
	git_libgit2_shutdown();
}
