/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Note history in <vault>/.vaultd/history.git (see history.h).
 *
 * State: a git index (h->idx) holds the recorded text of every note (blob
 * ids, with size, mtime and inode so that the start-up scan reads only
 * what changed); it is saved as history.git/vaultd.index. A writer only
 * queues its change with the note's text (h->qhead); the history thread
 * takes the queue when the batch is due, puts the texts in h->idx and
 * commits h->idx's tree. Objects are written loose and packed every
 * PACK_EVERY commits.
 *
 * The per-note log is in memory: every commit (oldest first) and, for each
 * path, the commits that touched it.
 */
#include "history.h"

#include "fileio.h"
#include "hmap.h"
#include "note.h"
#include "util.h"
#include "note_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <git2.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PACK_EVERY 200
#define QUEUE_MAX (16u << 20)
#define PACK_LOOSE 2000
#define INDEX_SAVE_NS (30ull * 1000000000ull)
#define EMAIL "vaultd@localhost"

/* One change of a batch or of a recorded commit. */
struct change {
	char kind; /* 'C' created/changed, 'D' deleted, 'R' renamed to path */
	char *path;
	char *from; /* 'R': the old path */
};

/* A change queued by a writer, with the note's text as it wrote it
 * (read at once, so that every version is the one its writer made). */
struct qitem {
	struct qitem *next;
	char kind; /* 'C', 'D', 'R' as in struct change */
	char *path;
	char *from;
	char *author;
	char *text; /* 'C', 'R': the text at path; NULL: it could not be
		     * read (gone again: its deletion follows) */
	size_t len;
	struct stat st;
	uint64_t ns; /* when it came */
};

/* A change that came before the recording at start, with its writer. */
struct held {
	struct change c;
	char *author;
};

/* A note as it was before vaultd's first change to it (absent: it did not
 * exist), kept until the recording at start has run. */
struct orig {
	git_oid id;
	int64_t mtime_ns, size;
	uint64_t ino;
	bool absent;
};

struct commit_rec {
	git_oid id;
	char hex[41];
	int64_t time;
	char *author;
	char *session; /* the MCP session ("Session: " line), or NULL */
	char *summary;
};

/* A path's commits, oldest first. */
struct ref {
	uint32_t ci;
	char kind;
	const char *from; /* 'R': borrowed from the path list's owner */
};
struct plog {
	struct ref *v;
	size_t n, cap;
	char *from_owned; /* storage for from strings */
	struct ptrvec froms;
};

struct history {
	pthread_mutex_t mu;
	/*
	 * Changes queued by writers (qmu, taken after mu or alone): a writer
	 * never waits for mu, which a commit holds while git works. The
	 * history thread waits on qcv for the batch to be due. A change to
	 * a note already queued by the same writer (no other writer, rename
	 * or deletion of it between) replaces the queued text, as a batch
	 * keeps only a note's last text. Past QUEUE_MAX bytes of text, the
	 * writer commits the queue itself (a history thread that cannot keep
	 * up slows writers down rather than filling memory).
	 */
	pthread_mutex_t qmu;
	pthread_cond_t qcv;
	struct qitem *qhead, **qtail; /* qmu */
	struct hmap *qlast;	      /* qmu: path -> its 'C' item in the run */
	char *qauthor;		      /* qmu: the author of the run */
	size_t qbytes;		      /* qmu: text queued */
	uint64_t pend_ns;	      /* qmu: first_ns while a batch pends */
	bool qstop;		      /* qmu */
	int rootfd;
	char *dir; /* .../history.git */
	git_repository *repo;
	git_index *idx;
	git_oid head;
	bool have_head;
	size_t failed_commits; /* in a row, under mu */
	/* The pending batch. */
	char *author;
	struct change *pend;
	size_t npend, cappend;
	struct hmap *pend_at; /* path -> index+1 in pend */
	/* The batch's new texts (path -> struct text): their blobs are
	 * written when the batch is committed, off the write path, and a
	 * text replaced within the batch is never written at all. */
	struct hmap *texts;
	/* history_prepare()'s blobs: path -> struct prepared. */
	struct hmap *prepared;
	/* Until the recording at start has run (recorded), changes are held
	 * and the notes' texts before them kept (path -> struct orig): the
	 * first recording holds every note as it was before vaultd changed
	 * it, and the changes follow as versions of their own. */
	atomic_bool recorded; /* written under mu */
	struct held *held;
	size_t nheld, capheld;
	struct hmap *origs;
	uint64_t first_ns;
	/* The log. */
	struct commit_rec *commits;
	size_t ncommits, capcommits;
	struct hmap *paths; /* path -> struct plog * */
	/* Commits that recorded every note ("Snapshot: "): they touch every
	 * path in their tree, which is looked up when asked, not listed. */
	uint32_t *snaps;
	size_t nsnaps;
	/* h->idx's tree is this one (saved with the index, so that a start
	 * can trust the saved index when it matches HEAD). */
	git_oid idx_tree;
	bool idx_tree_valid;
	size_t since_pack;
	size_t loose; /* objects written since the last pack, about */
	uint64_t index_saved_ns;
	bool index_dirty;
	atomic_bool quit; /* history_stop() was called: long work ends */
	atomic_bool packing;
	/* The thread of run_idle(), while it runs (under idle_mu). */
	pthread_mutex_t idle_mu;
	pthread_t idle_thread;
	bool idle_running;
	uint64_t du_bytes, du_ns; /* history_stats()'s last sum, and when */
	char err[256];
};

static void drop_texts(struct history *h);
static void qitem_free(struct qitem *q);
static void drop_prepared(struct history *h);
static void drop_held(struct history *h);
static bool stat_matches(const git_index_entry *e,
			 const struct history_file *f);

static void set_err(struct history *h, const char *what)
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

static struct plog *plog_of(struct history *h, const char *path, bool make)
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
	struct plog *l = plog_of(h, path, true);
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

static uint32_t log_commit(struct history *h, const git_oid *id, int64_t t,
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
static void log_message(struct history *h, uint32_t ci, const char *msg)
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
		set_err(h, "cannot walk the history");
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
		uint32_t ci = log_commit(h, &id, git_commit_time(c),
					 a && a->name ? a->name : "unknown",
					 sum ? sum : "");
		log_message(h, ci, msg ? msg : "");
		git_commit_free(c);
	}
	git_revwalk_free(w);
	if (r != GIT_ITEROVER) {
		set_err(h, "cannot read the history");
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
		set_err(h, "cannot open the history repository");
		return -EIO;
	}
	git_reference *ref = NULL;
	r = git_repository_head(&ref, h->repo);
	if (r == 0) {
		const git_oid *id = git_reference_target(ref);
		git_commit *c = NULL;
		if (!id || git_commit_lookup(&c, h->repo, id) < 0) {
			git_reference_free(ref);
			set_err(h, "the history's HEAD cannot be read");
			return -EIO;
		}
		git_commit_free(c);
		h->head = *id;
		h->have_head = true;
		git_reference_free(ref);
	} else if (r != GIT_EUNBORNBRANCH && r != GIT_ENOTFOUND) {
		set_err(h, "the history's HEAD cannot be read");
		return -EIO;
	}
	return 0;
}

/* An object id kept in a file of the repository (vaultd.packed,
 * vaultd.index.tree): false when missing, unreadable or "none". */
static bool read_oid_file(const char *path, git_oid *ret)
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
static int write_oid_file(const char *path, const git_oid *id)
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
			set_err(h, "cannot open the history index");
			return -EIO;
		}
	}
	git_tree *head_tree = NULL;
	if (h->have_head) {
		git_commit *c = NULL;
		if (git_commit_lookup(&c, h->repo, &h->head) < 0 ||
		    git_commit_tree(&head_tree, c) < 0) {
			git_commit_free(c);
			set_err(h, "cannot read the last recorded state");
			return -EIO;
		}
		git_commit_free(c);
	}
	/* The saved index is HEAD's tree when its marker says so. */
	bool same = false;
	_cleanup_free_ char *mark = xasprintf("%s/vaultd.index.tree", h->dir);
	git_oid mine;
	if (head_tree && read_oid_file(mark, &mine) &&
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
		set_err(h, "cannot read the last recorded state");
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
		if (!read_oid_file(mark, &last) ||
		    !git_oid_equal(&last, &h->head))
			h->loose = PACK_LOOSE;
	}
	*ret = h;
	return 0;
}

static void save_index(struct history *h)
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
		write_oid_file(mark, h->idx_tree_valid ? &h->idx_tree : NULL);
	}
}

