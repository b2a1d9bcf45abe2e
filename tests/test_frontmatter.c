/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for common/engine/frontmatter.h: YAML reading, splice editing,
 * rendering and tag/alias lists. */
#include "testutil.h"
#include "frontmatter.h"
#include "util.h"

#include <errno.h>

/* ---- helpers ------------------------------------------------------------ */

static void parse(const char *text, struct frontmatter *fm)
{
	fm_parse(text, strlen(text), fm);
}

static const cJSON *get(const struct frontmatter *fm, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(fm->data, key);
}

static bool is_str(const cJSON *v, const char *s)
{
	bool ok = cJSON_IsString(v) && strcmp(v->valuestring, s) == 0;
	if (!ok) {
		char *p = v ? cJSON_PrintUnformatted(v) : NULL;
		fprintf(stderr, "\n    want string \"%s\", got %s ", s,
			p ? p : "(missing)");
		free(p);
	}
	return ok;
}

static bool is_num(const cJSON *v, double d)
{
	return cJSON_IsNumber(v) && v->valuedouble == d;
}

/* fm_set with a string (or NULL = remove); returns the new text. */
static char *set_str(const char *text, const char *key, const char *val)
{
	cJSON *v = val ? cJSON_CreateString(val) : NULL;
	char *out = NULL;
	int r = fm_set(text, strlen(text), key, v, &out);
	CU_ASSERT_EQUAL(r, 0);
	cJSON_Delete(v);
	return out;
}

static char *set_json(const char *text, const char *key, const char *json)
{
	cJSON *v = cJSON_Parse(json);
	CU_ASSERT_PTR_NOT_NULL_FATAL(v);
	char *out = NULL;
	int r = fm_set(text, strlen(text), key, v, &out);
	CU_ASSERT_EQUAL(r, 0);
	cJSON_Delete(v);
	return out;
}

/* Replace the first occurrence of `from` in s by `to` (malloc'd). */
static char *replace1(const char *s, const char *from, const char *to)
{
	const char *p = strstr(s, from);
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	return xasprintf("%.*s%s%s", (int)(p - s), s, to, p + strlen(from));
}

static bool strv_eq(char **got, const char *const *want)
{
	size_t i = 0;
	for (; want[i]; i++)
		if (!got[i] || strcmp(got[i], want[i]) != 0)
			goto bad;
	if (got[i])
		goto bad;
	return true;
bad:
	fprintf(stderr, "\n    list:");
	for (i = 0; got[i]; i++)
		fprintf(stderr, " [%s]", got[i]);
	fprintf(stderr, " ");
	return false;
}

/* ---- reading ------------------------------------------------------------ */

static void test_absent(void)
{
	struct frontmatter fm;
	parse("# Just a note\n", &fm);
	CU_ASSERT_FALSE(fm.present);
	CU_ASSERT_TRUE(fm.valid);
	CU_ASSERT_TRUE(cJSON_IsObject(fm.data));
	CU_ASSERT_EQUAL(cJSON_GetArraySize(fm.data), 0);
	CU_ASSERT_EQUAL(fm.nkeys, 0);
	fm_clear(&fm);
}

static void test_scalars_null_bool(void)
{
	struct frontmatter fm;
	parse("---\na: null\nb: ~\nc:\nd: true\ne: false\nf: True\ng: ''\n---\n",
	      &fm);
	CU_ASSERT_TRUE_FATAL(fm.valid);
	CU_ASSERT_TRUE(cJSON_IsNull(get(&fm, "a")));
	CU_ASSERT_TRUE(cJSON_IsNull(get(&fm, "b")));
	CU_ASSERT_TRUE(cJSON_IsNull(get(&fm, "c")));
	CU_ASSERT_TRUE(cJSON_IsTrue(get(&fm, "d")));
	CU_ASSERT_TRUE(cJSON_IsFalse(get(&fm, "e")));
	CU_ASSERT_TRUE(cJSON_IsTrue(get(&fm, "f")));
	CU_ASSERT_TRUE(is_str(get(&fm, "g"), ""));
	fm_clear(&fm);
}

static void test_scalars_numbers(void)
{
	struct frontmatter fm;
	parse("---\ni: 42\nn: -7\nz: 0\nf: 3.5\ng: -0.25\n---\n", &fm);
	CU_ASSERT_TRUE_FATAL(fm.valid);
	CU_ASSERT_TRUE(is_num(get(&fm, "i"), 42));
	CU_ASSERT_TRUE(is_num(get(&fm, "n"), -7));
	CU_ASSERT_TRUE(is_num(get(&fm, "z"), 0));
	CU_ASSERT_TRUE(is_num(get(&fm, "f"), 3.5));
	CU_ASSERT_TRUE(is_num(get(&fm, "g"), -0.25));
	fm_clear(&fm);
}

