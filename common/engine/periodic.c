/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Periodic notes' and templates' settings, read from the files Obsidian
 * and its plugins write, and template variables (see periodic.h). The
 * settings are read anew for each call: they are small, and a change
 * made in Obsidian applies at once.
 */
#include "periodic.h"
#include "fileio.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <strings.h>

#define SETTINGS_MAX_BYTES (1u << 20)

#define DAILY_CORE ".obsidian/daily-notes.json"
#define PERIODIC_PLUGIN ".obsidian/plugins/periodic-notes/data.json"
#define CALENDAR_PLUGIN ".obsidian/plugins/calendar/data.json"
#define COMMUNITY_PLUGINS ".obsidian/community-plugins.json"
#define TEMPLATES_CORE ".obsidian/templates.json"

/* Per period: its names, the Periodic Notes keys (v0: "daily", v1's
 * calendar sets: "day"), the default format and the unit of a step. */
static const struct {
	const char *name, *adj, *v1;
	const char *format;
	char unit;
} PERIODS[] = {
	[PERIOD_DAY] = {"day", "daily", "day", "YYYY-MM-DD", 'd'},
	[PERIOD_WEEK] = {"week", "weekly", "week", "gggg-[W]ww", 'w'},
	[PERIOD_MONTH] = {"month", "monthly", "month", "YYYY-MM", 'M'},
	[PERIOD_QUARTER] = {"quarter", "quarterly", "quarter", "YYYY-[Q]Q",
			    'Q'},
	[PERIOD_YEAR] = {"year", "yearly", "year", "YYYY", 'y'},
};

int period_from_name(const char *name, enum period *ret)
{
	for (size_t i = 0; i < ARRAY_SIZE(PERIODS); i++) {
		if (!strcasecmp(name, PERIODS[i].name) ||
		    !strcasecmp(name, PERIODS[i].adj)) {
			*ret = (enum period)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *period_name(enum period p)
{
	return PERIODS[p].name;
}

/* ---- settings files --------------------------------------------------- */

/* A settings file as JSON: NULL with 0 when it is not there. */
static int read_json(int rootfd, const char *rel, cJSON **ret, char **ret_msg)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	*ret = NULL;
	int r = file_read(rootfd, rel, SETTINGS_MAX_BYTES, &text, &len, NULL);
	if (r == -ENOENT)
		return 0;
	if (r < 0) {
		*ret_msg =
			xasprintf("%s cannot be read: %s", rel, strerror(-r));
		return r;
	}
	cJSON *j = cJSON_ParseWithLength(text, len);
	if (!cJSON_IsObject(j)) {
		cJSON_Delete(j);
		*ret_msg = xasprintf("%s is not a JSON object; fix it in "
				     "Obsidian's settings or remove it",
				     rel);
		return -EBADMSG;
	}
	*ret = j;
	return 0;
}

static const char *jstr(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : "";
}

/* A folder as Obsidian normalises it: no spaces or slashes at the
 * ends. */
static char *clean_folder(const char *s)
{
	while (*s == '/' || isspace((unsigned char)*s))
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == '/' || isspace((unsigned char)s[n - 1])))
		n--;
	return xstrndup(s, n);
}

/* A template path: vault-relative, with .md. */
static char *clean_template(const char *s)
{
	_cleanup_free_ char *f = clean_folder(s);
	if (!*f || str_has_suffix_ci(f, ".md"))
		return TAKE_PTR(f);
	return xasprintf("%s.md", f);
}

static char *trimmed_or(const char *s, const char *def)
{
	_cleanup_free_ char *t = clean_folder(s);
	return xstrdup(*t ? s : def);
}

/* ---- Periodic Notes --------------------------------------------------- */

/* The plugin counts when Obsidian would load it: listed in
 * community-plugins.json (or that file is missing: a vault set up by
 * hand). */
static int plugin_enabled(int rootfd, bool *ret, char **ret_msg)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r = file_read(rootfd, COMMUNITY_PLUGINS, SETTINGS_MAX_BYTES, &text,
			  &len, NULL);
	*ret = true;
	if (r == -ENOENT)
		return 0;
	if (r < 0) {
		*ret_msg = xasprintf("%s cannot be read: %s", COMMUNITY_PLUGINS,
				     strerror(-r));
		return r;
	}
	cJSON *j = cJSON_ParseWithLength(text, len);
	const cJSON *list = cJSON_IsArray(j) ? j : NULL;
	bool on = false;
	const cJSON *x;
	cJSON_ArrayForEach(x, list)
	{
		if (cJSON_IsString(x) &&
		    !strcmp(x->valuestring, "periodic-notes"))
			on = true;
	}
	cJSON_Delete(j);
	*ret = on;
	return 0;
}