void history_free(struct history *h)
{
	if (!h)
		return;
	if (h->repo)
		save_index(h);
	for (size_t i = 0; i < h->npend; i++) {
		free(h->pend[i].path);
		free(h->pend[i].from);
	}
	free(h->pend);
	free(h->author);
	hmap_free(h->pend_at);
	drop_texts(h);
	hmap_free(h->texts);
	drop_prepared(h);
	drop_held(h);
	hmap_free(h->origs);
	while (h->qhead) {
		struct qitem *q = h->qhead;
		h->qhead = q->next;
		qitem_free(q);
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

/* ---- recording ---------------------------------------------------------- */

/* A note's entry: a blob with the file's size, mtime and inode (what the
 * start-up scan compares). */
static void entry_init(git_index_entry *e, const char *path, int64_t mtime_ns,
		       int64_t size, uint64_t ino)
{
	e->path = path;
	e->mode = GIT_FILEMODE_BLOB;
	e->file_size = (uint32_t)size;
	e->mtime.seconds = (int32_t)(mtime_ns / 1000000000);
	e->mtime.nanoseconds = (uint32_t)(mtime_ns % 1000000000);
	e->ctime = e->mtime;
	e->ino = (uint32_t)ino;
}

/* Put e in h->idx. 1: its text changed, 0: the same text, <0: error. */
static int add_entry(struct history *h, const git_index_entry *e)
{
	const git_index_entry *old = git_index_get_bypath(h->idx, e->path, 0);
	bool same = old && git_oid_equal(&old->id, &e->id);
	if (git_index_add(h->idx, e) < 0) {
		set_err(h, "cannot record a note");
		return -EIO;
	}
	h->index_dirty = true;
	if (!same)
		h->idx_tree_valid = false;
	return same ? 0 : 1;
}

struct text {
	char *s;
	size_t len;
};

static void drop_text(struct history *h, const char *path)
{
	struct text *t = hmap_del(h->texts, path);
	if (t) {
		free(t->s);
		free(t);
	}
}

static void drop_texts(struct history *h)
{
	size_t it = 0;
	void *val;
	while (hmap_next(h->texts, &it, NULL, &val)) {
		struct text *t = val;
		free(t->s);
		free(t);
	}
	hmap_free(h->texts);
	h->texts = hmap_new();
}

/* Write the batch's blobs (lock held). */
static int write_texts(struct history *h)
{
	size_t it = 0;
	void *val;
	int r = 0;
	while (hmap_next(h->texts, &it, NULL, &val)) {
		struct text *t = val;
		git_oid id;
		if (git_blob_create_from_buffer(&id, h->repo, t->s, t->len) <
		    0) {
			set_err(h, "cannot record a note");
			r = -EIO;
			break;
		}
		h->loose++;
	}
	drop_texts(h);
	return r;
}

/* Put a note's text, as read with st, in h->idx; its blob is written at
 * the commit (text is taken). 1: changed, 0: same, <0: error. */
static int put_text(struct history *h, const char *path, char *text, size_t len,
		    const struct stat *st)
{
	git_index_entry e = {0};
	if (git_odb_hash(&e.id, text, len, GIT_OBJECT_BLOB) < 0) {
		free(text);
		set_err(h, "cannot record a note");
		return -EIO;
	}
	entry_init(&e, path,
		   (int64_t)st->st_mtim.tv_sec * 1000000000 +
			   st->st_mtim.tv_nsec,
		   st->st_size, st->st_ino);
	int r = add_entry(h, &e);
	if (r > 0) {
		drop_text(h, path);
		struct text *t = xmalloc(sizeof(*t));
		*t = (struct text){text, len};
		hmap_put(h->texts, path, t);
	} else {
		free(text);
	}
	return r;
}

/* Read path and put its text in h->idx (with defer, its blob is written
 * at the commit). 1: changed, 0: same, <0: error (-ENOENT: gone). */
static int put_file(struct history *h, const char *path, bool defer)
{
	char *text = NULL;
	size_t len;
	struct stat st;
	int r = file_read(h->rootfd, path, (size_t)NOTE_MAX_INDEXED * 4, &text,
			  &len, &st);
	if (r < 0)
		return r;
	if (defer)
		return put_text(h, path, text, len, &st);
	git_index_entry e = {0};
	r = git_blob_create_from_buffer(&e.id, h->repo, text, len);
	free(text);
	if (r < 0) {
		set_err(h, "cannot record a note");
		return -EIO;
	}
	h->loose++;
	entry_init(&e, path,
		   (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec,
		   st.st_size, st.st_ino);
	return add_entry(h, &e);
}

static int drop_file(struct history *h, const char *path)
{
	drop_text(h, path);
	if (!git_index_get_bypath(h->idx, path, 0))
		return 0;
	if (git_index_remove(h->idx, path, 0) < 0) {
		set_err(h, "cannot record a deletion");
		return -EIO;
	}
	h->index_dirty = true;
	h->idx_tree_valid = false;
	return 1;
}

/* A change into the batch; ns: when it was made (the batch is due
 * HISTORY_BATCH_MS after its first change). */
static void pend(struct history *h, char kind, const char *path,
		 const char *from, uint64_t ns)
{
	size_t at = (size_t)(uintptr_t)hmap_get(h->pend_at, path);
	if (at && kind != 'R') {
		/* A later change to a path in the batch: the last word. A
		 * note renamed here and then changed stays a rename. */
		struct change *c = &h->pend[at - 1];
		if (c->kind != 'R' || kind == 'D')
			c->kind = kind;
		return;
	}
	if (h->npend == h->cappend) {
		h->cappend = h->cappend ? 2 * h->cappend : 16;
		h->pend = xrealloc(h->pend, h->cappend * sizeof(*h->pend));
	}
	h->pend[h->npend++] = (struct change){kind, xstrdup(path),
					      from ? xstrdup(from) : NULL};
	hmap_put(h->pend_at, path, (void *)(uintptr_t)h->npend);
	if (h->npend == 1)
		h->first_ns = ns;
}

static int commit_locked(struct history *h, const char *author,
			 const char *summary, const char *body);
static int commit_pending_locked(struct history *h);

/* Start (or go on with) a batch by author: another author's batch is
 * committed first, so that every commit has one author. Returns the
 * commits made (0 or 1) or a negative errno. */
static int batch_for(struct history *h, const char *author)
{
	int r = 0;
	if (h->npend && h->author && strcmp(h->author, author) != 0)
		r = commit_pending_locked(h);
	if (!h->npend) {
		free(h->author);
		h->author = xstrdup(author);
	}
	return r;
}

/* text: the note's text as its writer left it (taken), or NULL to read
 * it now. */
static int changed_locked(struct history *h, const char *path,
			  const char *author, char *text, size_t len,
			  const struct stat *st, uint64_t ns)
{
	int c = batch_for(h, author);
	int r = text ? put_text(h, path, text, len, st)
		     : put_file(h, path, true);
	/* -ENOENT: gone again, its deletion comes next; another error: the
	 * change is in the next scan. */
	if (r > 0)
		pend(h, 'C', path, NULL, ns);
	return c;
}

static int deleted_locked(struct history *h, const char *path,
			  const char *author, uint64_t ns)
{
	int c = batch_for(h, author);
	if (drop_file(h, path) > 0)
		pend(h, 'D', path, NULL, ns);
	return c;
}

/* text as for changed_locked(); have_text false: read it now. */
static int renamed_locked(struct history *h, const char *old_path,
			  const char *new_path, const char *author,
			  bool have_text, char *text, size_t len,
			  const struct stat *st, uint64_t ns)
{
	int c = batch_for(h, author);
	int r = drop_file(h, old_path);
	if (r >= 0 && have_text)
		r = text ? put_text(h, new_path, TAKE_PTR(text), len, st)
			 : -ENOENT;
	else if (r >= 0)
		r = put_file(h, new_path, true);
	free(text);
	if (r < 0)
		return c;
	/* A note renamed back and forth within a batch: only the first name
	 * and the last count. */
	size_t at = (size_t)(uintptr_t)hmap_get(h->pend_at, old_path);
	if (at && h->pend[at - 1].kind == 'C') {
		/* Changed, then renamed: the rename says it all. */
		h->pend[at - 1].kind = 'X';
		hmap_del(h->pend_at, old_path);
		pend(h, 'R', new_path, old_path, ns);
	} else if (at && h->pend[at - 1].kind == 'R') {
		struct change *x = &h->pend[at - 1];
		_cleanup_free_ char *from = TAKE_PTR(x->from);
		hmap_del(h->pend_at, old_path);
		x->kind = 'D';
		pend(h, 'R', new_path, from, ns);
	} else {
		pend(h, 'R', new_path, old_path, ns);
	}
	return c;
}

/* Before the recording at start: keep the change for later (true). Lock
 * held. */
static bool hold(struct history *h, char kind, const char *path,
		 const char *from, const char *author)
{
	if (atomic_load(&h->recorded))
		return false;
	if (h->nheld == h->capheld) {
		h->capheld = h->capheld ? 2 * h->capheld : 16;
		h->held = xrealloc(h->held, h->capheld * sizeof(*h->held));
	}
	h->held[h->nheld++] = (struct held){
		{kind, xstrdup(path), from ? xstrdup(from) : NULL},
		xstrdup(author)};
	return true;
}

static void drop_held(struct history *h)
{
	for (size_t i = 0; i < h->nheld; i++) {
		free(h->held[i].c.path);
		free(h->held[i].c.from);
		free(h->held[i].author);
	}
	free(h->held);
	h->held = NULL;
	h->nheld = h->capheld = 0;
	size_t it = 0;
	void *val;
	while (hmap_next(h->origs, &it, NULL, &val))
		free(val);
	hmap_free(h->origs);
	h->origs = hmap_new();
}

/* The recording at start has run: the held changes become versions. */
static void replay_held(struct history *h)
{
	atomic_store(&h->recorded, true);
	uint64_t now = now_ns();
	for (size_t i = 0; i < h->nheld; i++) {
		struct held *x = &h->held[i];
		if (x->c.kind == 'C')
			changed_locked(h, x->c.path, x->author, NULL, 0, NULL,
				       now);
		else if (x->c.kind == 'D')
			deleted_locked(h, x->c.path, x->author, now);
		else
			renamed_locked(h, x->c.from, x->c.path, x->author,
				       false, NULL, 0, NULL, now);
	}
	drop_held(h);
}

/* ---- the queue ---------------------------------------------------------- */

static void qitem_free(struct qitem *q)
{
	free(q->path);
	free(q->from);
	free(q->author);
	free(q->text);
	free(q);
}

/* Forget the run's items for path (a rename or deletion came between). */
static void qlast_forget(struct history *h, const char *path)
{
	if (path)
		hmap_del(h->qlast, path);
}

/* Queue a change (text taken). */
static void enqueue(struct history *h, char kind, const char *path,
		    const char *from, const char *author, char *text,
		    size_t len, const struct stat *st)
{
	uint64_t ns = now_ns();
	pthread_mutex_lock(&h->qmu);
	if (!h->qauthor || strcmp(h->qauthor, author) != 0) {
		/* Another writer: its changes are versions of their own. */
		free(h->qauthor);
		h->qauthor = xstrdup(author);
		hmap_free(h->qlast);
		h->qlast = hmap_new();
	}
	struct qitem *last = kind == 'C' ? hmap_get(h->qlast, path) : NULL;
	if (last && text) {
		/* The same writer again: its newer text replaces the one
		 * queued (a batch keeps a note's last text only). */
		h->qbytes = h->qbytes - last->len + len;
		free(last->text);
		last->text = text;
		last->len = len;
		last->st = *st;
		pthread_mutex_unlock(&h->qmu);
		return;
	}
	struct qitem *q = xcalloc(1, sizeof(*q));
	q->kind = kind;
	q->path = xstrdup(path);
	q->from = from ? xstrdup(from) : NULL;
	q->author = xstrdup(author);
	q->text = text;
	q->len = len;
	if (st)
		q->st = *st;
	q->ns = ns;
	qlast_forget(h, path);
	qlast_forget(h, from);
	if (kind == 'C' && text)
		hmap_put(h->qlast, path, q);
	bool was_empty = !h->qhead;
	*h->qtail = q;
	h->qtail = &q->next;
	h->qbytes += len;
	bool full = h->qbytes > QUEUE_MAX;
	/* The history thread waits for the first change of a batch. */
	if (was_empty)
		pthread_cond_broadcast(&h->qcv);
	pthread_mutex_unlock(&h->qmu);
	if (full)
		history_commit(h, true);
}

/* Tell the history thread when the pending batch is due (mu held). */
static void publish_pending(struct history *h)
{
	pthread_mutex_lock(&h->qmu);
	h->pend_ns = h->npend ? h->first_ns : 0;
	pthread_mutex_unlock(&h->qmu);
}

/* Take the queued changes into the batch, in order (mu held). Returns
 * the commits made meanwhile (one per change of writer) or a negative
 * errno (the last failure). */
static int drain_locked(struct history *h)
{
	pthread_mutex_lock(&h->qmu);
	struct qitem *q = h->qhead;
	h->qhead = NULL;
	h->qtail = &h->qhead;
	h->qbytes = 0;
	hmap_free(h->qlast);
	h->qlast = hmap_new();
	free(h->qauthor);
	h->qauthor = NULL;
	pthread_mutex_unlock(&h->qmu);
	int made = 0, err = 0;
	while (q) {
		struct qitem *next = q->next;
		int r;
		if (q->kind == 'C') {
			r = changed_locked(h, q->path, q->author,
					   TAKE_PTR(q->text), q->len, &q->st,
					   q->ns);
		} else if (q->kind == 'D') {
			r = deleted_locked(h, q->path, q->author, q->ns);
		} else {
			r = renamed_locked(h, q->from, q->path, q->author, true,
					   TAKE_PTR(q->text), q->len, &q->st,
					   q->ns);
		}
		if (r < 0)
			err = r;
		else
			made += r;
		qitem_free(q);
		q = next;
	}
	return err < 0 ? err : made;
}

/* The note's text as its writer left it, or NULL when it cannot be read
 * (gone again: its deletion follows; else the next scan has it). */
static char *read_text(struct history *h, const char *path, size_t *ret_len,
		       struct stat *ret_st)
{
	char *text = NULL;
	if (file_read(h->rootfd, path, (size_t)NOTE_MAX_INDEXED * 4, &text,
		      ret_len, ret_st) < 0)
		return NULL;
	return text;
}

/* Before the recording at start, changes are held (under mu, which the
 * scan holds); after it, they are queued without waiting for anyone. */
static bool held_now(struct history *h, char kind, const char *path,
		     const char *from, const char *author)
{
	if (atomic_load(&h->recorded))
		return false;
	pthread_mutex_lock(&h->mu);
	bool held = hold(h, kind, path, from, author);
	pthread_mutex_unlock(&h->mu);
	return held;
}

int history_note_changed(struct history *h, const char *path,
			 const char *author)
{
	if (held_now(h, 'C', path, NULL, author))
		return 0;
	size_t len = 0;
	struct stat st;
	char *text = read_text(h, path, &len, &st);
	if (!text)
		return 0; /* gone again, or in the next scan */
	enqueue(h, 'C', path, NULL, author, text, len, &st);
	return 0;
}

int history_note_deleted(struct history *h, const char *path,
			 const char *author)
{
	if (held_now(h, 'D', path, NULL, author))
		return 0;
	enqueue(h, 'D', path, NULL, author, NULL, 0, NULL);
	return 0;
}

int history_note_renamed(struct history *h, const char *old_path,
			 const char *new_path, const char *author)
{
	if (held_now(h, 'R', new_path, old_path, author))
		return 0;
	size_t len = 0;
	struct stat st;
	char *text = read_text(h, new_path, &len, &st);
	enqueue(h, 'R', new_path, old_path, author, text, len,
		text ? &st : NULL);
	return 0;
}

bool history_recorded(struct history *h)
{
	return atomic_load(&h->recorded);
}

bool history_packing(struct history *h)
{
	return atomic_load(&h->packing);
}

int history_keep_original(struct history *h, const char *path)
{
	/* After the recording at start (every write but the first few),
	 * nothing to do and nobody to wait for. */
	if (atomic_load(&h->recorded))
		return 0;
	pthread_mutex_lock(&h->mu);
	if (atomic_load(&h->recorded) || hmap_get(h->origs, path)) {
		pthread_mutex_unlock(&h->mu);
		return 0;
	}
	struct orig *o = xcalloc(1, sizeof(*o));
	struct stat st;
	int r = file_stat(h->rootfd, path, &st);
	if (r == -ENOENT) {
		o->absent = true;
		r = 0;
	} else if (r == 0) {
		struct history_file f = {path,
					 (int64_t)st.st_mtim.tv_sec *
							 1000000000 +
						 st.st_mtim.tv_nsec,
					 st.st_size, st.st_ino};
		o->mtime_ns = f.mtime_ns;
		o->size = f.size;
		o->ino = f.ino;
		const git_index_entry *e =
			git_index_get_bypath(h->idx, path, 0);
		if (e && stat_matches(e, &f)) {
			o->id = e->id; /* recorded as it is */
		} else {
			_cleanup_free_ char *text = NULL;
			size_t len;
			r = file_read(h->rootfd, path,
				      (size_t)NOTE_MAX_INDEXED * 4, &text, &len,
				      NULL);
			if (r == 0 && git_blob_create_from_buffer(
					      &o->id, h->repo, text, len) < 0) {
				set_err(h, "cannot record a note");
				r = -EIO;
			}
			if (r == 0)
				h->loose++;
		}
	}
	if (r == 0)
		hmap_put(h->origs, path, o);
	else
		free(o);
	pthread_mutex_unlock(&h->mu);
	return r;
}

/* ---- committing ------------------------------------------------------- */

static void sum_note_name(struct sbuf *b, const char *path)
{
	size_t n = strlen(path);
	if (n > 3 && !strcmp(path + n - 3, ".md"))
		n -= 3;
	sb_add(b, path, n);
}

/* Pack the objects of the commits since the last pack, then drop the
 * loose ones (all reachable objects are then in packs; the loose ones
 * that are not are leftovers of superseded writes). Lock held, nothing
 * pending. */
/*
 * Long background work (reading every note, packing) runs in a thread of
 * idle priority: it takes only CPU time nobody else wants, so searches and
 * writes keep their speed while a big vault is first recorded.
 */
struct idle_call {
	int (*fn)(struct history *h, void *arg);
	struct history *h;
	void *arg;
	int ret;
};

/* Long work runs at idle priority, so that it never slows the vault's
 * clients down; a stop raises it back (on a busy machine, idle work
 * would never get to see it is told to stop). */
static void *idle_main(void *p)
{
	struct idle_call *c = p;
	struct sched_param sp = {0};
	pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
	if (atomic_load(&c->h->quit))
		pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);
	c->ret = c->fn(c->h, c->arg);
	return NULL;
}

static int run_idle(int (*fn)(struct history *h, void *arg), struct history *h,
		    void *arg)
{
	struct idle_call c = {fn, h, arg, 0};
	pthread_t t;
	if (pthread_create(&t, NULL, idle_main, &c) != 0)
		return fn(h, arg);
	pthread_mutex_lock(&h->idle_mu);
	h->idle_thread = t;
	h->idle_running = true;
	pthread_mutex_unlock(&h->idle_mu);
	pthread_join(t, NULL);
	pthread_mutex_lock(&h->idle_mu);
	h->idle_running = false;
	pthread_mutex_unlock(&h->idle_mu);
	return c.ret;
}

static size_t count_packs(const char *dir)
{
	DIR *d = opendir(dir);
	size_t n = 0;
	struct dirent *de;
	while (d && (de = readdir(d))) {
		size_t l = strlen(de->d_name);
		n += l > 5 && !strcmp(de->d_name + l - 5, ".pack");
	}
	if (d)
		closedir(d);
	return n;
}

/* Drop every pack but keep (after a full pack). */
static void drop_other_packs(const char *dir, const char *keep)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (!strncmp(de->d_name, "pack-", 5) &&
		    strncmp(de->d_name + 5, keep, strlen(keep)) != 0)
			unlinkat(dirfd(d), de->d_name, 0);
	if (d)
		closedir(d);
}

/*
 * Pack the objects of the commits since the last pack (every pack, now and
 * then) and drop the loose copies of what is packed. Runs without the
 * lock, with a repository handle of its own: writers go on meanwhile, and
 * only objects found in the new pack are dropped.
 */
static int pack_progress(int stage, uint32_t current, uint32_t total, void *ud)
{
	(void)stage;
	(void)current;
	(void)total;
	struct history *h = ud;
	return atomic_load(&h->quit) ? -1 : 0;
}

static int pack_main(struct history *h, void *arg)
{
	(void)arg;
	pthread_mutex_lock(&h->mu);
	git_oid head = h->head;
	bool have_head = h->have_head;
	h->since_pack = 0;
	h->loose = 0;
	pthread_mutex_unlock(&h->mu);
	if (!have_head)
		return 0;
	_cleanup_free_ char *mark = xasprintf("%s/vaultd.packed", h->dir);
	_cleanup_free_ char *packdir = xasprintf("%s/objects/pack", h->dir);
	/* Many small packs slow reading down: now and then, one pack. */
	bool full = count_packs(packdir) >= 16;
	git_oid last;
	bool have_last = !full && read_oid_file(mark, &last);
	if (have_last && git_oid_equal(&last, &head))
		return 0;
	git_repository *repo = NULL;
	git_packbuilder *pb = NULL;
	git_revwalk *w = NULL;
	int r = git_repository_open_bare(&repo, h->dir);
	if (r == 0)
		r = git_packbuilder_new(&pb, repo);
	if (r == 0)
		r = git_revwalk_new(&w, repo);
	if (r == 0)
		r = git_revwalk_push(w, &head);
	if (r == 0 && have_last)
		git_revwalk_hide(w, &last);
	if (r == 0) {
		git_packbuilder_set_threads(pb, 1);
		git_packbuilder_set_callbacks(pb, pack_progress, h);
	}
	if (r == 0)
		r = git_packbuilder_insert_walk(pb, w);
	if (r == 0)
		r = git_packbuilder_write(pb, packdir, 0, NULL, NULL);
	_cleanup_free_ char *name = NULL;
	if (r == 0 && git_packbuilder_name(pb))
		name = xstrdup(git_packbuilder_name(pb));
	git_revwalk_free(w);
	git_packbuilder_free(pb);
	git_repository_free(repo);
	if ((r < 0 || !name) && atomic_load(&h->quit))
		return -ECANCELED; /* stopping: the next start packs */
	if (r < 0 || !name) {
		pthread_mutex_lock(&h->mu);
		set_err(h, "cannot pack the history");
		pthread_mutex_unlock(&h->mu);
		return -EIO;
	}
	/* Remember what is packed before dropping anything. */
	r = write_oid_file(mark, &head);
	if (r < 0)
		return r;
	/* The loose objects that the new pack holds. */
	_cleanup_free_ char *idx = xasprintf("%s/pack-%s.idx", packdir, name);
	git_odb *packed = NULL;
	git_odb_backend *be = NULL;
	if (git_odb_new(&packed) < 0)
		return -EIO;
	if (git_odb_backend_one_pack(&be, idx) < 0 ||
	    git_odb_add_backend(packed, be, 1) < 0) {
		git_odb_free(packed);
		return -EIO;
	}
	_cleanup_free_ char *objs = xasprintf("%s/objects", h->dir);
	DIR *d = opendir(objs);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (strlen(de->d_name) != 2 || de->d_name[0] == '.')
			continue;
		_cleanup_free_ char *sub = xasprintf("%s/%s", objs, de->d_name);
		DIR *sd = opendir(sub);
		if (!sd)
			continue;
		struct dirent *fe;
		while ((fe = readdir(sd))) {
			char hex[GIT_OID_HEXSZ + 1];
			git_oid id;
			if (strlen(fe->d_name) != GIT_OID_HEXSZ - 2)
				continue;
			memcpy(hex, de->d_name, 2);
			memcpy(hex + 2, fe->d_name, GIT_OID_HEXSZ - 2);
			hex[GIT_OID_HEXSZ] = 0;
			if (git_oid_fromstr(&id, hex) == 0 &&
			    git_odb_exists(packed, &id))
				unlinkat(dirfd(sd), fe->d_name, 0);
		}
		closedir(sd);
		rmdir(sub); /* when empty */
	}
	if (d)
		closedir(d);
	git_odb_free(packed);
	if (full)
		drop_other_packs(packdir, name);
	pthread_mutex_lock(&h->mu);
	git_odb *odb = NULL;
	if (git_repository_odb(&odb, h->repo) == 0) {
		git_odb_refresh(odb);
		git_odb_free(odb);
	}
	pthread_mutex_unlock(&h->mu);
	return 1;
}

