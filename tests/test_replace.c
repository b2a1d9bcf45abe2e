/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The engine's primitives for the mount (vault_replace.c): a file renamed
 * over a note is judged as a write to it, two notes exchanged are both
 * judged, and vault_restore() puts a note back (its text, its absence,
 * its trash copy) only while no one else has changed it, with the index
 * following every step.
 */
#include "testutil.h"
#include "fileio.h"
#include "util.h"

#include <errno.h>
#include <linux/fs.h>
#include <stdio.h>

/* A vault with two notes and the tag #known in use (the default policy
 * refuses tags that exist nowhere yet). */
static void open_vault(struct tvault *t)
{
	tv_init(t);
	tv_write(t, ".obsidian/app.json", "{}");
	tv_write(t, "a.md", "alpha #known\n");
	tv_write(t, "b.md", "beta [[a]]\n");
	tv_open(t);
}

static bool indexed(struct tvault *t, const char *path)
{
	vault_read_lock(t->v);
	bool there = index_by_path(vault_index(t->v), path) != NULL;
	vault_read_unlock(t->v);
	return there;
}

static void test_replace_from_judged(void)
{
	struct tvault t;
	open_vault(&t);
	_cleanup_free_ char *msg = NULL;
	/* An editor's temporary file with a tag that exists nowhere. */
	tv_write(&t, ".a.md.swp", "alpha #brandnew\n");
	vault_write_lock(t.v);
	int r = vault_replace_from(t.v, ".a.md.swp", "a.md", 0, "test", &msg);
	vault_write_unlock(t.v);
	CU_ASSERT_EQUAL(r, -EPERM);
	CU_ASSERT_PTR_NOT_NULL(msg);
	CU_ASSERT(tv_file_is(&t, "a.md", "alpha #known\n"));
	CU_ASSERT(tv_exists(&t, ".a.md.swp"));
	/* A text the guard takes replaces the note; the index follows. */
	tv_write(&t, ".a.md.swp", "alpha two #known\n");
	vault_write_lock(t.v);
	r = vault_replace_from(t.v, ".a.md.swp", "a.md", 0, "test", &msg);
	vault_write_unlock(t.v);
	CU_ASSERT_EQUAL(r, 0);
	CU_ASSERT(tv_file_is(&t, "a.md", "alpha two #known\n"));
	CU_ASSERT_FALSE(tv_exists(&t, ".a.md.swp"));
	CU_ASSERT(indexed(&t, "a.md"));
	tv_close(&t);
}

static void test_exchange_judges_both(void)
{
	struct tvault t;
	open_vault(&t);
	tv_write(&t, "c.md", "gamma #other\n");
	tv_reindex(&t);
	_cleanup_free_ char *msg = NULL;
	vault_write_lock(t.v);
	int r = vault_replace_note(t.v, "a.md", "c.md", RENAME_EXCHANGE, "test",
				   &msg);
	vault_write_unlock(t.v);
	CU_ASSERT_EQUAL(r, 0);
	CU_ASSERT(tv_file_is(&t, "a.md", "gamma #other\n"));
	CU_ASSERT(tv_file_is(&t, "c.md", "alpha #known\n"));
	CU_ASSERT(indexed(&t, "a.md") && indexed(&t, "c.md"));
	tv_close(&t);
}

static void test_restore_text_only_if_unchanged(void)
{
	struct tvault t;
	open_vault(&t);
	const char *later = "alpha later #known\n";
	tv_write(&t, "a.md", later);
	tv_reindex(&t);
	const char *before = "alpha #known\n";
	struct vault_restore rs = {.text = before,
				   .len = strlen(before),
				   .only_if = true,
				   .hash = hash_bytes("something else", 14)};
	vault_write_lock(t.v);
	int r = vault_restore(t.v, "a.md", &rs, "test", NULL);
	vault_write_unlock(t.v);
	/* Someone else's text: left alone. */
	CU_ASSERT_EQUAL(r, -ESTALE);
	CU_ASSERT(tv_file_is(&t, "a.md", later));
	rs.hash = hash_bytes(later, strlen(later));
	vault_write_lock(t.v);
	r = vault_restore(t.v, "a.md", &rs, "test", NULL);
	vault_write_unlock(t.v);
	CU_ASSERT_EQUAL(r, 0);
	CU_ASSERT(tv_file_is(&t, "a.md", before));
	tv_close(&t);
}

static void test_restore_absent(void)
{
	struct tvault t;
	open_vault(&t);
	tv_write(&t, "new.md", "fresh #known\n");
	tv_reindex(&t);
	CU_ASSERT(indexed(&t, "new.md"));
	struct vault_restore rs = {.absent = true};
	vault_write_lock(t.v);
	int r = vault_restore(t.v, "new.md", &rs, "test", NULL);
	vault_write_unlock(t.v);
	CU_ASSERT_EQUAL(r, 0);
	CU_ASSERT_FALSE(tv_exists(&t, "new.md"));
	CU_ASSERT_FALSE(indexed(&t, "new.md"));
	/* Already gone is no error. */
	vault_write_lock(t.v);
	r = vault_restore(t.v, "new.md", &rs, "test", NULL);
	vault_write_unlock(t.v);
	CU_ASSERT_EQUAL(r, 0);
	tv_close(&t);
}

static void test_restore_from_trash(void)
{
	struct tvault t;
	open_vault(&t);
	/* A delete moved the note to .trash/ and left no text to write. */
	_cleanup_free_ char *from = xasprintf("%s/a.md", t.dir);
	_cleanup_free_ char *to = xasprintf("%s/.trash/a.md", t.dir);
	tv_write(&t, ".trash/keep", "");
	CU_ASSERT_EQUAL(rename(from, to), 0);
	tv_reindex(&t);
	CU_ASSERT_FALSE(indexed(&t, "a.md"));
	struct vault_restore rs = {.trash = ".trash/a.md"};
	bool untrashed = false;
	vault_write_lock(t.v);
	int r = vault_restore(t.v, "a.md", &rs, "test", &untrashed);
	vault_write_unlock(t.v);
	CU_ASSERT_EQUAL(r, 0);
	CU_ASSERT(untrashed);
	CU_ASSERT(tv_file_is(&t, "a.md", "alpha #known\n"));
	CU_ASSERT_FALSE(tv_exists(&t, ".trash/a.md"));
	CU_ASSERT(indexed(&t, "a.md"));
	/* Neither text nor trash copy: an error, nothing changes. */
	struct vault_restore none = {0};
	vault_write_lock(t.v);
	r = vault_restore(t.v, "a.md", &none, "test", &untrashed);
	vault_write_unlock(t.v);
	CU_ASSERT_EQUAL(r, -ENODATA);
	CU_ASSERT_FALSE(untrashed);
	CU_ASSERT(tv_file_is(&t, "a.md", "alpha #known\n"));
	tv_close(&t);
}

int main(void)
{
	static const struct test_case tests[] = {
		{"replace_from_judged", test_replace_from_judged},
		{"exchange_judges_both", test_exchange_judges_both},
		{"restore_text_only_if_unchanged",
		 test_restore_text_only_if_unchanged},
		{"restore_absent", test_restore_absent},
		{"restore_from_trash", test_restore_from_trash},
	};
	return run_tests("replace", tests, ARRAY_SIZE(tests));
}
