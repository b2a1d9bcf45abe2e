/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A tool's parameters, described once in C (struct tool_param), and what
 * is made from them: the input schema tools/list shows, get_help's
 * parameter line and each parameter's help line, and the checks a call's
 * arguments pass before the tool runs. Needs cJSON only: vaultd's tool
 * table (tools/) and vault-mcp's own tools (mcp_vaults.c) both describe
 * their parameters this way.
 */
#pragma once

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

struct sbuf;

/* What a parameter takes; its JSON type in the input schema. */
enum param_type {
	P_STR,	/* "string" */
	P_INT,	/* "integer", from min up to max */
	P_BOOL, /* "boolean"; false unless given */
	/* "string", one of values (the handler says what else is wrong). */
	P_ENUM,
	/* "object" or "string": a free-form object (frontmatter,
	 * properties) or its JSON text, which the handler parses. */
	P_OBJECT,
};

/* One parameter of a tool. A tool's list ends with an entry without a
 * name. */
struct tool_param {
	const char *name;
	enum param_type type;
	bool required;
	/* The default get_help shows (an integer's digits, an enum's
	 * value), or NULL; the handler applies it. */
	const char *def;
	/* P_INT: the range the checks hold a call to. Numbers are counts,
	 * so 1 is the usual min and the schema says only another; max 0:
	 * none. */
	long min, max;
	const char *const *values; /* P_ENUM: its values, NULL-ended */
	/* What it means, in one line without a final stop: get_help and
	 * `vaultctl tools TOOL` show it after the type, default and range
	 * made from the fields above (tools/list does not: its size is
	 * what clients pay before the user says a word). */
	const char *doc;
};

/* A tool's parameters: its own list, then those every tool of its kind
 * takes besides (vaultd's writes: expected_version, dry_run). */
struct param_list {
	const char *tool;		       /* its name, for messages */
	const struct tool_param *own;	       /* name-less ended, or NULL */
	const struct tool_param *const *extra; /* NULL-ended, or NULL */
};

/* The i-th parameter (from 0), NULL past the last. */
const struct tool_param *params_at(const struct param_list *l, size_t i);
/* The parameter key, or NULL when there is none of that name. */
const struct tool_param *params_find(const struct param_list *l,
				     const char *key);
/* The input schema tools/list shows: {"type": "object", "properties",
 * "required"}, without defaults or descriptions (get_help has them). */
cJSON *params_schema(const struct param_list *l);
/* get_help's "params": "name: string, limit?: integer = 100". */
char *params_text(const struct param_list *l);
/* One parameter's help line: "- limit (integer, 1 to 1000, default
 * 100): how many to give". */
char *param_doc(const struct tool_param *p);
/* "\n" and the help line of each parameter, added to b. */
void params_doc_lines(struct sbuf *b, const struct param_list *l);
/* args checked against the list: 0, or -EINVAL with the message the
 * caller sees (an unknown or missing argument, a wrong type, a number
 * out of range). */
int params_check(const struct param_list *l, const cJSON *args, char **ret_msg);
