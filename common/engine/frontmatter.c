/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "frontmatter.h"
#include "markdown.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <yaml.h>

/* ---- reading ---------------------------------------------------------- */

static bool match_any(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(s, *list) == 0)
			return true;
	return false;
}

static bool parse_number(const char *s, double *ret)
{
	static const char *const inf[] = {".inf",  ".Inf",  ".INF", "+.inf",
					  "+.Inf", "+.INF", NULL};
	const char *p = s;
	if (*p == '+' || *p == '-')
		p++;
	if (!*p)
		return false;
	if (match_any(s, inf) || match_any(p, inf))
		return false; /* JSON has no infinity: keep as text */
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'o')) {
		char *end;
		long long v = strtoll(p + 2, &end, p[1] == 'x' ? 16 : 8);
		if (*end || end == p + 2)
			return false;
		*ret = (s[0] == '-') ? -(double)v : (double)v;
		return true;
	}
	/* Decimal int or float; dates like 2024-01-15 stay strings. */
	bool digits = false, dot = false, exp = false;
	for (const char *q = p; *q; q++) {
		if (isdigit((unsigned char)*q)) {
			digits = true;
		} else if (*q == '.' && !dot && !exp) {
			dot = true;
		} else if ((*q == 'e' || *q == 'E') && digits && !exp) {
			exp = true;
			if (q[1] == '+' || q[1] == '-')
				q++;
			if (!isdigit((unsigned char)q[1]))
				return false;
		} else {
			return false;
		}
	}
	if (!digits)
		return false;
	char *end;
	*ret = strtod(s, &end);
	return *end == 0 && isfinite(*ret);
}

static cJSON *plain_scalar(const char *s)
{
	static const char *const nulls[] = {"",	    "~",    "null",
					    "Null", "NULL", NULL};
	static const char *const trues[] = {"true", "True", "TRUE", NULL};
	static const char *const falses[] = {"false", "False", "FALSE", NULL};
	double d;
	if (match_any(s, nulls))
		return cJSON_CreateNull();
	if (match_any(s, trues))
		return cJSON_CreateTrue();
	if (match_any(s, falses))
		return cJSON_CreateFalse();
	if (parse_number(s, &d))
		return cJSON_CreateNumber(d);
	return cJSON_CreateString(s);
}

struct anchor {
	char *name;
	cJSON *node;
	size_t nodes; /* values in node, itself included */
};

/*
 * libyaml's marks count characters, the note is bytes: a cursor turns one
 * into the other. Marks come in the order of the text, so the cursor
 * walks it once.
 */
struct bytepos {
	const char *s;
	size_t len;
	size_t ci, bi; /* character ci starts at byte bi */
};

static size_t byte_at(struct bytepos *b, size_t ci)
{
	if (ci < b->ci)
		b->ci = b->bi = 0;
	while (b->ci < ci && b->bi < b->len) {
		unsigned char c = (unsigned char)b->s[b->bi];
		size_t w = c < 0xc0 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
		b->bi = w < b->len - b->bi ? b->bi + w : b->len;
		b->ci++;
	}
	return b->bi;
}

struct yparse {
	yaml_parser_t p;
	yaml_event_t ev;
	bool have_ev;
	struct bytepos pos;	/* over the YAML text */
	const char *text;	/* the whole note */
	size_t fs;		/* where the YAML text starts in it */
	int first_line;		/* the note's line of the YAML's first line */
	struct frontmatter *fm; /* collects the property links */
	size_t links_cap;
	struct anchor *anchors;
	size_t nanchors;
	const char *err;
	size_t nodes;	 /* values made so far, aliases expanded */
	size_t len;	 /* of the YAML text */
	size_t err_line; /* 0-based line within the YAML text */
	char errbuf[160];
	bool over_budget;
};

