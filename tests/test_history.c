/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Note history: every step of a note's life (created, edited by a tool,
 * edited outside, renamed, restored) is a version with the right author;
 * versions read back exactly; diffs are exact; restore goes through the
 * guard and adds a version; git itself reads the same log; a user's own
 * .git is untouched; batches coalesce; a damaged repository is re-created;
 * a restart reads the log back.
 */
#include "history.h"
#include "testutil.h"
#include "u8.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct history *attach(struct tvault *t)
{
	struct history *h = NULL;
	char *note = NULL;
	CU_ASSERT_EQUAL_FATAL(
		history_open(vault_rootfd(t->v), vault_root(t->v), &h, &note),
		0);
	free(note);
	vault_attach_history(t->v, h);
	return h;
}

/* The vault opened, its history attached and the notes recorded. */
static struct history *open_recorded(struct tvault *t)
{
	tv_open(t);
	struct history *h = attach(t);
	CU_ASSERT(vault_history_scan(t->v) >= 0);
	return h;
}

static void detach(struct tvault *t, struct history *h)
{
	history_stop(h);
	vault_attach_history(t->v, NULL);
	history_free(h);
}

static char *call_text(struct tvault *t, const char *tool, const char *args)
{
	struct tool_result r = {0};
	tv_call(t, tool, args, &r);
	if (r.is_error)
		fprintf(stderr, "  %s %s: %s\n", tool, args, r.text);
	CU_ASSERT_FALSE(r.is_error);
	char *s = r.text ? xstrdup(r.text) : NULL;
	tool_result_clear(&r);
	return s;
}

/* The ids of a history text, newest first. */
static size_t ids_of(const char *text, char ids[][8], size_t max)
{
	size_t n = 0;
	for (const char *p = text; n < max && (p = strstr(p, "\n- "));) {
		p += 3;
		memcpy(ids[n], p, 7);
		ids[n][7] = 0;
		n++;
	}
	return n;
}

static char *run(const char *cmd)
{
	FILE *f = popen(cmd, "r");
	if (!f)
		return NULL;
	char *s = read_stream(f);
	pclose(f);
	return s;
}

/* A tool call made in an MCP session. */
static cJSON *session_call(struct tvault *t, const char *session,
			   const char *tool, const char *args, bool ok)
{
	cJSON *a = cJSON_Parse(args);
	struct tool_call call = {.source = "mcp", .session = session};
	struct tool_result r;
	tools_call_ex(t->v, tool, a, &call, &r);
	cJSON_Delete(a);
	if (r.is_error != !ok)
		fprintf(stderr, "  %s %s: %s\n", tool, args, r.text);
	CU_ASSERT_EQUAL(r.is_error, !ok);
	cJSON *o = ok ? TAKE_PTR(r.structured) : cJSON_CreateString(r.text);
	tool_result_clear(&r);
	return o;
}

static const char *jget(const cJSON *o, const char *k)
{
	return cJSON_GetStringValue(cJSON_GetObjectItem(o, k));
}

/*
 * The changes of a session: recorded with it (and read back after a
 * restart), listed newest first with the versions before and after,
 * paged, and undone: edits, a rename with its linking note, a delete and
 * a create, but not a note changed afterwards by another writer.
 */
