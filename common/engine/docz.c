/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "docz.h"
#include "tokenizer.h"
#include "util.h"
#include "zpack.h"

#include <errno.h>

#define HEAD 9
#define ENTRY 12
/* Texts shorter than this are kept as they are. */
#define PACK_MIN 256

static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

/* Chunk starts: 0, then the first space at or after every DOCZ_CHUNK
 * bytes (a token never spans a space). */
static size_t cuts(const char *text, size_t len, int **ret)
{
	size_t n = 1, cap = 1 + len / DOCZ_CHUNK;
	int *v = xcalloc(cap + 1, sizeof(*v));
	for (size_t at = DOCZ_CHUNK; at < len;) {
		while (at < len && !is_space(text[at]))
			at++;
		if (at >= len)
			break;
		if (n == cap)
			break;
		v[n++] = (int)at;
		at += DOCZ_CHUNK;
	}
	*ret = v;
	return n;
}

static void *raw(const char *text, size_t len, size_t *ret_len)
{
	char *r = xmalloc(len + 1);
	r[0] = 'r';
	memcpy(r + 1, text, len);
	*ret_len = len + 1;
	return r;
}

/* Each chunk is its own raw deflate stream (zpack.h), as zlib made them
 * before: a chunk's size is known, and a checksum costs as much as
 * inflating. */

/* Where chunk i of n (starting at at[]) ends in a text of len bytes. */
static size_t chunk_end(const int *at, size_t n, size_t len, size_t i)
{
	return i + 1 < n ? (size_t)at[i + 1] : len;
}

void *docz_pack(const char *text, size_t len, size_t *ret_len)
{
	if (len < PACK_MIN || len > INT32_MAX)
		return raw(text, len, ret_len);
	_cleanup_free_ int *at = NULL;
	size_t n = cuts(text, len, &at);
	_cleanup_free_ int *pos = xcalloc(n, sizeof(int));
	if (n > 1 && tokenizer_positions(text, (int)len, at, (int)n, pos) < 0)
		n = 1;
	size_t dir = HEAD + n * ENTRY, cap = dir;
	for (size_t i = 0; i < n; i++)
		cap += zpack_bound(chunk_end(at, n, len, i) - (size_t)at[i]);
	unsigned char *z = xmalloc(cap);
	z[0] = 'c';
	put32(z + 1, (uint32_t)len);
	put32(z + 5, (uint32_t)n);
	size_t used = dir;
	for (size_t i = 0; i < n; i++) {
		size_t from = (size_t)at[i];
		size_t to = chunk_end(at, n, len, i);
		unsigned char *e = z + HEAD + i * ENTRY;
		put32(e, (uint32_t)from);
		put32(e + 4, (uint32_t)pos[i]);
		put32(e + 8, (uint32_t)(used - dir));
		size_t zl = zpack_deflate(text + from, to - from, z + used,
					  cap - used);
		if (!zl) {
			free(z);
			return raw(text, len, ret_len);
		}
		used += zl;
	}
	*ret_len = used;
	return z;
}

/* zn bytes of one raw deflate stream at z, inflated into out (n bytes). */
static int inflate_to(const unsigned char *z, size_t zn, char *out, size_t n)
{
	return zpack_inflate(z, zn, out, n);
}

/* Where chunk i of a directory of nc entries is: text [*from, *to),
 * compressed bytes [*zf, *zt) of the data (ndata bytes; len of text). */
static int chunk_at(const unsigned char *dir, uint32_t nc, uint32_t len,
		    size_t ndata, uint32_t i, uint32_t *from, uint32_t *to,
		    uint32_t *zf, uint32_t *zt)
{
	const unsigned char *e = dir + (size_t)i * ENTRY;
	bool last = i + 1 >= nc;
	*from = get32(e);
	*to = last ? len : get32(e + ENTRY);
	*zf = get32(e + 8);
	*zt = last ? (uint32_t)ndata : get32(e + ENTRY + 8);
	if (*to < *from || *to > len || *zt < *zf || *zt > ndata)
		return -EIO;
	return 0;
}

