/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The dictionary the stored texts are compressed with (docz.h): zstd's,
 * trained on a sample of the vault's own texts at the first build and
 * kept in the store, so that each chunk of 8 KiB compresses as if the
 * words and phrases the vault repeats were already known (a quarter
 * fewer bytes than deflate alone). A dictionary is known by a key (a
 * hash of its bytes) that each blob packed with it holds; every
 * dictionary made is in a process-wide list until it is freed, so that a
 * reader finds it from a blob alone. A coder (struct docz_coder) packs
 * a store's new texts: with its dictionary, or, while it has none,
 * with deflate, sampling the texts it packs until it has enough to
 * train one.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <zstd.h>

struct docz_dict {
	uint64_t key;
	void *bytes;
	size_t n;
	ZSTD_CDict *c;
	ZSTD_DDict *d;
	struct docz_dict *next; /* the list's */
};

/* A dictionary of the n bytes at bytes (copied), in the list; NULL when
 * zstd refuses them. */
struct docz_dict *docz_dict_new(const void *bytes, size_t n);
/* Out of the list, and freed (no blob of it is read any more). */
void docz_dict_free(struct docz_dict *d);
/* The listed dictionary of that key, or NULL. */
const struct docz_dict *docz_dict_find(uint64_t key);

struct docz_coder;

/* A coder with dictionary d (taken; NULL: none yet). */
struct docz_coder *docz_coder_new(struct docz_dict *d);
void docz_coder_free(struct docz_coder *c);
/* Its dictionary (NULL while it has none; once set, never changes). */
const struct docz_dict *docz_coder_dict(struct docz_coder *c);
struct tokens;
/* len bytes of text packed (docz_pack_with(); malloc'ed, *ret_len bytes):
 * with the dictionary, or sampled and deflated while there is none. Any
 * thread. */
void *docz_coder_pack(struct docz_coder *c, const char *text, size_t len,
		      const struct tokens *toks, size_t *ret_len);
