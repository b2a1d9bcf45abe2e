/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "obsidian.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>

#define REGISTRY_MAX (16u << 20)

char **obsidian_registries(void)
{
	const char *home = getenv("HOME");
	const char *x = getenv("XDG_CONFIG_HOME");
	if (!home || *home != '/')
		home = NULL;
	struct ptrvec v = {0};
	if (x && *x == '/')
		pv_push(&v, xasprintf("%s/obsidian/obsidian.json", x));
	else if (home)
		pv_push(&v,
			xasprintf("%s/.config/obsidian/obsidian.json", home));
	if (home) {
		pv_push(&v, xasprintf("%s/.var/app/md.obsidian.Obsidian/"
				      "config/obsidian/obsidian.json",
				      home));
		pv_push(&v, xasprintf("%s/snap/obsidian/current/.config/"
				      "obsidian/obsidian.json",
				      home));
	}
	pv_push(&v, NULL);
	return (char **)v.v;
}

static char *slurp(const char *path, int *ret_err)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		*ret_err = errno;
		return NULL;
	}
	struct sbuf b = {0};
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0 && b.len < REGISTRY_MAX)
		sb_add(&b, buf, n);
	fclose(f);
	sb_putc(&b, 0);
	return sb_steal(&b);
}

static int by_recency(const void *a, const void *b)
{
	const struct obsidian_vault *x = a, *y = b;
	if (x->open != y->open)
		return x->open ? -1 : 1;
	return x->ts > y->ts ? -1 : x->ts < y->ts;
}

int obsidian_vaults(struct obsidian_vault **ret, size_t *ret_n, char **ret_msg)
{
	char **regs = obsidian_registries();
	struct obsidian_vault *out = NULL;
	size_t n = 0;
	struct sbuf bad = {0};
	for (char **r = regs; *r; r++) {
		int e = 0;
		_cleanup_free_ char *text = slurp(*r, &e);
		if (!text)
			continue;
		cJSON *j = cJSON_Parse(text);
		const cJSON *vaults = cJSON_GetObjectItem(j, "vaults");
		if (!cJSON_IsObject(vaults)) {
			sb_printf(&bad, "%s%s", bad.len ? ", " : "", *r);
			cJSON_Delete(j);
			continue;
		}
		const cJSON *it;
		cJSON_ArrayForEach(it, vaults)
		{
			const char *p = cJSON_GetStringValue(
				cJSON_GetObjectItem(it, "path"));
			if (!p || *p != '/')
				continue;
			bool dup = false;
			for (size_t i = 0; i < n && !dup; i++)
				dup = !strcmp(out[i].path, p);
			if (dup)
				continue;
			out = xrealloc(out, (n + 1) * sizeof(*out));
			out[n].path = xstrdup(p);
			out[n].open =
				cJSON_IsTrue(cJSON_GetObjectItem(it, "open"));
			double ts = cJSON_GetNumberValue(
				cJSON_GetObjectItem(it, "ts"));
			out[n].ts = ts >= 0 && ts < 9e18 ? (int64_t)ts : 0;
			n++;
		}
		cJSON_Delete(j);
	}
	strv_free(regs);
	if (n > 1)
		qsort(out, n, sizeof(*out), by_recency);
	*ret = out;
	*ret_n = n;
	if (bad.len)
		*ret_msg = xasprintf("Obsidian's list of vaults could not be "
				     "read in %s",
				     bad.s);
	sb_free(&bad);
	return 0;
}

void obsidian_vaults_free(struct obsidian_vault *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].path);
	free(v);
}
