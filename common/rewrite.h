/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Link rewriting for rename and delete: every link form ([[x]], [[x|a]],
 * [[x#h]], ![[x]], [[dir/x]], [[x.md]], [t](dir/x.md), [t](<x.md>), and
 * "[[x]]" in a property, quoted as it was) that resolves to one note gets
 * a new target; everything else in the text stays byte for byte, code
 * and math included.
 */
#pragma once

#include "index.h"

/* How a rewritten link should point. */
enum rewrite_mode {
	REWRITE_RENAME, /* to new_path */
	REWRITE_DELETED /* to "<name> (deleted)" */
};

struct rewrite_req {
	enum rewrite_mode mode;
	const struct note *target; /* the note links must resolve to */
	const char *new_path;	   /* REWRITE_RENAME: "dir/New.md" */
	/* The new name is shared with another note: write paths. */
	bool new_name_ambiguous;
	/* The note being rewritten moves too (its own relative links). */
	const char *src_new_path;
};

/*
 * Rewrite text of note src (an indexed note, or the target itself).
 * Returns the new text (malloc'd) and the number of links changed in
 * *ret_count (0: the returned text equals the input).
 */
char *rewrite_links(const struct index *ix, const struct note *src,
		    const char *text, size_t len, const struct rewrite_req *req,
		    int *ret_count);

/* Relative path from folder `from_dir` ("" = root) to `to_path`. */
char *path_relative(const char *from_dir, const char *to_path);
