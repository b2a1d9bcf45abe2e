/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Logging for the daemon and the MCP front-end: stderr only. Under
 * systemd (JOURNAL_STREAM set) without timestamps, else with them. */
#pragma once

#include <stdarg.h>

enum log_level { LOG_LVL_DEBUG, LOG_LVL_INFO, LOG_LVL_WARN, LOG_LVL_ERROR };

void log_init(const char *ident);
void log_set_level(enum log_level l);
void log_msg(enum log_level l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define log_debug(...) log_msg(LOG_LVL_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_LVL_ERROR, __VA_ARGS__)
