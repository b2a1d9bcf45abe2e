/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests for common/proto/rpc.h: what rpc_parse() answers to hostile
 * messages. */
#include "testutil.h"
#include "rpc.h"
#include "util.h"

/* prefix, depth times `open` (objects as {"k": ...), inner, as many
 * `close`, suffix. */
static char *nested(const char *prefix, size_t depth, char open, char close,
		    const char *inner, const char *suffix)
{
	struct sbuf b = {0};
	sb_puts(&b, prefix);
	for (size_t i = 0; i < depth; i++) {
		sb_putc(&b, open);
		if (open == '{')
			sb_puts(&b, "\"k\":");
	}
	sb_puts(&b, inner);
	for (size_t i = 0; i < depth; i++)
		sb_putc(&b, close);
	sb_puts(&b, suffix);
	return sb_steal(&b);
}

static int parse(const char *line, struct rpc_msg *m, const char **why)
{
	*why = NULL;
	return rpc_parse(line, strlen(line), m, why);
}

static void test_deep_array(void)
{
	struct rpc_msg m;
	const char *why;
	_cleanup_free_ char *deep = nested("", 1002, '[', ']', "", "");
	CU_ASSERT_EQUAL(parse(deep, &m, &why), RPC_INVALID_REQUEST);
	ASSERT_CONTAINS(why, "too deeply nested");
	ASSERT_CONTAINS(why, "1000");
	CU_ASSERT_PTR_NULL(m.id);
	rpc_msg_clear(&m);
	/* 1,000 levels are read (then refused as a batch). */
	_cleanup_free_ char *ok = nested("", 1000, '[', ']', "", "");
	CU_ASSERT_EQUAL(parse(ok, &m, &why), RPC_INVALID_REQUEST);
	ASSERT_CONTAINS(why, "batch");
	rpc_msg_clear(&m);
	/* Broken JSON that is not deep is still a parse error. */
	CU_ASSERT_EQUAL(parse("{\"a\":[[[", &m, &why), RPC_PARSE_ERROR);
	ASSERT_CONTAINS(why, "invalid JSON");
	rpc_msg_clear(&m);
}

static void test_deep_params_keep_id(void)
{
	struct rpc_msg m;
	const char *why;
	/* The answer can name the request: its id is read without the
	 * tree. Before or after the deep part, number or string. */
	_cleanup_free_ char *a = nested(
		"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\","
		"\"params\":{\"name\":\"read_note\",\"arguments\":",
		1002, '{', '}', "\"[{\\\"id\\\":1}\"", "}}");
	CU_ASSERT_EQUAL(parse(a, &m, &why), RPC_INVALID_REQUEST);
	ASSERT_CONTAINS(why, "too deeply nested");
	CU_ASSERT_TRUE(cJSON_IsNumber(m.id) && m.id->valueint == 7);
	rpc_msg_clear(&m);
	_cleanup_free_ char *b = nested(
		"{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":{\"p\":",
		1100, '[', ']', "\"}{\\\"\"", "}, \"id\" : \"r-1\" }");
	CU_ASSERT_EQUAL(parse(b, &m, &why), RPC_INVALID_REQUEST);
	ASSERT_CONTAINS(why, "too deeply nested");
	CU_ASSERT_TRUE(cJSON_IsString(m.id) &&
		       !strcmp(m.id->valuestring, "r-1"));
	rpc_msg_clear(&m);
	/* An id that is not a string or an integer is not answered. */
	_cleanup_free_ char *c = nested("{\"id\":{\"x\":1},\"params\":", 1002,
					'[', ']', "", "}");
	CU_ASSERT_EQUAL(parse(c, &m, &why), RPC_INVALID_REQUEST);
	CU_ASSERT_PTR_NULL(m.id);
	rpc_msg_clear(&m);
	/* Brackets inside strings do not count. */
	_cleanup_free_ char *d = nested(
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"s\":\"",
		1002, '[', '{', "", "\"}}");
	CU_ASSERT_EQUAL(parse(d, &m, &why), 0);
	CU_ASSERT_TRUE(cJSON_IsNumber(m.id));
	rpc_msg_clear(&m);
}

int main(void)
{
	static const struct test_case tests[] = {
		{"deep_array", test_deep_array},
		{"deep_params_keep_id", test_deep_params_keep_id},
	};
	return run_tests("rpc", tests, ARRAY_SIZE(tests));
}
