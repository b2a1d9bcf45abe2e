/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "policy.h"
#include "fileio.h"
#include "frontmatter.h"
#include "glob.h"

#include <errno.h>

static const char PERSON_MSG[] =
	"Tag 'Person' is for people notes only: the note name must start "
	"with '@' (e.g. '@John Doe').";
static const char CLAUDE_MSG[] =
	"Tag 'claude' marks instructions for Claude AI. Requires "
	"'description' field in frontmatter explaining when to read the note.";

static void add_rule(struct policy *p, const char *tag, const char *prefix,
		     const char *require, const char *msg)
{
	p->rules = xrealloc(p->rules, (p->nrules + 1) * sizeof(*p->rules));
	struct tag_rule *r = &p->rules[p->nrules++];
	memset(r, 0, sizeof(*r));
	r->tag = xstrdup(tag);
	r->name_prefix = prefix ? xstrdup(prefix) : NULL;
	r->requires = xcalloc(2, sizeof(char *));
	if (require)
	r->requires[0] = xstrdup(require);
	r->message = xstrdup(msg);
}

struct policy *policy_default(void)
{
	struct policy *p = xcalloc(1, sizeof(*p));
	p->allowed_tags = xcalloc(1, sizeof(char *));
	p->ignore = xcalloc(1, sizeof(char *));
	add_rule(p, "Person", "@", NULL, PERSON_MSG);
	add_rule(p, "claude", NULL, "description", CLAUDE_MSG);
	return p;
}

struct policy *policy_ref(struct policy *p)
{
	atomic_fetch_add(&p->refs, 1);
	return p;
}

struct policy *policy_free(struct policy *p)
{
	if (!p || atomic_fetch_sub(&p->refs, 1) > 0)
		return NULL;
	strv_free(p->allowed_tags);
	strv_free(p->ignore);
	for (size_t i = 0; i < p->nrules; i++) {
		free(p->rules[i].tag);
		free(p->rules[i].name_prefix);
		strv_free(p->rules[i].requires);
		free(p->rules[i].message);
	}
	free(p->rules);
	free(p);
	return NULL;
}

static int bad(char **ret_msg, const char *fmt, const char *arg)
{
	*ret_msg = xasprintf(fmt, arg);
	return -EBADMSG;
}

static char **string_list(const cJSON *v, bool strip_hash)
{
	if (!v || cJSON_IsNull(v))
		return xcalloc(1, sizeof(char *));
	return fm_string_list(v, false, strip_hash);
}

static int parse_rule(struct policy *p, const char *tag, const cJSON *v,
		      char **ret_msg)
{
	if (cJSON_IsNull(v))
		return 0; /* "Person: null" switches a rule off */
	if (!cJSON_IsObject(v))
		return bad(ret_msg,
			   POLICY_PATH ": tag_rules.%s must be a mapping "
				       "(name_prefix, requires, message)",
			   tag);
	const cJSON *prefix =
		cJSON_GetObjectItemCaseSensitive(v, "name_prefix");
	const cJSON *req = cJSON_GetObjectItemCaseSensitive(v, "requires");
	const cJSON *msg = cJSON_GetObjectItemCaseSensitive(v, "message");
	const cJSON *kv;
	cJSON_ArrayForEach(kv, v)
	{
		if (strcmp(kv->string, "name_prefix") &&
		    strcmp(kv->string, "requires") &&
		    strcmp(kv->string, "message"))
			return bad(ret_msg,
				   POLICY_PATH
				   ": unknown rule key '%s' "
				   "(use name_prefix, requires, message)",
				   kv->string);
	}
	if (prefix && !cJSON_IsString(prefix))
		return bad(ret_msg,
			   POLICY_PATH
			   ": tag_rules.%s.name_prefix must be text",
			   tag);
	if (msg && !cJSON_IsString(msg))
		return bad(ret_msg,
			   POLICY_PATH ": tag_rules.%s.message must be text",
			   tag);
	p->rules = xrealloc(p->rules, (p->nrules + 1) * sizeof(*p->rules));
	struct tag_rule *r = &p->rules[p->nrules++];
	memset(r, 0, sizeof(*r));
	r->tag = xstrdup(tag);
	r->name_prefix = prefix ? xstrdup(prefix->valuestring) : NULL;
	r->requires = string_list(req, false);
	struct sbuf m = {0};
	if (msg) {
		sb_puts(&m, msg->valuestring);
	} else {
		sb_printf(&m, "Tag '%s' requires", tag);
		if (r->name_prefix)
			sb_printf(&m, " a note name starting with '%s'",
				  r->name_prefix);
		for (char **k = r->requires; *k; k++)
			sb_printf(&m, "%s '%s' field in frontmatter",
				  (k == r->requires && !r->name_prefix)
					  ? ""
					  : " and",
				  *k);
		sb_putc(&m, '.');
	}
	r->message = sb_steal(&m);
	return 0;
}

