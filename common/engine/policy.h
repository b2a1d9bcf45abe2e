/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The vault's policy (.vaultd/policy.yaml) and the one guard that judges
 * every write, whoever makes it.
 *
 *   allowed_tags: [inbox]          # allowed besides every tag in the vault
 *   tag_rules:                     # replaces the defaults when present
 *     Person: {name_prefix: "@"}
 *     claude: {requires: [description]}
 *   on_violation: reject           # or warn
 *   delete_links: mark             # or keep
 *   ignore: ["templates/", "*.excalidraw.md"]
 *   legacy_properties: false       # true: read tag/alias/cssclass too
 */
#pragma once

#include "index.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <stdatomic.h>

#define POLICY_PATH ".vaultd/policy.yaml"

struct tag_rule {
	char *tag;
	char *name_prefix; /* note name must start with this, or NULL */
	char **requires;   /* frontmatter keys that must have a value */
	char *message;	   /* the refusal text */
};

struct policy {
	char **allowed_tags;
	struct tag_rule *rules;
	size_t nrules;
	bool warn;	 /* on_violation: warn */
	bool keep_links; /* delete_links: keep */
	char **ignore;
	/* Read the properties Obsidian 1.9 dropped (tag, alias). */
	bool legacy_properties;
	bool from_file;
	/* References besides the first: policy_ref() adds one, policy_free()
	 * drops one (a policy in use is never freed by a reload). */
	atomic_int refs;
};

struct policy *policy_default(void);
/*
 * Load rootfd/.vaultd/policy.yaml; defaults when it does not exist.
 * A file that cannot be read or parsed is an error (-EBADMSG) with a
 * message naming the line: a policy is never silently replaced.
 */
int policy_load(int rootfd, struct policy **ret, char **ret_msg);
int policy_parse(const char *text, size_t len, struct policy **ret,
		 char **ret_msg);
/* Drop a reference; the last one frees the policy. Returns NULL. */
struct policy *policy_free(struct policy *p);
struct policy *policy_ref(struct policy *p);
static inline void policy_freep(struct policy **p)
{
	policy_free(*p);
}
#define _cleanup_policy_ _cleanup_(policy_freep)

/* How notes are read under this policy: NOTE_READ_* flags (note.h). */
unsigned policy_note_flags(const struct policy *p);

/* Hidden paths (any component starting with '.') and ignore globs. */
bool policy_ignored(const struct policy *p, const char *path, bool is_dir);

/* Sorted allowed tags (vault tags + allow list), caller frees strv. */
char **policy_allowed_tags(const struct policy *p, const struct index *ix);

/*
 * The guard. `after` is the note as it would be (name, tags, keys);
 * `before` the note as it is, or NULL for a new note. A write may not
 * add violations that `before` did not already have. Returns 0 when
 * allowed, or -EPERM and a message that says what is allowed.
 */
int policy_check(const struct policy *p, const struct index *ix,
		 const struct note *before, const struct note *after,
		 char **ret_msg);

/* Violations a note has on its own (for `vaultctl check`). */
int policy_note_violations(const struct policy *p, const struct index *ix,
			   const struct note *n, struct sbuf *msgs);