static int next_event(struct yparse *y)
{
	if (y->have_ev)
		yaml_event_delete(&y->ev);
	y->have_ev = false;
	if (!yaml_parser_parse(&y->p, &y->ev)) {
		y->err = y->p.problem ? y->p.problem : "invalid YAML";
		y->err_line = y->p.problem_mark.line;
		/* An unclosed construct is noticed at the end of the block;
		 * the line where it starts is the one to fix. */
		if (y->p.context && y->p.problem_mark.index >= y->len)
			y->err_line = y->p.context_mark.line;
		if (y->p.context) {
			snprintf(y->errbuf, sizeof(y->errbuf), "%s %s",
				 y->p.problem ? y->p.problem : "invalid YAML",
				 y->p.context);
			y->err = y->errbuf;
		}
		return -EBADMSG;
	}
	y->have_ev = true;
	return 0;
}

/* node holds the values made since `first` (the count before it). */
static void add_anchor(struct yparse *y, const yaml_char_t *name, cJSON *node,
		       size_t first)
{
	if (!name)
		return;
	y->anchors =
		xrealloc(y->anchors, (y->nanchors + 1) * sizeof(*y->anchors));
	y->anchors[y->nanchors].name = xstrdup((const char *)name);
	y->anchors[y->nanchors].node = node;
	y->anchors[y->nanchors].nodes = y->nodes - first;
	y->nanchors++;
}

static int fail(struct yparse *y, const char *msg, size_t line)
{
	snprintf(y->errbuf, sizeof(y->errbuf), "%s", msg);
	y->err = y->errbuf;
	y->err_line = line;
	return -EBADMSG;
}

/* Count n more values against the budget (aliases copy whole trees: a
 * few hundred bytes of anchors and aliases could ask for billions). */
static int take_nodes(struct yparse *y, size_t n, size_t line)
{
	if (n > FM_MAX_NODES - y->nodes) {
		char msg[128];
		snprintf(msg, sizeof(msg),
			 "frontmatter too complex: more than %d values "
			 "(counting what aliases repeat)",
			 FM_MAX_NODES);
		y->over_budget = true;
		return fail(y, msg, line);
	}
	y->nodes += n;
	return 0;
}

char *fm_quoted(const char *s, char quote)
{
	struct sbuf b = {0};
	for (; *s; s++) {
		if (quote == '"' && (*s == '"' || *s == '\\'))
			sb_putc(&b, '\\');
		else if (quote == '\'' && *s == '\'')
			sb_putc(&b, '\'');
		sb_putc(&b, *s);
	}
	return sb_steal(&b);
}

/*
 * A text property, or an item of a list property, whose value is one
 * wikilink: one of the note's links ("Text properties can contain ...
 * [[Internal links]]", "List values can contain ... [[Internal links]]",
 * Properties). Obsidian takes a value that *is* a link, not text around
 * one (markdown is not rendered in properties), and writes it quoted;
 * unquoted, [[Target]] is a YAML list of lists, not text, so no link
 * ("Internal links in text properties must be surrounded with quotes").
 * The target's bytes are where a rename writes, quoted as they were.
 */
