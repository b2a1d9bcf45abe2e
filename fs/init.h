/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vaultctl init: connect a vault to the MCP clients in one step. It finds
 * the vault (--vault, else Obsidian's own list), prints, or with --write
 * patches, each client's configuration with the absolute path of the
 * installed vault-mcp, and with --mount sets up the systemd user service
 * that serves the guarded mount.
 */
#pragma once

/*
 * argv[0] is "init"; vault is the global --vault or $OBSIDIAN_VAULT_PATH
 * (NULL: ask Obsidian). Returns vaultctl's exit code: 0 done, 1 a client
 * or the service could not be set up, 2 usage.
 */
int init_main(int argc, char **argv, const char *vault);
