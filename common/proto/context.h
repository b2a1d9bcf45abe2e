/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The auto-context block of a session (seed 000): the daemon writes the
 * block (context_block(), tools/); the front-end adds it once, to the
 * first result of the session.
 */
#pragma once

#include <stdbool.h>

/*
 * Seed 000's _inject_context: the first result of a session gets
 * "\n\n---\n" + block + "\n---" appended; later ones are unchanged.
 * *injected is the session's flag. Returns a new string.
 */
char *context_inject(bool *injected, const char *block, const char *result);