int history_pack(struct history *h)
{
	atomic_store(&h->packing, true);
	int r = run_idle(pack_main, h, NULL);
	if (r < 0) {
		/* Due again (a pack that stopped half way). */
		pthread_mutex_lock(&h->mu);
		h->loose += PACK_LOOSE;
		pthread_mutex_unlock(&h->mu);
	}
	atomic_store(&h->packing, false);
	return r;
}

bool history_settled(struct history *h)
{
	pthread_mutex_lock(&h->mu);
	bool due = h->since_pack >= PACK_EVERY || h->loose >= PACK_LOOSE;
	pthread_mutex_lock(&h->qmu);
	bool queued = h->qhead != NULL;
	pthread_mutex_unlock(&h->qmu);
	bool settled = atomic_load(&h->recorded) && !due && !h->npend &&
		       !queued && !atomic_load(&h->packing) &&
		       !h->failed_commits;
	pthread_mutex_unlock(&h->mu);
	return settled;
}

bool history_pack_due(struct history *h)
{
	pthread_mutex_lock(&h->mu);
	bool due = h->since_pack >= PACK_EVERY || h->loose >= PACK_LOOSE;
	pthread_mutex_unlock(&h->mu);
	return due;
}

/* Write h->idx's tree and commit it on HEAD (no commit when nothing
 * changed). 1: committed, 0: nothing to do, <0: error. */