char *docz_text(const void *blob, size_t n, size_t *ret_len)
{
	const unsigned char *b = blob;
	if (n >= 1 && b[0] == 'r') {
		*ret_len = n - 1;
		return xstrndup((const char *)b + 1, n - 1);
	}
	if (n < HEAD || b[0] != 'c')
		return NULL;
	uint32_t len = get32(b + 1), nc = get32(b + 5);
	if (!nc || (n - HEAD) / ENTRY < nc)
		return NULL;
	size_t dir = HEAD + (size_t)nc * ENTRY;
	char *t = malloc((size_t)len + 1);
	if (!t)
		return NULL;
	for (uint32_t i = 0; i < nc; i++) {
		uint32_t from, to, zf, zt;
		if (chunk_at(b + HEAD, nc, len, n - dir, i, &from, &to, &zf,
			     &zt) < 0 ||
		    inflate_to(b + dir + zf, zt - zf, t + from, to - from) <
			    0) {
			free(t);
			return NULL;
		}
	}
	t[len] = 0;
	*ret_len = len;
	return t;
}

/* Bytes [off, off + n) of an open blob, malloc'ed. */
static unsigned char *blob_bytes(sqlite3_blob *b, int off, int n)
{
	unsigned char *p = xmalloc((size_t)n + 1);
	if (n > 0 && sqlite3_blob_read(b, p, n, off) != SQLITE_OK) {
		free(p);
		return NULL;
	}
	return p;
}

/* Chunk k of a 'c' blob (header read into head), the last chunk that
 * starts at or before token tok, and the next one when token tok_last is
 * in it. */
static int read_chunks(sqlite3_blob *b, const unsigned char *head, int tok,
		       int tok_last, struct docz_part *ret)
{
	int size = sqlite3_blob_bytes(b);
	uint32_t len = get32(head + 1), nc = get32(head + 5);
	if (!nc || (size_t)(size - HEAD) / ENTRY < nc)
		return -EIO;
	size_t data = HEAD + (size_t)nc * ENTRY, ndata = (size_t)size - data;
	_cleanup_free_ unsigned char *dir =
		blob_bytes(b, HEAD, (int)(nc * ENTRY));
	if (!dir)
		return -EIO;
	uint32_t k = 0;
	while (k + 1 < nc && get32(dir + (k + 1) * ENTRY + 4) <= (uint32_t)tok)
		k++;
	uint32_t last = k + 1 < nc && get32(dir + (k + 1) * ENTRY + 4) <=
						(uint32_t)tok_last
				? k + 1
				: k;
	uint32_t from, to, zf, zt, f2, t2, zf2, zt2;
	if (chunk_at(dir, nc, len, ndata, k, &from, &to, &zf, &zt) < 0 ||
	    chunk_at(dir, nc, len, ndata, last, &f2, &t2, &zf2, &zt2) < 0)
		return -EIO;
	_cleanup_free_ unsigned char *z =
		blob_bytes(b, (int)(data + zf), (int)(zt2 - zf));
	if (!z)
		return -EIO;
	char *t = xmalloc((size_t)(t2 - from) + 1);
	if (inflate_to(z, zt - zf, t, to - from) < 0 ||
	    (last != k && inflate_to(z + (zf2 - zf), zt2 - zf2, t + (f2 - from),
				     t2 - f2) < 0)) {
		free(t);
		return -EIO;
	}
	t[t2 - from] = 0;
	*ret = (struct docz_part){t, (int)(t2 - from),
				  (int)get32(dir + k * ENTRY + 4), t2 < len};
	return 0;
}

int docz_read(sqlite3 *db, const char *table, const char *column, int64_t id,
	      int tok, int tok_last, sqlite3_blob **blob, struct docz_part *ret)
{
	sqlite3_blob *b = *blob;
	if (b && sqlite3_blob_reopen(b, id) != SQLITE_OK) {
		sqlite3_blob_close(b);
		*blob = b = NULL;
		return -ENOENT;
	}
	if (!b && sqlite3_blob_open(db, "main", table, column, id, 0, &b) !=
			  SQLITE_OK) {
		sqlite3_blob_close(b);
		return -ENOENT;
	}
	*blob = b;
	int size = sqlite3_blob_bytes(b);
	unsigned char head[HEAD];
	if (size >= 1 && sqlite3_blob_read(b, head, 1, 0) == SQLITE_OK &&
	    head[0] == 'r') {
		unsigned char *t = blob_bytes(b, 1, size - 1);
		if (!t)
			return -EIO;
		t[size - 1] = 0;
		*ret = (struct docz_part){(char *)t, size - 1, 0, false};
		return 0;
	}
	if (size >= HEAD && sqlite3_blob_read(b, head, HEAD, 0) == SQLITE_OK &&
	    head[0] == 'c')
		return read_chunks(b, head, tok, tok_last, ret);
	return -EIO;
}