static void test_session_changes(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "A.md", "a\n");
	tv_write(&t, "B.md", "b\n");
	tv_write(&t, "Ref.md", "see [[B]]\n");
	tv_write(&t, "E.md", "e\n");
	tv_write(&t, "X.md", "x\n");
	struct history *h = open_recorded(&t);
	cJSON_Delete(session_call(&t, "s1", "append_note",
				  "{\"name\":\"A\",\"text\":\"one\"}", true));
	cJSON_Delete(session_call(&t, "s1", "rename_note",
				  "{\"old_name\":\"B\",\"new_name\":\"C\"}",
				  true));
	cJSON_Delete(session_call(&t, "s1", "delete_note", "{\"name\":\"E\"}",
				  true));
	cJSON_Delete(session_call(&t, "s1", "create_note",
				  "{\"name\":\"F\",\"content\":\"f\\n\"}",
				  true));
	cJSON_Delete(session_call(&t, "s1", "append_note",
				  "{\"name\":\"X\",\"text\":\"s1\"}", true));
	/* Another session's change, and one made outside, after s1's. */
	cJSON_Delete(session_call(&t, "s2", "append_note",
				  "{\"name\":\"A\",\"text\":\"s2\"}", true));
	cJSON_Delete(session_call(&t, "s2", "append_note",
				  "{\"name\":\"A\",\"text\":\"s2 again\"}",
				  true));
	tv_write(&t, "X.md", "x\n\ns1\nedited outside\n");
	CU_ASSERT_EQUAL(vault_sync_path(t.v, "X.md", "external", 0), 0);

	/* Recorded: the writer is the tool, the session apart. */
	struct history_change *v = NULL;
	size_t n = 0;
	uint64_t next = 1;
	struct history_filter f = {.session = "s1"};
	CU_ASSERT_EQUAL(history_changes(h, &f, 0, 100, &v, &n, &next), 0);
	CU_ASSERT_EQUAL(n, 6);
	CU_ASSERT_EQUAL(next, 0);
	static const char *const want[][3] = {
		{"mcp:append_note", "C", "X.md"},
		{"mcp:create_note", "C", "F.md"},
		{"mcp:delete_note", "D", "E.md"},
		{"mcp:rename_note", "C", "Ref.md"},
		{"mcp:rename_note", "R", "C.md"},
		{"mcp:append_note", "C", "A.md"},
	};
	for (size_t i = 0; i < n && i < ARRAY_SIZE(want); i++) {
		ASSERT_STR_EQ(v[i].writer, want[i][0]);
		CU_ASSERT_EQUAL(v[i].kind, want[i][1][0]);
		ASSERT_STR_EQ(v[i].path, want[i][2]);
		ASSERT_STR_EQ(v[i].session, "s1");
	}
	char ver[TEXT_VERSION_LEN + 1];
	text_version("a\n", 2, ver);
	ASSERT_STR_EQ(v[5].before, ver);
	text_version("a\n\none", 6, ver);
	ASSERT_STR_EQ(v[5].after, ver);
	ASSERT_STR_EQ(v[4].from, "B.md");
	ASSERT_STR_EQ(v[1].before, "");
	ASSERT_STR_EQ(v[2].after, "");
	history_changes_free(v, n);
	/* Paged: 4, then 2; s2 has its own two (in one commit). */
	CU_ASSERT_EQUAL(history_changes(h, &f, 0, 4, &v, &n, &next), 0);
	CU_ASSERT_EQUAL(n, 4);
	CU_ASSERT_NOT_EQUAL(next, 0);
	history_changes_free(v, n);
	CU_ASSERT_EQUAL(history_changes(h, &f, next, 4, &v, &n, &next), 0);
	CU_ASSERT_EQUAL(n, 2);
	CU_ASSERT_EQUAL(next, 0);
	if (n == 2)
		ASSERT_STR_EQ(v[1].path, "A.md");
	history_changes_free(v, n);
	f.session = "s2";
	CU_ASSERT_EQUAL(history_changes(h, &f, 0, 100, &v, &n, &next), 0);
	CU_ASSERT_EQUAL(n, 1); /* one batch: the note's last text */
	history_changes_free(v, n);

	/* A restart reads the sessions back from the commits. */
	detach(&t, h);
	h = attach(&t);
	CU_ASSERT_EQUAL(vault_history_scan(t.v), 0);
	f.session = "s1";
	CU_ASSERT_EQUAL(history_changes(h, &f, 0, 100, &v, &n, &next), 0);
	CU_ASSERT_EQUAL(n, 6);
	history_changes_free(v, n);

	/* Bad arguments: clear errors. */
	cJSON *e = session_call(&t, "s1", "list_changes",
				"{\"session\":\"a b\"}", false);
	ASSERT_CONTAINS(e->valuestring, "Invalid session");
	cJSON_Delete(e);
	e = session_call(&t, "s1", "undo_changes", "{\"since\":\"soon\"}",
			 false);
	ASSERT_CONTAINS(e->valuestring, "Invalid since");
	cJSON_Delete(e);
	e = session_call(&t, "s1", "undo_changes", "{}", false);
	ASSERT_CONTAINS(e->valuestring, "this session is s1");
	cJSON_Delete(e);

	/* Undo: A and X are conflicts (s2, outside), the rest comes back. */
	cJSON *r = session_call(&t, "s3", "undo_changes",
				"{\"session\":\"s1\",\"dry_run\":true}", true);
	CU_ASSERT(cJSON_IsTrue(cJSON_GetObjectItem(r, "dry_run")));
	CU_ASSERT_EQUAL(cJSON_GetArraySize(cJSON_GetObjectItem(r, "undone")),
			4);
	CU_ASSERT_EQUAL(cJSON_GetArraySize(cJSON_GetObjectItem(r, "conflicts")),
			2);
	char *b = tv_read(&t, "C.md");
	ASSERT_STR_EQ(b, "b\n"); /* nothing written */
	free(b);
	cJSON_Delete(r);
	r = session_call(&t, "s3", "undo_changes", "{\"session\":\"s1\"}",
			 true);
	const cJSON *c;
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(r, "conflicts"))
	{
		const char *note = jget(c, "note");
		CU_ASSERT(!strcmp(note, "A.md") || !strcmp(note, "X.md"));
		ASSERT_CONTAINS(jget(c, "changes_diff"),
				!strcmp(note, "A.md") ? "\n+one" : "\n+s1");
	}
	cJSON_Delete(r);
	char *s = tv_read(&t, "B.md");
	ASSERT_STR_EQ(s, "b\n");
	free(s);
	s = tv_read(&t, "Ref.md");
	ASSERT_STR_EQ(s, "see [[B]]\n");
	free(s);
	s = tv_read(&t, "E.md");
	ASSERT_STR_EQ(s, "e\n");
	free(s);
	CU_ASSERT_FALSE(tv_exists(&t, "F.md"));
	CU_ASSERT_FALSE(tv_exists(&t, "C.md"));
	CU_ASSERT(tv_exists(&t, ".trash/F.md"));
	s = tv_read(&t, "A.md");
	ASSERT_STR_EQ(s, "a\n\none\n\ns2\n\ns2 again");
	free(s);
	s = tv_read(&t, "X.md");
	ASSERT_STR_EQ(s, "x\n\ns1\nedited outside\n");
	free(s);
	/* The undo is s3's: a list of s3's changes has each step. */
	r = session_call(&t, "s3", "list_changes", "{}", true);
	char *dump = cJSON_PrintUnformatted(r);
	ASSERT_CONTAINS(dump, "\"note\":\"Ref.md\",\"change\":\"changed\"");
	ASSERT_CONTAINS(dump, "\"note\":\"F.md\",\"change\":\"deleted\"");
	ASSERT_CONTAINS(dump, "\"note\":\"B.md\",\"from\":\"C.md\"");
	ASSERT_CONTAINS(dump, "\"note\":\"E.md\",\"change\":\"created\"");
	free(dump);
	ASSERT_STR_EQ(
		jget(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "changes"), 0),
		     "tool"),
		"undo_changes");
	cJSON_Delete(r);
	detach(&t, h);
	tv_close(&t);
}

