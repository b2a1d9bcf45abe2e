/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Ignore globs, gitignore-like: '*' and '?' stay inside one path
 * component, '**' crosses folders, '[...]' is a class. A pattern without
 * '/' matches the name of any file or folder; a pattern ending in '/'
 * matches folders only (and everything below them).
 */
#pragma once

#include <stdbool.h>

bool glob_match(const char *pattern, const char *path, bool is_dir);
/* Matches path itself or any folder above it. */
bool glob_match_any_level(const char *pattern, const char *path, bool is_dir);
