/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unicode helpers on top of utf8proc: validation, NFC normalisation and
 * the case-folded key under which names, paths and tags are matched
 * (Obsidian matches note names case-insensitively).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True when s[0..n) is well-formed UTF-8 without NUL bytes. */
bool u8_valid(const char *s, size_t n);
/* Offset of the first byte of s[0..n) that does not start a well-formed
 * UTF-8 character (NUL is one), or n. */
size_t u8_invalid_at(const char *s, size_t n);
/*
 * s[0..n) with each such byte replaced by U+FFFD (malloc'd, NUL-ended).
 * For showing text only: the replacement must never be written back.
 */
char *u8_repair(const char *s, size_t n);
#define U8_REPLACEMENT "\xef\xbf\xbd"

/* NFC form of s (malloc'd); NULL when s is not valid UTF-8. */
char *u8_nfc(const char *s);
/* NFC + case fold (malloc'd); NULL when s is not valid UTF-8. */
char *u8_fold(const char *s);
char *u8_fold_n(const char *s, size_t n);
/* Decode one code point at s (n bytes left); returns its length or -1. */
int u8_decode(const char *s, size_t n, int32_t *ret_cp);
/* Obsidian's tag characters: letters, marks, digits, '_', '-', '/'. */
bool u8_is_tag_char(int32_t cp);
bool u8_is_digit(int32_t cp);
/* Case-insensitive substring search on folded strings. */
const char *u8_strstr_fold(const char *hay_folded, const char *needle_folded);