static void test_lifecycle(void)
{
	struct tvault t;
	tv_init(&t);
	/* A user's own repository in the vault. */
	tv_write(&t, ".git/HEAD", "ref: refs/heads/master\n");
	tv_write(&t, ".git/config", "[core]\n\tbare = false\n");
	tv_write(&t, "Home.md", "# Home\n[[Plan]] #project\n");
	char *cmd = xasprintf("cd '%s/.git' && find . -type f | sort | xargs "
			      "md5sum; stat -c %%Y .",
			      t.dir);
	char *git_before = run(cmd);
	tv_open(&t);
	struct history *h = attach(&t);
	CU_ASSERT_EQUAL(vault_history_scan(t.v), 1);

	char *s = call_text(&t, "get_note_history", "{\"name\":\"Home\"}");
	ASSERT_CONTAINS(s, "Version history for Home:");
	ASSERT_CONTAINS(s, "by vaultd\n  Initial state: 1 note");
	free(s);

	/* Created and edited by tools, edited outside, renamed. */
	free(call_text(&t, "create_note",
		       "{\"name\":\"Plan\",\"content\":\"one\\n\"}"));
	history_commit(h, true);
	free(call_text(&t, "append_note",
		       "{\"name\":\"Plan\",\"text\":\"two\"}"));
	history_commit(h, true);
	tv_write(&t, "Plan.md", "one\ntwo\nthree\n");
	CU_ASSERT_EQUAL(vault_sync_path(t.v, "Plan.md", "external", 0), 0);
	history_commit(h, true);
	free(call_text(
		&t, "rename_note",
		"{\"old_name\":\"Plan\",\"new_name\":\"work/Project\"}"));
	history_commit(h, true);

	s = call_text(&t, "get_note_history", "{\"name\":\"Project\"}");
	char ids[8][8];
	CU_ASSERT_EQUAL(ids_of(s, ids, 8), 4);
	ASSERT_CONTAINS(s, "Version history for work/Project:");
	ASSERT_CONTAINS(s, "by test\n  Update 2 notes: work/Project, Home");
	ASSERT_CONTAINS(s, "by external\n  Update note: Plan\n");
	ASSERT_CONTAINS(s, "by test\n  Update note: Plan\n");
	/* Newest first: rename, external, append, create. */
	const char *p1 = strstr(s, "Update 2 notes");
	const char *p2 = strstr(s, "by external");
	const char *p3 = p2 ? strstr(p2, "by test\n  Update note: Plan") : NULL;
	CU_ASSERT_TRUE(p1 && p2 && p3 && p1 < p2);
	free(s);
	/* The rename rewrote Home's link: Home's history has it too. */
	s = call_text(&t, "get_note_history", "{\"name\":\"Home\"}");
	CU_ASSERT_EQUAL(ids_of(s, ids + 4, 4), 2);
	free(s);
	s = call_text(&t, "get_note_history", "{\"name\":\"Project\"}");
	ids_of(s, ids, 8);
	free(s);

	/* A version's text and details. */
	char *args =
		xasprintf("{\"name\":\"Project\",\"version\":\"%s\"}", ids[3]);
	s = call_text(&t, "get_note_version", args);
	free(args);
	ASSERT_CONTAINS(s, "# Plan (version ");
	ASSERT_CONTAINS(s, "**Path:** Plan\n**Tags:** (none)\n**Version:** ");
	CU_ASSERT_TRUE(s && strlen(s) > 8 &&
		       !strcmp(s + strlen(s) - 9, "---\n\none\n"));
	free(s);

	/* Exact diffs. */
	args = xasprintf("{\"name\":\"Project\",\"from_version\":\"%s\","
			 "\"to_version\":\"%s\"}",
			 ids[3], ids[1]);
	s = call_text(&t, "diff_note_versions", args);
	free(args);
	char *want = xasprintf("Diff for work/Project (%s \xe2\x86\x92 %s):\n\n"
			       "+2 additions, -0 deletions\n\n"
			       "--- a/Plan.md\n+++ b/Plan.md\n"
			       "@@ -1 +1,3 @@\n one\n+two\n+three\n",
			       ids[3], ids[1]);
	ASSERT_STR_EQ(s, want);
	free(want);
	free(s);

	/* Restore: through the guard, a new version. */
	args = xasprintf("{\"name\":\"Project\",\"version\":\"%s\"}", ids[3]);
	s = call_text(&t, "restore_note_version", args);
	free(args);
	want = xasprintf("Restored note 'Project' to version %s", ids[3]);
	ASSERT_STR_EQ(s, want);
	free(want);
	free(s);
	s = tv_read(&t, "work/Project.md");
	ASSERT_STR_EQ(s, "one\n");
	free(s);
	history_commit(h, true);
	s = call_text(&t, "get_note_history",
		      "{\"name\":\"Project\",\"limit\":2}");
	ASSERT_CONTAINS(s, "by test\n  Update note: work/Project\n");
	ASSERT_CONTAINS(s, "(2 of 5 versions shown");
	free(s);

	/* git reads the same log; the user's .git is untouched. */
	char *git = xasprintf("git --git-dir='%s/.vaultd/history.git' log "
			      "--format='%%an|%%s' 2>/dev/null",
			      t.dir);
	s = run(git);
	if (s && *s)
		ASSERT_STR_EQ(s, "test|Update note: work/Project\n"
				 "test|Update 2 notes: work/Project, Home\n"
				 "external|Update note: Plan\n"
				 "test|Update note: Plan\n"
				 "test|Update note: Plan\n"
				 "vaultd|Initial state: 1 note\n");
	free(s);
	free(git);
	char *git_after = run(cmd);
	ASSERT_STR_EQ(git_after, git_before);
	free(git_after);
	free(git_before);
	free(cmd);

	/* Errors. */
	char *e = tv_call_err(&t, "get_note_version",
			      "{\"name\":\"Project\",\"version\":\"0000000\"}");
	ASSERT_STR_EQ(e, "Version '0000000' not found");
	free(e);
	e = tv_call_err(&t, "get_note_version",
			"{\"name\":\"Project\",\"version\":\"xyz\"}");
	ASSERT_CONTAINS(e, "Invalid version 'xyz'");
	free(e);
	e = tv_call_err(&t, "get_note_history", "{\"name\":\"Nope\"}");
	CU_ASSERT_PTR_NOT_NULL(e);
	free(e);
	args = xasprintf("{\"name\":\"Home\",\"version\":\"%s\"}", ids[3]);
	free(call_text(&t, "get_note_version", args));
	free(args);
	/* Home existed from the start: the create of Plan is a version of
	 * the vault where Home has its first text. Plan did not exist in
	 * the initial state. */
	s = call_text(&t, "get_note_history", "{\"name\":\"Home\"}");
	char hid[2][8];
	ids_of(s, hid, 2);
	free(s);
	args = xasprintf("{\"name\":\"Project\",\"version\":\"%s\"}", hid[1]);
	e = tv_call_err(&t, "get_note_version", args);
	free(args);
	ASSERT_CONTAINS(e, "did not exist in version");
	free(e);

	/* Packing: the loose objects go, everything still reads. */
	CU_ASSERT_EQUAL(history_pack(h), 1);
	char *loose =
		xasprintf("find '%s/.vaultd/history.git/objects' -type f "
			  "-regex '.*/objects/[0-9a-f][0-9a-f]/.*' | wc -l",
			  t.dir);
	s = run(loose);
	ASSERT_STR_EQ(s, "0\n");
	free(s);
	free(loose);
	git = xasprintf("git --git-dir='%s/.vaultd/history.git' fsck --strict "
			">/dev/null 2>&1 && echo ok",
			t.dir);
	s = run(git);
	if (s && *s)
		ASSERT_STR_EQ(s, "ok\n");
	free(s);
	free(git);
	CU_ASSERT_EQUAL(history_pack(h), 0); /* nothing new */
	args = xasprintf("{\"name\":\"Project\",\"version\":\"%s\"}", ids[3]);
	s = call_text(&t, "get_note_version", args);
	free(args);
	ASSERT_CONTAINS(s, "\n---\n\none\n");
	free(s);

	/* A restart reads the log back; nothing new is committed. */
	detach(&t, h);
	h = attach(&t);
	CU_ASSERT_EQUAL(vault_history_scan(t.v), 0);
	size_t versions;
	uint64_t bytes;
	history_stats(h, &versions, &bytes);
	CU_ASSERT_EQUAL(versions, 6);
	CU_ASSERT_TRUE(bytes > 0);
	s = call_text(&t, "get_note_history", "{\"name\":\"Project\"}");
	CU_ASSERT_EQUAL(ids_of(s, ids, 8), 5);
	free(s);
	detach(&t, h);
	tv_close(&t);
}