static void test_scalars_strings(void)
{
	struct frontmatter fm;
	parse("---\n"
	      "date: 2024-01-15\n"
	      "dt: 2024-01-15T10:30:00\n"
	      "ver: 1.2.3\n"
	      "q1: \"123\"\n"
	      "q2: '4.5'\n"
	      "q3: \"true\"\n"
	      "q4: 'null'\n"
	      "t: !!str 42\n"
	      "plain: hello world\n"
	      "uni: Привет 日本\n"
	      "lit: |\n  line1\n  line2\n"
	      "fold: >\n  a\n  b\n"
	      "---\n",
	      &fm);
	CU_ASSERT_TRUE_FATAL(fm.valid);
	CU_ASSERT_TRUE(is_str(get(&fm, "date"), "2024-01-15"));
	CU_ASSERT_TRUE(is_str(get(&fm, "dt"), "2024-01-15T10:30:00"));
	CU_ASSERT_TRUE(is_str(get(&fm, "ver"), "1.2.3"));
	CU_ASSERT_TRUE(is_str(get(&fm, "q1"), "123"));
	CU_ASSERT_TRUE(is_str(get(&fm, "q2"), "4.5"));
	CU_ASSERT_TRUE(is_str(get(&fm, "q3"), "true"));
	CU_ASSERT_TRUE(is_str(get(&fm, "q4"), "null"));
	CU_ASSERT_TRUE(is_str(get(&fm, "t"), "42"));
	CU_ASSERT_TRUE(is_str(get(&fm, "plain"), "hello world"));
	CU_ASSERT_TRUE(is_str(get(&fm, "uni"), "Привет 日本"));
	CU_ASSERT_TRUE(is_str(get(&fm, "lit"), "line1\nline2\n"));
	CU_ASSERT_TRUE(is_str(get(&fm, "fold"), "a b\n"));
	fm_clear(&fm);
}

static void test_lists(void)
{
	struct frontmatter fm;
	parse("---\nblock:\n  - a\n  - 2\n  - \"c\"\nflow: [x, y z, 3]\n"
	      "empty: []\nnested: [[1, 2], [a]]\n---\n",
	      &fm);
	CU_ASSERT_TRUE_FATAL(fm.valid);
	CU_ASSERT_TRUE(json_equal_text(get(&fm, "block"), "[\"a\", 2, \"c\"]"));
	CU_ASSERT_TRUE(
		json_equal_text(get(&fm, "flow"), "[\"x\", \"y z\", 3]"));
	CU_ASSERT_TRUE(json_equal_text(get(&fm, "empty"), "[]"));
	CU_ASSERT_TRUE(
		json_equal_text(get(&fm, "nested"), "[[1, 2], [\"a\"]]"));
	fm_clear(&fm);
}

static void test_nested_maps(void)
{
	struct frontmatter fm;
	parse("---\nm:\n  x: 1\n  y:\n    z: deep\n    l: [1]\nf: {a: b, c: [d]}\n"
	      "lo:\n  - name: n1\n    v: 1\n  - name: n2\n---\n",
	      &fm);
	CU_ASSERT_TRUE_FATAL(fm.valid);
	CU_ASSERT_TRUE(json_equal_text(get(&fm, "m"),
				       "{\"x\": 1, \"y\": {\"z\": \"deep\", "
				       "\"l\": [1]}}"));
	CU_ASSERT_TRUE(json_equal_text(get(&fm, "f"),
				       "{\"a\": \"b\", \"c\": [\"d\"]}"));
	CU_ASSERT_TRUE(json_equal_text(
		get(&fm, "lo"),
		"[{\"name\": \"n1\", \"v\": 1}, {\"name\": \"n2\"}]"));
	fm_clear(&fm);
}

static void test_anchors_aliases(void)
{
	struct frontmatter fm;
	parse("---\nbase: &b\n  k: v\nother: *b\nlist: &l [1, 2]\nl2: *l\n"
	      "s: &s text\ns2: *s\n---\n",
	      &fm);
	CU_ASSERT_TRUE_FATAL(fm.valid);
	CU_ASSERT_TRUE(json_equal_text(get(&fm, "other"), "{\"k\": \"v\"}"));
	CU_ASSERT_TRUE(json_equal_text(get(&fm, "l2"), "[1, 2]"));
	CU_ASSERT_TRUE(is_str(get(&fm, "s2"), "text"));
	fm_clear(&fm);
	/* An unknown alias is an error on its line. */
	parse("---\na: 1\nb: *nope\n---\n", &fm);
	CU_ASSERT_FALSE(fm.valid);
	CU_ASSERT_EQUAL(fm.err_line, 3);
	fm_clear(&fm);
}

static void test_keys_ranges(void)
{
	const char *t = "---\na: 1\n# c\nb:\n  - x\n  - y\nc: z\n---\nbody\n";
	struct frontmatter fm;
	parse(t, &fm);
	CU_ASSERT_TRUE_FATAL(fm.valid);
	CU_ASSERT_EQUAL_FATAL(fm.nkeys, 3);
	ASSERT_STR_EQ(fm.keys[0].key, "a");
	ASSERT_STR_EQ(fm.keys[1].key, "b");
	ASSERT_STR_EQ(fm.keys[2].key, "c");
	char *k0 = xstrndup(t + fm.keys[0].start,
			    fm.keys[0].end - fm.keys[0].start);
	char *k1 = xstrndup(t + fm.keys[1].start,
			    fm.keys[1].end - fm.keys[1].start);
	ASSERT_STR_EQ(k0, "a: 1\n");
	ASSERT_STR_EQ(k1, "b:\n  - x\n  - y\n");
	free(k0);
	free(k1);
	CU_ASSERT_EQUAL(fm.fm_start, 4);
	ASSERT_STR_EQ(t + fm.body_off, "body\n");
	fm_clear(&fm);
}

/* libyaml counts characters, the note is bytes: text before a key that
 * is not ASCII must not move where the key is found. */
