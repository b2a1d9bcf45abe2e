/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Languages of the full-text index: stop words, a guess of a text's
 * language from them, and Snowball stems (libstemmer) of its words, so
 * that "churches" finds "church" and "налоги" finds "налогов".
 *
 * Latin-script words take the stem of the note's language when its stop
 * words tell it, else the stems of every Latin-script language here (a
 * few more index entries, the same matches); Cyrillic words are Russian.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

enum lang {
	LANG_EN,
	LANG_DE,
	LANG_FR,
	LANG_ES,
	LANG_IT,
	LANG_PT,
	LANG_NL,
	LANG_RU,
	LANG_COUNT
};

#define LANG_LATIN ((1u << LANG_RU) - 1)
#define LANG_ALL ((1u << LANG_COUNT) - 1)

/* The languages whose stop word w is (lower case), as a mask; 0 if none. */
unsigned stem_stopword(const char *w, size_t n);
/*
 * The languages of text, a mask: the Latin-script language whose stop
 * words are clearly the most frequent in its first bytes, else
 * LANG_LATIN (not known); LANG_RU always rides along (Cyrillic words are
 * Russian whatever the mask).
 */
unsigned stem_guess(const char *text, size_t n);

/* One connection's stemmers (libstemmer's are not thread-safe). */
struct stemmer;
struct stemmer *stemmer_new(void);
void stemmer_free(struct stemmer *s);
/*
 * The stems of word w[0..n) (as written: any case, diacritics) for the
 * languages of mask that fit its script, lower case and without
 * diacritics; at most LANG_COUNT, distinct, none equal to skip (the
 * folded word itself). Returns how many; they live until the next call.
 */
int stemmer_stems(struct stemmer *s, const char *w, size_t n, unsigned mask,
		  const char *skip, size_t skipn, const char **ret,
		  size_t *ret_len);