static void prop_link(struct yparse *y, const yaml_event_t *e)
{
	const char *v = (const char *)e->data.scalar.value;
	size_t a = 0, b = e->data.scalar.length;
	if (memchr(v, 0, b))
		return;
	while (a < b && isspace((unsigned char)v[a]))
		a++;
	while (b > a && isspace((unsigned char)v[b - 1]))
		b--;
	if (b - a < 4 || v[a] != '[' || v[a + 1] != '[')
		return;
	struct md_link l = {0};
	if (md_parse_wikilink(v, b, a, &l) != b) {
		md_link_clear(&l);
		return;
	}
	const char *t = y->text;
	size_t r0 = y->fs + byte_at(&y->pos, e->start_mark.index);
	size_t r1 = y->fs + byte_at(&y->pos, e->end_mark.index);
	const char *open = r1 > r0 ? memmem(t + r0, r1 - r0, "[[", 2) : NULL;
	size_t k = open ? (size_t)(open - t) : r0;
	l.kind = LINK_WIKI;
	l.quote = e->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE ? '"'
		  : e->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE
			  ? '\''
			  : 0;
	l.line = y->first_line + (int)e->start_mark.line;
	for (size_t i = r0; i < k; i++)
		l.line += t[i] == '\n';
	l.start = k;
	l.end = r1;
	l.tstart = l.tend = k; /* nothing to rewrite, unless found below */
	struct md_link raw = {0};
	size_t end = open ? md_parse_wikilink(t, r1, k, &raw) : 0;
	if (end) {
		/* The target as written must be the target as read, quoted:
		 * not so when escapes or a line fold make it up. */
		_cleanup_free_ char *want = fm_quoted(l.target, l.quote);
		if (strlen(want) == raw.tend - raw.tstart &&
		    memcmp(want, t + raw.tstart, raw.tend - raw.tstart) == 0) {
			l.tstart = raw.tstart;
			l.tend = raw.tend;
			l.end = end;
		}
	}
	md_link_clear(&raw);
	struct frontmatter *fm = y->fm;
	if (fm->nlinks == y->links_cap) {
		y->links_cap = y->links_cap ? y->links_cap * 2 : 4;
		fm->links =
			xrealloc(fm->links, y->links_cap * sizeof(*fm->links));
	}
	fm->links[fm->nlinks++] = l;
}

static int parse_node(struct yparse *y, int depth, cJSON **ret,
		      yaml_mark_t *ret_end);

