/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A tool's parameters, as its table entry describes them in C, made into
 * what each reader needs: the input schema tools/list shows, the
 * parameter line of get_help and `vaultctl tools`, each parameter's help
 * line (its type, range, default and doc), and the checks every
 * call's arguments pass before the handler runs (their messages are the
 * ones callers and tests know). Writes also take expected_version and
 * dry_run; they are added here, so the table says them for no tool.
 */
#include "tools.h"
#include "json.h"

#include <errno.h>
#include <math.h>

/* The JSON types a parameter's type takes, in the order said. */
static const char *const TYPE_NAMES[][2] = {
	[P_STR] = {"string"},
	[P_INT] = {"integer"},
	[P_BOOL] = {"boolean"},
	[P_ENUM] = {"string"},
	[P_OBJECT] = {"object", "string"},
};

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

static size_t own_count(const struct tool *t)
{
	size_t n = 0;
	while (t->params && t->params[n].name)
		n++;
	return n;
}

static const struct tool_param *own_param(const struct tool *t, size_t n,
					  const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(t->params[i].name, key))
			return &t->params[i];
	return NULL;
}

const struct tool_param *tool_param_at(const struct tool *t, size_t i)
{
	size_t n = own_count(t);
	if (i < n)
		return &t->params[i];
	if (t->flags & TOOL_READ_ONLY)
		return NULL;
	const struct tool_param *extra[2];
	size_t ne = 0;
	/* Only a write to one named note has a version to expect (not
	 * undo_changes, say). */
	if (own_param(t, n, "name") || own_param(t, n, "old_name"))
		extra[ne++] = &EXPECTED_VERSION;
	if (!own_param(t, n, "dry_run"))
		extra[ne++] = &DRY_RUN;
	return i - n < ne ? extra[i - n] : NULL;
}

const struct tool_param *tool_param(const struct tool *t, const char *key)
{
	const struct tool_param *p;
	for (size_t i = 0; (p = tool_param_at(t, i)); i++)
		if (!strcmp(p->name, key))
			return p;
	return NULL;
}

/* ---- the input schema -------------------------------------------------------
 */

static cJSON *param_schema(const struct tool_param *p)
{
	cJSON *o = cJSON_CreateObject();
	const char *const *ty = TYPE_NAMES[p->type];
	if (ty[1]) {
		cJSON_AddItemToObject(o, "type",
				      cJSON_CreateStringArray(ty, 2));
	} else {
		cJSON_AddStringToObject(o, "type", ty[0]);
	}
	if (p->type == P_ENUM) {
		size_t n = 0;
		while (p->values[n])
			n++;
		cJSON_AddItemToObject(
			o, "enum", cJSON_CreateStringArray(p->values, (int)n));
	}
	/* Numbers are counts: 1 or more unless the minimum says less, so
	 * the schema leaves the usual minimum unsaid. */
	if (p->type == P_INT && p->min != 1)
		cJSON_AddNumberToObject(o, "minimum", (double)p->min);
	if (p->type == P_INT && p->max)
		cJSON_AddNumberToObject(o, "maximum", (double)p->max);
	return o;
}

/*
 * Without defaults: "default" checks nothing, and get_help shows them.
 * "required" only when something is.
 */
cJSON *tool_input_schema(const struct tool *t)
{
	cJSON *s = cJSON_CreateObject();
	cJSON_AddStringToObject(s, "type", "object");
	cJSON *props = cJSON_AddObjectToObject(s, "properties");
	cJSON *req = cJSON_CreateArray();
	const struct tool_param *p;
	for (size_t i = 0; (p = tool_param_at(t, i)); i++) {
		cJSON_AddItemToObject(props, p->name, param_schema(p));
		if (p->required)
			cJSON_AddItemToArray(req, cJSON_CreateString(p->name));
	}
	if (cJSON_GetArraySize(req))
		cJSON_AddItemToObject(s, "required", req);
	else
		cJSON_Delete(req);
	return s;
}

char *tools_params_text(const struct tool *t)
{
	struct sbuf b = {0};
	const struct tool_param *p;
	for (size_t i = 0; (p = tool_param_at(t, i)); i++) {
		const char *const *ty = TYPE_NAMES[p->type];
		sb_printf(&b, "%s%s%s: %s%s%s", b.len ? ", " : "", p->name,
			  p->required || p->def ? "" : "?", ty[0],
			  ty[1] ? "|" : "", ty[1] ? ty[1] : "");
		if (p->def && p->type == P_INT)
			sb_printf(&b, " = %s", p->def);
		else if (p->def)
			sb_printf(&b, " = \"%s\"", p->def);
	}
	return sb_steal(&b);
}