/* The period's object in the plugin's settings: v0 keeps one per
 * period at the top ("daily"), v1 keeps them in the active calendar set
 * ("day"). */
static const cJSON *plugin_period(const cJSON *data, enum period p)
{
	const cJSON *sets =
		cJSON_GetObjectItemCaseSensitive(data, "calendarSets");
	if (cJSON_IsArray(sets) && cJSON_GetArraySize(sets)) {
		const char *active = jstr(data, "activeCalendarSet");
		const cJSON *set, *pick = cJSON_GetArrayItem(sets, 0);
		cJSON_ArrayForEach(set, sets)
		{
			if (*active && !strcmp(jstr(set, "id"), active))
				pick = set;
		}
		return cJSON_GetObjectItemCaseSensitive(pick, PERIODS[p].v1);
	}
	return cJSON_GetObjectItemCaseSensitive(data, PERIODS[p].adj);
}

static bool period_on(const cJSON *o)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "enabled"));
}

/* Week rules: the plugin's (or the Calendar plugin's) localeOverride
 * and weekStart; Obsidian's own language is kept outside the vault, so
 * without them the rules are English ("en"). */
static int locale_from(const cJSON *data, const char *file,
		       struct moment_locale *ret, char **ret_msg)
{
	const char *name = jstr(data, "localeOverride");
	const struct moment_locale *l = moment_locale_default();
	if (*name && strcmp(name, "system-default") &&
	    moment_locale_find(name, &l) < 0) {
		*ret_msg = xasprintf(
			"%s sets the locale %s, whose month and day names "
			"vaultd does not have (it knows %s); set one of those "
			"or system-default there",
			file, name, moment_locales_known());
		return -ENOTSUP;
	}
	*ret = *l;
	static const char *const DAYS[] = {"sunday",	"monday",   "tuesday",
					   "wednesday", "thursday", "friday",
					   "saturday"};
	const char *ws = jstr(data, "weekStart");
	for (int i = 0; i < 7; i++)
		if (!strcasecmp(ws, DAYS[i]))
			ret->dow = i;
	return 0;
}

static int load_locale(int rootfd, const cJSON *plugin,
		       struct moment_locale *ret, char **ret_msg)
{
	if (plugin &&
	    (*jstr(plugin, "localeOverride") || *jstr(plugin, "weekStart")))
		return locale_from(plugin, PERIODIC_PLUGIN, ret, ret_msg);
	cJSON *cal = NULL;
	int r = read_json(rootfd, CALENDAR_PLUGIN, &cal, ret_msg);
	if (r < 0)
		return r;
	r = locale_from(cal, CALENDAR_PLUGIN, ret, ret_msg);
	cJSON_Delete(cal);
	return r;
}

static void conf_from(struct periodic_conf *c, const cJSON *o, enum period p,
		      const char *source)
{
	c->period = p;
	c->folder = clean_folder(jstr(o, "folder"));
	c->format = trimmed_or(jstr(o, "format"), PERIODS[p].format);
	const char *t = jstr(o, "templatePath");
	c->template = clean_template(*t ? t : jstr(o, "template"));
	c->source = source;
}

