/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Link rewriting for renames, moves and deletes: every link form ([[x]],
 * [[x|a]], [[x#h]], ![[x]], [[dir/x]], [[x.md]], [t](dir/x.md),
 * [t](<x.md>), and "[[x]]" in a property, quoted as it was) can get a new
 * target; everything else in the text stays byte for byte (alias,
 * subpath, URL encoding, quoting), code and math included.
 */
#pragma once

#include "index.h"

/*
 * Moves and renames (index_moves): the links of src's text that would
 * lead elsewhere once the moves are made are rewritten to lead where
 * they lead now: wikilinks and embeds in the shortest form
 * (index_shortest_link()), markdown links as a path relative to the
 * note. So are links to a renamed entry that still name it the old way
 * (a change of case), and, in a note that changes folder, markdown links
 * that no longer reach their target relative to it. Links that lead
 * nowhere are left as they are. Returns the new text (malloc'd) and the
 * number of links changed in *ret_count (0: the text is the input).
 */
char *rewrite_moved(const struct index *ix, const struct index_moves *mv,
		    const struct note *src, const char *text, size_t len,
		    int *ret_count);

/*
 * A delete: every link of src's text that resolves to target gets
 * "<name> (deleted)" as its target.
 */
char *rewrite_deleted(const struct index *ix, const struct note *src,
		      const struct note *target, const char *text, size_t len,
		      int *ret_count);

/* Relative path from folder `from_dir` ("" = root) to `to_path`. */
char *path_relative(const char *from_dir, const char *to_path);
