/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Vault health report for `vaultctl check`: counts and problems. */
#pragma once

#include "vault.h"

struct check_broken {
	char *source, *target; /* the note's path, the link as written */
	int line;
};

struct check_fm_error {
	char *path;
	int line;
};

struct check_violation {
	char *path, *message;
};

struct vault_report {
	char *vault;	    /* the vault's root */
	const char *policy; /* POLICY_PATH, or "defaults" */
	size_t notes, attachments, tags, links, orphans;
	struct check_broken *broken; /* every broken link, by note */
	size_t nbroken;
	struct check_fm_error *fm_errors; /* frontmatter that does not parse */
	size_t nfm_errors;
	struct check_violation *violations; /* notes breaking the policy */
	size_t nviolations;
};

/* The report on the vault as it is now (takes the read lock). */
void vault_check(struct vault *v, struct vault_report *ret);
void vault_report_clear(struct vault_report *r);
