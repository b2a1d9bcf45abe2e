/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "testutil.h"
#include "query.h"
#include "store.h"
#include "vault.h"
#include "fileio.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Sanitizers reserve terabytes of address space: no RLIMIT_AS under
 * them (ThreadSanitizer's too). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

void tv_init(struct tvault *t)
{
	const char *tmp = getenv("TMPDIR");
	char *tmpl =
		xasprintf("%s/vaultd-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(tmpl)) {
		perror("mkdtemp");
		abort();
	}
	t->dir = tmpl;
	t->v = NULL;
}

static void mkdirs_for(const char *path)
{
	char *p = xstrdup(path);
	for (char *s = p + 1; *s; s++) {
		if (*s == '/') {
			*s = 0;
			mkdir(p, 0755);
			*s = '/';
		}
	}
	free(p);
}

void tv_write(struct tvault *t, const char *rel, const char *text)
{
	char *p = xasprintf("%s/%s", t->dir, rel);
	mkdirs_for(p);
	FILE *f = fopen(p, "w");
	if (!f) {
		perror(p);
		abort();
	}
	fputs(text, f);
	fclose(f);
	free(p);
}

void tv_open(struct tvault *t)
{
	char *msg = NULL;
	if (vault_open(t->dir, &t->v, &msg) < 0) {
		fprintf(stderr, "vault_open: %s\n", msg);
		abort();
	}
	vault_index_all(t->v, NULL, NULL, NULL);
}

void tv_open_with_store(struct tvault *t)
{
	char *msg = NULL;
	if (vault_open(t->dir, &t->v, &msg) < 0) {
		fprintf(stderr, "vault_open: %s\n", msg);
		abort();
	}
	char *dir = xasprintf("%s/.cache", t->dir);
	mkdir(dir, 0700);
	struct store *s = NULL;
	char *note = NULL;
	if (store_open(dir, vault_root(t->v), &s, &note) < 0) {
		fprintf(stderr, "store_open: %s\n", note ? note : "?");
		abort();
	}
	free(note);
	free(dir);
	vault_attach_store(t->v, s);
	vault_index_all(t->v, NULL, NULL, NULL);
}

void tv_reindex(struct tvault *t)
{
	vault_index_all(t->v, NULL, NULL, NULL);
}

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	return remove(p);
}

void tv_close(struct tvault *t)
{
	t->v = vault_free(t->v);
	if (t->dir && !getenv("KEEP_TEST_VAULTS"))
		nftw(t->dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	free(t->dir);
	t->dir = NULL;
}

char *read_stream(FILE *f)
{
	struct sbuf b = {0};
	char buf[4096];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		sb_add(&b, buf, n);
	return sb_steal(&b);
}

char *tv_read(struct tvault *t, const char *rel)
{
	char *p = xasprintf("%s/%s", t->dir, rel);
	FILE *f = fopen(p, "r");
	free(p);
	if (!f)
		return NULL;
	char *s = read_stream(f);
	fclose(f);
	return s;
}

bool tv_exists(struct tvault *t, const char *rel)
{
	char *p = xasprintf("%s/%s", t->dir, rel);
	struct stat st;
	bool r = lstat(p, &st) == 0;
	free(p);
	return r;
}

void tv_call(struct tvault *t, const char *tool, const char *args_json,
	     struct tool_result *ret)
{
	cJSON *args = args_json ? cJSON_Parse(args_json) : NULL;
	if (args_json && !args) {
		fprintf(stderr, "bad test JSON: %s\n", args_json);
		abort();
	}
	tools_call(t->v, tool, args, "test", ret);
	cJSON_Delete(args);
}

cJSON *tv_call_json(struct tvault *t, const char *tool, const char *args_json)
{
	struct tool_result r;
	tv_call(t, tool, args_json, &r);
	if (r.is_error) {
		fprintf(stderr, "  %s(%s) failed: %s\n", tool,
			args_json ? args_json : "", r.text);
		tool_result_clear(&r);
		return NULL;
	}
	cJSON *j = cJSON_Parse(r.text);
	tool_result_clear(&r);
	return j;
}

bool tv_store_rebuilt(struct tvault *t)
{
	_cleanup_free_ char *dir = xasprintf("%s/.cache", t->dir);
	struct store *s = NULL;
	char *note = NULL;
	bool rebuilt = store_open(dir, t->dir, &s, &note) == 0 && note &&
		       strstr(note, "rebuilt");
	free(note);
	store_close(s);
	return rebuilt;
}

struct store_hit *tv_store_page(struct tvault *t, const char *query,
				size_t *ret_n, size_t *ret_total)
{
	struct qnode *q = NULL;
	char *msg = NULL;
	struct store_hit *h = NULL;
	*ret_n = *ret_total = 0;
	CU_ASSERT_FATAL(query_parse(query, &q, &msg) == 0);
	vault_fulltext_flush(t->v);
	CU_ASSERT_FATAL(store_search(vault_store(t->v), q, false, 0, 100, &h,
				     ret_n, ret_total, &msg) == 0);
	query_free(q);
	return h;
}

char *tv_first_snippet(struct tvault *t, const char *query)
{
	cJSON *a = cJSON_CreateObject();
	cJSON_AddStringToObject(a, "query", query);
	cJSON_AddStringToObject(a, "mode", "fulltext");
	char *args = cJSON_PrintUnformatted(a);
	cJSON_Delete(a);
	cJSON *r = tv_call_json(t, "search_notes", args);
	free(args);
	const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(
		cJSON_GetArrayItem(cJSON_GetObjectItem(r, "results"), 0),
		"snippet"));
	char *copy = xstrdup(s ? s : "");
	cJSON_Delete(r);
	return copy;
}