static void test_keys_ranges_unicode(void)
{
	const char *t = "---\ntitle: Привет мир\nстатус: old\nc: 1\n---\nb\n";
	struct frontmatter fm;
	parse(t, &fm);
	CU_ASSERT_TRUE_FATAL(fm.valid);
	CU_ASSERT_EQUAL_FATAL(fm.nkeys, 3);
	char *k1 = xstrndup(t + fm.keys[1].start,
			    fm.keys[1].end - fm.keys[1].start);
	ASSERT_STR_EQ(k1, "статус: old\n");
	free(k1);
	fm_clear(&fm);
	_cleanup_free_ char *out = set_str(t, "c", "2");
	ASSERT_STR_EQ(
		out, "---\ntitle: Привет мир\nстатус: old\nc: \"2\"\n---\nb\n");
}

/* ---- links in properties --------------------------------------------------
 */

static const struct md_link *fm_link(const struct frontmatter *fm,
				     const char *target)
{
	for (size_t i = 0; i < fm->nlinks; i++)
		if (strcmp(fm->links[i].target, target) == 0)
			return &fm->links[i];
	return NULL;
}

/* The bytes a rename would replace. */
static char *raw_of(const char *t, const struct md_link *l)
{
	return xstrndup(t + l->tstart, l->tend - l->tstart);
}

/*
 * "Text properties can contain URLs and [[Internal links]]", "List values
 * can contain text, numbers, and [[Internal links]]" (Obsidian,
 * Properties), quoted as Obsidian writes them.
 */
static void test_prop_links(void)
{
	const char *t = "---\n"
			"title: Ünïcode first\n"
			"related: \"[[Target]]\"\n"
			"up: '[[Up#Part|Shown]]'\n"
			"links:\n"
			"  - \"[[Other]]\"\n"
			"  - plain text\n"
			"  - '[[Folder/Third.md]]'\n"
			"flow: [\"[[Flow1]]\", '[[Flow2]]']\n"
			"---\n"
			"body [[NotHere]]\n";
	struct frontmatter fm;
	parse(t, &fm);
	CU_ASSERT_TRUE_FATAL(fm.valid);
	CU_ASSERT_EQUAL_FATAL(fm.nlinks, 6);
	static const char *const order[] = {
		"Target", "Up", "Other", "Folder/Third.md", "Flow1", "Flow2"};
	static const int lines[] = {3, 4, 6, 8, 9, 9};
	static const char quotes[] = {'"', '\'', '"', '\'', '"', '\''};
	for (size_t i = 0; i < fm.nlinks; i++) {
		const struct md_link *l = &fm.links[i];
		ASSERT_STR_EQ(l->target, order[i]);
		CU_ASSERT_EQUAL(l->kind, LINK_WIKI);
		CU_ASSERT_EQUAL(l->line, lines[i]);
		CU_ASSERT_EQUAL(l->quote, quotes[i]);
		/* The raw target is where it is in the note. */
		_cleanup_free_ char *raw = raw_of(t, l);
		ASSERT_STR_EQ(raw, order[i]);
		CU_ASSERT_EQUAL(t[l->start], '[');
		CU_ASSERT_EQUAL(t[l->end - 1], ']');
	}
	const struct md_link *up = fm_link(&fm, "Up");
	ASSERT_STR_EQ(up->subpath, "Part");
	ASSERT_STR_EQ(up->alias, "Shown");
	CU_ASSERT_PTR_NULL(fm_link(&fm, "NotHere"));
	fm_clear(&fm);
}

static void test_prop_links_not(void)
{
	/* Unquoted, [[X]] is a list holding a list: "Internal links in
	 * text properties must be surrounded with quotes" (Properties).
	 * Text around a link is text (markdown is not rendered in
	 * properties); nested properties are not supported by Obsidian;
	 * an embed is no property link. */
	const char *t = "---\n"
			"a: [[Unquoted]]\n"
			"b:\n"
			"  - [[UnquotedItem]]\n"
			"c: \"see [[Around]]\"\n"
			"d: \"[[One]] and [[Two]]\"\n"
			"e:\n"
			"  nested: \"[[Nested]]\"\n"
			"f: [[\"[[Deep]]\"]]\n"
			"g: \"![[Embed.png]]\"\n"
			"h: \"[[]]\"\n"
			"i: 5\n"
			"---\n";
	struct frontmatter fm;
	parse(t, &fm);
	CU_ASSERT_TRUE_FATAL(fm.valid);
	CU_ASSERT_EQUAL(fm.nlinks, 0);
	fm_clear(&fm);
	/* Broken YAML: no properties, so no links. */
	parse("---\na: \"[[X]]\"\n  b: 2\n---\n", &fm);
	CU_ASSERT_FALSE(fm.valid);
	CU_ASSERT_EQUAL(fm.nlinks, 0);
	fm_clear(&fm);
}

