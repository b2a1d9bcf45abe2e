/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The stored texts (docz.h, docz_dict.h): texts of every size packed
 * with deflate and with a trained dictionary and read back, whole and
 * by chunks; damaged blobs and unknown dictionaries refused as errors;
 * a store's dictionary trained from its first texts, kept across a
 * restart; a cache of the previous layout rebuilt.
 */
#include "docz.h"
#include "docz_dict.h"
#include "store.h"
#include "testutil.h"
#include "tokenizer.h"
#include "util.h"

#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

/* Words of a small made-up language, picked by a fixed generator: text
 * that compresses as prose does. */
static const char *const SYLL[] = {"ka",  "lo", "mi",  "ne",  "sta", "ri",
				   "vo",  "qu", "é",   "zen", "dor", "ü",
				   "pla", "ti", "gro", "s"};

static uint32_t next_rand(uint32_t *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return *seed >> 8;
}

static char *make_text(size_t len, uint32_t seed)
{
	struct sbuf b = {0};
	sb_grow(&b, len + 16);
	while (b.len < len) {
		int n = 1 + (int)(next_rand(&seed) % 3);
		/* Few distinct words: each the seed's pick of 64. */
		uint32_t w = next_rand(&seed) % 64;
		for (int i = 0; i < n; i++)
			sb_puts(&b, SYLL[(w >> (2 * i)) % 16]);
		sb_putc(&b, next_rand(&seed) % 11 ? ' ' : '\n');
	}
	/* Exactly len bytes: cut on a character boundary, padded. */
	size_t cut = len;
	while (cut > 0 && cut < b.len && (b.s[cut] & 0xc0) == 0x80)
		cut--;
	b.len = cut;
	while (b.len < len)
		sb_putc(&b, 'x');
	b.s[len] = 0;
	return sb_steal(&b);
}

/* A coder fed texts until it has trained its dictionary. */
static struct docz_coder *trained_coder(void)
{
	struct docz_coder *c = docz_coder_new(NULL);
	for (uint32_t i = 0; !docz_coder_dict(c) && i < 2000; i++) {
		_cleanup_free_ char *t = make_text(3000 + i % 5000, i);
		size_t n;
		free(docz_coder_pack(c, t, strlen(t), NULL, &n));
	}
	CU_ASSERT_PTR_NOT_NULL(docz_coder_dict(c));
	return c;
}

/* The blob in row 1 of a table t(body) of an in-memory database. */
static sqlite3 *db_with(const void *blob, size_t n)
{
	sqlite3 *db = NULL;
	CU_ASSERT_FATAL(sqlite3_open(":memory:", &db) == SQLITE_OK);
	sqlite3_exec(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, body BLOB)",
		     NULL, NULL, NULL);
	sqlite3_stmt *st;
	sqlite3_prepare_v2(db, "INSERT INTO t VALUES(1, ?)", -1, &st, NULL);
	sqlite3_bind_blob(st, 1, blob, (int)n, SQLITE_STATIC);
	CU_ASSERT(sqlite3_step(st) == SQLITE_DONE);
	sqlite3_finalize(st);
	return db;
}

/* docz_read()'s chunks at the first and the last token: the text's
 * start and its end. */
static void check_chunks(const void *z, size_t zn, const char *text, size_t len)
{
	sqlite3 *db = db_with(z, zn);
	sqlite3_blob *b = NULL;
	struct docz_part p;
	CU_ASSERT_FATAL(docz_read(db, "t", "body", 1, 0, 0, &b, &p) == 0);
	CU_ASSERT((size_t)p.len <= len && !memcmp(p.text, text, (size_t)p.len));
	CU_ASSERT_EQUAL(p.pos, 0);
	CU_ASSERT_EQUAL(p.more, (size_t)p.len < len);
	free(p.text);
	CU_ASSERT_FATAL(
		docz_read(db, "t", "body", 1, INT_MAX, INT_MAX, &b, &p) == 0);
	CU_ASSERT((size_t)p.len <= len &&
		  !memcmp(p.text, text + len - (size_t)p.len, (size_t)p.len));
	CU_ASSERT(!p.more);
	free(p.text);
	sqlite3_blob_close(b);
	sqlite3_close(db);
}