char *tv_call_err(struct tvault *t, const char *tool, const char *args_json)
{
	struct tool_result r;
	tv_call(t, tool, args_json, &r);
	char *msg = r.is_error ? TAKE_PTR(r.text) : NULL;
	if (!r.is_error)
		fprintf(stderr, "  %s(%s) unexpectedly succeeded: %s\n", tool,
			args_json ? args_json : "", r.text);
	tool_result_clear(&r);
	return msg;
}

bool tv_file_is(struct tvault *t, const char *rel, const char *want)
{
	char *got = tv_read(t, rel);
	bool eq = got && strcmp(got, want) == 0;
	if (!eq)
		fprintf(stderr,
			"  %s differs:\n--- got ---\n%s\n--- want ---\n%s\n---\n",
			rel, got ? got : "(missing)", want);
	free(got);
	return eq;
}

size_t tv_search_total(struct tvault *t, const char *query, const char *mode)
{
	char *args =
		xasprintf("{\"query\": \"%s\", \"mode\": \"%s\"}", query, mode);
	cJSON *r = tv_call_json(t, "search_notes", args);
	free(args);
	size_t n =
		(size_t)cJSON_GetNumberValue(cJSON_GetObjectItem(r, "total"));
	cJSON_Delete(r);
	return n;
}

static size_t nfailures(void)
{
	size_t n = 0;
	for (CU_pFailureRecord f = CU_get_failure_list(); f; f = f->pNext)
		n++;
	return n;
}

bool run_capped(void (*fn)(void *ud), void *ud, size_t max_mem,
		unsigned max_secs)
{
	size_t before = nfailures();
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) {
		perror("fork");
		return false;
	}
	if (pid == 0) {
#ifndef UNDER_ASAN
		struct rlimit rl = {max_mem, max_mem};
		if (setrlimit(RLIMIT_AS, &rl) < 0) {
			perror("setrlimit");
			_exit(3);
		}
#endif
		alarm(max_secs);
		fn(ud);
		size_t i = 0;
		for (CU_pFailureRecord f = CU_get_failure_list(); f;
		     f = f->pNext, i++)
			if (i >= before)
				fprintf(stderr, "  %s:%u: %s\n", f->strFileName,
					f->uiLineNumber, f->strCondition);
		fflush(stdout);
		fflush(stderr);
		_exit(nfailures() > before ? 1 : 0);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			perror("waitpid");
			return false;
		}
	if (WIFSIGNALED(st))
		fprintf(stderr, "  capped child killed by signal %d%s\n",
			WTERMSIG(st),
			WTERMSIG(st) == SIGALRM ? " (out of time)" : "");
	else if (WEXITSTATUS(st) != 0)
		fprintf(stderr, "  capped child exited with %d\n",
			WEXITSTATUS(st));
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

bool json_equal_text(const cJSON *got, const char *want_json)
{
	cJSON *want = cJSON_Parse(want_json);
	if (!want) {
		fprintf(stderr, "bad expected JSON: %s\n", want_json);
		return false;
	}
	bool eq = got && cJSON_Compare(got, want, true);
	if (!eq) {
		char *g = got ? cJSON_PrintUnformatted(got) : NULL;
		fprintf(stderr, "  JSON differs:\n    got:  %s\n    want: %s\n",
			g ? g : "(null)", want_json);
		free(g);
	}
	cJSON_Delete(want);
	return eq;
}

int run_tests(const char *suite, const struct test_case *tests, size_t n)
{
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 2;
	CU_pSuite s = CU_add_suite(suite, NULL, NULL);
	const char *only = getenv("TEST_ONLY");
	for (size_t i = 0; i < n; i++)
		if (!only || strstr(tests[i].name, only))
			CU_add_test(s, tests[i].name, tests[i].fn);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	unsigned failed =
		CU_get_number_of_failures() + CU_get_number_of_tests_failed();
	unsigned run = CU_get_number_of_tests_run();
	CU_cleanup_registry();
	if (!run)
		return 1;
	return failed ? 1 : 0;
}