static void test_restore_is_guarded(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "A.md", "alpha #oldtag\n");
	tv_write(&t, "B.md", "beta #keep\n");
	struct history *h = open_recorded(&t);
	free(call_text(&t, "update_note",
		       "{\"name\":\"A\",\"content\":\"alpha, no tag\\n\"}"));
	history_commit(h, true);
	char *s = call_text(&t, "get_note_history", "{\"name\":\"A\"}");
	char ids[2][8];
	CU_ASSERT_EQUAL(ids_of(s, ids, 2), 2);
	free(s);
	/* oldtag is in no note any more: restoring it is refused like any
	 * write that brings a new tag. */
	char *args = xasprintf("{\"name\":\"A\",\"version\":\"%s\"}", ids[1]);
	char *e = tv_call_err(&t, "restore_note_version", args);
	free(args);
	ASSERT_CONTAINS(e, "Tags not in allowed list: ['oldtag']");
	free(e);
	s = tv_read(&t, "A.md");
	ASSERT_STR_EQ(s, "alpha, no tag\n");
	free(s);
	detach(&t, h);
	tv_close(&t);
}

/* A deleted or renamed-away note's history is reached by its former
 * name, path or .trash/ path; a deleted note can be restored at its old
 * path, through the guard. */
static void test_gone_notes(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "Gone.md", "first text\n");
	tv_write(&t, "dir/Moved.md", "moved text\n");
	tv_write(&t, "Keep.md", "keep\n");
	struct history *h = open_recorded(&t);
	free(call_text(&t, "update_note",
		       "{\"name\":\"Gone\",\"content\":\"second text\\n\"}"));
	history_commit(h, true);
	free(call_text(&t, "delete_note", "{\"name\":\"Gone\"}"));
	free(call_text(&t, "rename_note",
		       "{\"old_name\":\"dir/Moved\","
		       "\"new_name\":\"dir/Now\"}"));
	history_commit(h, true);
	/* By former name, path, .trash/ path: the same versions. */
	char *s = call_text(&t, "get_note_history", "{\"name\":\"Gone\"}");
	char ids[3][8];
	CU_ASSERT_EQUAL(ids_of(s, ids, 3), 3); /* deleted, second, first */
	free(s);
	s = call_text(&t, "get_note_history", "{\"name\":\"Gone.md\"}");
	CU_ASSERT_EQUAL(ids_of(s, ids, 3), 3);
	free(s);
	s = call_text(&t, "get_note_history", "{\"name\":\".trash/Gone.md\"}");
	CU_ASSERT_EQUAL(ids_of(s, ids, 3), 3);
	free(s);
	s = call_text(&t, "get_note_history", "{\"name\":\"dir/Moved\"}");
	CU_ASSERT(s && strstr(s, "\n- "));
	free(s);
	char *e = tv_call_err(&t, "get_note_history", "{\"name\":\"Never\"}");
	ASSERT_CONTAINS(e, "not found");
	free(e);
	/* Restore the first text of the deleted note: back at its path. */
	char *args =
		xasprintf("{\"name\":\"Gone\",\"version\":\"%s\"}", ids[2]);
	free(call_text(&t, "restore_note_version", args));
	free(args);
	s = tv_read(&t, "Gone.md");
	ASSERT_STR_EQ(s, "first text\n");
	free(s);
	s = call_text(&t, "read_note", "{\"name\":\"Gone\"}");
	ASSERT_STR_EQ(s, "first text\n");
	free(s);
	detach(&t, h);
	tv_close(&t);
}

