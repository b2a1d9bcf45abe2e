/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "cli.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <strings.h>

/* How much of a refused argument a message quotes. */
#define QUOTED_MAX 64

int cli_number(const char *what, const char *arg, unsigned long min,
	       unsigned long max, unsigned long *ret, char **ret_msg)
{
	char *end = NULL;
	unsigned long x = 0;
	bool ok = arg && isdigit((unsigned char)*arg);
	if (ok) {
		errno = 0;
		x = strtoul(arg, &end, 10);
		ok = !errno && !*end && x >= min && x <= max;
	}
	if (!ok) {
		*ret_msg = xasprintf(
			"%s wants a whole number from %lu to %lu, not '%.*s%s'",
			what, min, max, QUOTED_MAX, arg ? arg : "",
			arg && strlen(arg) > QUOTED_MAX ? "…" : "");
		return -EINVAL;
	}
	*ret = x;
	return 0;
}

const char *cli_env(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

bool cli_env_flag(const char *name, bool def)
{
	const char *v = cli_env(name);
	if (!v)
		return def;
	static const char *const no[] = {"0", "false", "no", "off"};
	for (size_t i = 0; i < ARRAY_SIZE(no); i++)
		if (!strcasecmp(v, no[i]))
			return false;
	return true;
}

const char *cli_env_vault(void)
{
	return cli_env("OBSIDIAN_VAULT_PATH");
}
