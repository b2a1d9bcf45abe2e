/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "json.h"
#include "u8.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/random.h>

/* The end of the run at p that needs no escape: printable ASCII but for
 * '"' and '\\', and whole UTF-8 characters. */
static const unsigned char *plain_run(const unsigned char *p, const char *end)
{
	for (;;) {
		if (*p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\') {
			p++;
			continue;
		}
		int32_t cp;
		int l = *p >= 0x80 ? u8_decode((const char *)p,
					       (size_t)(end - (const char *)p),
					       &cp)
				   : 0;
		if (l <= 0)
			return p;
		p += l;
	}
}

/* Text that is not UTF-8 (a note with stray bytes) is written with U+FFFD
 * in their place: every JSON text that leaves here is valid UTF-8. */
static void dump_string(struct sbuf *b, const char *s)
{
	sb_putc(b, '"');
	const char *end = s + strlen(s);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		/* A run that needs no escape (characters of UTF-8 too) goes
		 * in at once. */
		const unsigned char *run = p;
		p = plain_run(p, end);
		if (p > run)
			sb_add(b, (const char *)run, (size_t)(p - run));
		if (!*p)
			break;
		if (*p >= 0x80) {
			/* Not UTF-8: the byte is replaced. */
			sb_puts(b, U8_REPLACEMENT);
			continue;
		}
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
		case '\r':
			sb_puts(b, "\\r");
			break;
		case '\t':
			sb_puts(b, "\\t");
			break;
		case '\b':
			sb_puts(b, "\\b");
			break;
		case '\f':
			sb_puts(b, "\\f");
			break;
		default:
			sb_printf(b, "\\u%04x", *p);
		}
	}
	sb_putc(b, '"');
}

static void dump_number(struct sbuf *b, double d)
{
	char buf[32];
	if (!isfinite(d)) {
		sb_puts(b, "null");
		return;
	}
	format_double(d, buf);
	sb_puts(b, buf);
}

static void dump(struct sbuf *b, const cJSON *v, const char *comma,
		 const char *colon)
{
	if (cJSON_IsRaw(v)) {
		/* JSON text made elsewhere, as it is. */
		sb_puts(b, v->valuestring ? v->valuestring : "null");
	} else if (cJSON_IsString(v)) {
		dump_string(b, v->valuestring ? v->valuestring : "");
	} else if (cJSON_IsNumber(v)) {
		dump_number(b, v->valuedouble);
	} else if (cJSON_IsTrue(v)) {
		sb_puts(b, "true");
	} else if (cJSON_IsFalse(v)) {
		sb_puts(b, "false");
	} else if (cJSON_IsArray(v)) {
		sb_putc(b, '[');
		const cJSON *it;
		bool first = true;
		cJSON_ArrayForEach(it, v)
		{
			if (!first)
				sb_puts(b, comma);
			first = false;
			dump(b, it, comma, colon);
		}
		sb_putc(b, ']');
	} else if (cJSON_IsObject(v)) {
		sb_putc(b, '{');
		const cJSON *it;
		bool first = true;
		cJSON_ArrayForEach(it, v)
		{
			if (!first)
				sb_puts(b, comma);
			first = false;
			dump_string(b, it->string);
			sb_puts(b, colon);
			dump(b, it, comma, colon);
		}
		sb_putc(b, '}');
	} else {
		sb_puts(b, "null");
	}
}

bool json_repair_utf8(cJSON *v)
{
	bool changed = false;
	for (; v; v = v->next) {
		if (v->string && u8_invalid_at(v->string, strlen(v->string)) <
					 strlen(v->string)) {
			char *r = u8_repair(v->string, strlen(v->string));
			if (!(v->type & cJSON_StringIsConst))
				cJSON_free(v->string);
			v->type &= ~cJSON_StringIsConst;
			/* cJSON frees keys with cJSON_free (malloc). */
			v->string = r;
			changed = true;
		}
		if ((cJSON_IsString(v) || cJSON_IsRaw(v)) && v->valuestring &&
		    u8_invalid_at(v->valuestring, strlen(v->valuestring)) <
			    strlen(v->valuestring)) {
			char *r = u8_repair(v->valuestring,
					    strlen(v->valuestring));
			cJSON_free(v->valuestring);
			v->valuestring = r;
			changed = true;
		}
		if (v->child && json_repair_utf8(v->child))
			changed = true;
	}
	return changed;
}

char *json_dumps(const cJSON *v)
{
	struct sbuf b = {0};
	dump(&b, v, ", ", ": ");
	return sb_steal(&b);
}

char *json_compact(const cJSON *v)
{
	struct sbuf b = {0};
	dump(&b, v, ",", ":");
	return sb_steal(&b);
}

/* ---- cursors ---------------------------------------------------------- */

static uint64_t secret;
static pthread_once_t secret_once = PTHREAD_ONCE_INIT;

static void init_secret(void)
{
	if (getrandom(&secret, sizeof(secret), 0) != sizeof(secret))
		secret = now_ns() ^ (uint64_t)getpid() << 32;
}

static uint64_t mac(uint64_t scope, uint64_t gen, uint64_t off)
{
	uint64_t buf[4] = {secret, scope, gen, off};
	return hash_bytes(buf, sizeof(buf));
}

static const char B64[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

char *cursor_make(const char *scope, uint64_t gen, size_t offset)
{
	pthread_once(&secret_once, init_secret);
	uint64_t s = hash_bytes(scope, strlen(scope));
	uint64_t words[4] = {s, gen, offset, mac(s, gen, offset)};
	const unsigned char *p = (const unsigned char *)words;
	struct sbuf b = {0};
	/* 32 bytes -> base64url without padding. */
	for (size_t i = 0; i < sizeof(words); i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		if (i + 1 < sizeof(words))
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < sizeof(words))
			v |= p[i + 2];
		sb_putc(&b, B64[(v >> 18) & 63]);
		sb_putc(&b, B64[(v >> 12) & 63]);
		if (i + 1 < sizeof(words))
			sb_putc(&b, B64[(v >> 6) & 63]);
		if (i + 2 < sizeof(words))
			sb_putc(&b, B64[v & 63]);
	}
	return sb_steal(&b);
}

int cursor_parse(const char *cursor, const char *scope, uint64_t gen,
		 size_t *ret_offset, const char **ret_msg)
{
	pthread_once(&secret_once, init_secret);
	uint64_t words[4] = {0};
	unsigned char *p = (unsigned char *)words;
	size_t n = strlen(cursor), o = 0;
	uint32_t acc = 0;
	int bits = 0;
	if (n != 43) {
		*ret_msg = "Invalid cursor: not a cursor this server issued";
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		const char *c = strchr(B64, cursor[i]);
		if (!c || !cursor[i]) {
			*ret_msg =
				"Invalid cursor: not a cursor this server issued";
			return -EINVAL;
		}
		acc = (acc << 6) | (uint32_t)(c - B64);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o < sizeof(words))
				p[o++] = (unsigned char)(acc >> bits);
		}
	}
	if (words[3] != mac(words[0], words[1], words[2])) {
		*ret_msg = "Invalid cursor: not a cursor this server issued";
		return -EINVAL;
	}
	if (words[0] != hash_bytes(scope, strlen(scope))) {
		*ret_msg = "Invalid cursor: it belongs to a different query; "
			   "repeat the same query with it, or drop the cursor";
		return -EINVAL;
	}
	if (words[1] != gen) {
		*ret_msg = "Stale cursor: the vault changed since this page; "
			   "run the query again without a cursor";
		return -ESTALE;
	}
	*ret_offset = (size_t)words[2];
	return 0;
}
