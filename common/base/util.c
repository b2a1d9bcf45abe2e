/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <sys/stat.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

/* Without memory there is no useful way on; common/ does not log, the
 * caller's core dump or exit status tells. */
static void oom(void)
{
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom();
	return p;
}

void *xcalloc(size_t n, size_t m)
{
	void *p = calloc(n ? n : 1, m ? m : 1);
	if (!p)
		oom();
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		oom();
	return p;
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	char *r = xmalloc(n + 1);
	memcpy(r, s, n);
	r[n] = 0;
	return r;
}

char *xasprintf(const char *fmt, ...)
{
	struct sbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	sb_vprintf(&b, fmt, ap);
	va_end(ap);
	return sb_steal(&b);
}

void sb_grow(struct sbuf *b, size_t extra)
{
	size_t need = b->len + extra + 1;
	if (need <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap *= 2;
	b->s = xrealloc(b->s, cap);
	b->cap = cap;
}

void sb_add(struct sbuf *b, const char *s, size_t n)
{
	sb_grow(b, n);
	if (n)
		memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = 0;
}

void sb_puts(struct sbuf *b, const char *s)
{
	sb_add(b, s, strlen(s));
}

void sb_putc(struct sbuf *b, char c)
{
	sb_add(b, &c, 1);
}

void sb_vprintf(struct sbuf *b, const char *fmt, va_list ap)
{
	va_list aq;
	va_copy(aq, ap);
	int n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n < 0)
		return;
	sb_grow(b, (size_t)n);
	vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
}

void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sb_vprintf(b, fmt, ap);
	va_end(ap);
}

char *sb_steal(struct sbuf *b)
{
	char *s = b->s ? b->s : xstrdup("");
	b->s = NULL;
	b->len = b->cap = 0;
	return s;
}

void sb_free(struct sbuf *b)
{
	free(b->s);
	b->s = NULL;
	b->len = b->cap = 0;
}

void pv_push(struct ptrvec *pv, void *p)
{
	if (pv->n == pv->cap) {
		pv->cap = pv->cap ? pv->cap * 2 : 4;
		pv->v = xrealloc(pv->v, pv->cap * sizeof(void *));
	}
	pv->v[pv->n++] = p;
}

bool pv_remove(struct ptrvec *pv, const void *p)
{
	for (size_t i = 0; i < pv->n; i++) {
		if (pv->v[i] == p) {
			memmove(pv->v + i, pv->v + i + 1,
				(pv->n - i - 1) * sizeof(void *));
			pv->n--;
			return true;
		}
	}
	return false;
}

void pv_free(struct ptrvec *pv)
{
	free(pv->v);
	pv->v = NULL;
	pv->n = pv->cap = 0;
}

void pv_sort(struct ptrvec *pv, int (*cmp)(const void *, const void *))
{
	if (pv->n > 1)
		qsort(pv->v, pv->n, sizeof(void *), cmp);
}

void strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

size_t strv_len(char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

bool str_has_suffix(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

bool str_has_suffix_ci(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcasecmp(s + a - b, suffix) == 0;
}

bool str_has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

const char *source_session(const char *source)
{
	/* Only MCP writers carry one: a process name may hold an '@'. */
	if (!source || !str_has_prefix(source, "mcp:"))
		return NULL;
	const char *at = strchr(source, '@');
	return at && at[1] ? at + 1 : NULL;
}

size_t source_writer_len(const char *source)
{
	const char *s = source_session(source);
	return s ? (size_t)(s - 1 - source) : strlen(source);
}

bool session_id_valid(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (!n || n > SESSION_ID_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_')
			return false;
	return true;
}

int line_of_offset(const char *s, size_t off)
{
	int line = 1;
	for (size_t i = 0; i < off && s[i]; i++)
		if (s[i] == '\n')
			line++;
	return line;
}

size_t utf8_cut(const char *s, size_t n)
{
	/* A character is at most 4 bytes: more continuation bytes than 3
	 * are not one, and any cut is as good as another there. */
	size_t m = n;
	while (m > 0 && n - m < 3 && ((unsigned char)s[m] & 0xc0) == 0x80)
		m--;
	return ((unsigned char)s[m] & 0xc0) == 0x80 ? n : m;
}

const char *quote_short(char buf[QUOTE_BUF], const char *s)
{
	size_t n = strnlen(s, QUOTE_MAX + 1);
	if (n <= QUOTE_MAX) {
		snprintf(buf, QUOTE_BUF, "'%s'", s);
		return buf;
	}
	size_t keep = utf8_cut(s, QUOTE_MAX);
	snprintf(buf, QUOTE_BUF, "'%.*s…' (%zu bytes)", (int)keep, s,
		 strlen(s));
	return buf;
}

void sb_add_pyrepr(struct sbuf *b, const char *s)
{
	char q = (strchr(s, '\'') && !strchr(s, '"')) ? '"' : '\'';
	sb_putc(b, q);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '\\' || *p == (unsigned char)q) {
			sb_putc(b, '\\');
			sb_putc(b, (char)*p);
		} else if (*p == '\n') {
			sb_puts(b, "\\n");
		} else if (*p == '\t') {
			sb_puts(b, "\\t");
		} else if (*p == '\r') {
			sb_puts(b, "\\r");
		} else if (*p < 0x20 || *p == 0x7f) {
			sb_printf(b, "\\x%02x", *p);
		} else {
			sb_putc(b, (char)*p);
		}
	}
	sb_putc(b, q);
}

void format_iso8601(int64_t t, char out[32])
{
	time_t tt = (time_t)t;
	struct tm tm;
	gmtime_r(&tt, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int parse_digits(const char **p, int n, int *ret)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)**p))
			return -EINVAL;
		v = v * 10 + (**p - '0');
		(*p)++;
	}
	*ret = v;
	return 0;
}