static void test_prop_links_forms(void)
{
	/* Escapes: the raw target is the quoted target, so it can be
	 * rewritten in place. */
	const char *t = "---\n"
			"a: \"[[Tom \\\"Q\\\" B]]\"\n"
			"b: '[[It''s]]'\n"
			"c: \"[[Odd\\x41]]\"\n"
			"d: |\n"
			"  [[Block]]\n"
			"e: \"[[Long\n"
			"  Folded]]\"\n"
			"f: \" [[Spaced]] \"\n"
			"---\n";
	struct frontmatter fm;
	parse(t, &fm);
	CU_ASSERT_TRUE_FATAL(fm.valid);
	CU_ASSERT_EQUAL_FATAL(fm.nlinks, 6);
	const struct md_link *l = fm_link(&fm, "Tom \"Q\" B");
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	_cleanup_free_ char *r1 = raw_of(t, l);
	ASSERT_STR_EQ(r1, "Tom \\\"Q\\\" B");
	l = fm_link(&fm, "It's");
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	_cleanup_free_ char *r2 = raw_of(t, l);
	ASSERT_STR_EQ(r2, "It''s");
	/* An escape that is no quoting: read, but not rewritable. */
	l = fm_link(&fm, "OddA");
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	CU_ASSERT_EQUAL(l->tstart, l->tend);
	l = fm_link(&fm, "Block");
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	CU_ASSERT_EQUAL(l->quote, 0);
	CU_ASSERT_EQUAL(l->line, 6);
	_cleanup_free_ char *r3 = raw_of(t, l);
	ASSERT_STR_EQ(r3, "Block");
	/* Folded over two lines: the value says "Long Folded". */
	l = fm_link(&fm, "Long Folded");
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	CU_ASSERT_EQUAL(l->tstart, l->tend);
	CU_ASSERT_EQUAL(l->line, 7);
	CU_ASSERT_PTR_NOT_NULL(fm_link(&fm, "Spaced"));
	fm_clear(&fm);
	/* fm_quoted writes what the quotes need. */
	_cleanup_free_ char *q1 = fm_quoted("a\"b\\c'd", '"');
	ASSERT_STR_EQ(q1, "a\\\"b\\\\c'd");
	_cleanup_free_ char *q2 = fm_quoted("a\"b\\c'd", '\'');
	ASSERT_STR_EQ(q2, "a\"b\\c''d");
	_cleanup_free_ char *q3 = fm_quoted("a'b", 0);
	ASSERT_STR_EQ(q3, "a'b");
}

/* ---- hostile YAML ---------------------------------------------------------
 */

/*
 * "Billion laughs": key k0 is a list of `width` scalars, each next key a
 * list of `width` aliases of the one before. levels=9, width=9 is 372
 * bytes asking for 9^9 values.
 */
static char *alias_bomb(int levels, int width)
{
	struct sbuf b = {0};
	sb_puts(&b, "---\n");
	for (int l = 0; l < levels; l++) {
		sb_printf(&b, "%c: &%c [", 'a' + l, 'a' + l);
		for (int i = 0; i < width; i++) {
			if (l == 0)
				sb_printf(&b, "%s\"lol\"", i ? "," : "");
			else
				sb_printf(&b, "%s*%c", i ? "," : "",
					  'a' + l - 1);
		}
		sb_puts(&b, "]\n");
	}
	sb_puts(&b, "---\nThe body.\n");
	return sb_steal(&b);
}

static void parse_bomb(void *ud)
{
	const char *text = ud;
	struct frontmatter fm;
	parse(text, &fm);
	CU_ASSERT_TRUE(fm.present);
	CU_ASSERT_FALSE(fm.valid);
	ASSERT_CONTAINS(fm.err_msg, "frontmatter too complex");
	/* The line of the alias that went over the budget. */
	CU_ASSERT_TRUE(fm.err_line >= 2 && fm.err_line <= 10);
	CU_ASSERT_EQUAL(cJSON_GetArraySize(fm.data), 0);
	CU_ASSERT_EQUAL(fm.nkeys, 0);
	ASSERT_STR_EQ(text + fm.body_off, "The body.\n");
	fm_clear(&fm);
	/* Never rewritten. */
	cJSON *v = cJSON_CreateString("x");
	char *out = NULL;
	CU_ASSERT_EQUAL(fm_set(text, strlen(text), "k", v, &out), -EBADMSG);
	CU_ASSERT_PTR_NULL(out);
	cJSON_Delete(v);
}

static void test_alias_bomb(void)
{
	_cleanup_free_ char *bomb = alias_bomb(9, 9);
	CU_ASSERT_TRUE(strlen(bomb) < 400);
	/* A regression would take gigabytes and minutes: in a child with
	 * 512 MiB that must be done within seconds. */
	CU_ASSERT_TRUE(run_capped(parse_bomb, bomb, 512u << 20, 20));
}

static void parse_budget(void *ud)
{
	(void)ud;
	/* 5 levels of 9: 74,732 values, under the budget. */
	_cleanup_free_ char *ok = alias_bomb(5, 9);
	struct frontmatter fm;
	parse(ok, &fm);
	CU_ASSERT_TRUE(fm.valid);
	CU_ASSERT_EQUAL(cJSON_GetArraySize(get(&fm, "e")), 9);
	const cJSON *leaf = get(&fm, "e");
	for (int i = 0; i < 5 && leaf; i++)
		leaf = cJSON_GetArrayItem(leaf, 8);
	CU_ASSERT_TRUE(is_str(leaf, "lol"));
	fm_clear(&fm);
	/* One level more (672,603 values) is over: no partial data. */
	_cleanup_free_ char *over = alias_bomb(6, 9);
	parse(over, &fm);
	CU_ASSERT_FALSE(fm.valid);
	ASSERT_CONTAINS(fm.err_msg, "frontmatter too complex");
	CU_ASSERT_EQUAL(fm.err_line, 7); /* "f: &f [*e, ..." */
	CU_ASSERT_EQUAL(cJSON_GetArraySize(fm.data), 0);
	fm_clear(&fm);
	/* Wide instead of deep: one anchor repeated 100,001 times. */
	struct sbuf b = {0};
	sb_puts(&b, "---\na: &a x\nb: [");
	for (int i = 0; i <= FM_MAX_NODES; i++)
		sb_puts(&b, i ? ",*a" : "*a");
	sb_puts(&b, "]\n---\n");
	parse(sb_str(&b), &fm);
	CU_ASSERT_FALSE(fm.valid);
	ASSERT_CONTAINS(fm.err_msg, "frontmatter too complex");
	fm_clear(&fm);
	sb_free(&b);
}