static void test_batches(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "A.md", "a\n");
	tv_write(&t, "B.md", "b\n");
	struct history *h = open_recorded(&t);
	/* One writer, close together: one commit, not due yet. */
	free(call_text(&t, "append_note", "{\"name\":\"A\",\"text\":\"1\"}"));
	free(call_text(&t, "append_note", "{\"name\":\"B\",\"text\":\"2\"}"));
	free(call_text(&t, "append_note", "{\"name\":\"A\",\"text\":\"3\"}"));
	CU_ASSERT_EQUAL(history_commit(h, false), 0);
	CU_ASSERT_EQUAL(history_commit(h, true), 1);
	size_t n;
	uint64_t bytes;
	history_stats(h, &n, &bytes);
	CU_ASSERT_EQUAL(n, 2);
	/* Another writer: a commit of its own. */
	free(call_text(&t, "append_note", "{\"name\":\"A\",\"text\":\"4\"}"));
	tv_write(&t, "B.md", "b changed outside\n");
	vault_sync_path(t.v, "B.md", "external", 0);
	history_commit(h, true);
	history_stats(h, &n, &bytes);
	CU_ASSERT_EQUAL(n, 4);
	/* A write that changes nothing makes no version. */
	free(call_text(
		&t, "update_note",
		"{\"name\":\"B\",\"content\":\"b changed outside\\n\"}"));
	CU_ASSERT_EQUAL(history_commit(h, true), 0);
	/* Deleted: a version of its own; created again: a new life. */
	free(call_text(&t, "delete_note", "{\"name\":\"B\"}"));
	history_commit(h, true);
	free(call_text(&t, "create_note",
		       "{\"name\":\"B\",\"content\":\"new b\\n\"}"));
	history_commit(h, true);
	char *s = call_text(&t, "get_note_history", "{\"name\":\"B\"}");
	char ids[8][8];
	CU_ASSERT_EQUAL(ids_of(s, ids, 8), 1);
	free(s);
	detach(&t, h);
	tv_close(&t);
}

/* The text of the newest version of name (get_note_version's body). */
static char *newest_text(struct tvault *t, const char *name)
{
	char *args = xasprintf("{\"name\":\"%s\"}", name);
	char *s = call_text(t, "get_note_history", args);
	free(args);
	char ids[1][8];
	size_t n = s ? ids_of(s, ids, 1) : 0;
	free(s);
	if (!n)
		return NULL;
	args = xasprintf("{\"name\":\"%s\",\"version\":\"%s\"}", name, ids[0]);
	s = call_text(t, "get_note_version", args);
	free(args);
	const char *body = s ? strstr(s, "---\n\n") : NULL;
	char *text = body ? xstrdup(body + 5) : NULL;
	free(s);
	return text;
}

/* A writer's change is committed later, by the history thread, with the
 * text that writer left: a change made meanwhile (not yet seen) does not
 * take its place. */