int parse_iso8601(const char *s, int64_t *ret)
{
	struct tm tm = {0};
	int y, mo, d, h = 0, mi = 0, sec = 0;
	const char *p = s;
	if (parse_digits(&p, 4, &y) < 0 || *p++ != '-' ||
	    parse_digits(&p, 2, &mo) < 0 || *p++ != '-' ||
	    parse_digits(&p, 2, &d) < 0)
		return -EINVAL;
	long off = 0;
	if (*p == 'T' || *p == 't' || *p == ' ') {
		p++;
		if (parse_digits(&p, 2, &h) < 0 || *p++ != ':' ||
		    parse_digits(&p, 2, &mi) < 0)
			return -EINVAL;
		if (*p == ':') {
			p++;
			if (parse_digits(&p, 2, &sec) < 0)
				return -EINVAL;
			if (*p == '.') {
				p++;
				while (isdigit((unsigned char)*p))
					p++;
			}
		}
		if (*p == 'Z' || *p == 'z') {
			p++;
		} else if (*p == '+' || *p == '-') {
			int sign = *p == '-' ? -1 : 1, oh, om = 0;
			p++;
			if (parse_digits(&p, 2, &oh) < 0)
				return -EINVAL;
			if (*p == ':')
				p++;
			if (*p && parse_digits(&p, 2, &om) < 0)
				return -EINVAL;
			off = sign * (oh * 3600L + om * 60L);
		}
	}
	if (*p)
		return -EINVAL;
	static const int mdays[] = {31, 28, 31, 30, 31, 30,
				    31, 31, 30, 31, 30, 31};
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	if (mo < 1 || mo > 12 || d < 1 ||
	    d > mdays[mo - 1] + (mo == 2 && leap) || h > 23 || mi > 59 ||
	    sec > 60)
		return -EINVAL;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	*ret = (int64_t)timegm(&tm) - off;
	return 0;
}

uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int64_t now_s(void)
{
	return (int64_t)time(NULL);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

char *url_decode(const char *s, size_t n)
{
	char *r = xmalloc(n + 1);
	size_t j = 0;
	for (size_t i = 0; i < n; i++) {
		int a, b;
		/* %00 stays literal: a NUL can never be part of a path. */
		if (s[i] == '%' && i + 2 < n && (a = hexval(s[i + 1])) >= 0 &&
		    (b = hexval(s[i + 2])) >= 0 && (a || b)) {
			r[j++] = (char)(a * 16 + b);
			i += 2;
		} else {
			r[j++] = s[i];
		}
	}
	r[j] = 0;
	return r;
}

char *url_encode_path(const char *s, bool keep_slash)
{
	struct sbuf b = {0};
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (isalnum(*p) || *p == '-' || *p == '_' || *p == '.' ||
		    *p == '~' || (keep_slash && (*p == '/' || *p >= 0x80)))
			sb_putc(&b, (char)*p);
		else
			sb_printf(&b, "%%%02X", *p);
	}
	return sb_steal(&b);
}

uint64_t hash_bytes(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 0x100000001b3ull;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h;
}

void format_double(double d, char out[32])
{
	if (d == (double)(long long)d && d > -1e15 && d < 1e15) {
		snprintf(out, 32, "%lld", (long long)d);
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(out, 32, "%.*g", prec, d);
		if (strtod(out, NULL) == d)
			break;
	}
	/* Python writes 1e+16 and 0.1 alike; make sure it reads as a float. */
	if (!strpbrk(out, ".eEn"))
		strcat(out, ".0");
}

static _Thread_local const _Atomic bool *cancel_flag_tl;

void cancel_bind(const _Atomic bool *flag)
{
	cancel_flag_tl = flag;
}

const _Atomic bool *cancel_flag(void)
{
	return cancel_flag_tl;
}

bool cancel_requested(void)
{
	return cancel_flag_tl && atomic_load(cancel_flag_tl);
}

int mkdir_p(const char *path, unsigned mode)
{
	_cleanup_free_ char *p = xstrdup(path);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(p, mode) < 0 && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	if (mkdir(p, mode) < 0 && errno != EEXIST)
		return -errno;
	struct stat st;
	if (stat(p, &st) < 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

int write_full(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		if (w == 0)
			return -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}
