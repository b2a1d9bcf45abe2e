/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "glob.h"
#include "util.h"

/* Match one '[...]' class at p against c; *ret_len gets the class length. */
static bool match_class(const char *p, char c, size_t *ret_len)
{
	const char *q = p + 1;
	bool neg = false, ok = false;
	if (*q == '!' || *q == '^') {
		neg = true;
		q++;
	}
	const char *start = q;
	while (*q && (*q != ']' || q == start)) {
		if (q[1] == '-' && q[2] && q[2] != ']') {
			if (c >= q[0] && c <= q[2])
				ok = true;
			q += 3;
		} else {
			if (c == *q)
				ok = true;
			q++;
		}
	}
	if (*q != ']') {
		*ret_len = 0; /* not a class: literal '[' */
		return c == '[';
	}
	*ret_len = (size_t)(q - p) + 1;
	return ok != neg;
}

/*
 * Matching state: pattern and path positions. Failed states are
 * remembered, so '*' and '**' cost O(|pattern| x |path|) at worst
 * instead of backtracking exponentially.
 */
struct gm {
	const char *p0, *s0;
	size_t slen;
	unsigned char *failed; /* (plen + 1) x (slen + 1) */
};

static bool match_at(struct gm *g, const char *p, const char *s);

static bool remembered(struct gm *g, const char *p, const char *s)
{
	size_t k = (size_t)(p - g->p0) * (g->slen + 1) + (size_t)(s - g->s0);
	if (g->failed[k])
		return false;
	if (match_at(g, p, s))
		return true;
	g->failed[k] = 1;
	return false;
}

static bool match_at(struct gm *g, const char *p, const char *s)
{
	for (;;) {
		if (!*p)
			return !*s;
		if (p[0] == '*' && p[1] == '*') {
			const char *rest = p + 2;
			if (*rest == '/') {
				/* "**" + "/" : zero or more whole folders. */
				rest++;
				if (remembered(g, rest, s))
					return true;
				for (const char *t = s; *t; t++)
					if (*t == '/' &&
					    remembered(g, rest, t + 1))
						return true;
				return false;
			}
			for (const char *t = s;; t++) {
				if (remembered(g, rest, t))
					return true;
				if (!*t)
					return false;
			}
		}
		if (*p == '*') {
			for (const char *t = s;; t++) {
				if (remembered(g, p + 1, t))
					return true;
				if (!*t || *t == '/')
					return false;
			}
		}
		if (!*s)
			return false;
		if (*p == '?') {
			if (*s == '/')
				return false;
			p++;
			s++;
			continue;
		}
		if (*p == '[') {
			size_t l;
			if (!match_class(p, *s, &l))
				return false;
			p += l ? l : 1;
			s++;
			continue;
		}
		if (*p == '\\' && p[1])
			p++;
		if (*p != *s)
			return false;
		p++;
		s++;
	}
}

static bool match_here(const char *p, const char *s)
{
	size_t pl = strlen(p), sl = strlen(s);
	struct gm g = {.p0 = p, .s0 = s, .slen = sl};
	g.failed = xcalloc((pl + 1) * (sl + 1), 1);
	bool r = match_at(&g, p, s);
	free(g.failed);
	return r;
}

bool glob_match(const char *pattern, const char *path, bool is_dir)
{
	size_t n = strlen(pattern);
	if (!n)
		return false;
	_cleanup_free_ char *pat = xstrdup(pattern);
	if (pat[n - 1] == '/') {
		if (!is_dir)
			return false;
		pat[n - 1] = 0;
	}
	bool anchored = pat[0] == '/';
	const char *p = anchored ? pat + 1 : pat;
	if (!anchored && !strchr(p, '/')) {
		/* No '/': the pattern names a file or folder anywhere. */
		const char *base = strrchr(path, '/');
		return match_here(p, base ? base + 1 : path);
	}
	return match_here(p, path);
}

bool glob_match_any_level(const char *pattern, const char *path, bool is_dir)
{
	if (glob_match(pattern, path, is_dir))
		return true;
	_cleanup_free_ char *p = xstrdup(path);
	for (char *s = strrchr(p, '/'); s; s = strrchr(p, '/')) {
		*s = 0;
		if (glob_match(pattern, p, true))
			return true;
	}
	return false;
}
