/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Standard base64 encoding (base64.h): three bytes to four characters,
 * '=' padding the last group.
 */
#include "base64.h"
#include "util.h"

static const char ALPHABET[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *base64_encode(const void *p, size_t n, size_t *ret_len)
{
	const unsigned char *in = p;
	size_t len = (n + 2) / 3 * 4;
	char *out = xmalloc(len + 1), *o = out;
	size_t i = 0;
	for (; i + 3 <= n; i += 3) {
		unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8 |
			     in[i + 2];
		*o++ = ALPHABET[v >> 18];
		*o++ = ALPHABET[(v >> 12) & 63];
		*o++ = ALPHABET[(v >> 6) & 63];
		*o++ = ALPHABET[v & 63];
	}
	if (i < n) {
		unsigned v = (unsigned)in[i] << 16;
		if (i + 1 < n)
			v |= (unsigned)in[i + 1] << 8;
		*o++ = ALPHABET[v >> 18];
		*o++ = ALPHABET[(v >> 12) & 63];
		*o++ = i + 1 < n ? ALPHABET[(v >> 6) & 63] : '=';
		*o++ = '=';
	}
	*o = '\0';
	if (ret_len)
		*ret_len = len;
	return out;
}