static void round_trip(const struct docz_dict *d, size_t len)
{
	_cleanup_free_ char *text = make_text(len, (uint32_t)len);
	size_t zn, n;
	_cleanup_free_ void *z = docz_pack_with(d, text, len, NULL, &zn);
	_cleanup_free_ char *back = docz_text(z, zn, &n);
	CU_ASSERT_FATAL(back != NULL);
	CU_ASSERT_EQUAL(n, len);
	CU_ASSERT(!memcmp(back, text, len) && back[len] == 0);
	/* Packed from DOCZ_PACK_MIN bytes on; with the dictionary given. */
	char kind = len < DOCZ_PACK_MIN ? 'r' : d ? 'z' : 'c';
	CU_ASSERT_EQUAL(((const char *)z)[0], kind);
	CU_ASSERT_EQUAL(docz_key(z, zn), kind == 'z' ? d->key : 0);
	if (kind != 'r')
		CU_ASSERT(zn < len);
	if (len % 7 == 0 || len > 4000)
		check_chunks(z, zn, text, len);
}

static void test_round_trip(void)
{
	struct docz_coder *c = trained_coder();
	const struct docz_dict *dicts[] = {NULL, docz_coder_dict(c)};
	static const size_t big[] = {DOCZ_CHUNK - 1, DOCZ_CHUNK,
				     DOCZ_CHUNK + 1, 2 * DOCZ_CHUNK + 3,
				     100000,	     1 << 20};
	for (int k = 0; k < 2; k++) {
		for (size_t len = 0; len < 2 * DOCZ_PACK_MIN; len++)
			round_trip(dicts[k], len);
		for (size_t len = 2 * DOCZ_PACK_MIN; len < 40000; len += 331)
			round_trip(dicts[k], len);
		for (size_t i = 0; i < ARRAY_SIZE(big); i++)
			round_trip(dicts[k], big[i]);
	}
	docz_coder_free(c);
}

/* The dictionary shrinks what deflate packs. */
static void test_dictionary_smaller(void)
{
	struct docz_coder *c = trained_coder();
	size_t plain = 0, dict = 0;
	for (uint32_t i = 0; i < 200; i++) {
		_cleanup_free_ char *t = make_text(2000 + 37 * i, 9000 + i);
		size_t n;
		free(docz_pack(t, strlen(t), &n));
		plain += n;
		free(docz_coder_pack(c, t, strlen(t), NULL, &n));
		dict += n;
	}
	CU_ASSERT(dict < plain);
	docz_coder_free(c);
}

/* Every damage is an error (NULL, -EIO), never a crash or a read past
 * the blob. */
static void expect_damaged(const void *z, size_t zn)
{
	size_t n;
	char *t = docz_text(z, zn, &n);
	CU_ASSERT_PTR_NULL(t);
	free(t);
	sqlite3 *db = db_with(z, zn);
	sqlite3_blob *b = NULL;
	struct docz_part p;
	/* Only the chunks asked for are read: the first or the last. */
	int first = docz_read(db, "t", "body", 1, 0, 0, &b, &p);
	if (first == 0)
		free(p.text);
	int last = docz_read(db, "t", "body", 1, INT_MAX, INT_MAX, &b, &p);
	if (last == 0)
		free(p.text);
	CU_ASSERT(first < 0 || last < 0);
	sqlite3_blob_close(b);
	sqlite3_close(db);
}

