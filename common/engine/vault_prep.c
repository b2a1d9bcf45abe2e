/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A first build's read-ahead (struct prepper): while full-text search is
 * not ready, threads of its own read the queued notes and prepare each
 * text for the store (store_text_tokenized(): the body normalised, its
 * tokens for the index, the body compressed), a little
 * ahead of the full-text writer (vault_fulltext.c), which then only puts
 * them. The texts are handed out in the order their paths were taken
 * from the queue, whichever thread prepared them, so the store is
 * written as a single reader would write it. Locks: popmu (a path taken
 * and numbered as one step; ft->fmu is taken inside it by the next
 * function), then mu (innermost).
 */
#include "vault_int.h"
#include "store.h"

/* Texts (and bytes of them) ready ahead of the writer at most: enough to
 * go on through a build's commit (BUILD_COMMIT_BYTES of text indexed),
 * whose texts were made ready before it. */
#define PREP_AHEAD 4096
#define PREP_AHEAD_BYTES (32u << 20)
/* The machine's other CPU, shared with the writer: two threads keep it
 * busy while the writer waits for its lock or commits. */
#define PREP_THREADS 2

struct prep_slot {
	struct prep_job j;
	bool ready;
};

struct prepper {
	struct vault *v;
	prep_next_fn next;
	pthread_t th[PREP_THREADS];
	int nth;
	pthread_mutex_t popmu; /* taken holding no other lock */
	pthread_mutex_t mu;    /* innermost */
	pthread_cond_t cv;
	/* mu: ring[seq % PREP_AHEAD] for the numbers taken, head .. issued
	 * (each ready once its thread has prepared it). */
	struct prep_slot ring[PREP_AHEAD];
	uint64_t head, issued;
	size_t bytes; /* mu: of the texts ready */
	bool stop;    /* mu */
	bool empty;   /* mu: the queue was seen empty; no more numbers */
};

/* A path and its number, taken as one step (no path when stopped or
 * when the queue is empty). */
static char *take_path(struct prepper *p, uint64_t *ret_seq)
{
	char *path = NULL;
	pthread_mutex_lock(&p->popmu);
	pthread_mutex_lock(&p->mu);
	while (!p->stop && !p->empty &&
	       (p->issued - p->head >= PREP_AHEAD ||
		p->bytes >= PREP_AHEAD_BYTES))
		pthread_cond_wait(&p->cv, &p->mu);
	bool go = !p->stop && !p->empty;
	pthread_mutex_unlock(&p->mu);
	if (go)
		path = p->next(p->v);
	pthread_mutex_lock(&p->mu);
	if (path)
		*ret_seq = p->issued++;
	else
		p->empty = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pthread_mutex_unlock(&p->popmu);
	return path;
}

static void *prep_main(void *arg)
{
	struct prepper *p = arg;
	uint64_t seq;
	char *path;
	while ((path = take_path(p, &seq))) {
		struct prep_job j = {.path = path};
		char *text;
		size_t len;
		int64_t btime;
		if (vault_read_note_file(p->v->rootfd, path, &text, &len, &j.st,
					 &btime) == 0) {
			j.t = store_text_tokenized(p->v->store, text, len);
			j.hash = text ? note_text_hash(text, len) : 0;
			j.bytes = store_text_size(j.t);
			free(text);
		}
		pthread_mutex_lock(&p->mu);
		struct prep_slot *s = &p->ring[seq % PREP_AHEAD];
		s->j = j;
		s->ready = true;
		p->bytes += j.bytes;
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
	}
	return NULL;
}

struct prepper *prep_start(struct vault *v, prep_next_fn next)
{
	struct prepper *p = xcalloc(1, sizeof(*p));
	p->v = v;
	p->next = next;
	pthread_mutex_init(&p->popmu, NULL);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	while (p->nth < PREP_THREADS &&
	       pthread_create(&p->th[p->nth], NULL, prep_main, p) == 0)
		p->nth++;
	if (!p->nth) {
		pthread_mutex_destroy(&p->popmu);
		pthread_mutex_destroy(&p->mu);
		pthread_cond_destroy(&p->cv);
		free(p);
		return NULL;
	}
	return p;
}

struct prepper *prep_stop(struct prepper *p)
{
	if (!p)
		return NULL;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < p->nth; i++)
		pthread_join(p->th[i], NULL);
	/* Every number taken was prepared before its thread ended. */
	for (uint64_t s = p->head; s < p->issued; s++) {
		struct prep_job *j = &p->ring[s % PREP_AHEAD].j;
		free(j->path);
		store_text_free(j->t);
	}
	pthread_mutex_destroy(&p->popmu);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	free(p);
	return NULL;
}

/* 1: the next text is ready; -1: there will be none; 0: not yet (mu
 * held). */
static int state_locked(const struct prepper *p)
{
	if (p->head < p->issued)
		return p->ring[p->head % PREP_AHEAD].ready ? 1 : 0;
	return p->empty ? -1 : 0;
}

int prep_take(struct prepper *p, struct prep_job *ret)
{
	pthread_mutex_lock(&p->mu);
	int r = state_locked(p);
	if (r > 0) {
		struct prep_slot *s = &p->ring[p->head % PREP_AHEAD];
		*ret = s->j;
		s->ready = false;
		p->head++;
		p->bytes -= ret->bytes;
		pthread_cond_broadcast(&p->cv);
	}
	pthread_mutex_unlock(&p->mu);
	return r;
}

void prep_wait(struct prepper *p)
{
	pthread_mutex_lock(&p->mu);
	while (state_locked(p) == 0)
		pthread_cond_wait(&p->cv, &p->mu);
	pthread_mutex_unlock(&p->mu);
}
