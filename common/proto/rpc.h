/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * JSON-RPC 2.0, one message per line: parsing with every check a server
 * needs before it trusts a message, and building responses.
 */
#pragma once

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

enum {
	RPC_PARSE_ERROR = -32700,
	RPC_INVALID_REQUEST = -32600,
	RPC_METHOD_NOT_FOUND = -32601,
	RPC_BAD_PARAMS = -32602,
	RPC_INTERNAL = -32603,
};

struct rpc_msg {
	cJSON *root;
	const cJSON *id;     /* NULL for notifications */
	const char *method;  /* NULL for responses */
	const cJSON *params; /* NULL when absent */
	const cJSON *result; /* responses */
	const cJSON *error;  /* error responses */
};

/*
 * Parse one line (without its newline). On failure returns a JSON-RPC
 * code (< 0) and a message; *ret->id is set when the id could be read,
 * so the error can answer it. A batch (array) is an invalid request.
 */
int rpc_parse(const char *line, size_t len, struct rpc_msg *ret,
	      const char **ret_msg);
void rpc_msg_clear(struct rpc_msg *m);

/* Lines without the trailing newline; the id is copied, result taken. */
char *rpc_result_line(const cJSON *id, cJSON *result);
char *rpc_error_line(const cJSON *id, int code, const char *message,
		     cJSON *data);
char *rpc_notify_line(const char *method, cJSON *params);
char *rpc_request_line(long id, const char *method, cJSON *params);

/* True when a JSON text has a "\u0000" escape inside a string. */
bool json_text_has_nul(const char *s, size_t len);

/* Line splitter for byte streams, with a limit on line length. */
struct linebuf {
	char *buf;
	size_t len, cap;
	size_t scanned;	 /* bytes of the line handed out last */
	size_t searched; /* bytes known to hold no newline */
	size_t max;	 /* longest accepted line */
	bool too_long;	 /* set once a line exceeded max */
	bool skipping;	 /* dropping bytes up to the next newline */
};
void lb_init(struct linebuf *lb, size_t max);
void lb_free(struct linebuf *lb);
/* Append bytes read from a stream. */
void lb_append(struct linebuf *lb, const char *data, size_t n);
/* Forget the over-long line: its bytes are dropped up to its newline and
 * reading goes on after it. Clears too_long. */
void lb_skip_line(struct linebuf *lb);
/* Next complete line (NUL-terminated, newline and '\r' removed), or NULL.
 * The pointer stays valid until the next lb_ call. */
char *lb_next(struct linebuf *lb, size_t *ret_len);
