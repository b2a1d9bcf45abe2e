/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What vaultd, vaultctl and vault-mcp read from their command lines and
 * environments alike: whole numbers in a range (a bad one is a clear
 * error, never a silent 0 or a wrapped huge value), settings from the
 * environment, and the vault folder from OBSIDIAN_VAULT_PATH. The
 * programs print the messages; nothing here writes anywhere.
 */
#ifndef VAULTD_CLI_H
#define VAULTD_CLI_H

#include <stdbool.h>

/*
 * arg as a whole decimal number in [min, max]: 0, or -EINVAL with
 * *ret_msg ("--workers wants a whole number from 0 to 256, not 'x'",
 * what naming the option or variable).
 */
int cli_number(const char *what, const char *arg, unsigned long min,
	       unsigned long max, unsigned long *ret, char **ret_msg);

/* The variable's value when set and not empty, else NULL. */
const char *cli_env(const char *name);

/* A yes/no setting: 1/true/yes/on or 0/false/no/off (what a client's
 * boolean setting becomes); unset or empty: def. */
bool cli_env_flag(const char *name, bool def);

/* The vault folder the environment names (OBSIDIAN_VAULT_PATH), or
 * NULL. */
const char *cli_env_vault(void);

#endif