static void test_alias_budget(void)
{
	CU_ASSERT_TRUE(run_capped(parse_budget, NULL, 512u << 20, 60));
}

static void test_frontmatter_size_cap(void)
{
	/* Over 1 MiB of YAML: refused before it is parsed. */
	struct sbuf b = {0};
	sb_puts(&b, "---\ntitle: big\nnotes: |\n");
	while (b.len <= FM_MAX_BYTES)
		sb_puts(&b, "  a line of text in a block scalar\n");
	sb_puts(&b, "---\nbody\n");
	struct frontmatter fm;
	parse(sb_str(&b), &fm);
	CU_ASSERT_TRUE(fm.present);
	CU_ASSERT_FALSE(fm.valid);
	ASSERT_CONTAINS(fm.err_msg, "frontmatter too large");
	CU_ASSERT_EQUAL(fm.err_line, 2);
	ASSERT_STR_EQ(sb_str(&b) + fm.body_off, "body\n");
	fm_clear(&fm);
	/* Just under it, it is read. */
	sb_free(&b);
	sb_puts(&b, "---\ntitle: big\nnotes: |\n");
	while (b.len < FM_MAX_BYTES - 100)
		sb_puts(&b, "  a line of text in a block scalar\n");
	sb_puts(&b, "---\nbody\n");
	parse(sb_str(&b), &fm);
	CU_ASSERT_TRUE(fm.valid);
	CU_ASSERT_TRUE(is_str(get(&fm, "title"), "big"));
	fm_clear(&fm);
	sb_free(&b);
}

/* ---- invalid ------------------------------------------------------------ */

static void test_invalid_line_number(void)
{
	struct frontmatter fm;
	/* Line 3 of the file is the bad one. */
	parse("---\na: 1\n  b: 2\n---\nbody\n", &fm);
	CU_ASSERT_TRUE(fm.present);
	CU_ASSERT_FALSE(fm.valid);
	CU_ASSERT_EQUAL(fm.err_line, 3);
	CU_ASSERT_PTR_NOT_NULL(fm.err_msg);
	CU_ASSERT_TRUE(cJSON_IsObject(fm.data));
	CU_ASSERT_EQUAL(cJSON_GetArraySize(fm.data), 0);
	fm_clear(&fm);
	parse("---\ntitle: x\ntags: [a\nnext: 1\n---\n", &fm);
	CU_ASSERT_FALSE(fm.valid);
	CU_ASSERT_TRUE(fm.err_line >= 3 && fm.err_line <= 5);
	fm_clear(&fm);
	/* An unclosed quote is reported where it starts. */
	parse("---\na: 1\nb: \"unterminated\nc: 2\n---\n", &fm);
	CU_ASSERT_FALSE(fm.valid);
	CU_ASSERT_EQUAL(fm.err_line, 3);
	fm_clear(&fm);
	parse("---\na: b: c\n---\n", &fm);
	CU_ASSERT_FALSE(fm.valid);
	CU_ASSERT_EQUAL(fm.err_line, 2);
	fm_clear(&fm);
}

static void test_invalid_duplicate_keys(void)
{
	struct frontmatter fm;
	parse("---\na: 1\nb: 2\na: 3\n---\n", &fm);
	CU_ASSERT_FALSE(fm.valid);
	CU_ASSERT_EQUAL(fm.err_line, 4);
	ASSERT_CONTAINS(fm.err_msg, "'a'");
	fm_clear(&fm);
	/* Nested duplicates too. */
	parse("---\nm:\n  x: 1\n  x: 2\n---\n", &fm);
	CU_ASSERT_FALSE(fm.valid);
	CU_ASSERT_EQUAL(fm.err_line, 4);
	fm_clear(&fm);
}

static void test_invalid_not_mapping(void)
{
	struct frontmatter fm;
	parse("---\n- a\n- b\n---\n", &fm);
	CU_ASSERT_TRUE(fm.present);
	CU_ASSERT_FALSE(fm.valid);
	CU_ASSERT_EQUAL(fm.err_line, 2);
	fm_clear(&fm);
	parse("---\njust text\n---\n", &fm);
	CU_ASSERT_FALSE(fm.valid);
	fm_clear(&fm);
	parse("---\n42\n---\n", &fm);
	CU_ASSERT_FALSE(fm.valid);
	fm_clear(&fm);
	/* A second document inside the block. */
	parse("---\na: 1\n---\nb: 2\n", &fm);
	CU_ASSERT_TRUE(fm.valid); /* the block ends at the first "---" */
	fm_clear(&fm);
}

static void test_empty_block(void)
{
	struct frontmatter fm;
	parse("---\n---\nbody\n", &fm);
	CU_ASSERT_TRUE(fm.present);
	CU_ASSERT_TRUE(fm.valid);
	CU_ASSERT_EQUAL(cJSON_GetArraySize(fm.data), 0);
	CU_ASSERT_EQUAL(fm.nkeys, 0);
	fm_clear(&fm);
	parse("---\n# only a comment\n\n---\n", &fm);
	CU_ASSERT_TRUE(fm.present);
	CU_ASSERT_TRUE(fm.valid);
	CU_ASSERT_EQUAL(cJSON_GetArraySize(fm.data), 0);
	fm_clear(&fm);
}