int periodic_conf_load(int rootfd, enum period p, struct periodic_conf *ret,
		       char **ret_msg)
{
	cJSON *plugin = NULL, *core = NULL;
	bool on = false;
	int r = read_json(rootfd, PERIODIC_PLUGIN, &plugin, ret_msg);
	if (r == 0 && plugin)
		r = plugin_enabled(rootfd, &on, ret_msg);
	const cJSON *po = on ? plugin_period(plugin, p) : NULL;
	struct periodic_conf c = {0};
	if (r == 0)
		r = load_locale(rootfd, on ? plugin : NULL, &c.loc, ret_msg);
	if (r == 0 && period_on(po)) {
		conf_from(&c, po, p, PERIODIC_PLUGIN);
	} else if (r == 0 && p == PERIOD_DAY) {
		r = read_json(rootfd, DAILY_CORE, &core, ret_msg);
		if (r == 0)
			conf_from(&c, core, p, core ? DAILY_CORE : "defaults");
	} else if (r == 0) {
		*ret_msg = xasprintf(
			"%c%s notes are not set up in this vault: vaultd "
			"follows the Periodic Notes plugin's settings (%s), "
			"and %s",
			toupper(PERIODS[p].adj[0]), PERIODS[p].adj + 1,
			PERIODIC_PLUGIN,
			!plugin ? "there are none"
			: !on	? "the plugin is not enabled "
				  "(" COMMUNITY_PLUGINS ")"
				: "they do not enable these notes");
		r = -ENOENT;
	}
	cJSON_Delete(plugin);
	cJSON_Delete(core);
	if (r < 0) {
		periodic_conf_clear(&c);
		return r;
	}
	*ret = c;
	return 0;
}

void periodic_conf_clear(struct periodic_conf *c)
{
	free(c->folder);
	free(c->format);
	free(c->template);
	memset(c, 0, sizeof(*c));
}

int templates_conf_load(int rootfd, struct templates_conf *ret, char **ret_msg)
{
	cJSON *j = NULL;
	int r = read_json(rootfd, TEMPLATES_CORE, &j, ret_msg);
	if (r < 0)
		return r;
	ret->folder = clean_folder(jstr(j, "folder"));
	ret->date_format = trimmed_or(jstr(j, "dateFormat"), "YYYY-MM-DD");
	ret->time_format = trimmed_or(jstr(j, "timeFormat"), "HH:mm");
	cJSON_Delete(j);
	return 0;
}

void templates_conf_clear(struct templates_conf *c)
{
	free(c->folder);
	free(c->date_format);
	free(c->time_format);
	memset(c, 0, sizeof(*c));
}

/* ---- dates ------------------------------------------------------------ */

int periodic_date_arg(const struct periodic_conf *c, const char *arg,
		      struct moment_tm *ret)
{
	static const struct {
		const char *word;
		int days;
	} REL[] = {{"today", 0}, {"yesterday", -1}, {"tomorrow", 1}};
	struct moment_tm now, t;
	moment_now(&now);
	while (isspace((unsigned char)*arg))
		arg++;
	for (size_t i = 0; i < ARRAY_SIZE(REL); i++) {
		if (!strcasecmp(arg, REL[i].word)) {
			t = now;
			moment_add(&t, REL[i].days, 'd');
			*ret = t;
			return 0;
		}
	}
	/* ISO dates: "2024-01-05", "2024-1-5", then maybe a time. */
	int y, m, d, n = 0;
	if (sscanf(arg, "%4d-%2d-%2d%n", &y, &m, &d, &n) == 3 && n >= 8 &&
	    (!arg[n] || arg[n] == 'T' || arg[n] == ' ') && y >= 1 && m >= 1 &&
	    m <= 12 && d >= 1) {
		struct moment_tm probe = {.year = y, .month = m, .day = 1};
		moment_add(&probe, 1, 'M');
		moment_add(&probe, -1, 'd');
		if (d > probe.day)
			return -EINVAL;
		*ret = (struct moment_tm){
			.year = y, .month = m, .day = d, .gmtoff = now.gmtoff};
		return 0;
	}
	/* A note's own name (2024-W05), or its path. */
	size_t fl = strlen(c->folder);
	if (fl && !strncmp(arg, c->folder, fl) && arg[fl] == '/')
		arg += fl + 1;
	const char *base = strrchr(arg, '/');
	_cleanup_free_ char *name =
		xstrdup(strchr(c->format, '/') || !base ? arg : base + 1);
	if (str_has_suffix_ci(name, ".md"))
		name[strlen(name) - 3] = 0;
	if (moment_parse(c->format, name, &c->loc, &t, NULL) == 0) {
		*ret = t;
		return 0;
	}
	return -EINVAL;
}

char *periodic_note_path(const struct periodic_conf *c,
			 const struct moment_tm *date)
{
	_cleanup_free_ char *name = moment_format(c->format, date, &c->loc);
	return *c->folder ? xasprintf("%s/%s.md", c->folder, name)
			  : xasprintf("%s.md", name);
}

/* ---- templates -------------------------------------------------------- */

