/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vaultd's options: the usage text, the numbers with their bounds, and
 * the command line parsed into struct opts (the vault may also come from
 * the environment). Every bad value is said on stderr with exit code 2.
 */
#include "config.h"
#include "vaultd.h"
#include "cli.h"
#include "util.h"

#include <getopt.h>
#include <stdio.h>

static void usage(FILE *f)
{
	fputs("Usage: vaultd --vault DIR [--create] [--mount DIR | --no-mount] "
	      "[-f]\n"
	      "\n"
	      "  --vault DIR      the Obsidian vault to own (a folder with\n"
	      "                   .obsidian/ in it; also $OBSIDIAN_VAULT_PATH)\n"
	      "  --create         make DIR an Obsidian vault if it is not one\n"
	      "                   (creates DIR and DIR/.obsidian/)\n"
	      "  --mount DIR      serve the guarded view of the vault at DIR\n"
	      "                   (an empty folder outside the vault)\n"
	      "  --no-mount       no FUSE view (control socket only)\n"
	      "  --socket PATH    control socket (default: "
	      "$XDG_RUNTIME_DIR/vaultd/<vault-id>.sock)\n"
	      "  -f, --foreground stay in the foreground, log to stderr\n"
	      "  --max-message N  longest accepted control message in bytes "
	      "(default 32 MiB)\n"
	      "  --grace-ms N     a note removed through the mount and not back\n"
	      "                   within N ms is deleted (default 2000)\n"
	      "  --allow-other    let other users use the mount (needs\n"
	      "                   user_allow_other in /etc/fuse.conf)\n"
	      "  --cache DIR      where the search index lives (default:\n"
	      "                   $XDG_CACHE_HOME/vaultd/<vault-id>)\n"
	      "  --no-history     do not record note history (in\n"
	      "                   <vault>/.vaultd/history.git)\n"
	      "  --idle-exit S    stop after S seconds with no control client\n"
	      "                   and no call (default 0: never; vault-mcp\n"
	      "                   starts vaultd with 600); not with a mount\n"
	      "  --workers N      threads running calls (default 8; 2 of\n"
	      "                   them are kept for quick calls)\n"
	      "  --max-clients N  control connections in all (default 512,\n"
	      "                   fewer if the descriptor limit is low)\n"
	      "  --max-clients-per-process N\n"
	      "                   control connections of one process\n"
	      "                   (default 128)\n"
	      "  -h, --help       this help\n"
	      "  --version        the version\n"
	      "\n"
	      "Exit codes: 0 stopped cleanly; 1 could not start or failed\n"
	      "while running; 2 the command line must change (an unknown\n"
	      "option, a folder that is not a vault, a mount point that\n"
	      "cannot be used). Every refusal says what to do instead.\n",
	      f);
}

/* A number option's value, within bounds; a bad one is said and false. */
static bool number_opt(const char *name, unsigned long min, unsigned long max,
		       unsigned long *ret)
{
	_cleanup_free_ char *msg = NULL;
	if (cli_number(name, optarg, min, max, ret, &msg) == 0)
		return true;
	fprintf(stderr, "vaultd: %s\n", msg);
	return false;
}

/* An option that takes a number: its value stored in o. */
static bool number_arg(int c, struct opts *o)
{
	unsigned long x;
	switch (c) {
	case 'M':
		if (!number_opt("--max-message", 4096, 1ul << 30, &x))
			return false;
		o->max_line = x;
		return true;
	case 'w':
		if (!number_opt("--workers", 0, 256, &x))
			return false;
		o->workers = (int)x;
		return true;
	case 'g':
		if (!number_opt("--grace-ms", 0, 3600000, &x))
			return false;
		o->grace_ms = (unsigned)x;
		return true;
	case 'C':
		if (!number_opt("--max-clients", 0, 1u << 20, &x))
			return false;
		o->max_clients = (unsigned)x;
		return true;
	case 'P':
		if (!number_opt("--max-clients-per-process", 0, 1u << 20, &x))
			return false;
		o->max_per_peer = (unsigned)x;
		return true;
	default: /* 'I' */
		if (!number_opt("--idle-exit", 0, 86400 * 365, &x))
			return false;
		o->idle_exit_s = (unsigned)x;
		return true;
	}
}

int vaultd_parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{"vault", required_argument, NULL, 'v'},
		{"socket", required_argument, NULL, 's'},
		{"mount", required_argument, NULL, 'm'},
		{"no-mount", no_argument, NULL, 'n'},
		{"create", no_argument, NULL, 'k'},
		{"foreground", no_argument, NULL, 'f'},
		{"max-message", required_argument, NULL, 'M'},
		{"workers", required_argument, NULL, 'w'},
		{"grace-ms", required_argument, NULL, 'g'},
		{"idle-exit", required_argument, NULL, 'I'},
		{"max-clients", required_argument, NULL, 'C'},
		{"max-clients-per-process", required_argument, NULL, 'P'},
		{"allow-other", no_argument, NULL, 'a'},
		{"cache", required_argument, NULL, 'c'},
		{"no-history", no_argument, NULL, 'H'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{},
	};
	int c;
	while ((c = getopt_long(argc, argv, "v:s:m:nfh", longopts, NULL)) !=
	       -1) {
		switch (c) {
		case 'v':
			o->vault = optarg;
			break;
		case 's':
			o->socket = optarg;
			break;
		case 'm':
			o->mount = optarg;
			break;
		case 'n':
			o->mount = NULL;
			break;
		case 'k':
			o->create = true;
			break;
		case 'f':
			o->foreground = true;
			break;
		case 'M':
		case 'w':
		case 'g':
		case 'C':
		case 'P':
		case 'I':
			if (!number_arg(c, o))
				return 2;
			break;
		case 'a':
			o->allow_other = true;
			break;
		case 'c':
			o->cache = optarg;
			break;
		case 'H':
			o->no_history = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			puts("vaultd " VAULTD_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!o->vault && !(o->vault = cli_env_vault())) {
		fputs("vaultd: no vault: use --vault DIR (the folder you open "
		      "in Obsidian)\n",
		      stderr);
		return 2;
	}
	if (optind < argc) {
		fprintf(stderr,
			"vaultd: unexpected argument '%s' (see vaultd "
			"--help)\n",
			argv[optind]);
		return 2;
	}
	return -1;
}
