/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The vaults Obsidian knows: its own list, obsidian.json, in whichever of
 * its install kinds are there (a package or AppImage, the Flatpak, the
 * Snap). Each entry names a folder; the one open last comes first.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct obsidian_vault {
	char *path;
	bool open;  /* open in Obsidian when it last saved its list */
	int64_t ts; /* when it was last opened (ms) */
};

/* The registry files looked at, in order (for messages); NULL-ended. */
char **obsidian_registries(void);

/*
 * Every vault in every registry found, each folder once: open ones first,
 * then the most recently opened. 0 with *ret_n == 0 when none is found;
 * a registry that does not parse is skipped and named in *ret_msg.
 */
int obsidian_vaults(struct obsidian_vault **ret, size_t *ret_n, char **ret_msg);
void obsidian_vaults_free(struct obsidian_vault *v, size_t n);
