/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vaultctl: the command-line tool. `check` reads the vault directly
 * (no daemon needed).
 *
 * Exit codes: 0 ok, 1 tool error or problems found, 2 usage, 3 no daemon.
 */
#include "config.h"
#include "check.h"
#include "json.h"
#include "util.h"
#include "vault.h"

#include <getopt.h>
#include <stdio.h>

enum { EXIT_OK = 0, EXIT_TOOL = 1, EXIT_USAGE = 2, EXIT_NODAEMON = 3 };

struct opts {
	const char *vault;
	bool json;
};

static void usage(FILE *f)
{
	fputs("Usage: vaultctl [--vault DIR] [--json] COMMAND\n"
	      "\n"
	      "Commands:\n"
	      "  check      counts of notes, tags, links, broken links and\n"
	      "             policy violations (reads the vault directly)\n"
	      "\n"
	      "The vault is --vault DIR or $OBSIDIAN_VAULT_PATH.\n"
	      "Exit codes: 0 ok, 1 tool error or problems found, 2 usage,\n"
	      "3 no daemon.\n",
	      f);
}

static int cmd_check(const struct opts *o)
{
	struct vault *v = NULL;
	_cleanup_free_ char *msg = NULL;
	if (vault_open(o->vault, &v, &msg) < 0) {
		fprintf(stderr, "vaultctl: %s\n", msg);
		return EXIT_TOOL;
	}
	vault_index_all(v, NULL, NULL);
	cJSON *r = vault_check(v);
	_cleanup_free_ char *out = o->json ? json_dumps(r) : vault_check_text(r);
	fputs(out, stdout);
	if (o->json)
		fputc('\n', stdout);
	bool problems =
		cJSON_GetArraySize(cJSON_GetObjectItem(r, "policy_violations")) ||
		cJSON_GetArraySize(cJSON_GetObjectItem(r, "frontmatter_errors"));
	cJSON_Delete(r);
	vault_free(v);
	return problems ? EXIT_TOOL : EXIT_OK;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"vault", required_argument, NULL, 'v'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{},
	};
	struct opts o = {.vault = getenv("OBSIDIAN_VAULT_PATH")};
	int c;
	/* "+": options end at the command; its own options follow it. */
	while ((c = getopt_long(argc, argv, "+v:jh", longopts, NULL)) != -1) {
		switch (c) {
		case 'v':
			o.vault = optarg;
			break;
		case 'j':
			o.json = true;
			break;
		case 'h':
			usage(stdout);
			return EXIT_OK;
		case 'V':
			puts("vaultctl " VAULTD_VERSION);
			return EXIT_OK;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	const char *cmd = argv[optind];
	/* Options may also follow the command: parse its arguments again,
	 * with the command in the place of argv[0]. */
	int sargc = argc - optind;
	char **sargv = argv + optind;
	optind = 0;
	while ((c = getopt_long(sargc, sargv, "v:jh", longopts, NULL)) != -1) {
		if (c == 'v')
			o.vault = optarg;
		else if (c == 'j')
			o.json = true;
		else {
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind < sargc) {
		fprintf(stderr, "vaultctl: unexpected argument '%s'\n",
			sargv[optind]);
		return EXIT_USAGE;
	}
	if (strcmp(cmd, "check") == 0) {
		if (!o.vault || !*o.vault) {
			fputs("vaultctl: no vault: use --vault DIR or set "
			      "OBSIDIAN_VAULT_PATH\n",
			      stderr);
			return EXIT_USAGE;
		}
		return cmd_check(&o);
	}
	fprintf(stderr, "vaultctl: unknown command '%s'\n", cmd);
	usage(stderr);
	return EXIT_USAGE;
}
