/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for common/engine/index.h and common/engine/note.h: names, link
 * resolution the way Obsidian does it, and incremental updates. */
#include "testutil.h"
#include "index.h"
#include "note.h"
#include "util.h"
#include "note_int.h" /* white-box: the note's fields */

#include <errno.h>

#define NFC_CAFE "Caf\xc3\xa9"
#define NFD_CAFE "Cafe\xcc\x81"

/* ---- helpers ------------------------------------------------------------ */

static struct note *put(struct index *ix, const char *path, const char *text)
{
	struct note *n = note_new(path, text, text ? strlen(text) : 0, 0);
	index_put(ix, n);
	return n;
}

static struct link *link_in(struct note *n, const char *target)
{
	for (size_t i = 0; i < n->nlinks; i++)
		if (strcmp(n->links[i].target, target) == 0)
			return &n->links[i];
	return NULL;
}

static const char *to_path(const struct link *l)
{
	return l && l->to ? l->to->path : "(none)";
}

/* Resolve a wikilink target written in src (or from the root). */
static const char *res(struct index *ix, const char *src_path,
		       const char *target, int kind)
{
	struct note *src = src_path ? index_by_path(ix, src_path) : NULL;
	bool file = false;
	struct note *n = index_resolve(ix, src, target, kind, &file);
	if (n)
		return n->path;
	return file ? "(file)" : "(none)";
}

static bool incoming_has(const struct note *n, const struct note *src)
{
	for (size_t i = 0; i < n->incoming.n; i++)
		if (((struct link *)n->incoming.v[i])->src == src)
			return true;
	return false;
}

/* ---- names -------------------------------------------------------------- */

static void test_fold_keys(void)
{
	char *a = fold_key(NFD_CAFE);
	char *b = fold_key(NFC_CAFE);
	ASSERT_STR_EQ(a, b);
	free(a);
	free(b);
	a = fold_key("ПРОЕКТ");
	b = fold_key("проект");
	ASSERT_STR_EQ(a, b);
	free(a);
	free(b);
	a = fold_key("Straße");
	b = fold_key("STRASSE");
	ASSERT_STR_EQ(a, b);
	free(a);
	free(b);
	/* Invalid UTF-8 falls back to ASCII lower-casing. */
	a = fold_key("AB\xff");
	ASSERT_STR_EQ(a, "ab\xff");
	free(a);
}

static void test_note_new_names(void)
{
	struct note *n = note_new("Projects/Sub/My Note.md", NULL, 0, 0);
	ASSERT_STR_EQ(n->path, "Projects/Sub/My Note.md");
	ASSERT_STR_EQ(n->name, "My Note");
	ASSERT_STR_EQ(n->fold_path, "projects/sub/my note.md");
	ASSERT_STR_EQ(n->fold_name, "my note");
	CU_ASSERT_EQUAL(n->dirlen, strlen("Projects/Sub"));
	CU_ASSERT_EQUAL(n->nlinks, 0);
	CU_ASSERT_EQUAL(n->ntags, 0);
	note_free(n);
	n = note_new("Root.md", NULL, 0, 0);
	CU_ASSERT_EQUAL(n->dirlen, 0);
	ASSERT_STR_EQ(n->name, "Root");
	note_free(n);
	n = note_new("d/" NFD_CAFE ".md", NULL, 0, 0);
	char *f = fold_key("d/" NFC_CAFE ".md");
	ASSERT_STR_EQ(n->fold_path, f);
	free(f);
	note_free(n);
}

static void test_note_new_contents(void)
{
	const char *t = "---\n"
			"tags: [Alpha, beta]\n"
			"aliases: [Nick, 'Other Name']\n"
			"empty:\n"
			"desc: text\n"
			"---\n"
			"Body #ALPHA #gamma\n"
			"[[Target#Sec|Shown]] and [[#Self]]\n"
			"[md](folder/File.md)\n";
	struct note *n = note_new("N.md", t, strlen(t), 0);
	CU_ASSERT_FALSE(n->fm_invalid);
	CU_ASSERT_EQUAL(n->ntags, 3); /* Alpha/ALPHA deduplicated */
	CU_ASSERT_TRUE(note_has_tag(n, "alpha"));
	CU_ASSERT_TRUE(note_has_tag(n, "Beta"));
	CU_ASSERT_TRUE(note_has_tag(n, "gamma"));
	CU_ASSERT_FALSE(note_has_tag(n, "gam"));
	ASSERT_STR_EQ(n->tags[0], "Alpha"); /* first spelling kept */
	CU_ASSERT_EQUAL(n->naliases, 2);
	ASSERT_STR_EQ(n->aliases[1], "Other Name");
	CU_ASSERT_TRUE(note_has_key(n, "desc"));
	CU_ASSERT_FALSE(note_has_key(n, "empty"));
	CU_ASSERT_EQUAL_FATAL(n->nlinks, 3);
	struct link *l = link_in(n, "Target");
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	ASSERT_STR_EQ(l->subpath, "Sec");
	ASSERT_STR_EQ(l->alias, "Shown");
	ASSERT_STR_EQ(l->key, "target");
	CU_ASSERT_EQUAL(l->line, 8);
	l = link_in(n, "");
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	CU_ASSERT_PTR_NULL(l->key);
	CU_ASSERT_FALSE(link_is_broken(l)); /* a self link is never broken */
	l = link_in(n, "folder/File.md");
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	ASSERT_STR_EQ(l->key, "file");
	CU_ASSERT_EQUAL(l->kind, LINK_MD);
	note_free(n);

	const char *bad = "---\na: 1\n  b: 2\n---\n#tag\n";
	n = note_new("B.md", bad, strlen(bad), 0);
	CU_ASSERT_TRUE(n->fm_invalid);
	CU_ASSERT_EQUAL(n->fm_err_line, 3);
	CU_ASSERT_TRUE(note_has_tag(n, "tag"));
	note_free(n);
}

/* Links in properties are the note's links, before the body's, with the
 * note's line numbers; they resolve and count like any other. */
