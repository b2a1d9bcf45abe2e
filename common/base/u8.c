/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "u8.h"
#include "util.h"

#include <stdatomic.h>
#include <string.h>
#include <utf8proc.h>

bool u8_valid(const char *s, size_t n)
{
	const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)s;
	size_t i = 0;
	while (i < n) {
		if (p[i] < 0x80) {
			if (p[i] == 0)
				return false;
			i++;
			continue;
		}
		utf8proc_int32_t cp;
		utf8proc_ssize_t l =
			utf8proc_iterate(p + i, (utf8proc_ssize_t)(n - i), &cp);
		if (l <= 0)
			return false;
		i += (size_t)l;
	}
	return true;
}

size_t u8_invalid_at(const char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		if ((unsigned char)s[i] < 0x80) {
			i++;
			continue;
		}
		int32_t cp;
		int l = u8_decode(s + i, n - i, &cp);
		if (l < 0)
			return i;
		i += (size_t)l;
	}
	return n;
}

char *u8_repair(const char *s, size_t n)
{
	struct sbuf b = {0};
	sb_grow(&b, n);
	size_t i = 0;
	while (i < n) {
		size_t bad = i + u8_invalid_at(s + i, n - i);
		sb_add(&b, s + i, bad - i);
		if (bad == n)
			break;
		sb_puts(&b, U8_REPLACEMENT);
		i = bad + 1;
	}
	return sb_steal(&b);
}

static char *map(const char *s, size_t n, int opts)
{
	utf8proc_uint8_t *out = NULL;
	utf8proc_ssize_t r =
		utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n,
			     &out, (utf8proc_option_t)opts);
	if (r < 0)
		return NULL;
	/* utf8proc allocates with malloc(); hand it on as is. */
	return (char *)out;
}

/* NFC of c alone is c, for the BMP's characters with a decomposition
 * (canonical or not): 0 not known yet, 1 it is, 2 it is not. Filled as
 * they are met, by any thread (each writes the same). */
static _Atomic unsigned char nfc_bmp[0x10000];

static bool nfc_alone(int32_t c)
{
	if (c < 0 || c >= 0x10000)
		return false;
	unsigned char k =
		atomic_load_explicit(&nfc_bmp[c], memory_order_relaxed);
	if (!k) {
		utf8proc_uint8_t in[4];
		utf8proc_ssize_t l = utf8proc_encode_char(c, in);
		char *out = map((const char *)in, (size_t)l,
				UTF8PROC_STABLE | UTF8PROC_COMPOSE);
		k = out && strlen(out) == (size_t)l &&
				    !memcmp(out, in, (size_t)l)
			    ? 1
			    : 2;
		free(out);
		atomic_store_explicit(&nfc_bmp[c], k, memory_order_relaxed);
	}
	return k == 1;
}

/* NFC leaves c as it is among characters it leaves so: a starter that
 * nothing before it combines with (neither the second of a composition
 * pair nor a Hangul jamo, composed by rule), its own NFC. */
static bool nfc_keeps(int32_t c)
{
	const utf8proc_property_t *p = utf8proc_get_property(c);
	if (p->combining_class != 0 || (c >= 0x1100 && c < 0x1200) ||
	    (p->comb_index != UINT16_MAX && p->comb_index >= 0x8000))
		return false;
	return p->decomp_seqindex == UINT16_MAX || nfc_alone(c);
}

/* The first byte at or after i that is not ASCII, or n (eight bytes at
 * a time: notes are mostly ASCII). */
static size_t next_non_ascii(const char *s, size_t n, size_t i)
{
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, s + i, 8);
		if (w & 0x8080808080808080ull)
			break;
	}
	while (i < n && (unsigned char)s[i] < 0x80)
		i++;
	return i;
}

/* s[0..n) is valid UTF-8 of characters that NFC keeps (nfc_keeps): its
 * NFC is itself (the quick check before utf8proc's whole map). */
static bool nfc_kept(const char *s, size_t n)
{
	for (size_t i = next_non_ascii(s, n, 0); i < n;
	     i = next_non_ascii(s, n, i)) {
		utf8proc_int32_t c;
		utf8proc_ssize_t l =
			utf8proc_iterate((const utf8proc_uint8_t *)s + i,
					 (utf8proc_ssize_t)(n - i), &c);
		if (l <= 0 || !nfc_keeps(c))
			return false;
		i += (size_t)l;
	}
	return true;
}

