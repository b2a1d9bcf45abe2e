/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The stored texts' dictionaries (docz_dict.h): the process-wide list a
 * reader finds one in by its key, and the coder that samples a store's
 * first texts, trains the dictionary on them and packs with it.
 */
#include "docz_dict.h"
#include "docz.h"
#include "util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <zdict.h>

/* What the dictionary is trained on: the first DICT_SAMPLE bytes of the
 * texts packed (at most two chunks of each, so that a few long notes do
 * not make it theirs). At 10,000 generated notes, 2 MiB and 64 KiB make
 * chunks 1 % larger than 4 MiB and 110 KiB do, and train in a tenth of
 * the time. */
#define DICT_SAMPLE (1u << 20)
#define DICT_SAMPLE_TEXT (2 * DOCZ_CHUNK)
#define DICT_SIZE (64u << 10)
/* zstd's level for the chunks (see docz.c). With the dictionary and
 * chunks of 8 KiB, level 3 packs as small as 5 (1.5 % larger on English
 * prose, 1 % smaller on generated notes) at 2.5 to 3 times the speed:
 * at 5,000 generated notes a first build's packing went from 2.2 to 0.7
 * billion instructions, a sixth of the build's. */
#define DICT_LEVEL 3

static pthread_mutex_t list_mu = PTHREAD_MUTEX_INITIALIZER;
static struct docz_dict *list;

/* FNV-1a, 64 bits. */
static uint64_t hash64(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	/* 0 stands for no dictionary. */
	return h ? h : 1;
}

struct docz_dict *docz_dict_new(const void *bytes, size_t n)
{
	if (!bytes || !n)
		return NULL;
	struct docz_dict *d = xcalloc(1, sizeof(*d));
	d->bytes = xmalloc(n);
	memcpy(d->bytes, bytes, n);
	d->n = n;
	d->key = hash64(bytes, n);
	d->c = ZSTD_createCDict(d->bytes, n, DICT_LEVEL);
	d->d = ZSTD_createDDict(d->bytes, n);
	if (!d->c || !d->d) {
		ZSTD_freeCDict(d->c);
		ZSTD_freeDDict(d->d);
		free(d->bytes);
		free(d);
		return NULL;
	}
	pthread_mutex_lock(&list_mu);
	d->next = list;
	list = d;
	pthread_mutex_unlock(&list_mu);
	return d;
}

void docz_dict_free(struct docz_dict *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&list_mu);
	for (struct docz_dict **p = &list; *p; p = &(*p)->next)
		if (*p == d) {
			*p = d->next;
			break;
		}
	pthread_mutex_unlock(&list_mu);
	ZSTD_freeCDict(d->c);
	ZSTD_freeDDict(d->d);
	free(d->bytes);
	free(d);
}

const struct docz_dict *docz_dict_find(uint64_t key)
{
	pthread_mutex_lock(&list_mu);
	struct docz_dict *d = list;
	while (d && d->key != key)
		d = d->next;
	pthread_mutex_unlock(&list_mu);
	return d;
}

/* ---- the coder ------------------------------------------------------------
 */

struct docz_coder {
	_Atomic(struct docz_dict *) dict;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* mu: the sample so far (texts concatenated, their sizes); none
	 * once the dictionary is being trained (training) or was. */
	struct sbuf sample;
	size_t *sizes;
	unsigned nsizes, cap;
	bool done, training;
};

struct docz_coder *docz_coder_new(struct docz_dict *d)
{
	struct docz_coder *c = xcalloc(1, sizeof(*c));
	atomic_store(&c->dict, d);
	c->done = d != NULL;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	return c;
}

void docz_coder_free(struct docz_coder *c)
{
	if (!c)
		return;
	docz_dict_free(atomic_load(&c->dict));
	sb_free(&c->sample);
	free(c->sizes);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv);
	free(c);
}

const struct docz_dict *docz_coder_dict(struct docz_coder *c)
{
	return atomic_load(&c->dict);
}

/* A dictionary trained on the sample (NULL when zstd could not). */
static struct docz_dict *train(const struct sbuf *sample, const size_t *sizes,
			       unsigned n)
{
	_cleanup_free_ void *buf = xmalloc(DICT_SIZE);
	size_t len = ZDICT_trainFromBuffer(buf, DICT_SIZE, sample->s, sizes, n);
	return ZDICT_isError(len) ? NULL : docz_dict_new(buf, len);
}

/* Text added to the sample; true when the caller is to train on it
 * (the sample handed over in *ret). While another thread trains, waits
 * for its dictionary (a tenth of a second, once: the texts after the
 * sample are all packed with it). */
static bool add_sample(struct docz_coder *c, const char *text, size_t len,
		       struct docz_coder *ret)
{
	bool full = false;
	pthread_mutex_lock(&c->mu);
	while (c->training)
		pthread_cond_wait(&c->cv, &c->mu);
	for (size_t at = 0; !c->done && at < len && at < DICT_SAMPLE_TEXT;
	     at += DOCZ_CHUNK) {
		size_t n = len - at < DOCZ_CHUNK ? len - at : DOCZ_CHUNK;
		if (c->nsizes == c->cap) {
			c->cap = c->cap ? 2 * c->cap : 256;
			c->sizes =
				xrealloc(c->sizes, c->cap * sizeof(*c->sizes));
		}
		c->sizes[c->nsizes++] = n;
		sb_add(&c->sample, text + at, n);
	}
	if (!c->done && c->sample.len >= DICT_SAMPLE) {
		full = c->done = c->training = true;
		ret->sample = c->sample;
		ret->sizes = c->sizes;
		ret->nsizes = c->nsizes;
		c->sample = (struct sbuf){0};
		c->sizes = NULL;
		c->nsizes = c->cap = 0;
	}
	pthread_mutex_unlock(&c->mu);
	return full;
}

void *docz_coder_pack(struct docz_coder *c, const char *text, size_t len,
		      const struct tokens *toks, size_t *ret_len)
{
	struct docz_dict *d = atomic_load(&c->dict);
	if (!d && len >= DOCZ_PACK_MIN) {
		struct docz_coder s = {0};
		if (add_sample(c, text, len, &s)) {
			d = train(&s.sample, s.sizes, s.nsizes);
			sb_free(&s.sample);
			free(s.sizes);
			pthread_mutex_lock(&c->mu);
			atomic_store(&c->dict, d);
			c->training = false;
			pthread_cond_broadcast(&c->cv);
			pthread_mutex_unlock(&c->mu);
		} else {
			/* Set by a training that ended meanwhile. */
			d = atomic_load(&c->dict);
		}
	}
	return docz_pack_with(d, text, len, toks, ret_len);
}
