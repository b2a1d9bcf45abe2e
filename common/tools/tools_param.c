/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A tool's parameters as its table entry describes them (the generators
 * are proto/params.c's): the parameters every write takes besides its own
 * (expected_version and dry_run, added here, so the table says them for
 * no tool), and the input schema, get_help's parameter line and the
 * argument checks of a tool from its whole list.
 */
#include "tools.h"
#include "util.h"

/* Every write can be made conditional on the version the caller read
 * (read_note, get_note_metadata), and tried first (dry_run: the diff it
 * would make; the result then carries dry_run and diff). */
static const struct tool_param EXPECTED_VERSION = {
	.name = "expected_version",
	.type = P_STR,
	.doc = "the note's version as read_note gave it; if the note "
	       "changed since, nothing is written and the error shows what "
	       "changed",
};
static const struct tool_param DRY_RUN = {
	.name = "dry_run",
	.type = P_BOOL,
	.doc = "true writes nothing and returns the unified diff the call "
	       "would make (dry_run, diff)",
};

/* The extra parameters: expected_version, dry_run, both or none. */
static const struct tool_param *const EXTRA_BOTH[] = {&EXPECTED_VERSION,
						      &DRY_RUN, NULL};
static const struct tool_param *const EXTRA_VERSION[] = {&EXPECTED_VERSION,
							 NULL};
static const struct tool_param *const EXTRA_DRY_RUN[] = {&DRY_RUN, NULL};

/* Whether the tool's own list (the table's, without the extras) has key. */
static bool own_param(const struct tool *t, const char *key)
{
	const struct param_list own = {.tool = t->name, .own = t->params};
	return params_find(&own, key) != NULL;
}

struct param_list tool_params(const struct tool *t)
{
	struct param_list l = {.tool = t->name, .own = t->params};
	if (t->flags & TOOL_READ_ONLY)
		return l;
	/* Only a write to one named note has a version to expect (not
	 * undo_changes, say). */
	bool version = own_param(t, "name") || own_param(t, "old_name");
	bool dry = !own_param(t, "dry_run");
	l.extra = version && dry ? EXTRA_BOTH
		  : version	 ? EXTRA_VERSION
		  : dry		 ? EXTRA_DRY_RUN
				 : NULL;
	return l;
}

const struct tool_param *tool_param_at(const struct tool *t, size_t i)
{
	struct param_list l = tool_params(t);
	return params_at(&l, i);
}

const struct tool_param *tool_param(const struct tool *t, const char *key)
{
	struct param_list l = tool_params(t);
	return params_find(&l, key);
}

cJSON *tool_input_schema(const struct tool *t)
{
	struct param_list l = tool_params(t);
	return params_schema(&l);
}

char *tools_params_text(const struct tool *t)
{
	struct param_list l = tool_params(t);
	return params_text(&l);
}

int tool_check_args(const struct tool *t, const cJSON *args, char **ret_msg)
{
	struct param_list l = tool_params(t);
	return params_check(&l, args, ret_msg);
}
