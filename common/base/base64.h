/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Standard base64 (RFC 4648, with padding): how MCP carries an image or
 * an attachment's bytes. Only the encoder: vaultd sends bytes, it never
 * takes them in this form.
 */
#pragma once

#include <stddef.h>

/* The base64 of n bytes at p, NUL-terminated (malloc'd); its length in
 * *ret_len when ret_len is not NULL. */
char *base64_encode(const void *p, size_t n, size_t *ret_len);