/* A scalar node (its node already counted from first). */
static int parse_scalar(struct yparse *y, size_t first, cJSON **ret,
			yaml_mark_t *ret_end)
{
	yaml_event_t *e = &y->ev;
	const char *v = (const char *)e->data.scalar.value;
	const char *tag = (const char *)e->data.scalar.tag;
	cJSON *n;
	if (tag && strcmp(tag, YAML_STR_TAG) == 0)
		n = cJSON_CreateString(v);
	else if (e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
		n = plain_scalar(v);
	else
		n = cJSON_CreateString(v);
	add_anchor(y, e->data.scalar.anchor, n, first);
	*ret_end = e->end_mark;
	*ret = n;
	return 0;
}

/* An alias: a copy of its anchor's node, whose nodes count again. */
static int parse_alias(struct yparse *y, cJSON **ret, yaml_mark_t *ret_end)
{
	yaml_event_t *e = &y->ev;
	const char *a = (const char *)e->data.alias.anchor;
	for (size_t i = y->nanchors; i-- > 0;) {
		if (strcmp(y->anchors[i].name, a) == 0) {
			int r = take_nodes(y, y->anchors[i].nodes,
					   e->start_mark.line);
			if (r < 0)
				return r;
			*ret = cJSON_Duplicate(y->anchors[i].node, 1);
			*ret_end = e->end_mark;
			return 0;
		}
	}
	return fail(y, "unknown alias", e->start_mark.line);
}

/* A sequence, from its start event to its end event. */
static int parse_sequence(struct yparse *y, int depth, size_t first,
			  cJSON **ret, yaml_mark_t *ret_end)
{
	yaml_event_t *e = &y->ev;
	cJSON *arr = cJSON_CreateArray();
	yaml_char_t *anchor =
		e->data.sequence_start.anchor
			? (yaml_char_t *)xstrdup(
				  (const char *)e->data.sequence_start.anchor)
			: NULL;
	for (;;) {
		int r = next_event(y);
		if (r < 0) {
			free(anchor);
			cJSON_Delete(arr);
			return r;
		}
		if (y->ev.type == YAML_SEQUENCE_END_EVENT)
			break;
		if (depth == 1 && y->ev.type == YAML_SCALAR_EVENT)
			prop_link(y, &y->ev); /* a list property's item */
		cJSON *item;
		yaml_mark_t m;
		r = parse_node(y, depth + 1, &item, &m);
		if (r < 0) {
			free(anchor);
			cJSON_Delete(arr);
			return r;
		}
		cJSON_AddItemToArray(arr, item);
	}
	*ret_end = y->ev.end_mark;
	add_anchor(y, anchor, arr, first);
	free(anchor);
	*ret = arr;
	return 0;
}

/* The next key of a mapping read into obj (1; *ret_key: a copy, the
 * current event its scalar), or the mapping's end (0). Keys are text,
 * each once. */
static int next_key(struct yparse *y, cJSON *obj, char **ret_key)
{
	int r = next_event(y);
	if (r < 0)
		return r;
	if (y->ev.type == YAML_MAPPING_END_EVENT)
		return 0;
	if (y->ev.type != YAML_SCALAR_EVENT)
		return fail(y, "only text keys are supported",
			    y->ev.start_mark.line);
	const char *key = (const char *)y->ev.data.scalar.value;
	if (cJSON_GetObjectItemCaseSensitive(obj, key)) {
		char msg[128];
		snprintf(msg, sizeof(msg), "duplicated mapping key '%.80s'",
			 key);
		return fail(y, msg, y->ev.start_mark.line);
	}
	*ret_key = xstrdup(key);
	return 1;
}

/* A mapping's entries, up to its end event, into obj (text keys, each
 * once). */
static int parse_entries(struct yparse *y, int depth, cJSON *obj)
{
	for (;;) {
		_cleanup_free_ char *key = NULL;
		int r = next_key(y, obj, &key);
		if (r <= 0)
			return r;
		r = next_event(y);
		if (r < 0)
			return r;
		cJSON *val;
		yaml_mark_t m;
		r = parse_node(y, depth + 1, &val, &m);
		if (r < 0)
			return r;
		cJSON_AddItemToObject(obj, key, val);
	}
}

/* A mapping, from its start event to its end event. */
static int parse_mapping(struct yparse *y, int depth, size_t first, cJSON **ret,
			 yaml_mark_t *ret_end)
{
	yaml_event_t *e = &y->ev;
	cJSON *obj = cJSON_CreateObject();
	yaml_char_t *anchor =
		e->data.mapping_start.anchor
			? (yaml_char_t *)xstrdup(
				  (const char *)e->data.mapping_start.anchor)
			: NULL;
	int r = parse_entries(y, depth, obj);
	if (r < 0) {
		free(anchor);
		cJSON_Delete(obj);
		return r;
	}
	*ret_end = y->ev.end_mark;
	add_anchor(y, anchor, obj, first);
	free(anchor);
	*ret = obj;
	return 0;
}

/* Parse the node starting at the current event. On success the current
 * event is the last event of the node. */
static int parse_node(struct yparse *y, int depth, cJSON **ret,
		      yaml_mark_t *ret_end)
{
	yaml_event_t *e = &y->ev;
	if (depth > 64)
		return fail(y, "nesting too deep", e->start_mark.line);
	size_t first = y->nodes;
	if (e->type != YAML_ALIAS_EVENT) {
		int r = take_nodes(y, 1, e->start_mark.line);
		if (r < 0)
			return r;
	}
	switch (e->type) {
	case YAML_SCALAR_EVENT:
		return parse_scalar(y, first, ret, ret_end);
	case YAML_ALIAS_EVENT:
		return parse_alias(y, ret, ret_end);
	case YAML_SEQUENCE_START_EVENT:
		return parse_sequence(y, depth, first, ret, ret_end);
	case YAML_MAPPING_START_EVENT:
		return parse_mapping(y, depth, first, ret, ret_end);
	default:
		return fail(y, "unexpected YAML event", e->start_mark.line);
	}
}

/* Start of the line holding offset off. */
static size_t bol(const char *t, size_t off)
{
	while (off > 0 && t[off - 1] != '\n')
		off--;
	return off;
}

/* Trailing blank and comment-only lines of [start, end) belong to what
 * follows them. */
static size_t trim_trailing_comments(const char *t, size_t start, size_t end)
{
	for (;;) {
		if (end <= start)
			return start;
		size_t ls = bol(t, end - 1 >= start ? end - 1 : start);
		if (ls < start)
			return end;
		size_t i = ls;
		while (i < end && (t[i] == ' ' || t[i] == '\t' || t[i] == '\r'))
			i++;
		if (i < end && t[i] != '#' && t[i] != '\n')
			return end;
		if (ls == start)
			return end; /* never eat the key's own line */
		end = ls;
	}
}

static void set_invalid(struct frontmatter *fm, const char *msg, int line)
{
	fm->valid = false;
	fm->err_msg = xstrdup(msg);
	fm->err_line = line;
	cJSON_Delete(fm->data);
	fm->data = cJSON_CreateObject();
	for (size_t i = 0; i < fm->nkeys; i++)
		free(fm->keys[i].key);
	free(fm->keys);
	fm->keys = NULL;
	fm->nkeys = 0;
	for (size_t i = 0; i < fm->nlinks; i++)
		md_link_clear(&fm->links[i]);
	free(fm->links);
	fm->links = NULL;
	fm->nlinks = 0;
}

/* The lines of the key that starts at kstart and whose value ends at
 * end: to the end of the line where the value ends, without trailing
 * comment lines. */
static size_t key_end(struct yparse *y, size_t fe, size_t kstart,
		      yaml_mark_t end)
{
	const char *text = y->text;
	size_t vend = y->fs + byte_at(&y->pos, end.index);
	if (vend > y->fs && text[vend - 1] != '\n') {
		const char *nl = memchr(text + vend, '\n', fe - vend);
		vend = nl ? (size_t)(nl - text) + 1 : fe;
	}
	return trim_trailing_comments(text, kstart, vend);
}

/* The top-level mapping's keys, up to its end event, into y->fm (its data
 * and each key's lines); the frontmatter's YAML ends at fe. */
static int parse_keys(struct yparse *y, size_t fe)
{
	struct frontmatter *fm = y->fm;
	size_t cap = 0;
	for (;;) {
		_cleanup_free_ char *key = NULL;
		int r = next_key(y, fm->data, &key);
		if (r <= 0)
			return r;
		size_t kstart =
			y->fs + bol(y->text + y->fs,
				    byte_at(&y->pos, y->ev.start_mark.index));
		if ((r = next_event(y)) < 0)
			return r;
		if (y->ev.type == YAML_SCALAR_EVENT)
			prop_link(y, &y->ev); /* a text property */
		cJSON *val;
		yaml_mark_t end;
		if ((r = parse_node(y, 1, &val, &end)) < 0)
			return r;
		cJSON_AddItemToObject(fm->data, key, val);
		if (fm->nkeys == cap) {
			cap = cap ? cap * 2 : 8;
			fm->keys = xrealloc(fm->keys, cap * sizeof(*fm->keys));
		}
		fm->keys[fm->nkeys++] =
			(struct fm_key){.key = xstrdup(key),
					.start = kstart,
					.end = key_end(y, fe, kstart, end)};
	}
}

void fm_parse(const char *text, size_t len, struct frontmatter *fm)
{
	memset(fm, 0, sizeof(*fm));
	size_t fs, fe, bo;
	if (!md_split_frontmatter(text, len, &fs, &fe, &bo)) {
		fm->valid = true;
		fm->data = cJSON_CreateObject();
		return;
	}
	fm->present = true;
	fm->fm_start = fs;
	fm->fm_end = fe;
	fm->body_off = bo;
	fm->valid = true;
	fm->data = cJSON_CreateObject();
	if (fe - fs > FM_MAX_BYTES) {
		char msg[96];
		snprintf(msg, sizeof(msg),
			 "frontmatter too large: more than %d KiB of YAML",
			 FM_MAX_BYTES >> 10);
		set_invalid(fm, msg, line_of_offset(text, fs));
		fm->over_budget = true;
		return;
	}

	struct yparse y = {.pos = {.s = text + fs, .len = fe - fs},
			   .text = text,
			   .fs = fs,
			   .first_line = line_of_offset(text, fs),
			   .fm = fm};
	yaml_parser_initialize(&y.p);
	y.len = fe - fs;
	yaml_parser_set_input_string(&y.p, (const unsigned char *)text + fs,
				     fe - fs);
	int r = 0;
	/* STREAM-START, then DOCUMENT-START or STREAM-END (empty block). */
	if ((r = next_event(&y)) < 0 || (r = next_event(&y)) < 0)
		goto out;
	if (y.ev.type == YAML_STREAM_END_EVENT)
		goto out;
	if ((r = next_event(&y)) < 0)
		goto out;
	if (y.ev.type == YAML_SCALAR_EVENT &&
	    y.ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	    y.ev.data.scalar.length == 0) {
		/* An empty document: "---\n---". */
		goto out;
	}
	if (y.ev.type != YAML_MAPPING_START_EVENT) {
		r = fail(&y, "frontmatter is not a list of 'key: value' lines",
			 y.ev.start_mark.line);
		goto out;
	}
	if ((r = parse_keys(&y, fe)) < 0)
		goto out;
	/* Anything after the mapping (a second document) is an error. */
	if ((r = next_event(&y)) < 0)
		goto out;
	if ((r = next_event(&y)) < 0)
		goto out;
	if (y.ev.type != YAML_STREAM_END_EVENT)
		r = fail(&y, "more than one YAML document",
			 y.ev.start_mark.line);
out:
	if (r < 0) {
		set_invalid(fm, y.err ? y.err : "invalid YAML",
			    line_of_offset(text, fs) + (int)y.err_line);
		fm->over_budget = y.over_budget;
	}
	if (y.have_ev)
		yaml_event_delete(&y.ev);
	yaml_parser_delete(&y.p);
	for (size_t i = 0; i < y.nanchors; i++)
		free(y.anchors[i].name);
	free(y.anchors);
}

void fm_clear(struct frontmatter *fm)
{
	cJSON_Delete(fm->data);
	free(fm->err_msg);
	for (size_t i = 0; i < fm->nkeys; i++)
		free(fm->keys[i].key);
	free(fm->keys);
	for (size_t i = 0; i < fm->nlinks; i++)
		md_link_clear(&fm->links[i]);
	free(fm->links);
	memset(fm, 0, sizeof(*fm));
}

/* ---- writing ---------------------------------------------------------- */

static void add_number(struct sbuf *b, double d)
{
	char buf[32];
	format_double(d, buf);
	sb_puts(b, buf);
}

/* U+0085, U+2028, U+2029: YAML reads them as line breaks. */
static size_t yaml_break_at(const unsigned char *p)
{
	if (p[0] == 0xc2 && p[1] == 0x85)
		return 2;
	if (p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9))
		return 3;
	return 0;
}