static void test_queued_text(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "A.md", "a\n");
	struct history *h = open_recorded(&t);
	free(call_text(&t, "append_note", "{\"name\":\"A\",\"text\":\"b\"}"));
	char *mine = tv_read(&t, "A.md");
	tv_write(&t, "A.md", "changed outside\n");
	CU_ASSERT_EQUAL(history_commit(h, true), 1);
	char *s = newest_text(&t, "A");
	ASSERT_STR_EQ(s, mine);
	free(s);
	CU_ASSERT_EQUAL(vault_sync_path(t.v, "A.md", "external", 0), 0);
	CU_ASSERT_EQUAL(history_commit(h, true), 1);
	s = newest_text(&t, "A");
	ASSERT_STR_EQ(s, "changed outside\n");
	free(s);
	s = call_text(&t, "get_note_history", "{\"name\":\"A\"}");
	ASSERT_CONTAINS(s, "by external\n  Update note: A\n");
	ASSERT_CONTAINS(s, "by test\n  Update note: A\n");
	free(s);
	free(mine);
	detach(&t, h);
	tv_close(&t);
}

/* Queued text is bounded: past it, the writer commits the queue. */
static void test_queue_bounded(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "A.md", "a\n");
	struct history *h = open_recorded(&t);
	size_t before, after;
	uint64_t bytes;
	history_stats(h, &before, &bytes);
	enum { BIG = 1 << 20, NOTES = 24 };
	char *text = xmalloc(BIG + 1);
	for (size_t i = 0; i < BIG; i++)
		text[i] = (i % 64 == 63) ? '\n' : (char)('a' + i % 26);
	text[BIG] = 0;
	for (int i = 0; i < NOTES; i++) {
		char name[32];
		snprintf(name, sizeof(name), "big%02d.md", i);
		text[0] = (char)('A' + i);
		tv_write(&t, name, text);
		CU_ASSERT_EQUAL(vault_sync_path(t.v, name, "external", 0), 0);
	}
	/* Nobody called history_commit(): the writers did, once. */
	history_stats(h, &after, &bytes);
	CU_ASSERT_EQUAL(after, before + 1);
	CU_ASSERT_EQUAL(history_commit(h, true), 1);
	history_stats(h, &after, &bytes);
	CU_ASSERT_EQUAL(after, before + 2);
	free(text);
	detach(&t, h);
	tv_close(&t);
}

static void test_damaged_repository(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "A.md", "a\n");
	struct history *h = open_recorded(&t);
	detach(&t, h);
	/* HEAD points at a commit that is not there. */
	tv_write(&t, ".vaultd/history.git/refs/heads/main",
		 "1234567890123456789012345678901234567890\n");
	char *note = NULL;
	CU_ASSERT_EQUAL(
		history_open(vault_rootfd(t.v), vault_root(t.v), &h, &note), 0);
	ASSERT_CONTAINS(note, "was damaged");
	ASSERT_CONTAINS(note, "re-created from the current notes");
	free(note);
	vault_attach_history(t.v, h);
	CU_ASSERT_EQUAL(vault_history_scan(t.v), 1);
	char *s = call_text(&t, "get_note_history", "{\"name\":\"A\"}");
	ASSERT_CONTAINS(s, "Initial state: 1 note");
	free(s);
	s = tv_read(&t, "A.md");
	ASSERT_STR_EQ(s, "a\n");
	free(s);
	detach(&t, h);
	tv_close(&t);
}

/* A killed vaultd's lock files in the repository: removed at open, and
 * history goes on (new notes get versions). */
static void test_stale_locks(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "A.md", "a\n");
	struct history *h = open_recorded(&t);
	detach(&t, h);
	tv_write(&t, ".vaultd/history.git/refs/heads/main.lock", "");
	tv_write(&t, ".vaultd/history.git/index.lock", "");
	char *note = NULL;
	CU_ASSERT_EQUAL(
		history_open(vault_rootfd(t.v), vault_root(t.v), &h, &note), 0);
	ASSERT_CONTAINS(note, "removed 2 stale lock files");
	free(note);
	CU_ASSERT_FALSE(
		tv_exists(&t, ".vaultd/history.git/refs/heads/main.lock"));
	vault_attach_history(t.v, h);
	CU_ASSERT(vault_history_scan(t.v) >= 0);
	cJSON_Delete(tv_call_json(&t, "create_note",
				  "{\"name\":\"B\",\"content\":\"b\"}"));
	CU_ASSERT(history_commit(h, true) >= 0);
	CU_ASSERT_STRING_EQUAL(history_error(h), "");
	char *s = call_text(&t, "get_note_history", "{\"name\":\"B\"}");
	ASSERT_CONTAINS(s, "Version history for B");
	ASSERT_CONTAINS(s, "by test");
	free(s);
	/* Commits that fail at run time are reported, never "settled". */
	char lock[4096];
	snprintf(lock, sizeof(lock),
		 "%s/.vaultd/history.git/refs/heads/main.lock", t.dir);
	CU_ASSERT_EQUAL(mkdir(lock, 0755), 0);
	cJSON_Delete(tv_call_json(&t, "append_note",
				  "{\"name\":\"B\",\"text\":\"more\"}"));
	CU_ASSERT(history_commit(h, true) < 0);
	char *why = history_failing(h);
	CU_ASSERT_PTR_NOT_NULL(why);
	free(why);
	CU_ASSERT_FALSE(history_settled(h));
	/* A note made meanwhile has no versions: the answer says why. */
	cJSON_Delete(tv_call_json(&t, "create_note",
				  "{\"name\":\"C\",\"content\":\"c\"}"));
	CU_ASSERT(history_commit(h, true) < 0);
	s = call_text(&t, "get_note_history", "{\"name\":\"C\"}");
	ASSERT_CONTAINS(s, "No version history available for C: recording "
			   "history is failing (");
	free(s);
	rmdir(lock);
	cJSON_Delete(tv_call_json(&t, "append_note",
				  "{\"name\":\"B\",\"text\":\"again\"}"));
	CU_ASSERT(history_commit(h, true) > 0);
	CU_ASSERT_PTR_NULL(history_failing(h));
	detach(&t, h);
	tv_close(&t);
}

