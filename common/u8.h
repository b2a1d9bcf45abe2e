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
