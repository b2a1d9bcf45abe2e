/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Vault health report for `vaultctl check`: counts and problems. */
#pragma once

#include "vault.h"

#include <cjson/cJSON.h>

/* {"vault", "notes", "attachments", "tags", "links", "broken_links",
 *  "orphans", "frontmatter_errors": [...], "policy_violations": [...],
 *  "broken": [{"source","target","line"}], "policy"} */
cJSON *vault_check(struct vault *v);
/* Human-readable form of vault_check()'s object. */
char *vault_check_text(const cJSON *report);

/*
 * The whole link graph in a canonical form (sorted): for every note its
 * tags (folded), its outgoing links (the target note's path, or "!" and
 * the target as written when broken) and its number of incoming links.
 * Two indexes of the same files give the same JSON.
 */
cJSON *vault_graph(struct vault *v);