static bool ascii_at(const char *s, size_t n, size_t i)
{
	return i >= n || (unsigned char)s[i] < 0x80;
}

/*
 * utf8proc over the non-ASCII stretches only (notes are mostly ASCII). An
 * ASCII character followed by another ASCII character never combines with
 * what is around it (no canonical composition pairs a character with a
 * following ASCII one), so the text can be cut there; an ASCII character
 * right before non-ASCII text goes with that text (it may be the base of
 * combining marks). NULL when the text is not valid UTF-8.
 */
static char *map_mixed(const char *s, size_t n, int opts, bool lower)
{
	/* NFC alone: a stretch that NFC keeps is copied (most are). */
	bool nfc_only = opts == (UTF8PROC_STABLE | UTF8PROC_COMPOSE);
	struct sbuf b = {0};
	sb_grow(&b, n);
	b.s[0] = 0;
	size_t i = 0;
	while (i < n) {
		/* ASCII up to the last one before non-ASCII text. */
		size_t p = next_non_ascii(s, n, i);
		size_t j = p >= n ? n : p > i ? p - 1 : i;
		sb_grow(&b, j - i);
		for (size_t k = i; lower && k < j; k++) {
			char c = s[k];
			b.s[b.len++] =
				c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
		}
		if (!lower) {
			memcpy(b.s + b.len, s + i, j - i);
			b.len += j - i;
		}
		b.s[b.len] = 0;
		if (j >= n)
			break;
		size_t k = j;
		while (k < n && !(ascii_at(s, n, k) && ascii_at(s, n, k + 1)))
			k++;
		i = k;
		if (nfc_only && nfc_kept(s + j, k - j)) {
			sb_add(&b, s + j, k - j);
			continue;
		}
		char *m = map(s + j, k - j, opts);
		if (!m) {
			sb_free(&b);
			return NULL;
		}
		sb_puts(&b, m);
		free(m);
	}
	return sb_steal(&b);
}

char *u8_nfc(const char *s)
{
	size_t n = strlen(s);
	if (nfc_kept(s, n))
		return xstrndup(s, n);
	return map_mixed(s, n, UTF8PROC_STABLE | UTF8PROC_COMPOSE, false);
}

char *u8_fold_n(const char *s, size_t n)
{
	return map_mixed(s, n,
			 UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_CASEFOLD,
			 true);
}

char *u8_fold(const char *s)
{
	return u8_fold_n(s, strlen(s));
}

int u8_decode(const char *s, size_t n, int32_t *ret_cp)
{
	utf8proc_int32_t cp;
	utf8proc_ssize_t l = utf8proc_iterate((const utf8proc_uint8_t *)s,
					      (utf8proc_ssize_t)n, &cp);
	if (l <= 0)
		return -1;
	*ret_cp = cp;
	return (int)l;
}

bool u8_is_digit(int32_t cp)
{
	return cp >= '0' && cp <= '9';
}

bool u8_is_tag_char(int32_t cp)
{
	if (cp < 0x80)
		return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') ||
		       (cp >= '0' && cp <= '9') || cp == '_' || cp == '-' ||
		       cp == '/';
	switch (utf8proc_category(cp)) {
	case UTF8PROC_CATEGORY_LU:
	case UTF8PROC_CATEGORY_LL:
	case UTF8PROC_CATEGORY_LT:
	case UTF8PROC_CATEGORY_LM:
	case UTF8PROC_CATEGORY_LO:
	case UTF8PROC_CATEGORY_MN:
	case UTF8PROC_CATEGORY_MC:
	case UTF8PROC_CATEGORY_ND:
	case UTF8PROC_CATEGORY_NL:
	case UTF8PROC_CATEGORY_NO:
	/* Obsidian accepts emoji and other symbols in tags. */
	case UTF8PROC_CATEGORY_SO:
		return true;
	default:
		return false;
	}
}

const char *u8_strstr_fold(const char *hay_folded, const char *needle_folded)
{
	return strstr(hay_folded, needle_folded);
}
