/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "context.h"
#include "util.h"

char *context_inject(bool *injected, const char *block, const char *result)
{
	if (*injected || !block || !*block) {
		*injected = true;
		return xstrdup(result);
	}
	*injected = true;
	return xasprintf("%s\n\n---\n%s\n---", result, block);
}