static int commit_locked(struct history *h, const char *author,
			 const char *summary, const char *body)
{
	git_oid tree_id, id;
	if (git_index_write_tree_to(&tree_id, h->idx, h->repo) < 0) {
		set_err(h, "cannot write the recorded state");
		return -EIO;
	}
	git_commit *parent = NULL;
	if (h->have_head) {
		if (git_commit_lookup(&parent, h->repo, &h->head) < 0) {
			set_err(h, "cannot read the last version");
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
		set_err(h, "cannot commit");
		return -EIO;
	}
	h->head = id;
	h->have_head = true;
	uint32_t ci = log_commit(h, &id, t, writer, summary);
	log_message(h, ci, body);
	if (session)
		h->commits[ci].session = xstrdup(session);
	h->idx_tree = tree_id;
	h->idx_tree_valid = true;
	git_commit_free(parent);
	h->since_pack++;
	if (now_ns() - h->index_saved_ns > INDEX_SAVE_NS)
		save_index(h);
	return 1;
}

/* "Update note: a" / "Update 3 notes: a, b, c" and the change lines. */
static int commit_pending_locked(struct history *h)
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
	int r = write_texts(h);
	if (r == 0)
		r = commit_locked(h, h->author ? h->author : "unknown",
				  sum.s ? sum.s : "", body.s ? body.s : "");
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
static void flush_locked(struct history *h)
{
	if (!atomic_load(&h->recorded))
		return;
	drain_locked(h);
	commit_pending_locked(h);
	publish_pending(h);
}

int history_commit(struct history *h, bool force)
{
	pthread_mutex_lock(&h->mu);
	int r = 0, made = 0;
	if (atomic_load(&h->recorded))
		r = drain_locked(h);
	if (r > 0)
		made = r;
	if (h->npend && (force || now_ns() - h->first_ns >=
					  HISTORY_BATCH_MS * 1000000ull)) {
		int c = commit_pending_locked(h);
		if (c < 0)
			r = c;
		else
			made += c;
	}
	if (r < 0)
		h->failed_commits++;
	else if (made > 0)
		h->failed_commits = 0;
	publish_pending(h);
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
	flush_locked(h);
	save_index(h);
	pthread_mutex_unlock(&h->mu);
}

static uint64_t du(int dirfd)
{
	uint64_t sum = 0;
	DIR *d = fdopendir(dirfd);
	if (!d) {
		close(dirfd);
		return 0;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		sum += (uint64_t)st.st_blocks * 512;
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd, de->d_name,
					 O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (sub >= 0)
				sum += du(sub);
		}
	}
	closedir(d);
	return sum;
}

