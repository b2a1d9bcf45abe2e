/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the write tools share: the writer lock held for a tool's whole
 * read-modify-write (WRITE_LOCKED), and the one funnel every edit goes
 * through, opw_edit_note(): find, read, check expected_version, edit,
 * commit (or with dry_run, show the diff). ops_write.c holds it with
 * create, whole-note edits, rename, delete and undo; ops_edit.c the text
 * and section edits; ops_props.c frontmatter and tags.
 */
#pragma once

#include "tools.h"

#include <stdbool.h>
#include <stddef.h>

struct wlock {
	struct vault *v;
};
static inline void wlock_release(struct wlock *l)
{
	if (l->v)
		vault_write_unlock(l->v);
}
#define WRITE_LOCKED(c)                                        \
	_cleanup_(wlock_release) struct wlock _wl_ = {(c)->v}; \
	vault_write_lock((c)->v)

/* Edit one note's text into *ret_new (allocated). */
typedef int (*edit_fn)(struct tool_ctx *c, const char *ref, const char *text,
		       size_t len, char **ret_new);

int opw_new_note_path(struct tool_ctx *c, const char *given,
		      const char *default_dir, char **ret);
int opw_check_expected(struct tool_ctx *c, const struct note *n,
		       const char *text, size_t len);
int opw_write_or_try(struct tool_ctx *c, const char *path, const char *old,
		     size_t old_len, const char *nt, size_t nt_len,
		     bool create);
int opw_edit_note(struct tool_ctx *c, const char *ref, edit_fn fn,
		  struct note **ret_note);
size_t opw_body_offset(const char *text, size_t len);
int opw_do_append(struct tool_ctx *c, const char *ref, const char *text,
		  size_t len, char **ret);
