/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Small shared helpers: cleanup attributes, growable string buffer,
 * pointer vectors, and a few string functions.
 *
 * Allocation failure aborts: the daemon cannot make useful progress
 * without memory and half-built indexes are worse than a restart.
 */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))

#define TAKE_PTR(p)                      \
	({                               \
		__typeof__(p) _p_ = (p); \
		(p) = NULL;              \
		_p_;                     \
	})

#define TAKE_FD(fd)              \
	({                       \
		int _fd_ = (fd); \
		(fd) = -1;       \
		_fd_;            \
	})

#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func) \
	static inline void func##p(type *p)     \
	{                                       \
		if (*p)                         \
			func(*p);               \
	}

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t m);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) _printf_(1, 2);

static inline void freep(void *p)
{
	free(*(void **)p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline void closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

/* Growable byte buffer, always NUL-terminated. */
struct sbuf {
	char *s;
	size_t len;
	size_t cap;
};

void sb_grow(struct sbuf *b, size_t extra);
void sb_add(struct sbuf *b, const char *s, size_t n);
void sb_puts(struct sbuf *b, const char *s);
void sb_putc(struct sbuf *b, char c);
void sb_printf(struct sbuf *b, const char *fmt, ...) _printf_(2, 3);
void sb_vprintf(struct sbuf *b, const char *fmt, va_list ap);
char *sb_steal(struct sbuf *b);
void sb_free(struct sbuf *b);
static inline const char *sb_str(const struct sbuf *b)
{
	return b->s ? b->s : "";
}
static inline void sb_freep(struct sbuf *b)
{
	sb_free(b);
}
#define _cleanup_sb_ _cleanup_(sb_freep)

/* Vector of pointers. */
struct ptrvec {
	void **v;
	size_t n;
	size_t cap;
};

void pv_push(struct ptrvec *pv, void *p);
bool pv_remove(struct ptrvec *pv, const void *p);
void pv_free(struct ptrvec *pv);
void pv_sort(struct ptrvec *pv, int (*cmp)(const void *, const void *));
#define VEC_FOREACH(pv, i) for (size_t i = 0; i < (pv)->n; i++)

/* NULL-terminated string array helpers. */
void strv_free(char **v);
size_t strv_len(char *const *v);
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, strv_free)
#define _cleanup_strv_free_ _cleanup_(strv_freep)

bool str_has_suffix(const char *s, const char *suffix);
bool str_has_suffix_ci(const char *s, const char *suffix);
bool str_has_prefix(const char *s, const char *prefix);

/*
 * Who wrote, as events and the history carry it: "mcp:<tool>",
 * "mount:<process>", "vaultctl", "external". A write made in an MCP
 * session names the session after an '@': "mcp:update_note@3f9a2c1b".
 */
#define SESSION_ID_MAX 32
/* The session a source names ("3f9a2c1b"), or NULL. */
const char *source_session(const char *source);
/* The length of the writer part ("mcp:update_note"). */
size_t source_writer_len(const char *source);
/* 1 to SESSION_ID_MAX letters, digits, '-' or '_'. */
bool session_id_valid(const char *s);

/* The longest vault path the engine's path_check() accepts, in bytes
 * (PATH_MAX less its NUL would be 4095; the vault has always taken 4096);
 * front-ends check lengths with it before asking the daemon. */
#define PATH_MAX_BYTES 4096

/* mkdir -p for a path outside any vault (symlinks followed): 0 when it
 * is a folder now, else -errno. */
int mkdir_p(const char *path, unsigned mode);
/* Write all n bytes to fd, retrying after EINTR and short writes: 0 or
 * -errno. */
int write_full(int fd, const void *buf, size_t n);
/* Count lines: the 1-based line number of byte offset off in s. */
int line_of_offset(const char *s, size_t off);
/* The longest start of s[0..n) that ends at a UTF-8 character boundary
 * (a character is never split; stray bytes may be). */
size_t utf8_cut(const char *s, size_t n);
/*
 * A caller's argument quoted for a message: 'abc', or when it is longer
 * than QUOTE_MAX bytes its start (cut at a character) and its length:
 * 'abcd…' (20971520 bytes). Written to buf, which is returned; QUOTE(s)
 * gives a buffer that lives to the end of the enclosing block.
 */
#define QUOTE_MAX 80
#define QUOTE_BUF (QUOTE_MAX + 48)
const char *quote_short(char buf[QUOTE_BUF], const char *s);
#define QUOTE(s) quote_short((char[QUOTE_BUF]){0}, (s))
/* Python-style string repr: 'abc' or "it's". Appends to b. */
void sb_add_pyrepr(struct sbuf *b, const char *s);
/* ISO 8601 UTC ("2024-01-15T10:30:00Z") of a time in seconds. */
void format_iso8601(int64_t t, char out[32]);
/* Parse ISO 8601 date or date-time; returns 0 and seconds since epoch. */
int parse_iso8601(const char *s, int64_t *ret);
/* Monotonic and wall clocks in nanoseconds / seconds. */
uint64_t now_ns(void);
int64_t now_s(void);
/* Percent-decoding for markdown link targets; returns malloc'd string. */
char *url_decode(const char *s, size_t n);
/* Percent-encoding: for markdown links (keep_slash: '/' and UTF-8 kept,
 * as Obsidian writes them) or for a URI component (everything else). */
char *url_encode_path(const char *s, bool keep_slash);
/* Shortest text that reads back as the same double (like Python repr). */
void format_double(double d, char out[32]);
/* 64-bit hash of a byte string (FNV-1a with a final mix). */
uint64_t hash_bytes(const void *p, size_t n);

/*
 * Cancellation of the current thread's work. Whoever runs a request on a
 * thread points it at that request's flag (NULL: none); long loops and
 * queries ask cancel_requested() and stop early, before they change
 * anything. Writes that have begun are finished, never left half done.
 */
void cancel_bind(const _Atomic bool *flag);
bool cancel_requested(void);
/* The current thread's flag, for the threads it hands work to. */
const _Atomic bool *cancel_flag(void);
