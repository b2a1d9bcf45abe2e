/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The engine's reports as JSON: the objects the tools answer with, the
 * control socket's check and graph, and the text `vaultctl check` prints.
 */
#pragma once

#include "check.h"
#include "policy.h"
#include "vault.h"

#include <cjson/cJSON.h>

/* rename_note, rename_folder, delete_note: what was (or would be) done. */
cJSON *moved_json(const struct vault_moved *m);

/* list_violations: [{"time", "source", "path", "message", "action",
 * "rejected_text"?}], newest first. */
cJSON *violations_json(const struct vault_violation *a, size_t n);

/* get_policy: the effective policy, with the tags currently allowed. */
cJSON *policy_to_json(const struct policy *p, const struct index *ix);

/* {"vault", "policy", "notes", "attachments", "tags", "links",
 *  "broken_links", "orphans", "frontmatter_errors": [{"path","line"}],
 *  "policy_violations": [{"path","message"}],
 *  "broken": [{"source","target","line"}]} */
cJSON *vault_check_json(struct vault *v);
/* Human-readable form of vault_check_json()'s object. */
char *vault_check_text(const cJSON *report);

/*
 * The whole link graph in a canonical form (sorted): for every note its
 * tags (folded), its outgoing links (the target note's path, "@" and the
 * target for a file, or "!" and the target as written when broken) and
 * its number of incoming links. Two indexes of the same files give the
 * same JSON.
 */
cJSON *vault_graph_json(struct vault *v);
