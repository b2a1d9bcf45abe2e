/* SPDX-License-Identifier: GPL-2.0-or-later */
/* vault-mcp's set of vaults: names made unique, read-only folders, and
 * load_vault's checks (allowed roots, real paths, hostile input). */
#include "testutil.h"
#include "util.h"
#include "vault_set.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>

static char root[PATH_MAX];

static char *mkvault(const char *rel, bool obsidian)
{
	char *p = xasprintf("%s/%s", root, rel);
	_cleanup_free_ char *cmd =
		xasprintf("mkdir -p '%s%s'", p, obsidian ? "/.obsidian" : "");
	CU_ASSERT_EQUAL(system(cmd), 0);
	return p;
}

static struct vault_set *new_set(void)
{
	static const struct vset_config cfg = {.idle_exit = "600"};
	return vset_new(&cfg);
}

static void setup(void)
{
	snprintf(root, sizeof(root), "%s/vset-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(root));
	char real[PATH_MAX];
	CU_ASSERT_PTR_NOT_NULL_FATAL(realpath(root, real));
	strcpy(root, real);
}

static void teardown(void)
{
	_cleanup_free_ char *cmd =
		xasprintf("chmod -R u+w '%s'; rm -rf '%s'", root, root);
	CU_ASSERT_EQUAL(system(cmd), 0);
}

static void test_names(void)
{
	setup();
	struct vault_set *vs = new_set();
	_cleanup_free_ char *a = mkvault("a/My Notes!", true);
	_cleanup_free_ char *b = mkvault("b/My Notes!", true);
	_cleanup_free_ char *c = mkvault("c/.hidden", true);
	_cleanup_free_ char *d = mkvault("d/\xc3\xa9t\xc3\xa9", true);
	_cleanup_free_ char *e = mkvault("e/!!!", true);
	/* 31 ASCII bytes, then a 2-byte character across the limit. */
	_cleanup_free_ char *f =
		mkvault("f/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\xc3\xa9zz", true);
	char *msg = NULL;
	CU_ASSERT_EQUAL(vset_add(vs, a, false, &msg), 0);
	CU_ASSERT_EQUAL(vset_add(vs, b, false, &msg), 1);
	CU_ASSERT_EQUAL(vset_add(vs, c, false, &msg), 2);
	CU_ASSERT_EQUAL(vset_add(vs, d, false, &msg), 3);
	CU_ASSERT_EQUAL(vset_add(vs, e, false, &msg), 4);
	/* The same folder, spelt otherwise: the same vault. */
	_cleanup_free_ char *a2 = xasprintf("%s/a/../a/My Notes!/", root);
	CU_ASSERT_EQUAL(vset_add(vs, a2, false, &msg), 0);
	CU_ASSERT_EQUAL(vset_count(vs), 5);
	ASSERT_STR_EQ(vset_name(vs, 4), "vault");
	CU_ASSERT_EQUAL(vset_add(vs, f, false, &msg), 5);
	ASSERT_STR_EQ(vset_name(vs, 5), "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	ASSERT_STR_EQ(vset_name(vs, 0), "My-Notes");
	ASSERT_STR_EQ(vset_name(vs, 1), "My-Notes-2");
	ASSERT_STR_EQ(vset_name(vs, 2), "hidden");
	ASSERT_STR_EQ(vset_name(vs, 3), "\xc3\xa9t\xc3\xa9");
	CU_ASSERT_EQUAL(vset_find(vs, "my-notes-2"), 1);
	CU_ASSERT_EQUAL(vset_find(vs, a), 0);
	CU_ASSERT_EQUAL(vset_find(vs, "nope"), -1);
	_cleanup_free_ char *names = vset_names(vs);
	ASSERT_STR_EQ(names,
		      "My-Notes, My-Notes-2, hidden, \xc3\xa9t\xc3\xa9, vault, "
		      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	CU_ASSERT_TRUE(vset_multi(vs));
	CU_ASSERT_FALSE(vset_connected(vs, 0));
	vset_free(vs);
	teardown();
}

static void test_read_only(void)
{
	setup();
	struct vault_set *vs = new_set();
	_cleanup_free_ char *a = mkvault("rw", true);
	_cleanup_free_ char *b = mkvault("ro", true);
	_cleanup_free_ char *c = mkvault("flag", true);
	CU_ASSERT_EQUAL(chmod(b, 0555), 0);
	char *msg = NULL;
	vset_add(vs, a, false, &msg);
	vset_add(vs, b, false, &msg);
	vset_add(vs, c, true, &msg);
	CU_ASSERT_FALSE(vset_read_only(vs, 0));
	CU_ASSERT_TRUE(vset_read_only(vs, 1));
	CU_ASSERT_TRUE(vset_read_only(vs, 2));
	vset_free(vs);
	teardown();
}

/* vset_load refuses with -err and a message holding want. */
static void refused(struct vault_set *vs, const char *path, const char *name,
		    int err, const char *want)
{
	char *msg = NULL;
	int r = vset_load(vs, path, name, &msg);
	CU_ASSERT_EQUAL(r, -err);
	ASSERT_CONTAINS(msg, want);
	if (r >= 0 || !msg || !strstr(msg, want))
		fprintf(stderr, "load %.80s: %d %s\n", path, r, msg);
	free(msg);
}

static void test_load(void)
{
	setup();
	struct vault_set *vs = new_set();
	_cleanup_free_ char *conf = mkvault("conf", true);
	_cleanup_free_ char *allowed = mkvault("allowed", false);
	_cleanup_free_ char *inside = mkvault("allowed/in", true);
	_cleanup_free_ char *outside = mkvault("outside", true);
	_cleanup_free_ char *plain = mkvault("allowed/plain", false);
	_cleanup_free_ char *near = mkvault("allowed-not", true);
	_cleanup_free_ char *link = xasprintf("%s/allowed/link", root);
	CU_ASSERT_EQUAL(symlink(outside, link), 0);
	char *msg = NULL;
	CU_ASSERT_EQUAL(vset_add(vs, conf, false, &msg), 0);
	CU_ASSERT_FALSE(vset_multi(vs));
	/* No root: only the configured vault loads (the same one). */
	CU_ASSERT_EQUAL(vset_load(vs, conf, NULL, &msg), 0);
	refused(vs, inside, NULL, EPERM, "none: only the configured vaults");
	CU_ASSERT_EQUAL(vset_add_root(vs, allowed, &msg), 0);
	CU_ASSERT_TRUE(vset_multi(vs));
	CU_ASSERT_EQUAL(vset_add_root(vs, "/no/such/dir", &msg), -ENOTDIR);
	free(TAKE_PTR(msg));

	CU_ASSERT_EQUAL(vset_load(vs, inside, NULL, &msg), 1);
	ASSERT_STR_EQ(vset_name(vs, 1), "in");
	CU_ASSERT_EQUAL(vset_load(vs, inside, "other", &msg), 1);
	ASSERT_STR_EQ(vset_name(vs, 1), "in");

	refused(vs, outside, NULL, EPERM, "outside the folders");
	refused(vs, near, NULL, EPERM, "outside the folders");
	refused(vs, link, NULL, EPERM, "outside the folders");
	_cleanup_free_ char *dots = xasprintf("%s/allowed/../outside", root);
	refused(vs, dots, NULL, EPERM, "outside the folders");
	refused(vs, "/", NULL, EPERM, "outside the folders");
	refused(vs, plain, NULL, EINVAL, "not an Obsidian vault");
	refused(vs, "allowed/in", NULL, EINVAL, "not absolute");
	refused(vs, "", NULL, EINVAL, "not absolute");
	refused(vs, "/x\ty", NULL, EINVAL, "control character");
	refused(vs, "/\xff\xfe", NULL, EINVAL, "UTF-8");
	_cleanup_free_ char *missing = xasprintf("%s/allowed/gone", root);
	refused(vs, missing, NULL, ENOENT, "No such file");
	char huge[PATH_MAX + 10];
	memset(huge, 'a', sizeof(huge) - 1);
	huge[0] = '/';
	huge[sizeof(huge) - 1] = 0;
	refused(vs, huge, NULL, EINVAL, "shorter than PATH_MAX");

	_cleanup_free_ char *v2 = mkvault("allowed/deep/v2", true);
	refused(vs, v2, "../x", EINVAL, "letters, digits");
	refused(vs, v2, ".dot", EINVAL, "not starting with '.'");
	refused(vs, v2, "a b", EINVAL, "letters, digits");
	refused(vs, v2, "", EINVAL, "letters, digits");
	refused(vs, v2, "0123456789012345678901234567890123", EINVAL,
		"letters, digits");
	refused(vs, v2, "\xff", EINVAL, "letters, digits");
	refused(vs, v2, "IN", EEXIST, "taken");
	CU_ASSERT_EQUAL(vset_load(vs, v2, "Second_1.x", &msg), 2);
	ASSERT_STR_EQ(vset_name(vs, 2), "Second_1.x");
	CU_ASSERT_EQUAL(vset_count(vs), 3);
	vset_free(vs);
	teardown();
}

int main(void)
{
	static const struct test_case tests[] = {
		{"names", test_names},
		{"read_only", test_read_only},
		{"load", test_load},
	};
	return run_tests("vault_set", tests, ARRAY_SIZE(tests));
}