static void test_damaged(void)
{
	struct docz_coder *c = trained_coder();
	const struct docz_dict *d = docz_coder_dict(c);
	size_t len = 3 * DOCZ_CHUNK + 100, zn;
	_cleanup_free_ char *text = make_text(len, 77);
	for (int k = 0; k < 2; k++) {
		unsigned char *z =
			docz_pack_with(k ? d : NULL, text, len, NULL, &zn);
		/* 'z': the key, the size in two varint bytes, the count
		 * in one. */
		size_t head = k ? 9 + 2 + 1 : 9, data = head + 4 * 12;
		/* Cut short: in the directory, in the last chunk. */
		expect_damaged(z, head + 5);
		expect_damaged(z, zn - 3);
		/* A chunk's bytes overwritten. */
		unsigned char *j = xmalloc(zn);
		memcpy(j, z, zn);
		for (size_t i = data; i < data + 40; i++)
			j[i] = (unsigned char)(i * 37 + 5);
		expect_damaged(j, zn);
		/* A chunk said to end past the blob. */
		memcpy(j, z, zn);
		j[head + 12 + 8] = 0xff;
		j[head + 12 + 9] = 0xff;
		expect_damaged(j, zn);
		/* No chunks. */
		memcpy(j, z, zn);
		memset(j + head - 4, 0, 4);
		expect_damaged(j, zn);
		/* A dictionary no one has. */
		if (k) {
			memcpy(j, z, zn);
			j[3] ^= 0x55;
			expect_damaged(j, zn);
		}
		free(j);
		free(z);
	}
	expect_damaged("q", 1);
	expect_damaged("", 0);
	docz_coder_free(c);
}

/* Notes enough for the store to train its dictionary (over a MiB) and
 * pack most of them with it. */
#define NOTES 600

static void write_notes(struct tvault *t)
{
	for (int i = 0; i < NOTES; i++) {
		char p[64];
		snprintf(p, sizeof(p), "N/Note %03d.md", i);
		_cleanup_free_ char *body = make_text(4000, (uint32_t)i);
		_cleanup_free_ char *text = xasprintf(
			"# Note %d\n\n%s\nmarimba%d bassoon\n", i, body, i);
		tv_write(t, p, text);
	}
}

static char *cache_db(struct tvault *t)
{
	return xasprintf("%s/.cache/index.sqlite", t->dir);
}

/* Rows of the cache's docz table packed with the dictionary, and the
 * rows of zdict. */