static bool plain_safe(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || isspace((unsigned char)s[0]) ||
	    isspace((unsigned char)s[n - 1]))
		return false;
	if (strchr("-?:,[]{}#&*!|>'\"%@`", s[0]))
		return false;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p < 0x20 || *p == 0x7f)
			return false;
		if (*p == ':' && (p[1] == ' ' || p[1] == 0))
			return false;
		if (*p == '#' && p > (const unsigned char *)s && p[-1] == ' ')
			return false;
		if (yaml_break_at(p))
			return false;
	}
	/* It must read back as the same string, not a null/bool/number. */
	cJSON *v = plain_scalar(s);
	bool ok = cJSON_IsString(v);
	cJSON_Delete(v);
	return ok;
}

static void add_quoted(struct sbuf *b, const char *s)
{
	sb_putc(b, '"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':
			sb_puts(b, "\\\"");
			break;
		case '\\':
			sb_puts(b, "\\\\");
			break;
		case '\n':
			sb_puts(b, "\\n");
			break;
		case '\t':
			sb_puts(b, "\\t");
			break;
		case '\r':
			sb_puts(b, "\\r");
			break;
		default: {
			size_t brk = yaml_break_at(p);
			if (brk) {
				sb_puts(b, brk == 2	  ? "\\N"
					   : p[2] == 0xa8 ? "\\L"
							  : "\\P");
				p += brk - 1;
			} else if (*p < 0x20 || *p == 0x7f) {
				sb_printf(b, "\\x%02x", *p);
			} else {
				sb_putc(b, (char)*p);
			}
		}
		}
	}
	sb_putc(b, '"');
}