/* The size on disk is summed at most this often (status asks a lot, and
 * a first recording leaves many loose objects to walk). */
#define DU_EVERY_NS 2000000000ull

void history_stats(struct history *h, size_t *ret_commits, uint64_t *bytes)
{
	uint64_t now = now_ns();
	pthread_mutex_lock(&h->mu);
	*ret_commits = h->ncommits;
	bool stale = !h->du_ns || now - h->du_ns > DU_EVERY_NS;
	*bytes = h->du_bytes;
	pthread_mutex_unlock(&h->mu);
	if (!stale)
		return;
	int fd = open(h->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	*bytes = fd >= 0 ? du(fd) : 0;
	pthread_mutex_lock(&h->mu);
	h->du_bytes = *bytes;
	h->du_ns = now;
	pthread_mutex_unlock(&h->mu);
}

/* ---- the start-up scan -------------------------------------------------- */

static bool stat_matches(const git_index_entry *e, const struct history_file *f)
{
	return e->file_size == (uint32_t)f->size &&
	       e->ino == (uint32_t)f->ino &&
	       e->mtime.seconds == (int32_t)(f->mtime_ns / 1000000000) &&
	       e->mtime.nanoseconds == (uint32_t)(f->mtime_ns % 1000000000);
}

struct prepared {
	git_oid id;
	int64_t mtime_ns, size;
	uint64_t ino;
};

static void drop_prepared(struct history *h)
{
	size_t it = 0;
	void *val;
	while (h->prepared && hmap_next(h->prepared, &it, NULL, &val))
		free(val);
	h->prepared = hmap_free(h->prepared);
}

struct prepare_args {
	const struct history_file *files;
	size_t n;
};

static int prepare_main(struct history *h, void *arg)
{
	const struct history_file *files = ((struct prepare_args *)arg)->files;
	size_t n = ((struct prepare_args *)arg)->n;
	bool *need = xcalloc(n ? n : 1, sizeof(*need));
	size_t nneed = 0;
	pthread_mutex_lock(&h->mu);
	for (size_t i = 0; i < n; i++) {
		const git_index_entry *e =
			git_index_get_bypath(h->idx, files[i].path, 0);
		need[i] = !(e && stat_matches(e, &files[i]));
		nneed += need[i];
	}
	pthread_mutex_unlock(&h->mu);
	if (!nneed) {
		free(need);
		return 0;
	}
	/* A handle of our own: the recording goes on meanwhile. */
	git_repository *repo = NULL;
	if (git_repository_open_bare(&repo, h->dir) < 0) {
		free(need);
		return -EIO;
	}
	struct hmap *prep = hmap_new();
	size_t written = 0;
	for (size_t i = 0; i < n; i++) {
		if (atomic_load(&h->quit))
			break;
		if (!need[i])
			continue;
		_cleanup_free_ char *text = NULL;
		size_t len;
		struct stat st;
		if (file_read(h->rootfd, files[i].path,
			      (size_t)NOTE_MAX_INDEXED * 4, &text, &len,
			      &st) < 0)
			continue;
		struct prepared *p = xmalloc(sizeof(*p));
		if (git_blob_create_from_buffer(&p->id, repo, text, len) < 0) {
			free(p);
			continue;
		}
		p->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 +
			      st.st_mtim.tv_nsec;
		p->size = st.st_size;
		p->ino = st.st_ino;
		free(hmap_put(prep, files[i].path, p));
		written++;
	}
	git_repository_free(repo);
	free(need);
	if (atomic_load(&h->quit)) {
		size_t it = 0;
		void *val;
		while (hmap_next(prep, &it, NULL, &val))
			free(val);
		hmap_free(prep);
		return -ECANCELED;
	}
	pthread_mutex_lock(&h->mu);
	drop_prepared(h);
	h->prepared = prep;
	h->loose += written;
	pthread_mutex_unlock(&h->mu);
	return (int)written;
}

int history_prepare(struct history *h, const struct history_file *files,
		    size_t n)
{
	struct prepare_args a = {files, n};
	return run_idle(prepare_main, h, &a);
}

/* A prepared blob for f, when the file is still what was read. */
static int put_prepared(struct history *h, const struct history_file *f)
{
	struct prepared *p =
		h->prepared ? hmap_get(h->prepared, f->path) : NULL;
	if (!p || p->mtime_ns != f->mtime_ns || p->size != f->size ||
	    p->ino != f->ino)
		return -ENOENT;
	git_index_entry e = {0};
	e.id = p->id;
	entry_init(&e, f->path, f->mtime_ns, f->size, f->ino);
	return add_entry(h, &e);
}

/* A kept original in h->idx (as it was before vaultd changed it). */
static int put_orig(struct history *h, const char *path, const struct orig *o)
{
	git_index_entry e = {0};
	e.id = o->id;
	entry_init(&e, path, o->mtime_ns, o->size, o->ino);
	return add_entry(h, &e);
}

int history_scan(struct history *h, const struct history_file *files, size_t n)
{
	if (atomic_load(&h->quit))
		return -ECANCELED;
	pthread_mutex_lock(&h->mu);
	/* Changes vaultd made since it started are held (they follow as
	 * versions of their own); the notes they changed are recorded as
	 * they were before. */
	bool first = !h->have_head;
	if (!first)
		commit_pending_locked(h);
	struct hmap *seen = hmap_new();
	struct sbuf body = {0};
	size_t changed = 0;
	int r = 0;
	for (size_t i = 0; i < n; i++) {
		const struct history_file *f = &files[i];
		hmap_put(seen, f->path, (void *)1);
		const struct orig *o = hmap_get(h->origs, f->path);
		const git_index_entry *e =
			git_index_get_bypath(h->idx, f->path, 0);
		int p;
		if (o && o->absent)
			continue; /* made since: not part of this state */
		else if (o)
			p = put_orig(h, f->path, o);
		else if (e && stat_matches(e, f))
			continue;
		else if ((p = put_prepared(h, f)) == -ENOENT)
			p = put_file(h, f->path, false);
		if (p == -ENOENT)
			continue; /* gone meanwhile: its event follows */
		if (p < 0) {
			r = p;
			break;
		}
		if (p > 0) {
			changed++;
			if (!first)
				sb_printf(&body, "Changed: %s\n", f->path);
		}
	}
	/* Notes vaultd renamed or deleted since it started: as they were. */
	size_t it = 0;
	const char *key;
	void *val;
	while (r == 0 && hmap_next(h->origs, &it, &key, &val)) {
		const struct orig *o = val;
		if (o->absent || hmap_get(seen, key))
			continue;
		hmap_put(seen, key, (void *)1);
		int p = put_orig(h, key, o);
		if (p < 0)
			r = p;
		else if (p > 0 && ++changed && !first)
			sb_printf(&body, "Changed: %s\n", key);
	}
	/* Recorded notes that are gone. */
	struct ptrvec gone = {0};
	size_t cnt = git_index_entrycount(h->idx);
	for (size_t i = 0; r == 0 && i < cnt; i++) {
		const git_index_entry *e = git_index_get_byindex(h->idx, i);
		if (e && !hmap_get(seen, e->path))
			pv_push(&gone, xstrdup(e->path));
	}
	for (size_t i = 0; i < gone.n; i++) {
		if (drop_file(h, gone.v[i]) > 0) {
			changed++;
			sb_printf(&body, "Deleted: %s\n", (char *)gone.v[i]);
		}
		free(gone.v[i]);
	}
	pv_free(&gone);
	hmap_free(seen);
	if (r == 0 && first) {
		size_t notes = git_index_entrycount(h->idx);
		_cleanup_free_ char *sum =
			xasprintf("Initial state: %zu note%s", notes,
				  notes == 1 ? "" : "s");
		_cleanup_free_ char *b =
			xasprintf("Snapshot: %zu notes\n", notes);
		r = write_texts(h);
		if (r == 0)
			r = commit_locked(h, "vaultd", sum, b);
	} else if (r == 0 && changed) {
		_cleanup_free_ char *sum = xasprintf(
			"Changes made while vaultd was not running: %zu "
			"note%s",
			changed, changed == 1 ? "" : "s");
		r = commit_locked(h, "external", sum, body.s);
	}

	sb_free(&body);
	drop_prepared(h);
	/* Whatever happened, changes are recorded as they come from now. */
	replay_held(h);
	publish_pending(h);
	save_index(h);
	pthread_mutex_unlock(&h->mu);
	return r < 0 ? r : (int)changed;
}

/* ---- reading --------------------------------------------------------------
 */

/* A path's segment of a note's life: the note was at path for commits
 * [lo, hi). */
struct seg {
	const char *path;
	uint32_t lo, hi;
};

/* The note now at path, back through its renames (newest segment first).
 * A path whose last change is a deletion (or a rename away): the note
 * that was there until then, its deletion included. */
static size_t segments(struct history *h, const char *path, struct seg **ret)
{
	struct seg *v = NULL;
	size_t n = 0;
	const char *cur = path;
	uint32_t hi = (uint32_t)h->ncommits, top = hi;
	struct plog *last = plog_of(h, path, false);
	if (last && last->n && last->v[last->n - 1].kind == 'D') {
		hi = last->v[last->n - 1].ci;
		top = hi + 1;
	}
	while (cur && n < 10000) {
		struct plog *l = plog_of(h, cur, false);
		uint32_t lo = 0;
		const char *from = NULL;
		/* The newest rename to cur before hi, and no deletion of
		 * cur between it and hi (the note there then is another). */
		for (size_t i = l ? l->n : 0; i-- > 0;) {
			const struct ref *r = &l->v[i];
			if (r->ci >= hi)
				continue;
			if (r->kind == 'D') {
				lo = r->ci + 1;
				break;
			}
			if (r->kind == 'R') {
				lo = r->ci;
				from = r->from;
				break;
			}
		}
		v = xrealloc(v, (n + 1) * sizeof(*v));
		v[n] = (struct seg){cur, lo, n ? hi : top};
		n++;
		cur = from;
		hi = lo;
	}
	*ret = v;
	return n;
}

/* path in the tree of commit ci (lock held). */
static bool in_commit(struct history *h, uint32_t ci, const char *path)
{
	git_commit *c = NULL;
	git_tree *t = NULL;
	git_tree_entry *e = NULL;
	bool ok = git_commit_lookup(&c, h->repo, &h->commits[ci].id) == 0 &&
		  git_commit_tree(&t, c) == 0 &&
		  git_tree_entry_bypath(&e, t, path) == 0;
	git_tree_entry_free(e);
	git_tree_free(t);
	git_commit_free(c);
	return ok;
}

static int cmp_ref(const void *a, const void *b)
{
	uint32_t x = ((const struct ref *)a)->ci,
		 y = ((const struct ref *)b)->ci;
	return x < y ? -1 : x > y;
}

/* The commits that touched path within [lo, hi), oldest first: its own
 * lines and the snapshots that hold it (lock held). */
static size_t refs_in(struct history *h, const char *path, uint32_t lo,
		      uint32_t hi, struct ref **ret)
{
	struct plog *l = plog_of(h, path, false);
	struct ref *v = NULL;
	size_t n = 0;
	for (size_t i = 0; l && i < l->n; i++)
		if (l->v[i].ci >= lo && l->v[i].ci < hi) {
			v = xrealloc(v, (n + 1) * sizeof(*v));
			v[n++] = l->v[i];
		}
	for (size_t i = 0; i < h->nsnaps; i++) {
		uint32_t ci = h->snaps[i];
		if (ci < lo || ci >= hi || !in_commit(h, ci, path))
			continue;
		bool dup = false;
		for (size_t j = 0; j < n && !dup; j++)
			dup = v[j].ci == ci;
		if (!dup) {
			v = xrealloc(v, (n + 1) * sizeof(*v));
			v[n++] = (struct ref){ci, 'C', NULL};
		}
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_ref);
	*ret = v;
	return n;
}

static void fill_version(struct history *h, uint32_t ci, const char *path,
			 bool deleted, struct history_version *out)
{
	const struct commit_rec *c = &h->commits[ci];
	memcpy(out->id, c->hex, sizeof(out->id));
	memcpy(out->short_id, c->hex, 7);
	out->short_id[7] = 0;
	out->time = c->time;
	out->author = xstrdup(c->author);
	out->message = xstrdup(c->summary);
	out->path = xstrdup(path);
	out->deleted = deleted;
}

int history_log(struct history *h, const char *path, size_t limit,
		struct history_version **ret, size_t *ret_n, size_t *ret_total)
{
	pthread_mutex_lock(&h->mu);
	flush_locked(h);
	struct seg *sv;
	size_t ns = segments(h, path, &sv);
	struct history_version *out = NULL;
	size_t n = 0, total = 0;
	for (size_t s = 0; s < ns; s++) {
		struct ref *rv;
		size_t nr = refs_in(h, sv[s].path, sv[s].lo, sv[s].hi, &rv);
		for (size_t i = nr; i-- > 0;) {
			const struct ref *r = &rv[i];
			total++;
			if (n < limit) {
				out = xrealloc(out, (n + 1) * sizeof(*out));
				memset(&out[n], 0, sizeof(*out));
				fill_version(h, r->ci, sv[s].path,
					     r->kind == 'D', &out[n]);
				n++;
			}
		}
		free(rv);
	}
	free(sv);
	pthread_mutex_unlock(&h->mu);
	*ret = out;
	*ret_n = n;
	*ret_total = total;
	return 0;
}

/* ---- changes by session -------------------------------------------------
 */

void history_changes_free(struct history_change *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].writer);
		free(v[i].session);
		free(v[i].path);
		free(v[i].from);
	}
	free(v);
}