/* ---- fm_set ---------------------------------------------------------------
 */

static const char DOC[] = "---\n"
			  "# leading comment\n"
			  "title: 'Quoted Title'\n"
			  "tags:\n"
			  "  - a\n"
			  "  - b\n"
			  "\n"
			  "# about status\n"
			  "status: draft   # inline\n"
			  "flow: {x: 1,\n"
			  "  y: 2}\n"
			  "last: \"end\"\n"
			  "---\n"
			  "Body text\n"
			  "status: not yaml\n";

static void test_set_replace_keeps_bytes(void)
{
	char *out = set_str(DOC, "status", "done");
	char *want =
		replace1(DOC, "status: draft   # inline\n", "status: done\n");
	ASSERT_STR_EQ(out, want);
	free(out);
	free(want);

	out = set_str(DOC, "title", "New");
	want = replace1(DOC, "title: 'Quoted Title'\n", "title: New\n");
	ASSERT_STR_EQ(out, want);
	free(out);
	free(want);

	/* A multi-line value: the blank and comment lines after it stay. */
	out = set_json(DOC, "tags", "[\"x\"]");
	want = replace1(DOC, "tags:\n  - a\n  - b\n", "tags:\n  - x\n");
	ASSERT_STR_EQ(out, want);
	free(out);
	free(want);

	out = set_str(DOC, "flow", "f");
	want = replace1(DOC, "flow: {x: 1,\n  y: 2}\n", "flow: f\n");
	ASSERT_STR_EQ(out, want);
	free(out);
	free(want);

	out = set_str(DOC, "last", "z");
	want = replace1(DOC, "last: \"end\"\n", "last: z\n");
	ASSERT_STR_EQ(out, want);
	free(out);
	free(want);
}

static void test_set_multiline_and_nested(void)
{
	/* A plain scalar continued on the next line is one value. */
	char *out =
		set_str("---\ndesc: first line\n  continued\nnext: 1\n---\nB\n",
			"desc", "new");
	ASSERT_STR_EQ(out, "---\ndesc: new\nnext: 1\n---\nB\n");
	free(out);
	/* Only the top-level key is touched, not a nested one. */
	out = set_str("---\nmeta:\n  status: x\nstatus: y\n---\n", "status",
		      "z");
	ASSERT_STR_EQ(out, "---\nmeta:\n  status: x\nstatus: z\n---\n");
	free(out);
	/* Unindented block list. */
	out = set_str("---\nlist:\n- a\n- b\nnext: 1\n---\n", "list", NULL);
	ASSERT_STR_EQ(out, "---\nnext: 1\n---\n");
	free(out);
	/* Quoted keys are found by their value. */
	out = set_str("---\n\"quoted key\": 1\n'b': 2\n---\n", "b", "3");
	ASSERT_STR_EQ(out, "---\n\"quoted key\": 1\nb: \"3\"\n---\n");
	free(out);
	/* CRLF: the other lines keep their bytes. */
	out = set_str("---\r\na: 1\r\nb: 2\r\n---\r\nB\r\n", "a", NULL);
	ASSERT_STR_EQ(out, "---\r\nb: 2\r\n---\r\nB\r\n");
	free(out);
}

static void test_set_add_appends(void)
{
	char *out = set_str(DOC, "new", "value");
	char *want = replace1(DOC, "last: \"end\"\n---\n",
			      "last: \"end\"\nnew: value\n---\n");
	ASSERT_STR_EQ(out, want);
	free(out);
	free(want);
	/* Into an empty block. */
	out = set_str("---\n---\nbody\n", "k", "v");
	ASSERT_STR_EQ(out, "---\nk: v\n---\nbody\n");
	free(out);
}

static void test_set_remove(void)
{
	char *out = set_str(DOC, "status", NULL);
	char *want = replace1(DOC, "status: draft   # inline\n", "");
	ASSERT_STR_EQ(out, want);
	free(out);
	free(want);
	out = set_str(DOC, "tags", NULL);
	want = replace1(DOC, "tags:\n  - a\n  - b\n", "");
	ASSERT_STR_EQ(out, want);
	free(out);
	free(want);
	/* Removing a key that is not there changes nothing. */
	out = set_str(DOC, "missing", NULL);
	ASSERT_STR_EQ(out, DOC);
	free(out);
	out = set_str("no frontmatter\n", "missing", NULL);
	ASSERT_STR_EQ(out, "no frontmatter\n");
	free(out);
}

static void test_set_creates_block(void)
{
	char *out = set_str("# Title\nbody\n", "status", "new");
	ASSERT_STR_EQ(out, "---\nstatus: new\n---\n# Title\nbody\n");
	free(out);
	out = set_str("", "a", "b");
	ASSERT_STR_EQ(out, "---\na: b\n---\n");
	free(out);
}

