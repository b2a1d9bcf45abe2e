/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The stored texts (docz.h): packing a text into chunks, and reading
 * back the whole text or the chunks around a position.
 */
#include "docz.h"
#include "docz_dict.h"
#include "tokenizer.h"
#include "util.h"
#include "varint.h"
#include "zpack.h"

#include <errno.h>

/* 'c', the size, the chunks; 'z', the dictionary's key, the size and
 * the chunks as varints (at most ZHEAD bytes). */
#define HEAD 9
#define ZHEAD (9 + 2 * VARINT_MAX)
#define ENTRY 12

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

static uint64_t get64(const unsigned char *p)
{
	return get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* A packed blob's head: its dictionary (NULL: deflate), its size and
 * chunks, where its directory starts and its entries (none for a 'z'
 * blob of one chunk), where the compressed bytes start. */
struct head {
	const struct docz_dict *d;
	uint32_t len, nc, ndir;
	size_t dir, data;
};

/* The head of the n bytes at b (at least ZHEAD, or all of a shorter
 * blob); -EIO when it is not a packed blob or its dictionary is
 * unknown. */
static int parse_head(const unsigned char *b, size_t n, struct head *h)
{
	*h = (struct head){0};
	if (n >= HEAD && b[0] == 'c') {
		h->len = get32(b + 1);
		h->nc = h->ndir = get32(b + 5);
		h->dir = HEAD;
	} else if (n >= 9 && b[0] == 'z') {
		h->d = docz_dict_find(get64(b + 1));
		const unsigned char *p = b + 9, *end = b + n;
		if (!h->d || !varint_get(&p, end, &h->len) ||
		    !varint_get(&p, end, &h->nc))
			return -EIO;
		h->ndir = h->nc > 1 ? h->nc : 0;
		h->dir = (size_t)(p - b);
	} else {
		return -EIO;
	}
	if (!h->nc || h->ndir > INT32_MAX / ENTRY)
		return -EIO;
	h->data = h->dir + (size_t)h->ndir * ENTRY;
	return 0;
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

/* Each chunk is its own raw deflate stream or zstd frame (zpack.h): a
 * chunk's size is known, and a checksum costs as much as inflating. */

/* Where chunk i of n (starting at at[]) ends in a text of len bytes. */
static size_t chunk_end(const int *at, size_t n, size_t len, size_t i)
{
	return i + 1 < n ? (size_t)at[i + 1] : len;
}

static size_t pack_chunk(const struct docz_dict *d, const char *in, size_t n,
			 unsigned char *out, size_t cap)
{
	return d ? zpack_zstd(d->c, in, n, out, cap)
		 : zpack_deflate(in, n, out, cap);
}

/* The head of a blob of len bytes in n chunks; its size. */
static size_t put_head(unsigned char *z, const struct docz_dict *d, size_t len,
		       size_t n)
{
	if (!d) {
		z[0] = 'c';
		put32(z + 1, (uint32_t)len);
		put32(z + 5, (uint32_t)n);
		return HEAD;
	}
	z[0] = 'z';
	put32(z + 1, (uint32_t)d->key);
	put32(z + 5, (uint32_t)(d->key >> 32));
	size_t at = 9;
	at += varint_put(z + at, (uint32_t)len);
	at += varint_put(z + at, (uint32_t)n);
	return at;
}

void *docz_pack(const char *text, size_t len, size_t *ret_len)
{
	return docz_pack_with(NULL, text, len, NULL, ret_len);
}

void *docz_pack_with(const struct docz_dict *d, const char *text, size_t len,
		     const struct tokens *toks, size_t *ret_len)
{
	if (len < DOCZ_PACK_MIN || len > INT32_MAX)
		return raw(text, len, ret_len);
	_cleanup_free_ int *at = NULL;
	size_t n = cuts(text, len, &at);
	_cleanup_free_ int *pos = xcalloc(n, sizeof(int));
	if (n > 1 &&
	    (toks ? tokens_positions(toks, at, (int)n, pos)
		  : tokenizer_positions(text, (int)len, at, (int)n, pos)) < 0)
		n = 1;
	size_t cap = ZHEAD + n * ENTRY;
	for (size_t i = 0; i < n; i++) {
		size_t cn = chunk_end(at, n, len, i) - (size_t)at[i];
		cap += d ? zpack_zstd_bound(cn) : zpack_bound(cn);
	}
	unsigned char *z = xmalloc(cap);
	size_t head = put_head(z, d, len, n);
	size_t ndir = d && n == 1 ? 0 : n, dir = head + ndir * ENTRY;
	size_t used = dir;
	for (size_t i = 0; i < n; i++) {
		size_t from = (size_t)at[i];
		size_t to = chunk_end(at, n, len, i);
		if (i < ndir) {
			unsigned char *e = z + head + i * ENTRY;
			put32(e, (uint32_t)from);
			put32(e + 4, (uint32_t)pos[i]);
			put32(e + 8, (uint32_t)(used - dir));
		}
		size_t zl = pack_chunk(d, text + from, to - from, z + used,
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

/* zn bytes of one chunk at z, inflated into out (n bytes). */
static int inflate_to(const struct docz_dict *d, const unsigned char *z,
		      size_t zn, char *out, size_t n)
{
	return d ? zpack_unzstd(d->d, z, zn, out, n)
		 : zpack_inflate(z, zn, out, n);
}

/* Where chunk i of a blob with head h and directory dir is: text
 * [*from, *to), compressed bytes [*zf, *zt) of the data (ndata bytes). */
static int chunk_at(const struct head *h, const unsigned char *dir,
		    size_t ndata, uint32_t i, uint32_t *from, uint32_t *to,
		    uint32_t *zf, uint32_t *zt)
{
	uint32_t len = h->len;
	if (!h->ndir) {
		/* One chunk, no directory. */
		*from = *zf = 0;
		*to = len;
		*zt = (uint32_t)ndata;
		return ndata <= UINT32_MAX ? 0 : -EIO;
	}
	const unsigned char *e = dir + (size_t)i * ENTRY;
	bool last = i + 1 >= h->ndir;
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
	struct head h;
	if (parse_head(b, n, &h) < 0 || n < h.data)
		return NULL;
	uint32_t len = h.len;
	char *t = malloc((size_t)len + 1);
	if (!t)
		return NULL;
	for (uint32_t i = 0; i < h.nc; i++) {
		uint32_t from, to, zf, zt;
		if (chunk_at(&h, b + h.dir, n - h.data, i, &from, &to, &zf,
			     &zt) < 0 ||
		    inflate_to(h.d, b + h.data + zf, zt - zf, t + from,
			       to - from) < 0) {
			free(t);
			return NULL;
		}
	}
	t[len] = 0;
	*ret_len = len;
	return t;
}

uint64_t docz_key(const void *blob, size_t n)
{
	const unsigned char *b = blob;
	return n >= 9 && b[0] == 'z' ? get64(b + 1) : 0;
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

/* Chunk k of a packed blob (head h), the last chunk that starts at or
 * before token tok, and the next one when token tok_last is in it. */
static int read_chunks(sqlite3_blob *b, const struct head *h, int tok,
		       int tok_last, struct docz_part *ret)
{
	int size = sqlite3_blob_bytes(b);
	uint32_t len = h->len, nd = h->ndir;
	if ((size_t)size < h->data)
		return -EIO;
	size_t data = h->data, ndata = (size_t)size - data;
	_cleanup_free_ unsigned char *dir =
		blob_bytes(b, (int)h->dir, (int)(nd * ENTRY));
	if (!dir)
		return -EIO;
	uint32_t k = 0;
	while (k + 1 < nd && get32(dir + (k + 1) * ENTRY + 4) <= (uint32_t)tok)
		k++;
	uint32_t last = k + 1 < nd && get32(dir + (k + 1) * ENTRY + 4) <=
						(uint32_t)tok_last
				? k + 1
				: k;
	uint32_t from, to, zf, zt, f2, t2, zf2, zt2;
	if (chunk_at(h, dir, ndata, k, &from, &to, &zf, &zt) < 0 ||
	    chunk_at(h, dir, ndata, last, &f2, &t2, &zf2, &zt2) < 0)
		return -EIO;
	_cleanup_free_ unsigned char *z =
		blob_bytes(b, (int)(data + zf), (int)(zt2 - zf));
	if (!z)
		return -EIO;
	char *t = xmalloc((size_t)(t2 - from) + 1);
	if (inflate_to(h->d, z, zt - zf, t, to - from) < 0 ||
	    (last != k && inflate_to(h->d, z + (zf2 - zf), zt2 - zf2,
				     t + (f2 - from), t2 - f2) < 0)) {
		free(t);
		return -EIO;
	}
	t[t2 - from] = 0;
	*ret = (struct docz_part){t, (int)(t2 - from),
				  nd ? (int)get32(dir + k * ENTRY + 4) : 0,
				  t2 < len};
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
	unsigned char head[ZHEAD];
	if (size >= 1 && sqlite3_blob_read(b, head, 1, 0) == SQLITE_OK &&
	    head[0] == 'r') {
		unsigned char *t = blob_bytes(b, 1, size - 1);
		if (!t)
			return -EIO;
		t[size - 1] = 0;
		*ret = (struct docz_part){(char *)t, size - 1, 0, false};
		return 0;
	}
	int hn = size < ZHEAD ? size : ZHEAD;
	struct head h;
	if (hn < 1 || sqlite3_blob_read(b, head, hn, 0) != SQLITE_OK ||
	    parse_head(head, (size_t)hn, &h) < 0)
		return -EIO;
	return read_chunks(b, &h, tok, tok_last, ret);
}
