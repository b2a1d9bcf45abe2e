/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The link graph over the index, with one definition of each question
 * the check and the tools ask of it (read lock held for all of them):
 *
 * - A link counts when it has a target: "[[#Heading]]" points into its
 *   own note and is no link between notes.
 * - A link is broken when it counts and resolves to no note and to no
 *   attachment (link_is_broken(), index.h).
 * - The backlinks of a note are the other notes with a link resolving to
 *   it (a note's links to itself are not among its incoming links).
 * - A note is an orphan when it has no backlinks and no link of it
 *   resolves to another note (links to itself, to attachments and broken
 *   ones do not connect it).
 */
#pragma once

#include "index.h"

bool graph_link_counts(const struct link *l);

/* Every link of n in order of appearance, those that do not count too:
 * *k starts at 0; NULL after the last. */
const struct link *graph_next_link(const struct note *n, size_t *k);

/* The links of other notes that resolve to n (*ret_n of them). */
struct link *const *graph_incoming(const struct note *n, size_t *ret_n);

/* The distinct notes linking to n (struct note *), each once, in the
 * order of n's incoming links. */
struct ptrvec graph_backlinks(const struct note *n);

bool graph_is_orphan(const struct note *n);

/* n's broken links in order: *k starts at 0; NULL after the last. */
const struct link *graph_next_broken(const struct note *n, size_t *k);
