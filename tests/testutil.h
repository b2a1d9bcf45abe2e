/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Helpers for the CUnit tests: temporary vaults, tool calls, files. */
#pragma once

#include "tools.h"
#include "vault.h"

#include <CUnit/Basic.h>
#include <stdio.h>
#include <cjson/cJSON.h>

/* A fresh empty vault folder under $TMPDIR; removed by tv_close(). */
struct tvault {
	char *dir;
	struct vault *v;
};

void tv_init(struct tvault *t);
/* Write a file (creating folders) in the vault folder, before or after
 * tv_open(); after it, call tv_reindex() to pick it up. */
void tv_write(struct tvault *t, const char *rel, const char *text);
/* Open the vault and index it. */
void tv_open(struct tvault *t);
void tv_reindex(struct tvault *t);
/* tv_open() with a search index in a private folder inside the vault
 * (.cache: a dot folder, never a note), not built beyond what the
 * first index catches up with by itself. */
void tv_open_with_store(struct tvault *t);
void tv_close(struct tvault *t);
/* Whole text of a file in the vault folder; NULL if missing. */
char *tv_read(struct tvault *t, const char *rel);
bool tv_exists(struct tvault *t, const char *rel);
/* All that is left to read of f (not closed). */
char *read_stream(FILE *f);

/*
 * Call a tool with arguments given as JSON text ("{}" or NULL for none).
 * The result must be freed with tool_result_clear().
 */
void tv_call(struct tvault *t, const char *tool, const char *args_json,
	     struct tool_result *ret);
/* Call and parse the JSON text result (NULL on error results). */
cJSON *tv_call_json(struct tvault *t, const char *tool, const char *args_json);
/* The store of t's cache (.cache), opened with no vault open, says it was
 * rebuilt; closed again. */
bool tv_store_rebuilt(struct tvault *t);
/* query's first page of up to 100 hits on t's store (the writes queued
 * put first, as search_notes does); *ret_n of them, *ret_total in all
 * (store_hits_free). */
struct store_hit *tv_store_page(struct tvault *t, const char *query,
				size_t *ret_n, size_t *ret_total);
/* The snippet of a full-text search's first result ("" when none). */
char *tv_first_snippet(struct tvault *t, const char *query);
/* Call expecting an error; returns the message (caller frees) or NULL. */
char *tv_call_err(struct tvault *t, const char *tool, const char *args_json);
/* Whether the vault file rel holds exactly want (else both are printed). */
bool tv_file_is(struct tvault *t, const char *rel, const char *want);
/* search_notes' total for query in mode (fulltext, name, ...). */
size_t tv_search_total(struct tvault *t, const char *query, const char *mode);

/*
 * Run fn(ud) in a child process with at most max_mem bytes of address
 * space (not under AddressSanitizer: its shadow memory alone is larger)
 * and max_secs seconds. True when the child came to the end without a
 * failed assertion; otherwise says on stderr how it ended. For hostile
 * input that could eat the machine's memory on a regression.
 */
bool run_capped(void (*fn)(void *ud), void *ud, size_t max_mem,
		unsigned max_secs);

/* Compare JSON values structurally (object key order ignored). */
bool json_equal_text(const cJSON *got, const char *want_json);

/* CUnit runner: register tests and run; exit code 0 when all pass. */
struct test_case {
	const char *name;
	void (*fn)(void);
};
int run_tests(const char *suite, const struct test_case *tests, size_t n);

#define ASSERT_STR_EQ(a, b) CU_ASSERT_STRING_EQUAL((a) ? (a) : "(null)", (b))
#define ASSERT_CONTAINS(hay, needle) \
	CU_ASSERT_PTR_NOT_NULL((hay) ? strstr((hay), (needle)) : NULL)
#define ASSERT_NOT_CONTAINS(hay, needle) \
	CU_ASSERT_PTR_NULL((hay) ? strstr((hay), (needle)) : NULL)