static void add_scalar(struct sbuf *b, const cJSON *v)
{
	if (cJSON_IsString(v)) {
		if (plain_safe(v->valuestring))
			sb_puts(b, v->valuestring);
		else
			add_quoted(b, v->valuestring);
	} else if (cJSON_IsNumber(v)) {
		add_number(b, v->valuedouble);
	} else if (cJSON_IsTrue(v)) {
		sb_puts(b, "true");
	} else if (cJSON_IsFalse(v)) {
		sb_puts(b, "false");
	} else {
		sb_puts(b, "null");
	}
}

/* Flow style (JSON-like) for values nested inside lists. */
static void add_flow(struct sbuf *b, const cJSON *v)
{
	if (cJSON_IsArray(v)) {
		sb_putc(b, '[');
		const cJSON *it;
		bool first = true;
		cJSON_ArrayForEach(it, v)
		{
			if (!first)
				sb_puts(b, ", ");
			first = false;
			add_flow(b, it);
		}
		sb_putc(b, ']');
	} else if (cJSON_IsObject(v)) {
		sb_putc(b, '{');
		const cJSON *it;
		bool first = true;
		cJSON_ArrayForEach(it, v)
		{
			if (!first)
				sb_puts(b, ", ");
			first = false;
			add_quoted(b, it->string);
			sb_puts(b, ": ");
			add_flow(b, it);
		}
		sb_putc(b, '}');
	} else if (cJSON_IsString(v)) {
		add_quoted(b, v->valuestring);
	} else {
		add_scalar(b, v);
	}
}

