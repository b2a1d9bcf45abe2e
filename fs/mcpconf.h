/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * MCP client configurations: where each client keeps its servers, and
 * vault-mcp's entry merged into such a file with cJSON. Nothing else in
 * the file changes: other servers, other keys and their order, other
 * members of our own entry (args, further env). A file that does not
 * parse is refused, never rewritten; a merge that changes nothing writes
 * nothing, so running it again is a no-op.
 *
 * mcpconf_merge() is the pure part (text in, text out, testable line by
 * line); mcpconf_patch() adds the file: a timestamped backup of the old
 * text, an atomic replace that keeps the file's mode.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* vault-mcp's entry: "name": {type?, command, args, env}. */
struct mcpconf_entry {
	const char *name;    /* the server's name in the client */
	const char *command; /* vault-mcp, absolute */
	const char *vault;   /* OBSIDIAN_VAULT_PATH, absolute */
	bool typed;	     /* the client wants "type": "stdio" */
};

struct mcpconf_client {
	const char *id;	   /* --client NAME */
	const char *label; /* "Claude Desktop" */
	const char *key;   /* the object holding servers: mcpServers, servers */
	bool typed;
	/* The config file, found from HOME/XDG_CONFIG_HOME (and the working
	 * folder for a workspace file); NULL when it cannot be told. */
	char *(*path)(void);
	/* The folder whose presence says the client is installed. */
	char *(*home)(void);
};

/* Every known client, in the order they are shown. */
const struct mcpconf_client *mcpconf_clients(size_t *ret_n);
const struct mcpconf_client *mcpconf_client_find(const char *id);

/*
 * The key a config file at path uses for its servers: "servers" for a
 * VS Code mcp.json (in .vscode/ or a Code/User folder) or a file whose
 * JSON already has "servers" and no "mcpServers"; else "mcpServers".
 */
const char *mcpconf_guess_key(const char *path, const char *text);

/* The JSON to add, as a client's documentation shows it: {key: {name:
 * entry}}. */
char *mcpconf_snippet(const char *key, const struct mcpconf_entry *e);

/*
 * Merge e into the config text (empty or only blanks: a new file).
 * *ret_text is the new text and *ret_changed whether it differs in
 * content. Refusals (-EBADMSG: not JSON, JSON with comments, not an
 * object where one belongs; -EEXIST: an entry of that name serves another
 * vault) set *ret_msg.
 */
int mcpconf_merge(const char *text, const char *key,
		  const struct mcpconf_entry *e, char **ret_text,
		  bool *ret_changed, char **ret_msg);

/*
 * Merge e into the file at path (a symlink: into its target), creating
 * it (and its folder) when missing. Before a change the old text is kept
 * as <path>.bak-<time> (*ret_backup; NULL when the file is new or left as
 * it was).
 */
int mcpconf_patch(const char *path, const char *key,
		  const struct mcpconf_entry *e, bool *ret_changed,
		  char **ret_backup, char **ret_msg);