/* Before the recording at start has run, vaultd's changes are held: the
 * first version holds every note as it was before vaultd changed,
 * renamed or deleted it, and each change follows as a version of its
 * own, by its writer. */
static void test_originals_kept(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "A.md", "original A\n");
	tv_write(&t, "B.md", "original B [[A]]\n");
	tv_write(&t, "C.md", "original C\n");
	tv_write(&t, "D.md", "original D\n");
	tv_open(&t);
	struct history *h = attach(&t);
	char *s = call_text(&t, "get_note_history", "{\"name\":\"A\"}");
	ASSERT_CONTAINS(s, "No version history available for A yet");
	free(s);
	free(call_text(&t, "update_note",
		       "{\"name\":\"A\",\"content\":\"new A\\n\"}"));
	free(call_text(&t, "append_note",
		       "{\"name\":\"A\",\"text\":\"more\"}"));
	free(call_text(&t, "rename_note",
		       "{\"old_name\":\"C\",\"new_name\":\"C2\"}"));
	free(call_text(&t, "delete_note", "{\"name\":\"D\"}"));
	free(call_text(&t, "create_note",
		       "{\"name\":\"E\",\"content\":\"e\\n\"}"));
	CU_ASSERT_FALSE(history_recorded(h));
	CU_ASSERT_FALSE(history_settled(h));
	CU_ASSERT(vault_history_scan(t.v) >= 0);
	CU_ASSERT_TRUE(history_recorded(h));
	CU_ASSERT(history_commit(h, true) > 0);

	char *git = xasprintf("cd '%s/.vaultd/history.git' && "
			      "git log --reverse --format='%%an|%%s' && "
			      "first=$(git rev-list --max-parents=0 HEAD) && "
			      "git ls-tree --name-only $first && "
			      "git show $first:A.md $first:B.md $first:C.md "
			      "$first:D.md",
			      t.dir);
	s = run(git);
	free(git);
	if (s && *s)
		ASSERT_STR_EQ(s, "vaultd|Initial state: 4 notes\n"
				 "test|Update 4 notes: A, C2, D, E\n"
				 "A.md\nB.md\nC.md\nD.md\n"
				 "original A\noriginal B [[A]]\n"
				 "original C\noriginal D\n");
	free(s);
	/* Through the tools: A's oldest version is its original text. */
	s = call_text(&t, "get_note_history", "{\"name\":\"A\"}");
	char ids[4][8];
	CU_ASSERT_EQUAL(ids_of(s, ids, 4), 2);
	ASSERT_CONTAINS(s, "by vaultd\n  Initial state: 4 notes");
	free(s);
	char *args = xasprintf("{\"name\":\"A\",\"version\":\"%s\"}", ids[1]);
	s = call_text(&t, "get_note_version", args);
	free(args);
	ASSERT_CONTAINS(s, "\n---\n\noriginal A\n");
	free(s);
	s = call_text(&t, "get_note_history", "{\"name\":\"C2\"}");
	CU_ASSERT_EQUAL(ids_of(s, ids, 4), 2);
	free(s);
	s = call_text(&t, "get_note_history", "{\"name\":\"E\"}");
	CU_ASSERT_EQUAL(ids_of(s, ids, 4), 1);
	free(s);
	/* A restart finds nothing new. */
	detach(&t, h);
	h = attach(&t);
	CU_ASSERT_EQUAL(vault_history_scan(t.v), 0);
	detach(&t, h);
	tv_close(&t);
}

/* A tool call by writer who. */
static void call_as(struct tvault *t, const char *who, const char *tool,
		    const char *args_json)
{
	cJSON *args = cJSON_Parse(args_json);
	struct tool_result r = {0};
	tools_call(t->v, tool, args, who, &r);
	CU_ASSERT_FALSE(r.is_error);
	tool_result_clear(&r);
	cJSON_Delete(args);
}

/* Changes held before the recording at start become versions with the
 * text each writer left, not the text the note has by the replay: a
 * change to a note renamed since, and a rename's link rewrite in a note
 * changed since, keep their own versions and writers. */
static void test_held_texts(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "A.md", "a\n");
	tv_write(&t, "Home.md", "see [[A]]\n");
	tv_open(&t);
	struct history *h = attach(&t);
	call_as(&t, "one", "append_note", "{\"name\":\"A\",\"text\":\"x\"}");
	call_as(&t, "two", "rename_note",
		"{\"old_name\":\"A\",\"new_name\":\"B\"}");
	call_as(&t, "one", "append_note",
		"{\"name\":\"Home\",\"text\":\"more\"}");
	CU_ASSERT_FALSE(history_recorded(h));
	CU_ASSERT(vault_history_scan(t.v) >= 0);
	CU_ASSERT(history_commit(h, true) > 0);
	char *git =
		xasprintf("cd '%s/.vaultd/history.git' && "
			  "git log --reverse --format='%%an|%%s' && "
			  "git show HEAD~2:A.md HEAD~1:Home.md HEAD:Home.md",
			  t.dir);
	char *s = run(git);
	free(git);
	if (s && *s)
		ASSERT_STR_EQ(s, "vaultd|Initial state: 2 notes\n"
				 "one|Update note: A\n"
				 "two|Update 2 notes: B, Home\n"
				 "one|Update note: Home\n"
				 "a\n\nx"
				 "see [[B]]\n"
				 "see [[B]]\n\nmore");
	free(s);
	detach(&t, h);
	tv_close(&t);
}