/* A key whose value is one of two words: true for the second. */
static int two_words(const cJSON *kv, const char *a, const char *b, bool *ret,
		     char **ret_msg)
{
	if (!cJSON_IsString(kv) ||
	    (strcmp(kv->valuestring, a) && strcmp(kv->valuestring, b))) {
		*ret_msg = xasprintf(POLICY_PATH ": %s must be '%s' or '%s'",
				     kv->string, a, b);
		return -EBADMSG;
	}
	*ret = strcmp(kv->valuestring, b) == 0;
	return 0;
}

static int tag_rules(struct policy *p, const cJSON *kv, char **ret_msg)
{
	if (!cJSON_IsObject(kv) && !cJSON_IsNull(kv))
		return bad(ret_msg,
			   POLICY_PATH
			   ": tag_rules must be a mapping of tag: rule%s",
			   "");
	p->rules = xcalloc(1, sizeof(*p->rules));
	const cJSON *rule;
	cJSON_ArrayForEach(rule, kv)
	{
		int r = parse_rule(p, rule->string, rule, ret_msg);
		if (r < 0)
			return r;
	}
	return 0;
}

/* One top-level key of the policy file. */
static int policy_key(struct policy *p, const cJSON *kv, char **ret_msg)
{
	const char *k = kv->string;
	if (strcmp(k, "allowed_tags") == 0) {
		p->allowed_tags = string_list(kv, true);
	} else if (strcmp(k, "ignore") == 0) {
		p->ignore = string_list(kv, false);
	} else if (strcmp(k, "on_violation") == 0) {
		return two_words(kv, "reject", "warn", &p->warn, ret_msg);
	} else if (strcmp(k, "delete_links") == 0) {
		return two_words(kv, "mark", "keep", &p->keep_links, ret_msg);
	} else if (strcmp(k, "legacy_properties") == 0) {
		if (!cJSON_IsBool(kv))
			return bad(
				ret_msg,
				POLICY_PATH
				": legacy_properties must be true or false%s",
				"");
		p->legacy_properties = cJSON_IsTrue(kv);
	} else if (strcmp(k, "tag_rules") == 0) {
		return tag_rules(p, kv, ret_msg);
	} else {
		return bad(ret_msg,
			   POLICY_PATH
			   ": unknown key '%s' (known: allowed_tags, "
			   "tag_rules, on_violation, delete_links, ignore, "
			   "legacy_properties)",
			   k);
	}
	return 0;
}

int policy_parse(const char *text, size_t len, struct policy **ret,
		 char **ret_msg)
{
	/* Reuse the frontmatter reader: wrap the file as a YAML block. */
	struct sbuf wrapped = {0};
	sb_puts(&wrapped, "---\n");
	sb_add(&wrapped, text, len);
	if (len && text[len - 1] != '\n')
		sb_putc(&wrapped, '\n');
	sb_puts(&wrapped, "---\n");
	struct frontmatter fm;
	fm_parse(wrapped.s, wrapped.len, &fm);
	sb_free(&wrapped);
	if (!fm.valid) {
		*ret_msg = xasprintf(POLICY_PATH " line %d: %s",
				     fm.err_line - 1, fm.err_msg);
		fm_clear(&fm);
		return -EBADMSG;
	}
	struct policy *p = xcalloc(1, sizeof(*p));
	p->from_file = true;
	int r = 0;
	const cJSON *kv;
	cJSON_ArrayForEach(kv, fm.data)
	{
		r = policy_key(p, kv, ret_msg);
		if (r < 0)
			break;
	}
	bool has_rules = cJSON_GetObjectItemCaseSensitive(fm.data, "tag_rules");
	fm_clear(&fm);
	if (r < 0) {
		policy_free(p);
		return r;
	}
	if (!p->allowed_tags)
		p->allowed_tags = xcalloc(1, sizeof(char *));
	if (!p->ignore)
		p->ignore = xcalloc(1, sizeof(char *));
	if (!has_rules) {
		add_rule(p, "Person", "@", NULL, PERSON_MSG);
		add_rule(p, "claude", NULL, "description", CLAUDE_MSG);
	}
	*ret = p;
	return 0;
}

int policy_load(int rootfd, struct policy **ret, char **ret_msg)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	int r = file_read(rootfd, POLICY_PATH, 1 << 20, &text, &len, NULL);
	if (r == -ENOENT) {
		*ret = policy_default();
		return 0;
	}
	if (r < 0) {
		*ret_msg = xasprintf(POLICY_PATH ": cannot read: %s",
				     strerror(-r));
		return r;
	}
	return policy_parse(text, len, ret, ret_msg);
}

unsigned policy_note_flags(const struct policy *p)
{
	return p && p->legacy_properties ? NOTE_READ_LEGACY_PROPERTIES : 0;
}

