/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "rpc.h"
#include "json.h"
#include "u8.h"
#include "util.h"

#define STR_(x) #x
#define STR(x) STR_(x)

bool json_text_has_nul(const char *s, size_t len)
{
	bool in = false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (!in) {
			in = c == '"';
			continue;
		}
		if (c == '"') {
			in = false;
		} else if (c == '\\' && i + 1 < len) {
			if (s[i + 1] == 'u' && i + 5 < len &&
			    memcmp(s + i + 2, "0000", 4) == 0)
				return true;
			i++;
		}
	}
	return false;
}

static int fail(struct rpc_msg *m, int code, const char *msg,
		const char **ret_msg)
{
	*ret_msg = msg;
	return code;
}

/*
 * Deepest nesting of arrays and objects in a JSON text (strings skipped),
 * and where the text of the top-level object's "id" value is, if it has
 * one. For text cJSON refused: it stops at CJSON_NESTING_LIMIT levels.
 */
static size_t scan_nesting(const char *s, size_t len, const char **ret_id,
			   size_t *ret_idlen)
{
	size_t depth = 0, max = 0, klen = 0;
	const char *key = NULL, *id = NULL;
	*ret_id = NULL;
	*ret_idlen = 0;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (c == '"') {
			size_t start = ++i;
			while (i < len && s[i] != '"')
				i += s[i] == '\\' ? 2 : 1;
			if (depth == 1 && !id) {
				key = s + start;
				klen = i - start;
			}
			continue;
		}
		if (depth != 1) {
			/* nothing to note inside nested values */
		} else if (c == ':') {
			if (key && klen == 2 && !memcmp(key, "id", 2))
				id = s + i + 1;
			key = NULL;
		} else if ((c == ',' || c == '}') && id) {
			*ret_id = id;
			*ret_idlen = (size_t)(s + i - id);
			id = NULL;
		}
		if (c == '[' || c == '{') {
			if (++depth > max)
				max = depth;
		} else if ((c == ']' || c == '}') && depth) {
			depth--;
		}
	}
	return max;
}

/* Refused text nested deeper than cJSON reads: say so, and answer the
 * request's id when it can be read. */
static int fail_nesting(const char *line, size_t len, struct rpc_msg *m,
			const char **ret_msg)
{
	const char *idt;
	size_t idlen;
	if (scan_nesting(line, len, &idt, &idlen) <= CJSON_NESTING_LIMIT)
		return 0;
	cJSON *id = idt ? cJSON_ParseWithLength(idt, idlen) : NULL;
	if (cJSON_IsString(id) ||
	    (cJSON_IsNumber(id) &&
	     id->valuedouble == (double)(long long)id->valuedouble)) {
		m->root = id;
		m->id = id;
	} else {
		cJSON_Delete(id);
	}
	return fail(
		m, RPC_INVALID_REQUEST,
		"Invalid Request: JSON too deeply nested (more than " STR(
			CJSON_NESTING_LIMIT) " levels of arrays and objects)",
		ret_msg);
}

int rpc_parse(const char *line, size_t len, struct rpc_msg *m,
	      const char **ret_msg)
{
	memset(m, 0, sizeof(*m));
	if (!u8_valid(line, len)) {
		/* u8_valid also refuses raw NUL bytes. */
		return fail(m, RPC_PARSE_ERROR,
			    "Parse error: message is not valid UTF-8 text",
			    ret_msg);
	}
	const char *end = NULL;
	m->root = cJSON_ParseWithLengthOpts(line, len, &end, false);
	if (!m->root) {
		int r = fail_nesting(line, len, m, ret_msg);
		if (r)
			return r;
		return fail(m, RPC_PARSE_ERROR, "Parse error: invalid JSON",
			    ret_msg);
	}
	/* Nothing but white space may follow the message. */
	for (const char *p = end; p && p < line + len; p++)
		if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
			return fail(m, RPC_PARSE_ERROR,
				    "Parse error: text after the JSON message",
				    ret_msg);
	if (cJSON_IsArray(m->root))
		return fail(m, RPC_INVALID_REQUEST,
			    "Invalid Request: batch requests are not supported",
			    ret_msg);
	if (!cJSON_IsObject(m->root))
		return fail(m, RPC_INVALID_REQUEST,
			    "Invalid Request: a message must be a JSON object",
			    ret_msg);
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(m->root, "id");
	if (id && (cJSON_IsString(id) ||
		   (cJSON_IsNumber(id) &&
		    id->valuedouble == (double)(long long)id->valuedouble)))
		m->id = id;
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(m->root, "jsonrpc");
	if (!cJSON_IsString(v) || strcmp(v->valuestring, "2.0") != 0)
		return fail(m, RPC_INVALID_REQUEST,
			    "Invalid Request: \"jsonrpc\" must be \"2.0\"",
			    ret_msg);
	const cJSON *method =
		cJSON_GetObjectItemCaseSensitive(m->root, "method");
	m->result = cJSON_GetObjectItemCaseSensitive(m->root, "result");
	m->error = cJSON_GetObjectItemCaseSensitive(m->root, "error");
	/* An error that answers no request in particular (a message that
	 * could not be read, a refused connection) has no id, or a null
	 * one. */
	if (!method && m->error && (!id || cJSON_IsNull(id)))
		return 0;
	if (id && !m->id)
		return fail(m, RPC_INVALID_REQUEST,
			    "Invalid Request: \"id\" must be a string or an "
			    "integer",
			    ret_msg);
	if (!method) {
		if (m->id && (m->result || m->error))
			return 0; /* a response */
		return fail(m, RPC_INVALID_REQUEST,
			    "Invalid Request: \"method\" is missing", ret_msg);
	}
	if (!cJSON_IsString(method) || !*method->valuestring)
		return fail(m, RPC_INVALID_REQUEST,
			    "Invalid Request: \"method\" must be a string",
			    ret_msg);
	m->method = method->valuestring;
	m->params = cJSON_GetObjectItemCaseSensitive(m->root, "params");
	if (m->params && !cJSON_IsObject(m->params) &&
	    !cJSON_IsArray(m->params))
		return fail(m, RPC_INVALID_REQUEST,
			    "Invalid Request: \"params\" must be an object or "
			    "an array",
			    ret_msg);
	/* C strings end at NUL: refuse text that would be cut short. */
	if (json_text_has_nul(line, len))
		return fail(m, RPC_BAD_PARAMS,
			    "Invalid params: text must not contain NUL "
			    "characters",
			    ret_msg);
	return 0;
}