static void test_set_invalid_yaml_refused(void)
{
	const char *bad = "---\na: 1\n  b: 2\n---\nbody\n";
	cJSON *v = cJSON_CreateString("x");
	char *sentinel = (char *)"untouched";
	char *out = sentinel;
	CU_ASSERT_EQUAL(fm_set(bad, strlen(bad), "c", v, &out), -EBADMSG);
	CU_ASSERT_PTR_EQUAL(out, sentinel);
	CU_ASSERT_EQUAL(fm_set(bad, strlen(bad), "a", NULL, &out), -EBADMSG);
	CU_ASSERT_PTR_EQUAL(out, sentinel);
	const char *dup = "---\na: 1\na: 2\n---\n";
	CU_ASSERT_EQUAL(fm_set(dup, strlen(dup), "a", v, &out), -EBADMSG);
	CU_ASSERT_PTR_EQUAL(out, sentinel);
	cJSON_Delete(v);
}

static void roundtrip_string(const char *s)
{
	const char *base = "---\nother: 1\n---\nbody\n";
	char *out = set_str(base, "v", s);
	struct frontmatter fm;
	parse(out, &fm);
	CU_ASSERT_TRUE(fm.valid);
	if (!fm.valid)
		fprintf(stderr, "\n    [%s] -> %s: %s ", s, out, fm.err_msg);
	else if (!is_str(get(&fm, "v"), s))
		fprintf(stderr, "for [%s] written as:\n%s", s, out);
	CU_ASSERT_TRUE(is_num(get(&fm, "other"), 1));
	ASSERT_STR_EQ(out + fm.body_off, "body\n");
	fm_clear(&fm);
	free(out);

	/* As a list item, and as a key. */
	cJSON *l = cJSON_CreateArray();
	cJSON_AddItemToArray(l, cJSON_CreateString(s));
	out = NULL;
	CU_ASSERT_EQUAL(fm_set(base, strlen(base), "l", l, &out), 0);
	parse(out, &fm);
	cJSON *item = cJSON_GetArrayItem(get(&fm, "l"), 0);
	CU_ASSERT_TRUE(fm.valid && is_str(item, s));
	fm_clear(&fm);
	free(out);
	cJSON_Delete(l);

	if (*s && !strchr(s, '\n')) {
		cJSON *one = cJSON_CreateNumber(1);
		out = NULL;
		CU_ASSERT_EQUAL(fm_set(base, strlen(base), s, one, &out), 0);
		parse(out, &fm);
		CU_ASSERT_TRUE(fm.valid && is_num(get(&fm, s), 1));
		fm_clear(&fm);
		free(out);
		cJSON_Delete(one);
	}
}

static void test_set_quoting_roundtrip(void)
{
	static const char *const vals[] = {
		"@John",
		"yes: no",
		"[[Link]]",
		"#tag",
		"",
		" lead",
		"trail ",
		"123",
		"-4.5",
		"1e3",
		"0x1F",
		"true",
		"False",
		"null",
		"~",
		"multi\nline\ntext",
		"Привет, 日本語 🎉",
		"a #not comment",
		"ends with colon:",
		"- item",
		"? q",
		"!tag",
		"&anchor",
		"*alias",
		"{curly}",
		"'single'",
		"\"double\"",
		"back\\slash",
		"tab\there",
		"%percent",
		"`tick`",
		"|pipe",
		">fold",
		"2024-01-15",
		"a, b",
		"key: value # c",
		"---",
		"...",
		"plain text",
		"x\r\ny",
		"ctrl\x01char",
	};
	for (size_t i = 0; i < ARRAY_SIZE(vals); i++)
		roundtrip_string(vals[i]);
}

static void test_set_other_types(void)
{
	const char *base = "---\na: 1\n---\n";
	char *out = set_json(base, "n", "3");
	ASSERT_STR_EQ(out, "---\na: 1\nn: 3\n---\n");
	free(out);
	out = set_json(base, "f", "2.5");
	ASSERT_STR_EQ(out, "---\na: 1\nf: 2.5\n---\n");
	free(out);
	out = set_json(base, "b", "false");
	ASSERT_STR_EQ(out, "---\na: 1\nb: false\n---\n");
	free(out);
	out = set_json(base, "z", "null");
	ASSERT_STR_EQ(out, "---\na: 1\nz: null\n---\n");
	free(out);
	static const char *const vals[] = {
		"{\"m\": {\"k\": [1, \"two\", {\"x\": null}]}}",
		"[{\"a\": 1, \"b\": \"@x\"}, {\"c\": [1, 2]}]",
		"[[\"a\", \"#b\"], []]",
		"{}",
		"[]",
		"-17",
		"0.125",
	};
	for (size_t i = 0; i < ARRAY_SIZE(vals); i++) {
		out = set_json(base, "v", vals[i]);
		struct frontmatter fm;
		parse(out, &fm);
		CU_ASSERT_TRUE(fm.valid);
		CU_ASSERT_TRUE(json_equal_text(get(&fm, "v"), vals[i]));
		fm_clear(&fm);
		free(out);
	}
}

/*
 * U+2028, U+2029 and U+0085 (NEL) are line breaks to libyaml: written
 * values must escape them so the frontmatter still parses to the same value.
 */
static void test_set_unicode_line_breaks(void)
{
	roundtrip_string("a\xe2\x80\xa8"
			 "b");
	roundtrip_string("a\xe2\x80\xa9"
			 "b");
	roundtrip_string("a\xc2\x85"
			 "b");
}

/*
 * Numbers are written in their shortest form (0.1, as Python and
 * Obsidian write them), not as 0.10000000000000001.
 */
static void test_set_float_shortest(void)
{
	const char *base = "---\na: 1\n---\n";
	char *out = set_json(base, "f", "0.1");
	ASSERT_STR_EQ(out, "---\na: 1\nf: 0.1\n---\n");
	free(out);
	out = set_json(base, "f", "4.7");
	ASSERT_STR_EQ(out, "---\na: 1\nf: 4.7\n---\n");
	free(out);
}

