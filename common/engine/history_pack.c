/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Maintenance of the history repository: long work in a thread of idle
 * priority (hist_run_idle), packing the loose objects of recent commits (and
 * now and then everything into one pack), whether the history has settled
 * or a pack is due, and the repository's size on disk.
 */
#include "history_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

int hist_run_idle(int (*fn)(struct history *h, void *arg), struct history *h,
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

/* Drop the loose objects that the pack name (in packdir) holds. 0, or
 * -EIO when the pack cannot be read. */
static int drop_packed_loose(struct history *h, const char *packdir,
			     const char *name)
{
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
	return 0;
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
	bool have_last = !full && hist_read_oid_file(mark, &last);
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
		hist_set_err(h, "cannot pack the history");
		pthread_mutex_unlock(&h->mu);
		return -EIO;
	}
	/* Remember what is packed before dropping anything. */
	r = hist_write_oid_file(mark, &head);
	if (r < 0)
		return r;
	r = drop_packed_loose(h, packdir, name);
	if (r < 0)
		return r;
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
	int r = hist_run_idle(pack_main, h, NULL);
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