void rpc_msg_clear(struct rpc_msg *m)
{
	cJSON_Delete(m->root);
	memset(m, 0, sizeof(*m));
}

static char *finish(cJSON *o)
{
	char *s = json_compact(o);
	cJSON_Delete(o);
	return s;
}

static cJSON *base(const cJSON *id)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "jsonrpc", "2.0");
	if (id)
		cJSON_AddItemToObject(o, "id", cJSON_Duplicate(id, 1));
	return o;
}

char *rpc_result_line(const cJSON *id, cJSON *result)
{
	cJSON *o = base(id);
	cJSON_AddItemToObject(o, "result",
			      result ? result : cJSON_CreateObject());
	return finish(o);
}

char *rpc_error_line(const cJSON *id, int code, const char *message,
		     cJSON *data)
{
	/* "id": null when it could not be read (a parse error, an invalid
	 * request), as JSON-RPC 2.0 says. */
	cJSON *o = base(id);
	if (!id)
		cJSON_AddNullToObject(o, "id");
	cJSON *e = cJSON_AddObjectToObject(o, "error");
	cJSON_AddNumberToObject(e, "code", code);
	cJSON_AddStringToObject(e, "message", message);
	if (data)
		cJSON_AddItemToObject(e, "data", data);
	return finish(o);
}

char *rpc_notify_line(const char *method, cJSON *params)
{
	cJSON *o = base(NULL);
	cJSON_AddStringToObject(o, "method", method);
	if (params)
		cJSON_AddItemToObject(o, "params", params);
	return finish(o);
}

char *rpc_request_line(long id, const char *method, cJSON *params)
{
	cJSON *o = base(NULL);
	cJSON_AddNumberToObject(o, "id", (double)id);
	cJSON_AddStringToObject(o, "method", method);
	if (params)
		cJSON_AddItemToObject(o, "params", params);
	return finish(o);
}

void lb_init(struct linebuf *lb, size_t max)
{
	memset(lb, 0, sizeof(*lb));
	lb->max = max;
}

void lb_free(struct linebuf *lb)
{
	free(lb->buf);
	memset(lb, 0, sizeof(*lb));
}

void lb_skip_line(struct linebuf *lb)
{
	lb->len = lb->scanned = lb->searched = 0;
	lb->too_long = false;
	lb->skipping = true;
}

void lb_append(struct linebuf *lb, const char *data, size_t n)
{
	if (lb->skipping) {
		const char *nl = memchr(data, '\n', n);
		if (!nl)
			return;
		lb->skipping = false;
		n -= (size_t)(nl + 1 - data);
		data = nl + 1;
	}
	if (lb->len + n + 1 > lb->cap) {
		size_t cap = lb->cap ? lb->cap : 4096;
		while (cap < lb->len + n + 1)
			cap *= 2;
		lb->buf = xrealloc(lb->buf, cap);
		lb->cap = cap;
	}
	memcpy(lb->buf + lb->len, data, n);
	lb->len += n;
}

char *lb_next(struct linebuf *lb, size_t *ret_len)
{
	/* Drop the line handed out last time. */
	if (lb->scanned) {
		memmove(lb->buf, lb->buf + lb->scanned, lb->len - lb->scanned);
		lb->len -= lb->scanned;
		lb->searched = lb->searched > lb->scanned
				       ? lb->searched - lb->scanned
				       : 0;
		lb->scanned = 0;
	}
	/* Search only bytes not searched before: a long line arriving in
	 * many pieces costs O(n), not O(n^2). */
	char *nl = lb->len > lb->searched ? memchr(lb->buf + lb->searched, '\n',
						   lb->len - lb->searched)
					  : NULL;
	if (!nl) {
		lb->searched = lb->len;
		if (lb->len > lb->max)
			lb->too_long = true;
		return NULL;
	}
	size_t n = (size_t)(nl - lb->buf);
	if (n > lb->max) {
		lb->too_long = true;
		return NULL;
	}
	*nl = 0;
	lb->scanned = n + 1;
	lb->searched = n + 1;
	if (n && lb->buf[n - 1] == '\r')
		lb->buf[--n] = 0;
	*ret_len = n;
	return lb->buf;
}