static void add_key(struct sbuf *b, const char *key)
{
	if (plain_safe(key))
		sb_puts(b, key);
	else
		add_quoted(b, key);
}

static void add_entry(struct sbuf *b, const char *key, const cJSON *v,
		      int indent);

static void add_block(struct sbuf *b, const cJSON *v, int indent)
{
	if (cJSON_IsArray(v)) {
		const cJSON *it;
		cJSON_ArrayForEach(it, v)
		{
			sb_printf(b, "%*s- ", indent, "");
			if (cJSON_IsObject(it) && cJSON_GetArraySize(it) > 0) {
				/* "- a: 1\n  b: 2" */
				bool first = true;
				const cJSON *kv;
				cJSON_ArrayForEach(kv, it)
				{
					if (!first)
						sb_printf(b, "%*s", indent + 2,
							  "");
					first = false;
					add_entry(b, kv->string, kv,
						  indent + 2);
				}
			} else if (cJSON_IsArray(it) || cJSON_IsObject(it)) {
				add_flow(b, it);
				sb_putc(b, '\n');
			} else {
				add_scalar(b, it);
				sb_putc(b, '\n');
			}
		}
	} else {
		const cJSON *kv;
		cJSON_ArrayForEach(kv, v)
		{
			sb_printf(b, "%*s", indent, "");
			add_entry(b, kv->string, kv, indent);
		}
	}
}

