/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What vaultd's main() reads from its command line and environment
 * (vaultd_opts.c), shared with the rest of the daemon's start-up in
 * vaultd.c.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct opts {
	const char *vault;
	const char *socket;
	const char *mount;
	bool create;
	bool foreground;
	bool allow_other;
	unsigned grace_ms;
	size_t max_line;
	int workers;
	const char *cache;
	bool no_history;
	unsigned idle_exit_s;
	unsigned max_clients, max_per_peer;
};

/* The command line (and $OBSIDIAN_VAULT_PATH) into o: -1 to go on, or
 * the exit code (0 after --help or --version, 2 for a bad one). */
int vaultd_parse_args(int argc, char **argv, struct opts *o);