static void test_note_prop_links(void)
{
	const char *t = "---\n"
			"title: x\n"
			"related: \"[[Target]]\"\n"
			"list:\n"
			"  - \"[[Other#Sec]]\"\n"
			"---\n"
			"Body [[Target]]\n"
			"    [[IndentedCode]]\n"
			"\n"
			"    [[Code]] $[[Math]]$\n";
	struct index *ix = index_new();
	struct note *n = put(ix, "N.md", t);
	CU_ASSERT_EQUAL_FATAL(n->nlinks, 4);
	ASSERT_STR_EQ(n->links[0].target, "Target");
	CU_ASSERT_EQUAL(n->links[0].line, 3);
	ASSERT_STR_EQ(n->links[1].target, "Other");
	ASSERT_STR_EQ(n->links[1].subpath, "Sec");
	CU_ASSERT_EQUAL(n->links[1].line, 5);
	ASSERT_STR_EQ(n->links[2].target, "Target");
	CU_ASSERT_EQUAL(n->links[2].line, 7);
	/* A lazy continuation line is text. */
	ASSERT_STR_EQ(n->links[3].target, "IndentedCode");
	CU_ASSERT_TRUE(link_is_broken(&n->links[1]));
	struct note *o = put(ix, "Other.md", "");
	CU_ASSERT_FALSE(link_is_broken(&n->links[1]));
	CU_ASSERT_TRUE(incoming_has(o, n));
	index_free(ix);
}

/* Obsidian 1.9 dropped "tag", "alias" and "cssclass" as default
 * properties (Properties, "Deprecated properties"): read only when the
 * policy keeps them. Aliases are kept as written: "AI" and "ai" are two
 * aliases of the note, found once. */
static void test_note_legacy_properties(void)
{
	const char *t = "---\n"
			"tags: [new]\n"
			"tag: old\n"
			"aliases: [AI, ai, AI]\n"
			"alias: Legacy Name\n"
			"---\n";
	struct note *n = note_new("N.md", t, strlen(t), 0);
	CU_ASSERT_EQUAL(n->ntags, 1);
	CU_ASSERT_TRUE(note_has_tag(n, "new"));
	CU_ASSERT_FALSE(note_has_tag(n, "old"));
	CU_ASSERT_EQUAL_FATAL(n->naliases, 2);
	ASSERT_STR_EQ(n->aliases[0], "AI");
	ASSERT_STR_EQ(n->aliases[1], "ai");
	CU_ASSERT_EQUAL(n->nfold_aliases, 1);
	CU_ASSERT_EQUAL(n->read_flags, 0);
	note_free(n);

	n = note_new("N.md", t, strlen(t), NOTE_READ_LEGACY_PROPERTIES);
	CU_ASSERT_EQUAL(n->ntags, 2);
	CU_ASSERT_TRUE(note_has_tag(n, "old"));
	CU_ASSERT_EQUAL_FATAL(n->naliases, 3);
	ASSERT_STR_EQ(n->aliases[2], "Legacy Name");
	CU_ASSERT_EQUAL(n->nfold_aliases, 2);
	/* The blob keeps how the note was read, and its property links. */
	size_t bl;
	void *blob = note_to_blob(n, &bl);
	struct note *back = note_from_blob("N.md", blob, bl);
	free(blob);
	CU_ASSERT_PTR_NOT_NULL_FATAL(back);
	CU_ASSERT_EQUAL(back->read_flags, NOTE_READ_LEGACY_PROPERTIES);
	CU_ASSERT_EQUAL(back->naliases, 3);
	CU_ASSERT_EQUAL(back->nfold_aliases, 2);
	note_free(back);
	note_free(n);

	/* One alias spelled two ways: one candidate, not an ambiguity. */
	struct index *ix = index_new();
	struct note *a = put(ix, "A.md", t);
	struct note *f = NULL;
	struct ptrvec c = {0};
	CU_ASSERT_EQUAL(index_find(ix, "Ai", &f, &c), 0);
	CU_ASSERT_PTR_EQUAL(f, a);
	pv_free(&c);
	index_remove(ix, "A.md");
	CU_ASSERT_EQUAL(index_find(ix, "ai", &f, NULL), -ENOENT);
	index_free(ix);
}

/* A hostile note: a million distinct inline tags, and as many aliases
 * and property links as a frontmatter may hold (FM_MAX_BYTES). Reading
 * it stays linear. */
static void read_hostile(void *ud)
{
	(void)ud;
	struct sbuf b = {0};
	sb_puts(&b, "---\naliases:\n");
	for (int i = 0; i < 20000; i++)
		sb_printf(&b, "  - A%d\n  - a%d\n", i, i);
	sb_puts(&b, "links:\n");
	for (int i = 0; i < 20000; i++)
		sb_printf(&b, "  - \"[[L%d]]\"\n", i);
	sb_puts(&b, "---\n");
	for (int i = 0; i < 1000000; i++)
		sb_printf(&b, "#t%d ", i);
	struct note *n = note_new("H.md", b.s, b.len, 0);
	CU_ASSERT_FALSE(n->fm_invalid);
	CU_ASSERT_EQUAL(n->naliases, 40000);
	CU_ASSERT_EQUAL(n->nfold_aliases, 20000);
	CU_ASSERT_EQUAL(n->ntags, 1000000);
	CU_ASSERT_EQUAL(n->nlinks, 20000);
	note_free(n);
	sb_free(&b);
}

static void test_note_hostile(void)
{
	CU_ASSERT_TRUE(run_capped(read_hostile, NULL, 1u << 30, 60));
}

static void test_tag_matches(void)
{
	CU_ASSERT_TRUE(tag_matches("vc", "vc"));
	CU_ASSERT_TRUE(tag_matches("vc/project", "vc"));
	CU_ASSERT_TRUE(tag_matches("VC/Project", "vc"));
	CU_ASSERT_FALSE(tag_matches("vcx", "vc"));
	CU_ASSERT_FALSE(tag_matches("vc", "vc/project"));
}

