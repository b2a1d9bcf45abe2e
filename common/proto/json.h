/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * JSON text in the form the seeds show (Python's json.dumps with
 * ensure_ascii=False: ", " and ": " separators, UTF-8 kept as is), and
 * opaque, tamper-evident paging cursors.
 */
#pragma once

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

char *json_dumps(const cJSON *v);
/* Strings and keys of v, its children and the siblings after it: bytes
 * that are not UTF-8 become U+FFFD. True when something changed. (The
 * dumps above do the same on the way out.) */
bool json_repair_utf8(cJSON *v);
/* Compact JSON (no spaces) for the wire; always valid UTF-8 JSON. A raw
 * item (cJSON_CreateRaw) is written as it is: its text must be valid
 * JSON, on one line. */
char *json_compact(const cJSON *v);

/*
 * Cursors: base64url of "scope-hash/generation/offset/mac". A cursor is
 * valid only for the same scope (query, mode, ...) and while the index
 * generation is unchanged.
 */
char *cursor_make(const char *scope, uint64_t gen, size_t offset);
int cursor_parse(const char *cursor, const char *scope, uint64_t gen,
		 size_t *ret_offset, const char **ret_msg);