/* The text version of path in tree t ("" when it is not there). */
static void version_in(git_tree *t, const char *path,
		       char out[TEXT_VERSION_LEN + 1])
{
	git_tree_entry *e = NULL;
	out[0] = 0;
	if (t && git_tree_entry_bypath(&e, t, path) == 0) {
		char hex[GIT_OID_HEXSZ + 1];
		git_oid_tostr(hex, sizeof(hex), git_tree_entry_id(e));
		memcpy(out, hex, TEXT_VERSION_LEN);
		out[TEXT_VERSION_LEN] = 0;
	}
	git_tree_entry_free(e);
}

static bool selected(const struct commit_rec *c, const struct history_filter *f)
{
	if (f->since && c->time < f->since)
		return false;
	if (f->session)
		return c->session && !strcmp(c->session, f->session);
	return str_has_prefix(c->author, "mcp:");
}

/* A commit's change lines, in order ("Changed: a.md", ...). */
static size_t change_lines(const char *msg, struct change **ret)
{
	struct change *v = NULL;
	size_t n = 0, cap = 0;
	_cleanup_free_ char *from = NULL;
	for (const char *p = msg; *p;) {
		const char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		char kind = 0;
		size_t skip = 0;
		if (len > 9 && !strncmp(p, "Changed: ", 9))
			kind = 'C', skip = 9;
		else if (len > 9 && !strncmp(p, "Deleted: ", 9))
			kind = 'D', skip = 9;
		else if (len > 14 && !strncmp(p, "Renamed-From: ", 14)) {
			free(from);
			from = xstrndup(p + 14, len - 14);
		} else if (len > 12 && !strncmp(p, "Renamed-To: ", 12) && from)
			kind = 'R', skip = 12;
		if (kind) {
			if (n == cap) {
				cap = cap ? 2 * cap : 8;
				v = xrealloc(v, cap * sizeof(*v));
			}
			v[n++] = (struct change){
				kind, xstrndup(p + skip, len - skip),
				kind == 'R' ? TAKE_PTR(from) : NULL};
		}
		p = e ? e + 1 : p + len;
	}
	*ret = v;
	return n;
}