bool policy_ignored(const struct policy *p, const char *path, bool is_dir)
{
	/* Obsidian shows no hidden files or folders, and vaultd keeps its
	 * own state, the trash and git under hidden folders. */
	if (path[0] == '.' || strstr(path, "/."))
		return true;
	for (char **g = p ? p->ignore : NULL; g && *g; g++)
		if (glob_match_any_level(*g, path, is_dir))
			return true;
	return false;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char **policy_allowed_tags(const struct policy *p, const struct index *ix)
{
	size_t n;
	_cleanup_free_ struct tag_entry **tags = index_tags(ix, &n);
	struct ptrvec pv = {0};
	for (size_t i = 0; i < n; i++)
		pv_push(&pv, xstrdup(tags[i]->display));
	for (char **a = p->allowed_tags; a && *a; a++) {
		if (!index_tag(ix, *a))
			pv_push(&pv, xstrdup(*a));
	}
	/* Python's sorted(): code point order, as the seed's messages show. */
	pv_sort(&pv, cmp_str);
	pv_push(&pv, NULL);
	return (char **)pv.v;
}

static bool tag_allowed(const struct policy *p, const struct index *ix,
			const char *tag, bool vault_has_tags)
{
	if (index_tag(ix, tag))
		return true;
	_cleanup_free_ char *f = fold_key(tag);
	for (char **a = p->allowed_tags; a && *a; a++) {
		_cleanup_free_ char *af = fold_key(*a);
		if (strcmp(af, f) == 0)
			return true;
	}
	/* Nothing to be consistent with yet: the first tags are free. */
	return !vault_has_tags && !(p->allowed_tags && p->allowed_tags[0]);
}

static const struct tag_rule *rule_broken(const struct policy *p,
					  const struct note *n, size_t i)
{
	const struct tag_rule *r = &p->rules[i];
	if (!note_has_tag(n, r->tag))
		return NULL;
	if (r->name_prefix && !str_has_prefix(note_name(n), r->name_prefix))
		return r;
	for (char **k = r->requires; k && *k; k++)
		if (!note_has_key(n, *k))
			return r;
	return NULL;
}

static bool vault_has_tags(const struct index *ix)
{
	size_t n;
	_cleanup_free_ struct tag_entry **t = index_tags(ix, &n);
	return n > 0;
}

/* The most new tags a refusal names one by one. */
#define BAD_TAGS_SHOWN 20

int policy_check(const struct policy *p, const struct index *ix,
		 const struct note *before, const struct note *after,
		 char **ret_msg)
{
	struct sbuf msg = {0};
	if (note_fm_unread(after) && !(before && note_fm_unread(before))) {
		/* Obsidian would read tags vaultd cannot see. */
		*ret_msg = xstrdup(
			"Frontmatter too large or too complex for vaultd to "
			"read (over 1 MiB of YAML, or over 100,000 values "
			"with aliases expanded): its tags cannot be checked "
			"against the policy. Keep the frontmatter smaller.");
		return -EPERM;
	}
	bool have_tags = vault_has_tags(ix);
	struct ptrvec bad_tags = {0};
	for (size_t i = 0; i < note_ntags(after); i++) {
		const char *t = note_tag(after, i);
		if (before && note_has_tag(before, t))
			continue;
		if (!tag_allowed(p, ix, t, have_tags))
			pv_push(&bad_tags, (void *)note_tag(after, i));
	}
	if (bad_tags.n) {
		sb_puts(&msg, "Tags not in allowed list: [");
		for (size_t i = 0; i < bad_tags.n; i++) {
			const char *t = bad_tags.v[i];
			if (i)
				sb_puts(&msg, ", ");
			if (i == BAD_TAGS_SHOWN) {
				sb_printf(&msg, "and %zu more", bad_tags.n - i);
				break;
			}
			/* A caller's tag: quoted short when it is long. */
			if (strnlen(t, QUOTE_MAX + 1) > QUOTE_MAX)
				sb_puts(&msg, QUOTE(t));
			else
				sb_add_pyrepr(&msg, t);
		}
		sb_puts(&msg, "]. Allowed: [");
		_cleanup_strv_free_ char **allowed = policy_allowed_tags(p, ix);
		for (char **a = allowed; *a; a++) {
			if (a != allowed)
				sb_puts(&msg, ", ");
			sb_add_pyrepr(&msg, *a);
		}
		sb_puts(&msg, "]. Ask user before creating new tags.");
	}
	pv_free(&bad_tags);
	for (size_t i = 0; i < p->nrules; i++) {
		const struct tag_rule *r = rule_broken(p, after, i);
		if (!r || (before && rule_broken(p, before, i)))
			continue;
		if (msg.len)
			sb_putc(&msg, ' ');
		sb_puts(&msg, r->message);
	}
	if (!msg.len)
		return 0;
	*ret_msg = sb_steal(&msg);
	return -EPERM;
}

int policy_note_violations(const struct policy *p, const struct index *ix,
			   const struct note *n, struct sbuf *msgs)
{
	int count = 0;
	for (size_t i = 0; i < p->nrules; i++) {
		const struct tag_rule *r = rule_broken(p, n, i);
		if (!r)
			continue;
		sb_printf(msgs, "%s%s: %s", msgs->len ? "\n" : "", note_path(n),
			  r->message);
		count++;
	}
	return count;
}