/* What a parameter takes, as its help line says it: "string, required",
 * "integer, 1 to 1000, default 100", "one of in, out, both; default
 * both". */
static void param_kind(struct sbuf *b, const struct tool_param *p)
{
	const char *const *ty = TYPE_NAMES[p->type];
	if (p->type == P_ENUM) {
		sb_puts(b, "one of ");
		for (size_t k = 0; p->values[k]; k++)
			sb_printf(b, "%s%s", k ? ", " : "", p->values[k]);
	} else if (p->type == P_OBJECT) {
		sb_puts(b, "object, or its JSON text");
	} else {
		sb_puts(b, ty[0]);
	}
	if (p->required)
		sb_puts(b, ", required");
	if (p->type == P_INT && p->max)
		sb_printf(b, ", %ld to %ld", p->min, p->max);
	else if (p->type == P_INT)
		sb_printf(b, ", %ld or more", p->min);
	if (p->def)
		sb_printf(b, "%s default %s", p->type == P_ENUM ? ";" : ",",
			  p->def);
}

char *tools_param_doc(const struct tool_param *p)
{
	struct sbuf b = {0};
	sb_printf(&b, "- %s (", p->name);
	param_kind(&b, p);
	sb_printf(&b, "): %s", p->doc ? p->doc : "");
	return sb_steal(&b);
}

/* ---- argument checks --------------------------------------------------------
 */

static bool json_type_ok(const char *type, const cJSON *v)
{
	if (!strcmp(type, "string"))
		return cJSON_IsString(v);
	if (!strcmp(type, "boolean"))
		return cJSON_IsBool(v);
	if (!strcmp(type, "object"))
		return cJSON_IsObject(v);
	/* integer */
	return cJSON_IsNumber(v) && isfinite(v->valuedouble) &&
	       v->valuedouble == floor(v->valuedouble) &&
	       fabs(v->valuedouble) < 9e15;
}

static const char *article(const char *type)
{
	return (type[0] == 'a' || type[0] == 'i' || type[0] == 'o') ? "an"
								    : "a";
}

static int unknown_arg(const struct tool *t, const char *key, char **ret_msg)
{
	struct sbuf b = {0};
	const struct tool_param *p;
	for (size_t i = 0; (p = tool_param_at(t, i)); i++)
		sb_printf(&b, "%s%s", b.len ? ", " : "", p->name);
	*ret_msg = xasprintf("Unknown argument %s for %s. Valid: %s",
			     QUOTE(key), t->name, b.len ? b.s : "(none)");
	sb_free(&b);
	return -EINVAL;
}

static int check_type(const struct tool *t, const struct tool_param *p,
		      const cJSON *a, char **ret_msg)
{
	const char *const *ty = TYPE_NAMES[p->type];
	if (json_type_ok(ty[0], a) || (ty[1] && json_type_ok(ty[1], a)))
		return 0;
	if (ty[1])
		*ret_msg = xasprintf("Invalid argument '%s' for %s: must be "
				     "%s or %s",
				     p->name, t->name, ty[0], ty[1]);
	else
		*ret_msg = xasprintf("Invalid argument '%s' for %s: must be "
				     "%s %s",
				     p->name, t->name, article(ty[0]), ty[0]);
	return -EINVAL;
}

static int check_range(const struct tool *t, const struct tool_param *p,
		       const cJSON *a, char **ret_msg)
{
	double d = a->valuedouble;
	if (d >= (double)p->min && (!p->max || d <= (double)p->max))
		return 0;
	if (p->max)
		*ret_msg = xasprintf("Invalid argument '%s' for %s: must be "
				     "between %ld and %ld",
				     p->name, t->name, p->min, p->max);
	else
		*ret_msg = xasprintf("Invalid argument '%s' for %s: must be "
				     "%ld or more",
				     p->name, t->name, p->min);
	return -EINVAL;
}

int tool_check_args(const struct tool *t, const cJSON *args, char **ret_msg)
{
	const cJSON *a;
	cJSON_ArrayForEach(a, args)
	{
		const struct tool_param *p = tool_param(t, a->string);
		if (!p)
			return unknown_arg(t, a->string, ret_msg);
		int r = check_type(t, p, a, ret_msg);
		if (r == 0 && p->type == P_INT)
			r = check_range(t, p, a, ret_msg);
		if (r < 0)
			return r;
	}
	const struct tool_param *p;
	for (size_t i = 0; (p = tool_param_at(t, i)); i++) {
		if (p->required &&
		    !cJSON_GetObjectItemCaseSensitive(args, p->name)) {
			*ret_msg = xasprintf("Missing required argument '%s' "
					     "for %s",
					     p->name, t->name);
			return -EINVAL;
		}
	}
	return 0;
}