bool template_uses_templater(const char *text)
{
	return strstr(text, "<%") != NULL;
}

/* s[0..n) is word, any case, and what follows is not a letter. */
static size_t keyword(const char *s, size_t n, const char *word)
{
	size_t l = strlen(word);
	if (n < l || strncasecmp(s, word, l) ||
	    (n > l && isalpha((unsigned char)s[l])))
		return 0;
	return l;
}

static void skip_spaces(const char **s, const char **e)
{
	while (*s < *e && isspace((unsigned char)**s))
		(*s)++;
	while (*e > *s && isspace((unsigned char)(*e)[-1]))
		(*e)--;
}

/* "+1d", "-2w": an offset from the date; false if there is none. */
static bool read_offset(const char **s, const char *e, long *ret_n,
			char *ret_unit)
{
	const char *p = *s;
	while (p < e && isspace((unsigned char)*p))
		p++;
	if (p >= e || (*p != '+' && *p != '-'))
		return false;
	char *end;
	long n = strtol(p, &end, 10);
	if (end == p + 1 || end >= e || !strchr("yYqQMmwWdDhHsS", *end))
		return false;
	/* Moment's units: M months, m minutes; the others any case. */
	char u = *end == 'M' || *end == 'm' ? *end : (char)tolower(*end);
	*ret_n = n;
	*ret_unit = u == 'q' ? 'Q' : u;
	*s = end + 1;
	return true;
}

/* One {{...}} (inner text [s, e)), filled; NULL to leave it alone. */
static char *fill_var(const char *s, const char *e,
		      const struct template_vars *v)
{
	static const char *const DAYS[] = {"sunday",	"monday",   "tuesday",
					   "wednesday", "thursday", "friday",
					   "saturday"};
	skip_spaces(&s, &e);
	size_t n = (size_t)(e - s), k;
	if (!n)
		return NULL;
	if (keyword(s, n, "title") == n)
		return xstrdup(v->title);
	struct moment_tm t = *v->date;
	const char *fmt = v->date_format;
	bool time = false;
	if ((k = keyword(s, n, "date")) || (k = keyword(s, n, "time"))) {
		time = tolower((unsigned char)*s) == 't';
		fmt = time ? v->time_format : v->date_format;
		s += k;
		long off;
		char unit;
		if (read_offset(&s, e, &off, &unit) &&
		    moment_add(&t, off, unit) < 0)
			return NULL;
	} else if (v->periodic && ((k = keyword(s, n, "yesterday")) == n ||
				   (k = keyword(s, n, "tomorrow")) == n)) {
		moment_add(&t, tolower((unsigned char)*s) == 'y' ? -1 : 1, 'd');
		s += k;
	} else {
		int day = -1;
		for (int i = 0; i < 7 && v->periodic && day < 0; i++)
			if ((k = keyword(s, n, DAYS[i])))
				day = i;
		if (day < 0)
			return NULL;
		moment_start_of(&t, 'w', v->loc);
		moment_add(&t, (day - v->loc->dow + 7) % 7, 'd');
		s += k;
	}
	skip_spaces(&s, &e);
	if (s < e && *s == ':') {
		const char *f = s + 1, *fe = e;
		skip_spaces(&f, &fe);
		_cleanup_free_ char *own = xstrndup(f, (size_t)(fe - f));
		return moment_format(own, &t, v->loc);
	}
	return s == e ? moment_format(fmt, &t, v->loc) : NULL;
}

char *template_fill(const char *text, const struct template_vars *v)
{
	struct sbuf b = {0};
	sb_puts(&b, "");
	const char *p = text;
	for (;;) {
		const char *open = strstr(p, "{{");
		const char *close = open ? strstr(open + 2, "}}") : NULL;
		if (!close) {
			sb_puts(&b, p);
			break;
		}
		/* The innermost pair: "{{{{date}}" fills "{{date}}". */
		const char *inner = open;
		for (const char *q = open + 1; q < close; q++)
			if (q[0] == '{' && q[1] == '{')
				inner = q;
		sb_add(&b, p, (size_t)(inner - p));
		_cleanup_free_ char *val = fill_var(inner + 2, close, v);
		if (val)
			sb_puts(&b, val);
		else
			sb_add(&b, inner, (size_t)(close + 2 - inner));
		p = close + 2;
	}
	return sb_steal(&b);
}
