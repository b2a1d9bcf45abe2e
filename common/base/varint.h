/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unsigned 32-bit varints (seven bits a byte, least significant first,
 * the high bit set on every byte but the last): the form of the numbers
 * in a note's stored entry (note_blob.c) and in a text's tokens made
 * ahead (tokenizer.c).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VARINT_MAX 5 /* bytes of a uint32_t at most */

/* Write v at out (VARINT_MAX bytes of room); the bytes written. */
static inline size_t varint_put(unsigned char *out, uint32_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		out[n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (unsigned char)v;
	return n;
}

/* Read one from *p (not past end) into *ret and move *p past it; false
 * when it runs past end or past 32 bits. */
static inline bool varint_get(const unsigned char **p, const unsigned char *end,
			      uint32_t *ret)
{
	uint32_t v = 0;
	for (int shift = 0; shift < 35 && *p < end; shift += 7) {
		unsigned char c = *(*p)++;
		/* The fifth byte has 4 bits left. */
		if (shift == 28 && c > 0x0f)
			return false;
		v |= (uint32_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*ret = v;
			return true;
		}
	}
	return false;
}