/* A change's place: its commit, then its line (newer: larger). */
#define CHANGE_POS(ci, j) (((uint64_t)(ci) << 24) | (uint64_t)(j))
#define CHANGE_LINES_MAX (1u << 24)

int history_changes(struct history *h, const struct history_filter *f,
		    uint64_t start, size_t limit, struct history_change **ret,
		    size_t *ret_n, uint64_t *ret_next)
{
	struct history_change *out = NULL;
	size_t n = 0;
	uint64_t next = 0, top = start ? start : UINT64_MAX;
	int r = 0;
	pthread_mutex_lock(&h->mu);
	flush_locked(h);
	for (size_t ci = h->ncommits; ci-- > 0 && !next && r == 0;) {
		const struct commit_rec *c = &h->commits[ci];
		if (CHANGE_POS(ci, 0) >= top || !selected(c, f))
			continue;
		git_commit *gc = NULL, *parent = NULL;
		git_tree *t = NULL, *pt = NULL;
		if (git_commit_lookup(&gc, h->repo, &c->id) < 0 ||
		    git_commit_tree(&t, gc) < 0 ||
		    (git_commit_parentcount(gc) &&
		     (git_commit_parent(&parent, gc, 0) < 0 ||
		      git_commit_tree(&pt, parent) < 0))) {
			set_err(h, "cannot read the history");
			r = -EIO;
		}
		struct change *cv = NULL;
		size_t nc =
			r == 0 ? change_lines(git_commit_message(gc), &cv) : 0;
		for (size_t j = nc < CHANGE_LINES_MAX ? nc : 0; j-- > 0;) {
			uint64_t pos = CHANGE_POS(ci, j);
			if (pos >= top)
				continue;
			struct history_change x = {.time = c->time,
						   .kind = cv[j].kind};
			version_in(pt,
				   cv[j].kind == 'R' ? cv[j].from : cv[j].path,
				   x.before);
			if (cv[j].kind != 'D')
				version_in(t, cv[j].path, x.after);
			/* Made and unmade within one batch: no change. */
			if (cv[j].kind != 'R' && !strcmp(x.before, x.after))
				continue;
			if (n == limit) {
				next = CHANGE_POS(ci, j + 1);
				break;
			}
			memcpy(x.commit, c->hex, 7);
			x.writer = xstrdup(c->author);
			x.session = c->session ? xstrdup(c->session) : NULL;
			x.path = xstrdup(cv[j].path);
			x.from = cv[j].from ? xstrdup(cv[j].from) : NULL;
			out = xrealloc(out, (n + 1) * sizeof(*out));
			out[n++] = x;
		}
		for (size_t j = 0; j < nc; j++) {
			free(cv[j].path);
			free(cv[j].from);
		}
		free(cv);
		git_tree_free(pt);
		git_tree_free(t);
		git_commit_free(parent);
		git_commit_free(gc);
	}
	pthread_mutex_unlock(&h->mu);
	if (r < 0) {
		history_changes_free(out, n);
		return r;
	}
	*ret = out;
	*ret_n = n;
	*ret_next = next;
	return 0;
}

int64_t history_created(struct history *h, const char *path)
{
	pthread_mutex_lock(&h->mu);
	struct seg *sv;
	size_t ns = segments(h, path, &sv);
	int64_t t = 0;
	struct ref *rv;
	size_t nr =
		refs_in(h, sv[ns - 1].path, sv[ns - 1].lo, sv[ns - 1].hi, &rv);
	if (nr)
		t = h->commits[rv[0].ci].time;
	free(rv);
	free(sv);
	pthread_mutex_unlock(&h->mu);
	return t;
}

/* A commit by id prefix (lock held): index, or -ENOENT / -EINVAL. */
static int find_commit(struct history *h, const char *version, uint32_t *ret,
		       char **ret_err)
{
	size_t vl = strlen(version);
	bool hex = vl >= 4 && vl <= 40;
	for (size_t i = 0; hex && i < vl; i++)
		hex = strchr("0123456789abcdefABCDEF", version[i]) != NULL;
	if (!hex) {
		*ret_err = xasprintf("Invalid version %s: a version is "
				     "a commit id of 4 to 40 hex digits, as "
				     "the note's history lists them",
				     QUOTE(version));
		return -EINVAL;
	}
	_cleanup_free_ char *lower = xstrdup(version);
	for (char *p = lower; *p; p++)
		if (*p >= 'A' && *p <= 'F')
			*p = (char)(*p + 32);
	size_t found = 0;
	uint32_t at = 0;
	for (size_t i = 0; i < h->ncommits; i++) {
		if (!strncmp(h->commits[i].hex, lower, vl)) {
			found++;
			at = (uint32_t)i;
		}
	}
	if (!found) {
		*ret_err = xasprintf("Version %s not found", QUOTE(version));
		return -ENOENT;
	}
	if (found > 1) {
		*ret_err = xasprintf("Version %s is ambiguous (%zu versions "
				     "start with it); give more digits",
				     QUOTE(version), found);
		return -EINVAL;
	}
	*ret = at;
	return 0;
}

/* The note's path at commit ci (lock held), or NULL before it existed. */
static const char *path_at(struct history *h, const char *path, uint32_t ci,
			   struct seg **sv)
{
	size_t ns = segments(h, path, sv);
	for (size_t s = 0; s < ns; s++)
		if (ci >= (*sv)[s].lo && ci < (*sv)[s].hi)
			return (*sv)[s].path;
	return NULL;
}

/* The blob of path in commit ci (lock held). */
static int blob_at(struct history *h, uint32_t ci, const char *path,
		   git_blob **ret)
{
	git_commit *c = NULL;
	git_tree *t = NULL;
	git_tree_entry *e = NULL;
	int r = git_commit_lookup(&c, h->repo, &h->commits[ci].id);
	if (r == 0)
		r = git_commit_tree(&t, c);
	if (r == 0)
		r = git_tree_entry_bypath(&e, t, path);
	if (r == 0)
		r = git_blob_lookup(ret, h->repo, git_tree_entry_id(e));
	git_tree_entry_free(e);
	git_tree_free(t);
	git_commit_free(c);
	return r == 0 ? 0 : r == GIT_ENOTFOUND ? -ENOENT : -EIO;
}