static void count_packed(struct tvault *t, int *ret_z, int *ret_dicts)
{
	_cleanup_free_ char *path = cache_db(t);
	sqlite3 *db = NULL;
	CU_ASSERT_FATAL(sqlite3_open(path, &db) == SQLITE_OK);
	sqlite3_stmt *st;
	*ret_z = *ret_dicts = -1;
	if (sqlite3_prepare_v2(db,
			       "SELECT (SELECT count(*) FROM docz WHERE"
			       " substr(body, 1, 1) = x'7a'),"
			       " (SELECT count(*) FROM zdict)",
			       -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW) {
		*ret_z = sqlite3_column_int(st, 0);
		*ret_dicts = sqlite3_column_int(st, 1);
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
}

static void test_store_dictionary(void)
{
	struct tvault t;
	tv_init(&t);
	write_notes(&t);
	tv_open_with_store(&t);
	vault_fulltext_work(t.v);
	int nz, nd;
	count_packed(&t, &nz, &nd);
	/* The first texts are deflated while the sample is taken. */
	CU_ASSERT(nz > NOTES / 2);
	CU_ASSERT_EQUAL(nd, 1);
	CU_ASSERT_EQUAL(tv_search_total(&t, "bassoon", "fulltext"), NOTES);
	_cleanup_free_ char *first = tv_first_snippet(&t, "marimba599");
	ASSERT_CONTAINS(first, "**marimba599** bassoon");
	/* A restart reads the dictionary back: nothing is read again,
	 * and answers are the same. */
	t.v = vault_free(t.v);
	tv_open_with_store(&t);
	vault_fulltext_work(t.v);
	struct vault_store_state st;
	vault_store_state(t.v, &st);
	CU_ASSERT_EQUAL(st.parsed, 0);
	CU_ASSERT_EQUAL(tv_search_total(&t, "bassoon", "fulltext"), NOTES);
	_cleanup_free_ char *again = tv_first_snippet(&t, "marimba599");
	CU_ASSERT_STRING_EQUAL(again, first);
	/* A note written now is packed with the same dictionary. */
	_cleanup_free_ char *body = make_text(5000, 4242);
	_cleanup_free_ char *text = xasprintf("%s\nxylophone\n", body);
	tv_write(&t, "Late.md", text);
	tv_reindex(&t);
	vault_fulltext_work(t.v);
	int nz2;
	count_packed(&t, &nz2, &nd);
	CU_ASSERT_EQUAL(nz2, nz + 1);
	CU_ASSERT_EQUAL(nd, 1);
	CU_ASSERT_EQUAL(tv_search_total(&t, "xylophone", "fulltext"), 1);
	tv_close(&t);
}

/* A cache of another layout (the one before the dictionary) is made
 * anew, and answers the same. */
static void test_old_layout_rebuilt(void)
{
	struct tvault t;
	tv_init(&t);
	write_notes(&t);
	tv_open_with_store(&t);
	vault_fulltext_work(t.v);
	t.v = vault_free(t.v);
	_cleanup_free_ char *path = cache_db(&t);
	sqlite3 *db = NULL;
	CU_ASSERT_FATAL(sqlite3_open(path, &db) == SQLITE_OK);
	CU_ASSERT(sqlite3_exec(db, "PRAGMA user_version = 8008", NULL, NULL,
			       NULL) == SQLITE_OK);
	sqlite3_close(db);
	CU_ASSERT(tv_store_rebuilt(&t));
	tv_open_with_store(&t);
	vault_fulltext_work(t.v);
	struct vault_store_state st;
	vault_store_state(t.v, &st);
	CU_ASSERT_EQUAL(st.parsed, NOTES);
	int nz, nd;
	count_packed(&t, &nz, &nd);
	CU_ASSERT(nz > NOTES / 2);
	CU_ASSERT_EQUAL(nd, 1);
	CU_ASSERT_EQUAL(tv_search_total(&t, "bassoon", "fulltext"), NOTES);
	tv_close(&t);
}

/* A text's tokens made ahead (a first build's read-ahead) give the
 * chunks the positions its tokenizing for them gives: the same blob.
 * Stems, diacritics, Cyrillic and CJK pairs across several chunks. */
static void test_tokens_ahead(void)
{
	static const char *const PARTS[] = {
		"The churches were running meetings ",
		"Über die Straße gehen wir morgen früh ",
		"налоги были собраны вовремя ",
		"東京都の会議は午後に始まります ",
		"naïve café résumé 2024-01-05 x1 ",
		"[[Linked note|alias]] #tag/sub `code` ",
	};
	struct docz_coder *c = trained_coder();
	const struct docz_dict *dicts[] = {NULL, docz_coder_dict(c)};
	for (size_t len = 100; len < 5 * DOCZ_CHUNK; len = len * 3 + 17) {
		struct sbuf b = {0};
		for (uint32_t seed = (uint32_t)len; b.len < len;)
			sb_puts(&b,
				PARTS[next_rand(&seed) % ARRAY_SIZE(PARTS)]);
		struct tokens *toks = tokenizer_tokens(b.s, (int)b.len);
		CU_ASSERT_FATAL(toks != NULL);
		for (int k = 0; k < 2; k++) {
			size_t an, bn;
			_cleanup_free_ void *a =
				docz_pack_with(dicts[k], b.s, b.len, NULL, &an);
			_cleanup_free_ void *z =
				docz_pack_with(dicts[k], b.s, b.len, toks, &bn);
			CU_ASSERT(an == bn && !memcmp(a, z, an));
		}
		tokens_free(toks);
		sb_free(&b);
	}
	docz_coder_free(c);
}

int main(void)
{
	static const struct test_case tests[] = {
		{"texts of every size round-trip", test_round_trip},
		{"the dictionary packs smaller", test_dictionary_smaller},
		{"damage is an error", test_damaged},
		{"tokens made ahead give the same chunks", test_tokens_ahead},
		{"a store's dictionary: trained, kept, reused",
		 test_store_dictionary},
		{"a cache of the old layout is rebuilt",
		 test_old_layout_rebuilt},
	};
	return run_tests("docz", tests, ARRAY_SIZE(tests));
}