static void add_entry(struct sbuf *b, const char *key, const cJSON *v,
		      int indent)
{
	add_key(b, key);
	if (cJSON_IsArray(v) || cJSON_IsObject(v)) {
		if (cJSON_GetArraySize(v) == 0) {
			sb_puts(b, cJSON_IsArray(v) ? ": []\n" : ": {}\n");
			return;
		}
		sb_puts(b, ":\n");
		add_block(b, v, indent + 2);
		return;
	}
	sb_puts(b, ": ");
	add_scalar(b, v);
	sb_putc(b, '\n');
}

char *fm_render_object(const cJSON *obj)
{
	struct sbuf b = {0};
	const cJSON *kv;
	cJSON_ArrayForEach(kv, obj) add_entry(&b, kv->string, kv, 0);
	return sb_steal(&b);
}

int fm_set(const char *text, size_t len, const char *key, const cJSON *value,
	   char **ret_text)
{
	struct frontmatter fm;
	fm_parse(text, len, &fm);
	if (!fm.valid) {
		fm_clear(&fm);
		return -EBADMSG;
	}
	struct sbuf entry = {0}, out = {0};
	if (value)
		add_entry(&entry, key, value, 0);
	if (!fm.present) {
		if (!value) {
			fm_clear(&fm);
			sb_free(&entry);
			*ret_text = xstrndup(text, len);
			return 0;
		}
		sb_puts(&out, "---\n");
		sb_add(&out, entry.s, entry.len);
		sb_puts(&out, "---\n");
		sb_add(&out, text, len);
	} else {
		const struct fm_key *k = NULL;
		for (size_t i = 0; i < fm.nkeys; i++)
			if (strcmp(fm.keys[i].key, key) == 0)
				k = &fm.keys[i];
		if (k) {
			sb_add(&out, text, k->start);
			sb_add(&out, sb_str(&entry), entry.len);
			sb_add(&out, text + k->end, len - k->end);
		} else if (value) {
			sb_add(&out, text, fm.fm_end);
			if (fm.fm_end > fm.fm_start &&
			    text[fm.fm_end - 1] != '\n')
				sb_putc(&out, '\n');
			sb_add(&out, entry.s, entry.len);
			sb_add(&out, text + fm.fm_end, len - fm.fm_end);
		} else {
			sb_add(&out, text, len);
		}
	}
	fm_clear(&fm);
	sb_free(&entry);
	*ret_text = sb_steal(&out);
	return 0;
}

char **fm_string_list(const cJSON *v, bool split_spaces, bool strip_hash)
{
	struct ptrvec pv = {0};
	const char *seps = split_spaces ? ", \t" : ",";
	if (cJSON_IsArray(v)) {
		const cJSON *it;
		cJSON_ArrayForEach(it, v)
		{
			char buf[64];
			const char *s = NULL;
			if (cJSON_IsString(it)) {
				s = it->valuestring;
			} else if (cJSON_IsNumber(it)) {
				struct sbuf nb = {0};
				add_number(&nb, it->valuedouble);
				snprintf(buf, sizeof(buf), "%s", sb_str(&nb));
				sb_free(&nb);
				s = buf;
			}
			if (!s)
				continue;
			while (isspace((unsigned char)*s))
				s++;
			if (strip_hash && *s == '#')
				s++;
			size_t n = strlen(s);
			while (n && isspace((unsigned char)s[n - 1]))
				n--;
			if (n)
				pv_push(&pv, xstrndup(s, n));
		}
	} else if (cJSON_IsString(v)) {
		const char *s = v->valuestring;
		while (*s) {
			size_t n = strcspn(s, seps);
			const char *a = s;
			size_t m = n;
			while (m && isspace((unsigned char)*a)) {
				a++;
				m--;
			}
			while (m && isspace((unsigned char)a[m - 1]))
				m--;
			if (strip_hash && m && *a == '#') {
				a++;
				m--;
			}
			if (m)
				pv_push(&pv, xstrndup(a, m));
			s += n;
			if (*s)
				s++;
		}
	}
	pv_push(&pv, NULL);
	return (char **)pv.v;
}