/* The version of the note at commit ci: the newest commit at or before
 * ci that touched it (lock held). */
static uint32_t touched_at(struct history *h, const char *path, uint32_t ci)
{
	struct ref *rv;
	size_t nr = refs_in(h, path, 0, ci + 1, &rv);
	uint32_t best = nr ? rv[nr - 1].ci : ci;
	free(rv);
	return best;
}

static int resolve(struct history *h, const char *path, const char *version,
		   git_blob **ret_blob, struct history_version *ret_ver,
		   char **ret_err)
{
	uint32_t ci;
	int r = find_commit(h, version, &ci, ret_err);
	if (r < 0)
		return r;
	struct seg *sv = NULL;
	const char *p = path_at(h, path, ci, &sv);
	if (p)
		r = blob_at(h, ci, p, ret_blob);
	if (!p || r == -ENOENT) {
		*ret_err = xasprintf("Note %s did not exist in version %s",
				     QUOTE(path), version);
		free(sv);
		return -ENOENT;
	}
	if (r < 0) {
		set_err(h, "cannot read a version");
		*ret_err = xasprintf("Cannot read version %s: %s", version,
				     h->err);
		free(sv);
		return r;
	}
	memset(ret_ver, 0, sizeof(*ret_ver));
	fill_version(h, touched_at(h, p, ci), p, false, ret_ver);
	free(sv);
	return 0;
}

int history_get(struct history *h, const char *path, const char *version,
		struct history_version *ret_ver, char **ret_text,
		size_t *ret_len, char **ret_err)
{
	pthread_mutex_lock(&h->mu);
	flush_locked(h);
	git_blob *b = NULL;
	int r = resolve(h, path, version, &b, ret_ver, ret_err);
	if (r == 0) {
		size_t n = (size_t)git_blob_rawsize(b);
		*ret_text = xstrndup(git_blob_rawcontent(b), n);
		*ret_len = n;
		git_blob_free(b);
	}
	pthread_mutex_unlock(&h->mu);
	return r;
}

struct diff_out {
	struct sbuf *b;
};

static int hunk_cb(const git_diff_delta *d, const git_diff_hunk *hk,
		   const git_diff_line *l, void *ud)
{
	(void)d;
	(void)hk;
	struct diff_out *o = ud;
	switch (l->origin) {
	case GIT_DIFF_LINE_CONTEXT:
	case GIT_DIFF_LINE_ADDITION:
	case GIT_DIFF_LINE_DELETION:
		sb_putc(o->b, l->origin);
		sb_add(o->b, l->content, l->content_len);
		if (!l->content_len || l->content[l->content_len - 1] != '\n')
			sb_putc(o->b, '\n');
		break;
	case GIT_DIFF_LINE_CONTEXT_EOFNL:
	case GIT_DIFF_LINE_ADD_EOFNL:
	case GIT_DIFF_LINE_DEL_EOFNL:
		sb_puts(o->b, "\\ No newline at end of file\n");
		break;
	case GIT_DIFF_LINE_HUNK_HDR:
		sb_add(o->b, l->content, l->content_len);
		break;
	default:
		break;
	}
	return 0;
}

/* A patch as unified diff text, its hunks only (no file header). */
static void render_hunks(git_patch *patch, struct sbuf *s)
{
	struct diff_out o = {s};
	size_t nh = git_patch_num_hunks(patch);
	for (size_t i = 0; i < nh; i++) {
		const git_diff_hunk *hk;
		size_t nl;
		if (git_patch_get_hunk(&hk, &nl, patch, i) < 0)
			continue;
		sb_add(s, hk->header, hk->header_len);
		if (!hk->header_len || hk->header[hk->header_len - 1] != '\n')
			sb_putc(s, '\n');
		for (size_t j = 0; j < nl; j++) {
			const git_diff_line *l;
			if (git_patch_get_line_in_hunk(&l, patch, i, j) == 0)
				hunk_cb(NULL, hk, l, &o);
		}
	}
}

void text_version(const char *text, size_t len, char out[TEXT_VERSION_LEN + 1])
{
	git_oid id;
	if (git_odb_hash(&id, text, len, GIT_OBJECT_BLOB) < 0)
		memset(&id, 0, sizeof(id));
	char hex[GIT_OID_HEXSZ + 1];
	git_oid_tostr(hex, sizeof(hex), &id);
	memcpy(out, hex, TEXT_VERSION_LEN);
	out[TEXT_VERSION_LEN] = 0;
}

static void git_init_once(void)
{
	git_libgit2_init();
}

char *text_diff(const char *old_path, const char *a, size_t alen,
		const char *new_path, const char *b, size_t blen,
		size_t *ret_add, size_t *ret_del)
{
	/* Dry runs diff without a history (vaultd --no-history, tests). */
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, git_init_once);
	git_patch *patch = NULL;
	git_diff_options o;
	git_diff_options_init(&o, GIT_DIFF_OPTIONS_VERSION);
	o.context_lines = 3;
	struct sbuf s = {0};
	size_t ctx = 0, add = 0, del = 0;
	if (git_patch_from_buffers(&patch, a, alen, old_path, b, blen, new_path,
				   &o) == 0) {
		git_patch_line_stats(&ctx, &add, &del, patch);
		sb_printf(&s, "--- a/%s\n+++ b/%s\n", old_path, new_path);
		render_hunks(patch, &s);
	}
	git_patch_free(patch);
	if (ret_add)
		*ret_add = add;
	if (ret_del)
		*ret_del = del;
	return sb_steal(&s);
}

int history_text_of(struct history *h, const char *version, char **ret_text,
		    size_t *ret_len)
{
	git_oid id;
	size_t n = strlen(version);
	if (n < 4 || n > GIT_OID_HEXSZ ||
	    strspn(version, "0123456789abcdef") != n ||
	    git_oid_fromstrn(&id, version, n) < 0)
		return -EINVAL;
	pthread_mutex_lock(&h->mu);
	git_odb *odb = NULL;
	git_odb_object *obj = NULL;
	int r = -ENOENT;
	if (git_repository_odb(&odb, h->repo) == 0 &&
	    git_odb_read_prefix(&obj, odb, &id, n) == 0 &&
	    git_odb_object_type(obj) == GIT_OBJECT_BLOB) {
		*ret_len = git_odb_object_size(obj);
		*ret_text = xmalloc(*ret_len + 1);
		memcpy(*ret_text, git_odb_object_data(obj), *ret_len);
		(*ret_text)[*ret_len] = 0;
		r = 0;
	}
	git_odb_object_free(obj);
	git_odb_free(odb);
	pthread_mutex_unlock(&h->mu);
	return r;
}

int history_diff(struct history *h, const char *path, const char *from,
		 const char *to, char **ret_diff, size_t *ret_add,
		 size_t *ret_del, struct history_version *ret_from,
		 struct history_version *ret_to, char **ret_err)
{
	pthread_mutex_lock(&h->mu);
	flush_locked(h);
	git_blob *a = NULL, *b = NULL;
	git_patch *patch = NULL;
	memset(ret_from, 0, sizeof(*ret_from));
	memset(ret_to, 0, sizeof(*ret_to));
	int r = resolve(h, path, from, &a, ret_from, ret_err);
	if (r == 0)
		r = resolve(h, path, to, &b, ret_to, ret_err);
	if (r == 0) {
		git_diff_options o;
		git_diff_options_init(&o, GIT_DIFF_OPTIONS_VERSION);
		o.context_lines = 3;
		if (git_patch_from_blobs(&patch, a, ret_from->path, b,
					 ret_to->path, &o) < 0) {
			set_err(h, "cannot compare the versions");
			*ret_err = xasprintf("%s", h->err);
			r = -EIO;
		}
	}
	if (r == 0) {
		size_t ctx = 0;
		git_patch_line_stats(&ctx, ret_add, ret_del, patch);
		struct sbuf s = {0};
		sb_printf(&s, "--- a/%s\n+++ b/%s\n", ret_from->path,
			  ret_to->path);
		render_hunks(patch, &s);
		*ret_diff = sb_steal(&s);
	} else {
		version_clear(ret_to);
		version_clear(ret_from);
	}
	git_patch_free(patch);
	git_blob_free(a);
	git_blob_free(b);
	pthread_mutex_unlock(&h->mu);
	return r;
}