static void test_path_helpers(void)
{
	char *p = path_normalize("a/./b/../c");
	ASSERT_STR_EQ(p, "a/c");
	free(p);
	CU_ASSERT_PTR_NULL(path_normalize("a/../../x"));
	CU_ASSERT_PTR_NULL(path_normalize(".."));
	static const char *const norm[][2] = {
		{"/a//b/", "a/b"},
		{"a/..", ""},
		{"./x", "x"},
		{"", ""},
		{"a/b/c/../../d", "a/d"},
		{"x/.y/..z", "x/.y/..z"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(norm); i++) {
		p = path_normalize(norm[i][0]);
		ASSERT_STR_EQ(p, norm[i][1]);
		free(p);
	}
	CU_ASSERT_TRUE(path_is_note("a/b.md"));
	CU_ASSERT_TRUE(path_is_note("a/b.MD"));
	CU_ASSERT_FALSE(path_is_note(".md"));
	CU_ASSERT_FALSE(path_is_note("a/b.png"));
	p = path_note_name("a/b/Note.md");
	ASSERT_STR_EQ(p, "Note");
	free(p);
}

static void test_by_path_folded(void)
{
	struct index *ix = index_new();
	struct note *n = put(ix, "Dir/" NFC_CAFE ".md", "");
	struct note *r = put(ix, "проект.md", "");
	CU_ASSERT_PTR_EQUAL(index_by_path(ix, "dir/" NFD_CAFE ".md"), n);
	CU_ASSERT_PTR_EQUAL(index_by_path(ix, "DIR/CAFÉ.MD"), n);
	CU_ASSERT_PTR_EQUAL(index_by_path(ix, "ПРОЕКТ.md"), r);
	struct note *f = NULL;
	CU_ASSERT_EQUAL(index_find(ix, "ПРОЕКТ", &f, NULL), 0);
	CU_ASSERT_PTR_EQUAL(f, r);
	CU_ASSERT_EQUAL(index_find(ix, NFD_CAFE, &f, NULL), 0);
	CU_ASSERT_PTR_EQUAL(f, n);
	CU_ASSERT_EQUAL(index_count(ix), 2);
	index_free(ix);
}

/* ---- resolution --------------------------------------------------------- */

static void test_resolve_unique_bare(void)
{
	struct index *ix = index_new();
	put(ix, "deep/down/Note.md", "");
	put(ix, "Src.md", "[[Note]] [[note]] [[NOTE#h]]");
	ASSERT_STR_EQ(res(ix, "Src.md", "Note", LINK_WIKI),
		      "deep/down/Note.md");
	ASSERT_STR_EQ(res(ix, "Src.md", "nOtE", LINK_WIKI),
		      "deep/down/Note.md");
	ASSERT_STR_EQ(res(ix, NULL, "Note", LINK_WIKI), "deep/down/Note.md");
	ASSERT_STR_EQ(res(ix, "Src.md", "Missing", LINK_WIKI), "(none)");
	struct note *s = index_by_path(ix, "Src.md");
	for (size_t i = 0; i < s->nlinks; i++)
		ASSERT_STR_EQ(to_path(&s->links[i]), "deep/down/Note.md");
	index_free(ix);
}

static void test_resolve_same_folder_first(void)
{
	struct index *ix = index_new();
	put(ix, "Dup.md", "");
	put(ix, "f/Dup.md", "");
	put(ix, "f/g/Dup.md", "");
	put(ix, "f/g/Src.md", "");
	put(ix, "f/Src.md", "");
	ASSERT_STR_EQ(res(ix, "f/g/Src.md", "Dup", LINK_WIKI), "f/g/Dup.md");
	ASSERT_STR_EQ(res(ix, "f/Src.md", "Dup", LINK_WIKI), "f/Dup.md");
	index_free(ix);
}

static void test_resolve_shortest_path(void)
{
	struct index *ix = index_new();
	put(ix, "longer/folder/Dup.md", "");
	put(ix, "ab/Dup.md", "");
	put(ix, "other/Src.md", "");
	ASSERT_STR_EQ(res(ix, "other/Src.md", "Dup", LINK_WIKI), "ab/Dup.md");
	put(ix, "Dup.md", "");
	ASSERT_STR_EQ(res(ix, "other/Src.md", "Dup", LINK_WIKI), "Dup.md");
	index_free(ix);
}

static void test_resolve_tie_alphabetical(void)
{
	struct index *ix = index_new();
	put(ix, "b/Tie.md", "");
	put(ix, "c/Tie.md", "");
	put(ix, "a/Tie.md", "");
	put(ix, "z/Src.md", "");
	ASSERT_STR_EQ(res(ix, "z/Src.md", "Tie", LINK_WIKI), "a/Tie.md");
	ASSERT_STR_EQ(res(ix, NULL, "Tie", LINK_WIKI), "a/Tie.md");
	index_free(ix);
}

static void test_resolve_folder_suffix(void)
{
	struct index *ix = index_new();
	put(ix, "a/folder/Note.md", "");
	put(ix, "b/other/Note.md", "");
	put(ix, "Src.md", "");
	ASSERT_STR_EQ(res(ix, "Src.md", "folder/Note", LINK_WIKI),
		      "a/folder/Note.md");
	ASSERT_STR_EQ(res(ix, "Src.md", "other/Note", LINK_WIKI),
		      "b/other/Note.md");
	ASSERT_STR_EQ(res(ix, "Src.md", "a/folder/Note", LINK_WIKI),
		      "a/folder/Note.md");
	ASSERT_STR_EQ(res(ix, "Src.md", "FOLDER/note.md", LINK_WIKI),
		      "a/folder/Note.md");
	/* The suffix must be whole folder names. */
	ASSERT_STR_EQ(res(ix, "Src.md", "older/Note", LINK_WIKI), "(none)");
	ASSERT_STR_EQ(res(ix, "Src.md", "nowhere/Note", LINK_WIKI), "(none)");
	index_free(ix);
}

static void test_resolve_relative(void)
{
	struct index *ix = index_new();
	put(ix, "x.md", "");
	put(ix, "d/x.md", "");
	put(ix, "d/e/x.md", "");
	put(ix, "d/e/Src.md", "");
	ASSERT_STR_EQ(res(ix, "d/e/Src.md", "./x", LINK_WIKI), "d/e/x.md");
	ASSERT_STR_EQ(res(ix, "d/e/Src.md", "../x", LINK_WIKI), "d/x.md");
	ASSERT_STR_EQ(res(ix, "d/e/Src.md", "../../x", LINK_WIKI), "x.md");
	ASSERT_STR_EQ(res(ix, "d/e/Src.md", "../x.md", LINK_WIKI), "d/x.md");
	/* Climbing above the vault resolves to nothing (and never crashes). */
	ASSERT_STR_EQ(res(ix, "d/e/Src.md", "../../../x", LINK_WIKI), "(none)");
	ASSERT_STR_EQ(res(ix, "d/e/Src.md", "./nope", LINK_WIKI), "(none)");
	index_free(ix);
}

static void test_resolve_md_links(void)
{
	struct index *ix = index_new();
	put(ix, "d/sub/T.md", "");
	put(ix, "sub/T.md", "");
	put(ix, "sub/Only.md", "");
	put(ix, "d/Src.md", "");
	put(ix, "Top.md", "");
	/* Relative to the note first. */
	ASSERT_STR_EQ(res(ix, "d/Src.md", "sub/T.md", LINK_MD), "d/sub/T.md");
	/* Then relative to the vault root. */
	ASSERT_STR_EQ(res(ix, "d/Src.md", "sub/Only.md", LINK_MD),
		      "sub/Only.md");
	ASSERT_STR_EQ(res(ix, "d/Src.md", "/sub/T.md", LINK_MD), "sub/T.md");
	ASSERT_STR_EQ(res(ix, "d/Src.md", "../Top.md", LINK_MD), "Top.md");
	/* A markdown link is a path, not a name: no search by basename. */
	ASSERT_STR_EQ(res(ix, "d/Src.md", "Only.md", LINK_MD), "(none)");
	ASSERT_STR_EQ(res(ix, "d/Src.md", "../../../x.md", LINK_MD), "(none)");
	/* Through note_new: url-decoded target. */
	put(ix, "My Note.md", "");
	struct note *s =
		put(ix, "S2.md", "[a](My%20Note.md) [b](<My Note.md>)");
	CU_ASSERT_EQUAL(s->nlinks, 2);
	for (size_t i = 0; i < s->nlinks; i++)
		ASSERT_STR_EQ(to_path(&s->links[i]), "My Note.md");
	index_free(ix);
}

static void test_resolve_md_suffix_optional(void)
{
	struct index *ix = index_new();
	put(ix, "f/Target.md", "");
	put(ix, "f/Src.md", "");
	ASSERT_STR_EQ(res(ix, "f/Src.md", "Target", LINK_MD), "f/Target.md");
	ASSERT_STR_EQ(res(ix, "f/Src.md", "Target.md", LINK_MD), "f/Target.md");
	ASSERT_STR_EQ(res(ix, "f/Src.md", "Target.md", LINK_WIKI),
		      "f/Target.md");
	ASSERT_STR_EQ(res(ix, "f/Src.md", "Target", LINK_WIKI), "f/Target.md");
	ASSERT_STR_EQ(res(ix, "f/Src.md", "f/Target.md", LINK_WIKI),
		      "f/Target.md");
	index_free(ix);
}

static void test_resolve_attachments(void)
{
	struct index *ix = index_new();
	index_put_file(ix, "img/pic.png");
	index_put_file(ix, "docs/paper.pdf");
	put(ix, "Src.md", "");
	put(ix, "img/Src2.md", "");
	CU_ASSERT_TRUE(index_has_file(ix, "img/pic.png"));
	CU_ASSERT_TRUE(index_has_file(ix, "IMG/PIC.png"));
	CU_ASSERT_EQUAL(index_file_count(ix), 2);
	ASSERT_STR_EQ(res(ix, "Src.md", "pic.png", LINK_EMBED), "(file)");
	ASSERT_STR_EQ(res(ix, "Src.md", "paper.pdf", LINK_WIKI), "(file)");
	ASSERT_STR_EQ(res(ix, "Src.md", "img/pic.png", LINK_EMBED), "(file)");
	ASSERT_STR_EQ(res(ix, "Src.md", "img/pic.png", LINK_MD_EMBED),
		      "(file)");
	ASSERT_STR_EQ(res(ix, "img/Src2.md", "pic.png", LINK_MD_EMBED),
		      "(file)");
	ASSERT_STR_EQ(res(ix, "Src.md", "nope.png", LINK_EMBED), "(none)");
	ASSERT_STR_EQ(res(ix, "Src.md", "pic.png", LINK_MD_EMBED), "(none)");

	/* Links through note_new/index_put: bound to the file. */
	struct note *s = put(ix, "S3.md", "![[pic.png]] ![[gone.png]]");
	struct link *l = link_in(s, "pic.png");
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	CU_ASSERT_TRUE(l->resolved_file);
	CU_ASSERT_FALSE(link_is_broken(l));
	l = link_in(s, "gone.png");
	CU_ASSERT_TRUE(link_is_broken(l));
	/* Adding the attachment later resolves it; removing breaks it. */
	index_put_file(ix, "gone.png");
	CU_ASSERT_TRUE(l->resolved_file);
	CU_ASSERT_FALSE(link_is_broken(l));
	index_remove_file(ix, "gone.png");
	CU_ASSERT_TRUE(link_is_broken(l));
	index_free(ix);
}

static void test_resolve_unicode(void)
{
	struct index *ix = index_new();
	put(ix, "x/" NFC_CAFE ".md", "");
	struct note *s =
		put(ix, "Src.md", "[[" NFD_CAFE "]] [[CAFÉ]] [[проект]]");
	put(ix, "ПРОЕКТ.md", "");
	ASSERT_STR_EQ(to_path(link_in(s, NFD_CAFE)), "x/" NFC_CAFE ".md");
	ASSERT_STR_EQ(to_path(link_in(s, "CAFÉ")), "x/" NFC_CAFE ".md");
	ASSERT_STR_EQ(to_path(link_in(s, "проект")), "ПРОЕКТ.md");
	index_free(ix);
}

/* ---- incremental -------------------------------------------------------- */

static void test_incr_add_target(void)
{
	struct index *ix = index_new();
	struct note *a = put(ix, "A.md", "see [[B]]\n");
	struct link *l = link_in(a, "B");
	CU_ASSERT_PTR_NOT_NULL_FATAL(l);
	CU_ASSERT_TRUE(link_is_broken(l));
	struct note *b = put(ix, "sub/B.md", "text\n");
	/* A was not re-put: the same note, its link now bound. */
	CU_ASSERT_PTR_EQUAL(index_by_path(ix, "A.md"), a);
	CU_ASSERT_PTR_EQUAL(l->to, b);
	CU_ASSERT_FALSE(link_is_broken(l));
	CU_ASSERT_EQUAL(b->incoming.n, 1);
	CU_ASSERT_TRUE(incoming_has(b, a));
	const struct ptrvec *byk = index_links_by_key(ix, "b");
	CU_ASSERT_TRUE(byk && byk->n == 1);
	index_free(ix);
}

static void test_incr_same_folder_dup_repoints(void)
{
	struct index *ix = index_new();
	struct note *root = put(ix, "Dup.md", "");
	struct note *a = put(ix, "f/A.md", "[[Dup]]\n");
	struct link *l = link_in(a, "Dup");
	CU_ASSERT_PTR_EQUAL(l->to, root);
	CU_ASSERT_EQUAL(root->incoming.n, 1);
	struct note *local = put(ix, "f/Dup.md", "");
	CU_ASSERT_PTR_EQUAL(l->to, local);
	CU_ASSERT_EQUAL(root->incoming.n, 0);
	CU_ASSERT_EQUAL(local->incoming.n, 1);
	CU_ASSERT_TRUE(incoming_has(local, a));
	/* Removing the local one points it back to the root one. */
	CU_ASSERT_EQUAL(index_remove(ix, "f/Dup.md"), 0);
	CU_ASSERT_PTR_EQUAL(l->to, root);
	CU_ASSERT_EQUAL(root->incoming.n, 1);
	index_free(ix);
}

static void test_incr_remove_breaks(void)
{
	struct index *ix = index_new();
	struct note *a = put(ix, "A.md", "[[B]] [x](B.md) ![[B#Sec]]\n");
	put(ix, "B.md", "[[A]]\n");
	for (size_t i = 0; i < a->nlinks; i++)
		CU_ASSERT_FALSE(link_is_broken(&a->links[i]));
	CU_ASSERT_EQUAL(a->incoming.n, 1);
	CU_ASSERT_EQUAL(index_remove(ix, "B.md"), 0);
	CU_ASSERT_PTR_NULL(index_by_path(ix, "B.md"));
	for (size_t i = 0; i < a->nlinks; i++) {
		CU_ASSERT_TRUE(link_is_broken(&a->links[i]));
		CU_ASSERT_PTR_NULL(a->links[i].to);
	}
	/* B's link to A is gone with B. */
	CU_ASSERT_EQUAL(a->incoming.n, 0);
	CU_ASSERT_EQUAL(index_remove(ix, "B.md"), -ENOENT);
	/* And adding it back restores them. */
	struct note *b = put(ix, "B.md", "");
	for (size_t i = 0; i < a->nlinks; i++)
		CU_ASSERT_PTR_EQUAL(a->links[i].to, b);
	CU_ASSERT_EQUAL(b->incoming.n, 3);
	index_free(ix);
}

static void test_incr_put_changed_keeps_incoming(void)
{
	struct index *ix = index_new();
	struct note *a = put(ix, "A.md", "[[B]]\n");
	struct note *c = put(ix, "C.md", "[[B#x]] [[B]]\n");
	put(ix, "B.md", "old [[A]]\n");
	CU_ASSERT_EQUAL(a->incoming.n, 1);
	struct note *b2 = put(ix, "B.md", "new text, no links, #tag\n");
	CU_ASSERT_PTR_EQUAL(index_by_path(ix, "B.md"), b2);
	CU_ASSERT_PTR_EQUAL(link_in(a, "B")->to, b2);
	for (size_t i = 0; i < c->nlinks; i++)
		CU_ASSERT_PTR_EQUAL(c->links[i].to, b2);
	CU_ASSERT_EQUAL(b2->incoming.n, 3);
	CU_ASSERT_TRUE(incoming_has(b2, a));
	CU_ASSERT_TRUE(incoming_has(b2, c));
	/* B's old link to A went away with the old text. */
	CU_ASSERT_EQUAL(a->incoming.n, 0);
	CU_ASSERT_EQUAL(index_count(ix), 3);
	/* Re-putting A: its link to B is re-bound, no duplicate. */
	struct note *a2 = put(ix, "A.md", "[[B]] again [[B]]\n");
	CU_ASSERT_EQUAL(b2->incoming.n, 4);
	CU_ASSERT_TRUE(incoming_has(b2, a2));
	index_free(ix);
}

static void test_incr_self_links(void)
{
	struct index *ix = index_new();
	struct note *a = put(ix, "A.md", "[[A]] [[#Top]]\n");
	CU_ASSERT_PTR_EQUAL(link_in(a, "A")->to, a);
	CU_ASSERT_EQUAL(a->incoming.n, 0);
	struct note *a2 = put(ix, "A.md", "[[A]]\n");
	CU_ASSERT_PTR_EQUAL(link_in(a2, "A")->to, a2);
	CU_ASSERT_EQUAL(a2->incoming.n, 0);
	CU_ASSERT_EQUAL(index_remove(ix, "A.md"), 0);
	CU_ASSERT_EQUAL(index_count(ix), 0);
	index_free(ix);
}

static void test_incr_case_rename_same_path(void)
{
	/* "b.md" and "B.md" are the same note under case folding. */
	struct index *ix = index_new();
	struct note *a = put(ix, "A.md", "[[B]]\n");
	put(ix, "B.md", "");
	struct note *b2 = put(ix, "b.md", "");
	CU_ASSERT_EQUAL(index_count(ix), 2);
	CU_ASSERT_PTR_EQUAL(link_in(a, "B")->to, b2);
	CU_ASSERT_EQUAL(b2->incoming.n, 1);
	index_free(ix);
}

/* ---- index_find -----------------------------------------------------------
 */

static void test_find(void)
{
	struct index *ix = index_new();
	struct note *n = put(ix, "x/Note.md", "---\naliases: [Nick]\n---\n");
	put(ix, "Bob.md", "");
	put(ix, "y/Other.md", "---\naliases: [bob, Shared]\n---\n");
	put(ix, "z/Third.md", "---\naliases: [shared]\n---\n");
	struct note *f = NULL;
	CU_ASSERT_EQUAL(index_find(ix, "Note", &f, NULL), 0);
	CU_ASSERT_PTR_EQUAL(f, n);
	f = NULL;
	CU_ASSERT_EQUAL(index_find(ix, "x/Note.md", &f, NULL), 0);
	CU_ASSERT_PTR_EQUAL(f, n);
	f = NULL;
	CU_ASSERT_EQUAL(index_find(ix, "x/Note", &f, NULL), 0);
	CU_ASSERT_PTR_EQUAL(f, n);
	f = NULL;
	CU_ASSERT_EQUAL(index_find(ix, "X/NOTE", &f, NULL), 0);
	CU_ASSERT_PTR_EQUAL(f, n);
	f = NULL;
	CU_ASSERT_EQUAL(index_find(ix, "note", &f, NULL), 0);
	CU_ASSERT_PTR_EQUAL(f, n);
	f = NULL;
	CU_ASSERT_EQUAL(index_find(ix, "Note.md", &f, NULL), 0);
	CU_ASSERT_PTR_EQUAL(f, n);
	/* Alias fallback. */
	f = NULL;
	CU_ASSERT_EQUAL(index_find(ix, "nick", &f, NULL), 0);
	CU_ASSERT_PTR_EQUAL(f, n);
	/* A name beats an alias. */
	f = NULL;
	CU_ASSERT_EQUAL(index_find(ix, "bob", &f, NULL), 0);
	CU_ASSERT_PTR_EQUAL(f, index_by_path(ix, "Bob.md"));
	/* Missing. */
	CU_ASSERT_EQUAL(index_find(ix, "Nobody", &f, NULL), -ENOENT);
	CU_ASSERT_EQUAL(index_find(ix, "", &f, NULL), -ENOENT);
	CU_ASSERT_EQUAL(index_find(ix, "q/Note", &f, NULL), -ENOENT);
	/* Ambiguous alias. */
	struct ptrvec c = {0};
	CU_ASSERT_EQUAL(index_find(ix, "Shared", &f, &c), -EEXIST);
	CU_ASSERT_EQUAL(c.n, 2);
	pv_free(&c);
	index_free(ix);
}

static void test_find_ambiguous(void)
{
	struct index *ix = index_new();
	struct note *d1 = put(ix, "a/Dup.md", "");
	struct note *d2 = put(ix, "b/Dup.md", "");
	struct note *d3 = put(ix, "c/d/Dup.md", "");
	struct ptrvec c = {0};
	struct note *f = NULL;
	CU_ASSERT_EQUAL(index_find(ix, "Dup", &f, &c), -EEXIST);
	CU_ASSERT_EQUAL(c.n, 3);
	bool s1 = false, s2 = false, s3 = false;
	for (size_t i = 0; i < c.n; i++) {
		s1 |= c.v[i] == d1;
		s2 |= c.v[i] == d2;
		s3 |= c.v[i] == d3;
	}
	CU_ASSERT_TRUE(s1 && s2 && s3);
	pv_free(&c);
	CU_ASSERT_EQUAL(index_find(ix, "dup", &f, NULL), -EEXIST);
	/* A path or folder suffix picks one. */
	CU_ASSERT_EQUAL(index_find(ix, "b/Dup", &f, NULL), 0);
	CU_ASSERT_PTR_EQUAL(f, d2);
	CU_ASSERT_EQUAL(index_find(ix, "d/Dup", &f, NULL), 0);
	CU_ASSERT_PTR_EQUAL(f, d3);
	index_free(ix);
}

static void test_display_name(void)
{
	struct index *ix = index_new();
	struct note *u = put(ix, "deep/Unique.md", "");
	struct note *d1 = put(ix, "Dup.md", "");
	struct note *d2 = put(ix, "f/Dup.md", "");
	char *s = index_display_name(ix, u);
	ASSERT_STR_EQ(s, "Unique");
	free(s);
	s = index_display_name(ix, d2);
	ASSERT_STR_EQ(s, "f/Dup");
	free(s);
	s = index_display_name(ix, d1);
	ASSERT_STR_EQ(s, "Dup");
	free(s);
	/* Every handed-out name finds its note again. */
	size_t it = 0;
	struct note *n;
	while (index_next(ix, &it, &n)) {
		s = index_display_name(ix, n);
		struct note *f = NULL;
		CU_ASSERT_EQUAL(index_find(ix, s, &f, NULL), 0);
		CU_ASSERT_PTR_EQUAL(f, n);
		free(s);
	}
	/* Once the other one is gone, the short name comes back. */
	index_remove(ix, "Dup.md");
	s = index_display_name(ix, d2);
	ASSERT_STR_EQ(s, "Dup");
	free(s);
	index_free(ix);
}

static void test_generation(void)
{
	struct index *ix = index_new();
	uint64_t g = index_generation(ix), g2;
#define BUMPED()                           \
	do {                               \
		g2 = index_generation(ix); \
		CU_ASSERT_TRUE(g2 > g);    \
		g = g2;                    \
	} while (0)
	put(ix, "A.md", "[[B]]");
	BUMPED();
	put(ix, "B.md", "");
	BUMPED();
	put(ix, "B.md", "changed");
	BUMPED();
	index_put_file(ix, "p.png");
	BUMPED();
	index_remove_file(ix, "p.png");
	BUMPED();
	index_remove(ix, "B.md");
	BUMPED();
	index_remove(ix, "A.md");
	BUMPED();
#undef BUMPED
	index_free(ix);
}

static void test_tags_and_sorted(void)
{
	struct index *ix = index_new();
	put(ix, "b.md", "#Project #zeta");
	put(ix, "A.md", "#project #alpha/sub");
	const struct tag_entry *t = index_tag(ix, "PROJECT");
	CU_ASSERT_PTR_NOT_NULL_FATAL(t);
	CU_ASSERT_EQUAL(t->notes.n, 2);
	size_t n;
	struct tag_entry **all = index_tags(ix, &n);
	CU_ASSERT_EQUAL_FATAL(n, 3);
	ASSERT_STR_EQ(all[0]->display, "alpha/sub");
	ASSERT_STR_EQ(all[1]->fold, "project");
	ASSERT_STR_EQ(all[2]->display, "zeta");
	free(all);
	struct note *const *s = index_sorted(ix, &n);
	CU_ASSERT_EQUAL_FATAL(n, 2);
	ASSERT_STR_EQ(s[0]->path, "A.md");
	ASSERT_STR_EQ(s[1]->path, "b.md");
	/* Removing the last note with a tag removes the tag. */
	index_remove(ix, "b.md");
	CU_ASSERT_PTR_NULL(index_tag(ix, "zeta"));
	CU_ASSERT_EQUAL(index_tag(ix, "project")->notes.n, 1);
	index_free(ix);
}

/* ---- the on-disk form ---------------------------------------------------- */

static void assert_strv_eq(char *const *a, char *const *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ASSERT_STR_EQ(a[i], b[i]);
	CU_ASSERT_PTR_NULL(a[n]);
	CU_ASSERT_PTR_NULL(b[n]);
}

/* Every field the index uses, the same in a and b. */
static void assert_same_note(const struct note *a, const struct note *b)
{
	ASSERT_STR_EQ(a->path, b->path);
	ASSERT_STR_EQ(a->name, b->name);
	ASSERT_STR_EQ(a->fold_path, b->fold_path);
	ASSERT_STR_EQ(a->fold_name, b->fold_name);
	CU_ASSERT_EQUAL(a->dirlen, b->dirlen);
	CU_ASSERT_EQUAL(a->fold_dirlen, b->fold_dirlen);
	CU_ASSERT_EQUAL(a->ntags, b->ntags);
	assert_strv_eq(a->tags, b->tags, a->ntags);
	assert_strv_eq(a->fold_tags, b->fold_tags, a->ntags);
	CU_ASSERT_EQUAL(a->naliases, b->naliases);
	assert_strv_eq(a->aliases, b->aliases, a->naliases);
	assert_strv_eq(a->fold_aliases, b->fold_aliases, a->naliases);
	CU_ASSERT_EQUAL(strv_len(a->fm_keys), strv_len(b->fm_keys));
	assert_strv_eq(a->fm_keys, b->fm_keys, strv_len(a->fm_keys));
	CU_ASSERT_EQUAL(a->fm_invalid, b->fm_invalid);
	CU_ASSERT_EQUAL(a->fm_unread, b->fm_unread);
	CU_ASSERT_EQUAL(a->fm_err_line, b->fm_err_line);
	CU_ASSERT_EQUAL(a->too_big, b->too_big);
	CU_ASSERT_EQUAL_FATAL(a->nlinks, b->nlinks);
	for (size_t i = 0; i < a->nlinks; i++) {
		const struct link *x = &a->links[i], *y = &b->links[i];
		ASSERT_STR_EQ(x->target, y->target);
		CU_ASSERT_EQUAL(!x->subpath, !y->subpath);
		if (x->subpath && y->subpath)
			ASSERT_STR_EQ(x->subpath, y->subpath);
		CU_ASSERT_EQUAL(!x->alias, !y->alias);
		if (x->alias && y->alias)
			ASSERT_STR_EQ(x->alias, y->alias);
		CU_ASSERT_EQUAL(!x->key, !y->key);
		if (x->key && y->key)
			ASSERT_STR_EQ(x->key, y->key);
		CU_ASSERT_EQUAL(x->line, y->line);
		CU_ASSERT_EQUAL(x->kind, y->kind);
		CU_ASSERT_PTR_EQUAL(y->src, b);
	}
}

/* A restart builds notes from their stored form: it must give back the
 * note as parsed, folded names included (ASCII or not). */
/* A copy of a note blob with the layout's count k (its head: version,
 * flags, then varints: the error line and seven counts) moved by d; NULL
 * when it would go below 0. */
static void *head_changed(const unsigned char *blob, size_t len, size_t k,
			  int d, size_t *ret_len)
{
	uint32_t h[8];
	size_t at = 2;
	for (size_t i = 0; i < 8; i++) {
		h[i] = 0;
		for (int shift = 0;; shift += 7) {
			CU_ASSERT_FATAL(at < len);
			h[i] |= (uint32_t)(blob[at] & 0x7f) << shift;
			if (!(blob[at++] & 0x80))
				break;
		}
	}
	if (d < 0 && h[k + 1] == 0)
		return NULL;
	h[k + 1] = (uint32_t)((int64_t)h[k + 1] + d);
	unsigned char *out = xmalloc(len + 8);
	size_t n = 2;
	memcpy(out, blob, 2);
	for (size_t i = 0; i < 8; i++) {
		uint32_t v = h[i];
		while (v >= 0x80) {
			out[n++] = (unsigned char)(v | 0x80);
			v >>= 7;
		}
		out[n++] = (unsigned char)v;
	}
	memcpy(out + n, blob + at, len - at);
	*ret_len = n + len - at;
	return out;
}

static void test_blob_round_trip(void)
{
	static const char *const cases[][2] = {
		{"Plain.md", "plain text"},
		{"a/Über Straße.md",
		 "---\ntags: [Проект, ascii, 東京/会議]\naliases: [Æsop, "
		 "Bob]\nstatus: draft\nempty:\n---\n# Title\n"
		 "[[Ölfeld#Süd|über]] [[b/Note.MD]] ![[image.png]] "
		 "[x](../c/Dé%20j%C3%A0.md#h) [[#local]] [[ÉCOLE]] #Tag/Ünter "
		 "#x1\n"},
		{"日本/会議.md", "[[会議]] [[Missing]] #研究\n"},
		{"bad/Front.md", "---\ntags: [a\n---\nbody [[x]]\n"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct note *a = note_new(cases[i][0], cases[i][1],
					  strlen(cases[i][1]), 0);
		size_t len;
		_cleanup_free_ void *blob = note_to_blob(a, &len);
		struct note *b = note_from_blob(a->path, blob, len);
		CU_ASSERT_PTR_NOT_NULL_FATAL(b);
		assert_same_note(a, b);
		struct note *c = note_copy(b);
		CU_ASSERT_PTR_NOT_NULL_FATAL(c);
		assert_same_note(a, c);
		/* Damaged: refused, never half read. */
		for (size_t cut = 0; cut < len; cut++)
			CU_ASSERT_PTR_NULL(note_from_blob(a->path, blob, cut));
		/* A head (the layout's seven counts, varints after the
		 * version, the flags and the error line) that does not match
		 * the body: refused too. */
		for (size_t k = 0; k < 7; k++) {
			for (int d = -1; d <= 1; d += 2) {
				size_t blen;
				_cleanup_free_ void *bad =
					head_changed(blob, len, k, d, &blen);
				if (bad)
					CU_ASSERT_PTR_NULL(note_from_blob(
						a->path, bad, blen));
			}
		}
		note_free(a);
		note_free(b);
		note_free(c);
	}
	/* The name-only note of an attachment or a note too big. */
	struct note *a = note_new("f/Big.md", NULL, 0, 0);
	a->too_big = true;
	size_t len;
	_cleanup_free_ void *blob = note_to_blob(a, &len);
	struct note *b = note_from_blob(a->path, blob, len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	assert_same_note(a, b);
	note_free(a);
	note_free(b);
}

/* ---- the first build ---------------------------------------------------- */

/* The i-th note of the bulk test: shared names in several folders, links
 * of every kind (bare, paths, relative, markdown, attachments, headings,
 * non-ASCII, broken). */
static void bulk_note(int i, char **ret_path, char **ret_text)
{
	*ret_path = i % 7 == 0	  ? xasprintf("N%d.md", i % 50)
		    : i % 11 == 0 ? xasprintf("f%d/sub/" NFC_CAFE "%d.md",
					      i % 3, i % 9)
				  : xasprintf("f%d/n%d.md", i % 5, i);
	*ret_text = xasprintf(
		"[[N%d]] [[n%d]] [[f%d/n%d]] [[./n%d]] [[../N%d]] "
		"[x](n%d.md) [y](../N%d.md) ![[img%d.png]] [[doc.pdf]] "
		"[[#head]] [[" NFD_CAFE "%d]] [[f%d/sub/" NFC_CAFE "%d]] "
		"[[missing%d]] [[/N%d|alias]] [[N%d.md#h]]",
		i % 50, (i * 7) % 1300, i % 5, (i * 3) % 1300, i + 5, i % 50,
		i + 1, i % 40, i % 4, i % 9, i % 3, i % 9, i, i % 30, i % 20);
}

static void bulk_files(struct index *ix)
{
	for (int i = 0; i < 3; i++) {
		_cleanup_free_ char *p = xasprintf("f%d/img%d.png", i, i);
		index_put_file(ix, p);
	}
	index_put_file(ix, "doc.pdf");
}

/* The same links, bound to the same notes, in both indexes. */
static void same_links(struct index *a, struct index *b)
{
	size_t it = 0;
	struct note *n;
	while (index_next(a, &it, &n)) {
		struct note *m = index_by_path(b, n->path);
		CU_ASSERT_PTR_NOT_NULL_FATAL(m);
		CU_ASSERT_EQUAL_FATAL(n->nlinks, m->nlinks);
		for (size_t k = 0; k < n->nlinks; k++) {
			CU_ASSERT_STRING_EQUAL(to_path(&n->links[k]),
					       to_path(&m->links[k]));
			CU_ASSERT_EQUAL(n->links[k].resolved_file,
					m->links[k].resolved_file);
		}
		CU_ASSERT_EQUAL(n->incoming.n, m->incoming.n);
		for (size_t k = 0; k < n->incoming.n; k++) {
			const struct link *l = n->incoming.v[k];
			CU_ASSERT(incoming_has(m,
					       index_by_path(b, l->src->path)));
		}
	}
}

/* The bulk notes put one by one into one (with its files), and the same
 * notes made for a bulk put in *ret_notes (freed by the caller): how
 * many. */
static size_t bulk_both(struct index *one, struct note ***ret_notes)
{
	enum { N = 1300 };
	struct note **notes = xcalloc(N, sizeof(*notes));
	size_t n = 0;
	for (int i = 0; i < N; i++) {
		_cleanup_free_ char *path = NULL, *text = NULL;
		bulk_note(i, &path, &text);
		if (index_by_path(one, path))
			continue;
		put(one, path, text);
		notes[n++] = note_new(path, text, strlen(text), 0);
	}
	bulk_files(one);
	*ret_notes = notes;
	return n;
}

static void test_bulk_matches_incremental(void)
{
	struct index *one = index_new(), *all = index_new();
	struct note **notes;
	size_t n = bulk_both(one, &notes), bound = 0;
	index_put_all(all, notes, n);
	bulk_files(all);
	index_resolve_all(all);
	CU_ASSERT_EQUAL(index_count(one), index_count(all));
	same_links(one, all);
	same_links(all, one);
	size_t it = 0;
	struct note *x;
	while (index_next(all, &it, &x))
		for (size_t k = 0; k < x->nlinks; k++)
			bound += x->links[k].to || x->links[k].resolved_file;
	/* Not all broken: the test binds links. */
	CU_ASSERT(bound > n * 5);
	free(notes);
	index_free(one);
	index_free(all);
}

/* The notes first, their links bound later (index_put_notes(), then
 * index_bind_links()): the same index as every note put one by one, the
 * links unbound until then, and no new generation for binding them. */
static void test_bulk_names_then_links(void)
{
	struct index *one = index_new(), *all = index_new();
	struct note **notes;
	size_t n = bulk_both(one, &notes);
	index_put_notes(all, notes, n);
	bulk_files(all);
	CU_ASSERT_EQUAL(index_count(one), index_count(all));
	size_t it = 0, linked = 0, bound = 0;
	struct note *x;
	while (index_next(all, &it, &x)) {
		CU_ASSERT_PTR_NOT_NULL(index_by_name(all, x->fold_name));
		for (size_t k = 0; k < x->nlinks; k++)
			bound += x->links[k].to || x->links[k].resolved_file;
		linked += x->nlinks;
	}
	CU_ASSERT(linked > n * 5);
	CU_ASSERT_EQUAL(bound, 0);
	uint64_t gen = index_generation(all);
	index_bind_links(all);
	CU_ASSERT_EQUAL(index_generation(all), gen);
	same_links(one, all);
	same_links(all, one);
	/* The links are grouped by key: a note removed breaks its links. */
	it = 0;
	while (index_next(all, &it, &x) && !x->incoming.n)
		;
	CU_ASSERT_FATAL(x && x->incoming.n > 0);
	_cleanup_free_ char *gone = xstrdup(x->path);
	CU_ASSERT_EQUAL(index_remove(all, gone), 0);
	CU_ASSERT_EQUAL(index_remove(one, gone), 0);
	same_links(one, all);
	same_links(all, one);
	index_free(one);
	index_free(all);
}

int main(void)
{
	static const struct test_case tests[] = {
		{"fold_keys", test_fold_keys},
		{"note_new_names", test_note_new_names},
		{"note_new_contents", test_note_new_contents},
		{"note_prop_links", test_note_prop_links},
		{"note_legacy_properties", test_note_legacy_properties},
		{"note_hostile", test_note_hostile},
		{"tag_matches", test_tag_matches},
		{"path_helpers", test_path_helpers},
		{"by_path_folded", test_by_path_folded},
		{"resolve_unique_bare", test_resolve_unique_bare},
		{"resolve_same_folder_first", test_resolve_same_folder_first},
		{"resolve_shortest_path", test_resolve_shortest_path},
		{"resolve_tie_alphabetical", test_resolve_tie_alphabetical},
		{"resolve_folder_suffix", test_resolve_folder_suffix},
		{"resolve_relative", test_resolve_relative},
		{"resolve_md_links", test_resolve_md_links},
		{"resolve_md_suffix_optional", test_resolve_md_suffix_optional},
		{"resolve_attachments", test_resolve_attachments},
		{"resolve_unicode", test_resolve_unicode},
		{"incr_add_target", test_incr_add_target},
		{"incr_same_folder_dup_repoints",
		 test_incr_same_folder_dup_repoints},
		{"incr_remove_breaks", test_incr_remove_breaks},
		{"incr_put_changed_keeps_incoming",
		 test_incr_put_changed_keeps_incoming},
		{"incr_self_links", test_incr_self_links},
		{"incr_case_rename_same_path", test_incr_case_rename_same_path},
		{"find", test_find},
		{"find_ambiguous", test_find_ambiguous},
		{"display_name", test_display_name},
		{"generation", test_generation},
		{"tags_and_sorted", test_tags_and_sorted},
		{"blob_round_trip", test_blob_round_trip},
		{"bulk_matches_incremental", test_bulk_matches_incremental},
		{"bulk_names_then_links", test_bulk_names_then_links},
	};
	return run_tests("index", tests, ARRAY_SIZE(tests));
}
