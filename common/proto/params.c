/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A tool's parameters (params.h) made into what each reader needs: the
 * input schema tools/list shows, get_help's parameter line, each
 * parameter's help line (its type, range, default and doc), and the
 * checks every call's arguments pass before the tool runs (their
 * messages are the ones callers and tests know).
 */
#include "params.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <string.h>

/* The JSON types a parameter's type takes, in the order said. */
static const char *const TYPE_NAMES[][2] = {
	[P_STR] = {"string"},
	[P_INT] = {"integer"},
	[P_BOOL] = {"boolean"},
	[P_ENUM] = {"string"},
	[P_OBJECT] = {"object", "string"},
};

static size_t own_count(const struct param_list *l)
{
	size_t n = 0;
	while (l->own && l->own[n].name)
		n++;
	return n;
}

const struct tool_param *params_at(const struct param_list *l, size_t i)
{
	size_t n = own_count(l);
	if (i < n)
		return &l->own[i];
	for (size_t k = 0; l->extra && l->extra[k]; k++)
		if (k == i - n)
			return l->extra[k];
	return NULL;
}

const struct tool_param *params_find(const struct param_list *l,
				     const char *key)
{
	const struct tool_param *p;
	for (size_t i = 0; (p = params_at(l, i)); i++)
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
cJSON *params_schema(const struct param_list *l)
{
	cJSON *s = cJSON_CreateObject();
	cJSON_AddStringToObject(s, "type", "object");
	cJSON *props = cJSON_AddObjectToObject(s, "properties");
	cJSON *req = cJSON_CreateArray();
	const struct tool_param *p;
	for (size_t i = 0; (p = params_at(l, i)); i++) {
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

char *params_text(const struct param_list *l)
{
	struct sbuf b = {0};
	const struct tool_param *p;
	for (size_t i = 0; (p = params_at(l, i)); i++) {
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

char *param_doc(const struct tool_param *p)
{
	struct sbuf b = {0};
	sb_printf(&b, "- %s (", p->name);
	param_kind(&b, p);
	sb_printf(&b, "): %s", p->doc ? p->doc : "");
	return sb_steal(&b);
}

void params_doc_lines(struct sbuf *b, const struct param_list *l)
{
	const struct tool_param *p;
	for (size_t i = 0; (p = params_at(l, i)); i++) {
		_cleanup_free_ char *line = param_doc(p);
		sb_printf(b, "\n%s", line);
	}
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

static int unknown_arg(const struct param_list *l, const char *key,
		       char **ret_msg)
{
	struct sbuf b = {0};
	const struct tool_param *p;
	for (size_t i = 0; (p = params_at(l, i)); i++)
		sb_printf(&b, "%s%s", b.len ? ", " : "", p->name);
	*ret_msg = xasprintf("Unknown argument %s for %s. Valid: %s",
			     QUOTE(key), l->tool, b.len ? b.s : "(none)");
	sb_free(&b);
	return -EINVAL;
}

static int check_type(const struct param_list *l, const struct tool_param *p,
		      const cJSON *a, char **ret_msg)
{
	const char *const *ty = TYPE_NAMES[p->type];
	if (json_type_ok(ty[0], a) || (ty[1] && json_type_ok(ty[1], a)))
		return 0;
	if (ty[1])
		*ret_msg = xasprintf("Invalid argument '%s' for %s: must be "
				     "%s or %s",
				     p->name, l->tool, ty[0], ty[1]);
	else
		*ret_msg = xasprintf("Invalid argument '%s' for %s: must be "
				     "%s %s",
				     p->name, l->tool, article(ty[0]), ty[0]);
	return -EINVAL;
}

static int check_range(const struct param_list *l, const struct tool_param *p,
		       const cJSON *a, char **ret_msg)
{
	double d = a->valuedouble;
	if (d >= (double)p->min && (!p->max || d <= (double)p->max))
		return 0;
	if (p->max)
		*ret_msg = xasprintf("Invalid argument '%s' for %s: must be "
				     "between %ld and %ld",
				     p->name, l->tool, p->min, p->max);
	else
		*ret_msg = xasprintf("Invalid argument '%s' for %s: must be "
				     "%ld or more",
				     p->name, l->tool, p->min);
	return -EINVAL;
}

int params_check(const struct param_list *l, const cJSON *args, char **ret_msg)
{
	const cJSON *a;
	cJSON_ArrayForEach(a, args)
	{
		const struct tool_param *p = params_find(l, a->string);
		if (!p)
			return unknown_arg(l, a->string, ret_msg);
		int r = check_type(l, p, a, ret_msg);
		if (r == 0 && p->type == P_INT)
			r = check_range(l, p, a, ret_msg);
		if (r < 0)
			return r;
	}
	const struct tool_param *p;
	for (size_t i = 0; (p = params_at(l, i)); i++) {
		if (p->required &&
		    !cJSON_GetObjectItemCaseSensitive(args, p->name)) {
			*ret_msg = xasprintf("Missing required argument '%s' "
					     "for %s",
					     p->name, l->tool);
			return -EINVAL;
		}
	}
	return 0;
}
