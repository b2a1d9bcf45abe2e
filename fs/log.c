/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "log.h"
#include "util.h"

#include <pthread.h>
#include <stdio.h>
#include <time.h>

static const char *ident = "vaultd";
static enum log_level level = LOG_LVL_INFO;
static int journal = -1;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

void log_init(const char *id)
{
	ident = id;
	journal = getenv("JOURNAL_STREAM") != NULL;
	const char *l = getenv("VAULTD_LOG_LEVEL");
	if (l && !strcmp(l, "debug"))
		level = LOG_LVL_DEBUG;
}

void log_set_level(enum log_level l)
{
	level = l;
}

void log_msg(enum log_level l, const char *fmt, ...)
{
	static const char *const names[] = {"debug", "info", "warning",
					    "error"};
	/* sd-daemon(3) priority prefixes for the journal. */
	static const char *const prio[] = {"<7>", "<6>", "<4>", "<3>"};
	if (l < level)
		return;
	struct sbuf b = {0};
	if (journal == 1) {
		sb_puts(&b, prio[l]);
	} else {
		char ts[32];
		format_iso8601(now_s(), ts);
		sb_printf(&b, "%s %s[%d] %s: ", ts, ident, (int)getpid(),
			  names[l]);
	}
	va_list ap;
	va_start(ap, fmt);
	sb_vprintf(&b, fmt, ap);
	va_end(ap);
	sb_putc(&b, '\n');
	pthread_mutex_lock(&mu);
	if (write(STDERR_FILENO, b.s, b.len) < 0) {
	}
	pthread_mutex_unlock(&mu);
	sb_free(&b);
}