/* Enough versions that two share their first four hex digits: such a
 * short id is refused as ambiguous, a longer one works. */
static void test_ambiguous_version(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "A.md", "a\n");
	struct history *h = open_recorded(&t);
	struct history_version *v = NULL;
	size_t n = 0, total = 0;
	char a[8] = "", b[8] = "";
	for (int round = 0; round < 4 && !*a; round++) {
		for (int i = 0; i < 600; i++) {
			char *args =
				xasprintf("{\"name\":\"A\",\"text\":\"%d.%d\"}",
					  round, i);
			cJSON_Delete(tv_call_json(&t, "append_note", args));
			free(args);
			history_commit(h, true);
		}
		history_log(h, "A.md", 100000, &v, &n, &total);
		for (size_t i = 0; i < n && !*a; i++)
			for (size_t j = i + 1; j < n && !*a; j++)
				if (!strncmp(v[i].id, v[j].id, 4)) {
					memcpy(a, v[i].id, 7);
					memcpy(b, v[j].id, 7);
				}
		history_versions_free(v, n);
	}
	CU_ASSERT_FATAL(*a);
	char *args = xasprintf("{\"name\":\"A\",\"version\":\"%.4s\"}", a);
	char *e = tv_call_err(&t, "get_note_version", args);
	free(args);
	ASSERT_CONTAINS(e, "is ambiguous");
	ASSERT_CONTAINS(e, "give more digits");
	free(e);
	args = xasprintf("{\"name\":\"A\",\"version\":\"%s\"}", a);
	char *s = call_text(&t, "get_note_version", args);
	free(args);
	ASSERT_CONTAINS(s, a);
	free(s);
	detach(&t, h);
	tv_close(&t);
}

static void test_not_available(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "A.md", "a\n");
	tv_open(&t);
	char *e = tv_call_err(&t, "get_note_history", "{\"name\":\"A\"}");
	ASSERT_CONTAINS(e, "Note history is not available");
	free(e);
	tv_close(&t);
}

/* Old versions and diffs of a note with bytes that are not UTF-8 are
 * shown with U+FFFD and a warning; the history keeps the bytes. */
static void test_not_utf8_versions(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "Bad.md", "one \xff\xfe\n");
	struct history *h = open_recorded(&t);
	CU_ASSERT(vault_history_scan(t.v) >= 0);
	struct tool_result r = {0};
	tv_call(&t, "append_note",
		"{\"name\":\"Bad\",\"text\":\"two \xc3\xa9\"}", &r);
	CU_ASSERT_FALSE(r.is_error);
	tool_result_clear(&r);
	char *s = call_text(&t, "get_note_history", "{\"name\":\"Bad\"}");
	char ids[4][8];
	CU_ASSERT_EQUAL_FATAL(ids_of(s, ids, 4), 2);
	free(s);
	char *args = xasprintf("{\"name\":\"Bad\",\"version\":\"%s\"}", ids[1]);
	tv_call(&t, "get_note_version", args, &r);
	free(args);
	CU_ASSERT_FALSE(r.is_error);
	CU_ASSERT_EQUAL(u8_invalid_at(r.text, strlen(r.text)), strlen(r.text));
	ASSERT_CONTAINS(r.text, "one \xef\xbf\xbd\xef\xbf\xbd\n");
	ASSERT_CONTAINS(r.warning, "not valid UTF-8");
	tool_result_clear(&r);
	args = xasprintf("{\"name\":\"Bad\",\"from_version\":\"%s\","
			 "\"to_version\":\"%s\"}",
			 ids[1], ids[0]);
	tv_call(&t, "diff_note_versions", args, &r);
	free(args);
	CU_ASSERT_FALSE(r.is_error);
	CU_ASSERT_EQUAL(u8_invalid_at(r.text, strlen(r.text)), strlen(r.text));
	ASSERT_CONTAINS(r.text, "+two \xc3\xa9");
	ASSERT_CONTAINS(r.warning, "not valid UTF-8");
	tool_result_clear(&r);
	char *disk = tv_read(&t, "Bad.md");
	ASSERT_STR_EQ(disk, "one \xff\xfe\n\ntwo \xc3\xa9");
	free(disk);
	detach(&t, h);
	tv_close(&t);
}

int main(void)
{
	static const struct test_case tests[] = {
		{"lifecycle", test_lifecycle},
		{"not_utf8_versions", test_not_utf8_versions},
		{"restore_is_guarded", test_restore_is_guarded},
		{"gone_notes", test_gone_notes},
		{"batches", test_batches},
		{"queued_text", test_queued_text},
		{"queue_bounded", test_queue_bounded},
		{"damaged_repository", test_damaged_repository},
		{"stale_locks", test_stale_locks},
		{"originals_kept", test_originals_kept},
		{"held_texts", test_held_texts},
		{"ambiguous_version", test_ambiguous_version},
		{"not_available", test_not_available},
		{"session_changes", test_session_changes},
	};
	return run_tests("history", tests, ARRAY_SIZE(tests));
}