static void test_set_list_block(void)
{
	char *out = set_json("---\ntitle: x\n---\n", "tags",
			     "[\"a\", \"b c\", \"#d\"]");
	ASSERT_STR_EQ(
		out, "---\ntitle: x\ntags:\n  - a\n  - b c\n  - \"#d\"\n---\n");
	free(out);
}

static void test_render_object(void)
{
	cJSON *o = cJSON_Parse(
		"{\"title\": \"Hello\", \"tags\": [\"a\", \"b\"], \"count\": 2, "
		"\"done\": false, \"none\": null, \"empty\": [], "
		"\"meta\": {\"k\": \"v\", \"l\": [1]}, \"q\": \"@me\"}");
	char *y = fm_render_object(o);
	ASSERT_STR_EQ(y, "title: Hello\n"
			 "tags:\n"
			 "  - a\n"
			 "  - b\n"
			 "count: 2\n"
			 "done: false\n"
			 "none: null\n"
			 "empty: []\n"
			 "meta:\n"
			 "  k: v\n"
			 "  l:\n"
			 "    - 1\n"
			 "q: \"@me\"\n");
	/* And it reads back as the same object. */
	char *doc = xasprintf("---\n%s---\n", y);
	struct frontmatter fm;
	parse(doc, &fm);
	CU_ASSERT_TRUE(fm.valid);
	CU_ASSERT_TRUE(cJSON_Compare(fm.data, o, true));
	fm_clear(&fm);
	free(doc);
	free(y);
	cJSON_Delete(o);
	cJSON *e = cJSON_CreateObject();
	y = fm_render_object(e);
	ASSERT_STR_EQ(y, "");
	free(y);
	cJSON_Delete(e);
}

/* ---- fm_string_list -------------------------------------------------------
 */

static void test_string_list(void)
{
	cJSON *s = cJSON_CreateString("a, b c");
	char **l = fm_string_list(s, true, true);
	CU_ASSERT_TRUE(strv_eq(l, (const char *const[]){"a", "b", "c", NULL}));
	strv_free(l);
	l = fm_string_list(s, false, false);
	CU_ASSERT_TRUE(strv_eq(l, (const char *const[]){"a", "b c", NULL}));
	strv_free(l);
	cJSON_Delete(s);

	s = cJSON_CreateString("#one #two,#three");
	l = fm_string_list(s, true, true);
	CU_ASSERT_TRUE(
		strv_eq(l, (const char *const[]){"one", "two", "three", NULL}));
	strv_free(l);
	cJSON_Delete(s);

	cJSON *a = cJSON_Parse("[\"#x\", \" y \", 2024, null, \"\", \"z w\"]");
	l = fm_string_list(a, true, true);
	CU_ASSERT_TRUE(strv_eq(
		l, (const char *const[]){"x", "y", "2024", "z w", NULL}));
	strv_free(l);
	l = fm_string_list(a, false, false);
	CU_ASSERT_TRUE(strv_eq(
		l, (const char *const[]){"#x", "y", "2024", "z w", NULL}));
	strv_free(l);
	cJSON_Delete(a);

	l = fm_string_list(NULL, true, true);
	CU_ASSERT_PTR_NULL(l[0]);
	strv_free(l);
	cJSON *n = cJSON_CreateNull();
	l = fm_string_list(n, true, true);
	CU_ASSERT_PTR_NULL(l[0]);
	strv_free(l);
	cJSON_Delete(n);
}

int main(void)
{
	static const struct test_case tests[] = {
		{"absent", test_absent},
		{"scalars_null_bool", test_scalars_null_bool},
		{"scalars_numbers", test_scalars_numbers},
		{"scalars_strings", test_scalars_strings},
		{"lists", test_lists},
		{"nested_maps", test_nested_maps},
		{"anchors_aliases", test_anchors_aliases},
		{"keys_ranges", test_keys_ranges},
		{"alias_bomb", test_alias_bomb},
		{"alias_budget", test_alias_budget},
		{"frontmatter_size_cap", test_frontmatter_size_cap},
		{"invalid_line_number", test_invalid_line_number},
		{"invalid_duplicate_keys", test_invalid_duplicate_keys},
		{"invalid_not_mapping", test_invalid_not_mapping},
		{"empty_block", test_empty_block},
		{"set_replace_keeps_bytes", test_set_replace_keeps_bytes},
		{"set_multiline_and_nested", test_set_multiline_and_nested},
		{"set_add_appends", test_set_add_appends},
		{"set_remove", test_set_remove},
		{"set_creates_block", test_set_creates_block},
		{"set_invalid_yaml_refused", test_set_invalid_yaml_refused},
		{"set_quoting_roundtrip", test_set_quoting_roundtrip},
		{"set_other_types", test_set_other_types},
		{"set_unicode_line_breaks", test_set_unicode_line_breaks},
		{"set_float_shortest", test_set_float_shortest},
		{"set_list_block", test_set_list_block},
		{"render_object", test_render_object},
		{"string_list", test_string_list},
		{"keys_ranges_unicode", test_keys_ranges_unicode},
		{"prop_links", test_prop_links},
		{"prop_links_not", test_prop_links_not},
		{"prop_links_forms", test_prop_links_forms},
	};
	return run_tests("frontmatter", tests, ARRAY_SIZE(tests));
}
