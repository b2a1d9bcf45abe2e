/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Read-only tools. Each runs under the vault's read lock. */
#include "attach.h"
#include "fileio.h"
#include "frontmatter.h"
#include "graph.h"
#include "json.h"
#include "history.h"
#include "shape.h"
#include "tools.h"
#include "u8.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>

static char *iso_ns(int64_t ns)
{
	char b[32];
	format_iso8601(ns / 1000000000LL, b);
	return xstrdup(b);
}

static void add_iso(cJSON *o, const char *key, int64_t secs)
{
	char b[32];
	format_iso8601(secs, b);
	cJSON_AddStringToObject(o, key, b);
}

static int read_text(struct tool_ctx *c, const struct note *n, char **ret,
		     size_t *ret_len)
{
	int r = vault_read_text(c->v, n, ret, ret_len);
	if (r < 0)
		return op_fail(c, r, "Cannot read note '%s': %s", note_path(n),
			       strerror(-r));
	return 0;
}

/* The end of the character that starts at s[i] (of n bytes). */
static size_t char_end(const char *s, size_t i, size_t n)
{
	while (++i < n && ((unsigned char)s[i] & 0xc0) == 0x80)
		;
	return i;
}

/*
 * read_note with offset or length: keep bytes [offset, offset + length)
 * of text, both ends moved back to the start of a character (and at
 * least one character, so that a reader always gets on). c->info says
 * where the part lies.
 */
static size_t read_part(struct tool_ctx *c, size_t len)
{
	size_t off = (size_t)arg_int(c, "offset", 0);
	size_t want = (size_t)arg_int(c, "length", (long)len);
	size_t b = utf8_cut(c->text, off < len ? off : len);
	size_t e = want < len - b ? utf8_cut(c->text, b + want) : len;
	if (e <= b && b < len)
		e = char_end(c->text, b, len);
	memmove(c->text, c->text + b, e - b);
	c->text[e - b] = 0;
	if (e < len)
		c->info = xasprintf("Bytes %zu to %zu of %zu; the next part "
				    "starts at offset=%zu.",
				    b, e, len, e);
	else
		c->info = xasprintf("Bytes %zu to %zu of %zu: the end of the "
				    "note.",
				    b, e, len);
	return e - b;
}

int op_read_note(struct tool_ctx *c)
{
	READ_LOCKED(c);
	struct note *n;
	size_t len;
	int r = op_find(c, arg_str(c, "name", ""), &n);
	if (r < 0)
		return r;
	if ((r = read_text(c, n, &c->text, &len)) < 0)
		return r;
	char ver[TEXT_VERSION_LEN + 1];
	text_version(c->text, len, ver);
	/* Up to a NUL byte: the text ends there for JSON. */
	len = strnlen(c->text, len);
	if (cJSON_GetObjectItemCaseSensitive(c->args, "offset") ||
	    cJSON_GetObjectItemCaseSensitive(c->args, "length"))
		len = read_part(c, len);
	/* Apart from the text: the version, for a conditional write. */
	char *info = xasprintf("Version %s.%s%s", ver, c->info ? " " : "",
			       c->info ? c->info : "");
	free(c->info);
	c->info = info;
	if (u8_invalid_at(c->text, len) < len)
		c->warning = xasprintf("Note '%s': " TOOL_NOT_UTF8_WARNING,
				       note_path(n));
	return 0;
}

/* Outgoing link names: resolved notes by display name, the rest as
 * written; each once, in order of appearance; no links to itself. */
static cJSON *outgoing_json(const struct index *ix, const struct note *n)
{
	cJSON *a = cJSON_CreateArray();
	struct ptrvec seen = {0};
	const struct link *l;
	for (size_t i = 0; (l = graph_next_link(n, &i));) {
		if (!graph_link_counts(l) || l->to == n)
			continue;
		char *name = l->to ? index_display_name(ix, l->to)
				   : xstrdup(l->target);
		if (!l->to && !l->resolved_file &&
		    str_has_suffix_ci(name, ".md"))
			name[strlen(name) - 3] = 0;
		bool dup = false;
		for (size_t j = 0; j < seen.n && !dup; j++)
			dup = strcmp(seen.v[j], name) == 0;
		if (dup) {
			free(name);
			continue;
		}
		pv_push(&seen, name);
		cJSON_AddItemToArray(a, cJSON_CreateString(name));
	}
	for (size_t j = 0; j < seen.n; j++)
		free(seen.v[j]);
	pv_free(&seen);
	return a;
}

/* The distinct notes linking to n, sorted by name. */
static struct ptrvec incoming_notes(const struct note *n)
{
	struct ptrvec srcs = graph_backlinks(n);
	pv_sort(&srcs, cmp_note_name);
	return srcs;
}

static cJSON *incoming_json(const struct index *ix, const struct note *n)
{
	cJSON *a = cJSON_CreateArray();
	struct ptrvec srcs = incoming_notes(n);
	for (size_t i = 0; i < srcs.n; i++) {
		_cleanup_free_ char *dn = index_display_name(ix, srcs.v[i]);
		cJSON_AddItemToArray(a, cJSON_CreateString(dn));
	}
	pv_free(&srcs);
	return a;
}

static cJSON *headings_json(const char *text, size_t len)
{
	struct md_doc d;
	md_scan(text, len, &d);
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < d.nheadings; i++) {
		cJSON *h = cJSON_CreateObject();
		cJSON_AddNumberToObject(h, "level", d.headings[i].level);
		cJSON_AddStringToObject(h, "text", d.headings[i].text);
		cJSON_AddItemToArray(a, h);
	}
	md_doc_clear(&d);
	return a;
}

/* What the note embeds (as written), and the attachments it links to or
 * embeds: {target, path} (path null when the file is missing). */
static bool str_seen(const struct ptrvec *seen, const char *s)
{
	for (size_t j = 0; j < seen->n; j++)
		if (!strcmp(seen->v[j], s))
			return true;
	return false;
}

static void add_embeds(cJSON *o, const struct index *ix, const struct note *n)
{
	cJSON *em = cJSON_AddArrayToObject(o, "embeds");
	cJSON *at = cJSON_AddArrayToObject(o, "attachments");
	struct ptrvec embeds = {0}, files = {0};
	for (size_t k = 0; k < note_nlinks(n); k++) {
		const struct link *l = note_link(n, k);
		if ((l->kind == LINK_EMBED || l->kind == LINK_MD_EMBED) &&
		    !str_seen(&embeds, l->target)) {
			pv_push(&embeds, l->target);
			cJSON_AddItemToArray(em, cJSON_CreateString(l->target));
		}
		if (!link_is_attachment(l) || str_seen(&files, l->target))
			continue;
		pv_push(&files, l->target);
		const struct note *e = link_attachment(ix, l);
		cJSON *a = cJSON_CreateObject();
		cJSON_AddStringToObject(a, "target", l->target);
		if (e)
			cJSON_AddStringToObject(a, "path", note_path(e));
		else
			cJSON_AddNullToObject(a, "path");
		cJSON_AddItemToArray(at, a);
	}
	pv_free(&embeds);
	pv_free(&files);
}

int op_get_note_metadata(struct tool_ctx *c)
{
	READ_LOCKED(c);
	const char *ref = arg_str(c, "name", "");
	struct note *n;
	int r = op_find(c, ref, &n);
	if (r < 0)
		return r;
	_cleanup_free_ char *text = NULL;
	size_t len;
	if ((r = read_text(c, n, &text, &len)) < 0)
		return r;
	struct index *ix = vault_index(c->v);
	struct frontmatter fm;
	fm_parse(text, len, &fm);
	cJSON *o = cJSON_CreateObject();
	char ver[TEXT_VERSION_LEN + 1];
	text_version(text, len, ver);
	cJSON_AddStringToObject(o, "name", ref);
	cJSON_AddItemToObject(o, "frontmatter", TAKE_PTR(fm.data));
	cJSON_AddItemToObject(o, "outgoing", outgoing_json(ix, n));
	cJSON_AddItemToObject(o, "incoming", incoming_json(ix, n));
	cJSON_AddStringToObject(o, "path", note_path(n));
	cJSON_AddItemToObject(o, "tags",
			      str_array(note_tags(n), note_ntags(n)));
	cJSON_AddItemToObject(o, "aliases",
			      str_array(note_aliases(n), note_naliases(n)));
	cJSON_AddItemToObject(o, "headings", headings_json(text, len));
	cJSON_AddNumberToObject(o, "size", (double)note_size(n));
	add_iso(o, "created", note_btime(n));
	_cleanup_free_ char *mod = iso_ns(note_mtime_ns(n));
	cJSON_AddStringToObject(o, "modified", mod);
	_cleanup_free_ char *vn = url_encode_path(vault_name(c->v), false);
	_cleanup_free_ char *stem =
		xstrndup(note_path(n), strlen(note_path(n)) - 3);
	_cleanup_free_ char *fp = url_encode_path(stem, false);
	_cleanup_free_ char *uri =
		xasprintf("obsidian://open?vault=%s&file=%s", vn, fp);
	cJSON_AddStringToObject(o, "uri", uri);
	cJSON_AddStringToObject(o, "version", ver);
	add_embeds(o, ix, n);
	if (!fm.valid) {
		_cleanup_free_ char *e = xasprintf(
			"frontmatter cannot be read (line %d: %s); it is "
			"kept as it is",
			fm.err_line, fm.err_msg);
		cJSON_AddStringToObject(o, "frontmatter_error", e);
	}
	fm_clear(&fm);
	c->json = o;
	return 0;
}

/* Folder argument: "" for the root, else a checked folder path. */
static int folder_arg(struct tool_ctx *c, const char *key, char **ret)
{
	const char *f = arg_str(c, key, "");
	size_t n = strlen(f);
	while (n && f[n - 1] == '/')
		n--;
	if (!n) {
		*ret = xstrdup("");
		return 0;
	}
	_cleanup_free_ char *t = xstrndup(f, n);
	const char *why;
	if (path_check(t, ret, &why) < 0)
		return op_fail(c, -EINVAL, "Invalid folder %s: %s", QUOTE(f),
			       why);
	return 0;
}

/* fold_path starts with the folded folder followed by '/'. */
static bool in_folder(const struct note *n, const char *ffold, size_t fl)
{
	return !fl || (strncmp(note_fold_path(n), ffold, fl) == 0 &&
		       note_fold_path(n)[fl] == '/');
}

int op_list_notes(struct tool_ctx *c)
{
	READ_LOCKED(c);
	long limit = arg_int(c, "limit", 100), offset = arg_int(c, "offset", 0);
	if (limit < 0 || offset < 0)
		return op_fail(c, -EINVAL,
			       "limit and offset must not be negative");
	_cleanup_free_ char *folder = NULL;
	int r = folder_arg(c, "folder", &folder);
	if (r < 0)
		return r;
	_cleanup_free_ char *ff = fold_key(folder);
	size_t fl = strlen(ff);
	struct index *ix = vault_index(c->v);
	size_t n;
	struct note *const *all = index_sorted(ix, &n);
	cJSON *names = cJSON_CreateArray();
	long total = 0;
	for (size_t i = 0; i < n; i++) {
		if (!in_folder(all[i], ff, fl))
			continue;
		if (total >= offset && total < offset + limit) {
			_cleanup_free_ char *dn =
				index_display_name(ix, all[i]);
			cJSON_AddItemToArray(names, cJSON_CreateString(dn));
		}
		total++;
	}
	/* Display names sort like Python's sorted() on the page. */
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "names", names);
	cJSON_AddNumberToObject(o, "total", (double)total);
	cJSON_AddNumberToObject(o, "limit", (double)limit);
	cJSON_AddNumberToObject(o, "offset", (double)offset);
	if (fl)
		cJSON_AddStringToObject(o, "folder", folder);
	c->json = o;
	return 0;
}

static cJSON *note_brief(const struct index *ix, const struct note *n)
{
	cJSON *o = cJSON_CreateObject();
	_cleanup_free_ char *dn = index_display_name(ix, n);
	_cleanup_free_ char *mod = iso_ns(note_mtime_ns(n));
	cJSON_AddStringToObject(o, "name", dn);
	cJSON_AddStringToObject(o, "path", note_path(n));
	cJSON_AddStringToObject(o, "modified", mod);
	return o;
}

static int cmp_folder(const void *a, const void *b)
{
	const cJSON *x = *(cJSON *const *)a, *y = *(cJSON *const *)b;
	return strcasecmp(cJSON_GetObjectItem(x, "path")->valuestring,
			  cJSON_GetObjectItem(y, "path")->valuestring);
}

/* browse's entry for a subfolder ({path, notes}), made with no notes
 * when it is not listed yet (folders: cJSON objects). */
static cJSON *folder_entry(struct ptrvec *folders, const char *sub)
{
	for (size_t k = 0; k < folders->n; k++) {
		cJSON *e = folders->v[k];
		if (!strcasecmp(cJSON_GetObjectItem(e, "path")->valuestring,
				sub))
			return e;
	}
	cJSON *e = cJSON_CreateObject();
	cJSON_AddStringToObject(e, "path", sub);
	cJSON_AddNumberToObject(e, "notes", 0);
	pv_push(folders, e);
	return e;
}

/* The rest of a note's path below the folder (folded ff, fl bytes), in
 * the disk's spelling. */
static const char *path_below(const struct note *nt, const char *ff, size_t fl)
{
	if (!fl)
		return note_path(nt);
	/* Same number of components as the folder. */
	size_t comps = 1;
	for (const char *p = ff; *p; p++)
		comps += *p == '/';
	const char *p = note_path(nt);
	for (size_t k = 0; k < comps; k++)
		p = strchr(p, '/') + 1;
	return p;
}

/* The subfolders on disk (folders without notes exist only there), not
 * hidden or ignored: whether the folder itself exists. */
static bool disk_folders(struct tool_ctx *c, const char *folder,
			 struct ptrvec *folders)
{
	_cleanup_policy_ struct policy *pol = vault_policy_get(c->v);
	int dfd = *folder ? beneath_open(vault_rootfd(c->v), folder,
					 O_RDONLY | O_DIRECTORY, 0)
			  : openat(vault_rootfd(c->v), ".",
				   O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return false;
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return true;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		_cleanup_free_ char *sub =
			*folder ? xasprintf("%s/%s", folder, de->d_name)
				: xstrdup(de->d_name);
		if (!policy_ignored(pol, sub, true))
			folder_entry(folders, sub);
	}
	closedir(d);
	return true;
}

int op_browse(struct tool_ctx *c)
{
	READ_LOCKED(c);
	_cleanup_free_ char *folder = NULL;
	int r = folder_arg(c, "path", &folder);
	if (r < 0)
		return r;
	if (str_has_suffix_ci(folder, ".md"))
		folder[strlen(folder) - 3] = 0;
	_cleanup_free_ char *ff = fold_key(folder);
	size_t fl = strlen(ff);
	struct index *ix = vault_index(c->v);
	size_t n;
	struct note *const *all = index_sorted(ix, &n);
	cJSON *notes = cJSON_CreateArray();
	struct ptrvec folders = {0}; /* cJSON objects {path, notes} */
	_cleanup_free_ char *atpath = xasprintf("%s.md", ff);
	cJSON *note_here = NULL;
	for (size_t i = 0; i < n; i++) {
		const struct note *nt = all[i];
		if (fl && strcmp(note_fold_path(nt), atpath) == 0)
			note_here = note_brief(ix, nt);
		if (!in_folder(nt, ff, fl))
			continue;
		const char *slash = strchr(path_below(nt, ff, fl), '/');
		if (!slash) {
			cJSON_AddItemToArray(notes, note_brief(ix, nt));
			continue;
		}
		_cleanup_free_ char *sub = xstrndup(
			note_path(nt), (size_t)(slash - note_path(nt)));
		cJSON *cnt = cJSON_GetObjectItem(folder_entry(&folders, sub),
						 "notes");
		cJSON_SetNumberValue(cnt, cnt->valuedouble + 1);
	}
	bool exists = disk_folders(c, folder, &folders);
	if (!exists && !note_here && !folders.n && !cJSON_GetArraySize(notes)) {
		pv_free(&folders);
		cJSON_Delete(notes);
		return op_fail(c, -ENOENT, "Folder %s not found",
			       QUOTE(folder));
	}
	pv_sort(&folders, cmp_folder);
	cJSON *fa = cJSON_CreateArray();
	for (size_t k = 0; k < folders.n; k++)
		cJSON_AddItemToArray(fa, folders.v[k]);
	pv_free(&folders);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "path", folder);
	if (note_here)
		cJSON_AddItemToObject(o, "note", note_here);
	cJSON_AddItemToObject(o, "folders", fa);
	cJSON_AddItemToObject(o, "notes", notes);
	c->json = o;
	return 0;
}

/* ---- links ----------------------------------------------------------------
 */

int op_get_links(struct tool_ctx *c)
{
	READ_LOCKED(c);
	const char *ref = arg_str(c, "name", "");
	const char *dir = arg_str(c, "direction", "both");
	bool in = strcmp(dir, "in") == 0, out = strcmp(dir, "out") == 0,
	     both = strcmp(dir, "both") == 0;
	if (!in && !out && !both)
		return op_fail(c, -EINVAL,
			       "Invalid direction: %s. Valid: in, out, both",
			       dir);
	struct note *n;
	int r = op_find(c, ref, &n);
	if (r < 0)
		return r;
	struct index *ix = vault_index(c->v);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", ref);
	if (out || both)
		cJSON_AddItemToObject(o, "outgoing", outgoing_json(ix, n));
	if (in || both)
		cJSON_AddItemToObject(o, "incoming", incoming_json(ix, n));
	c->json = o;
	return 0;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* Group links by source note: [{name, path, count, lines}]. */
static cJSON *group_backlinks(const struct index *ix, struct ptrvec *links)
{
	cJSON *arr = cJSON_CreateArray();
	struct ptrvec srcs = {0};
	for (size_t i = 0; i < links->n; i++) {
		const struct link *l = links->v[i];
		bool dup = false;
		for (size_t j = 0; j < srcs.n && !dup; j++)
			dup = srcs.v[j] == l->src;
		if (!dup)
			pv_push(&srcs, l->src);
	}
	pv_sort(&srcs, cmp_note_name);
	for (size_t j = 0; j < srcs.n; j++) {
		const struct note *s = srcs.v[j];
		int *lines = xcalloc(links->n + 1, sizeof(int));
		size_t nl = 0;
		for (size_t i = 0; i < links->n; i++) {
			const struct link *l = links->v[i];
			if (l->src == s)
				lines[nl++] = l->line;
		}
		qsort(lines, nl, sizeof(int), cmp_int);
		cJSON *o = cJSON_CreateObject();
		size_t count = nl, u = 0;
		/* Two links on one line: counted twice, listed once. */
		for (size_t i = 0; i < nl; i++)
			if (!u || lines[u - 1] != lines[i])
				lines[u++] = lines[i];
		nl = u;
		_cleanup_free_ char *dn = index_display_name(ix, s);
		cJSON_AddStringToObject(o, "name", dn);
		cJSON_AddStringToObject(o, "path", note_path(s));
		cJSON_AddNumberToObject(o, "count", (double)count);
		cJSON *la = cJSON_AddArrayToObject(o, "lines");
		for (size_t i = 0; i < nl; i++)
			cJSON_AddItemToArray(la, cJSON_CreateNumber(lines[i]));
		free(lines);
		cJSON_AddItemToArray(arr, o);
	}
	pv_free(&srcs);
	return arr;
}

int op_get_backlinks(struct tool_ctx *c)
{
	READ_LOCKED(c);
	const char *ref = arg_str(c, "name", "");
	struct index *ix = vault_index(c->v);
	struct note *n = NULL;
	int r = op_find(c, ref, &n);
	if (r < 0 && r != -ENOENT)
		return r;
	struct ptrvec links = {0};
	cJSON *o = cJSON_CreateObject();
	if (n) {
		size_t nin;
		struct link *const *in = graph_incoming(n, &nin);
		for (size_t i = 0; i < nin; i++)
			pv_push(&links, in[i]);
		cJSON_AddStringToObject(o, "target", note_path(n));
		cJSON_AddBoolToObject(o, "exists", true);
	} else {
		/* A missing note: the broken links that name it. */
		free(TAKE_PTR(c->msg));
		_cleanup_free_ char *fr = fold_key(ref);
		_cleanup_free_ char *key = path_note_name(fr);
		const struct ptrvec *pv = index_links_by_key(ix, key);
		bool has_dir = strchr(fr, '/') != NULL;
		for (size_t i = 0; pv && i < pv->n; i++) {
			const struct link *l = pv->v[i];
			if (!link_is_broken(l))
				continue;
			if (has_dir) {
				_cleanup_free_ char *ft = fold_key(l->target);
				if (str_has_suffix(ft, ".md"))
					ft[strlen(ft) - 3] = 0;
				_cleanup_free_ char *fq = xstrdup(fr);
				if (str_has_suffix(fq, ".md"))
					fq[strlen(fq) - 3] = 0;
				if (!str_has_suffix(fq, ft) &&
				    !str_has_suffix(ft, fq))
					continue;
			}
			pv_push(&links, (void *)l);
		}
		cJSON_AddStringToObject(o, "target", ref);
		cJSON_AddBoolToObject(o, "exists", false);
	}
	cJSON *bl = group_backlinks(ix, &links);
	cJSON_AddItemToObject(o, "backlinks", bl);
	cJSON_AddNumberToObject(o, "notes", cJSON_GetArraySize(bl));
	cJSON_AddNumberToObject(o, "links", (double)links.n);
	pv_free(&links);
	c->json = o;
	return 0;
}

int op_find_broken_links(struct tool_ctx *c)
{
	READ_LOCKED(c);
	struct index *ix = vault_index(c->v);
	struct page pg = page_args(c);
	size_t n;
	struct note *const *all = index_sorted(ix, &n);
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		const struct note *nt = all[i];
		_cleanup_free_ char *src = NULL;
		struct ptrvec seen = {0};
		const struct link *l;
		/* Each broken target once per note (check lists every link). */
		for (size_t k = 0; (l = graph_next_broken(nt, &k));) {
			bool dup = false;
			for (size_t j = 0; j < seen.n && !dup; j++)
				dup = strcmp(seen.v[j], l->target) == 0;
			if (dup)
				continue;
			pv_push(&seen, l->target);
			if (!page_take(&pg))
				continue;
			if (!src)
				src = index_display_name(ix, nt);
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "source", src);
			cJSON_AddStringToObject(o, "target", l->target);
			cJSON_AddItemToArray(a, o);
		}
		pv_free(&seen);
	}
	/* The whole list is the list itself, as ever; a part says where
	 * it stands. */
	if (pg.offset == 0 && pg.total <= pg.limit) {
		c->json = a;
		return 0;
	}
	c->json = cJSON_CreateObject();
	cJSON_AddItemToObject(c->json, "result", a);
	page_add(c->json, &pg);
	return 0;
}

int op_get_orphans(struct tool_ctx *c)
{
	READ_LOCKED(c);
	struct index *ix = vault_index(c->v);
	struct page pg = page_args(c);
	size_t n;
	struct note *const *all = index_sorted(ix, &n);
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		const struct note *nt = all[i];
		if (!graph_is_orphan(nt) || !page_take(&pg))
			continue;
		cJSON *o = cJSON_CreateObject();
		_cleanup_free_ char *dn = index_display_name(ix, nt);
		cJSON_AddStringToObject(o, "name", dn);
		cJSON_AddStringToObject(o, "path", note_path(nt));
		cJSON_AddItemToArray(a, o);
	}
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "count", cJSON_GetArraySize(a));
	cJSON_AddItemToObject(o, "orphans", a);
	page_add(o, &pg);
	c->json = o;
	return 0;
}

static int cmp_tag_count(const void *a, const void *b)
{
	const struct tag_entry *x = *(struct tag_entry *const *)a;
	const struct tag_entry *y = *(struct tag_entry *const *)b;
	if (x->notes.n != y->notes.n)
		return x->notes.n < y->notes.n ? 1 : -1;
	return strcmp(x->fold, y->fold);
}

int op_list_tags(struct tool_ctx *c)
{
	READ_LOCKED(c);
	struct page pg = page_args(c);
	size_t n;
	_cleanup_free_ struct tag_entry **tags =
		index_tags(vault_index(c->v), &n);
	qsort(tags, n, sizeof(*tags), cmp_tag_count);
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		if (!page_take(&pg))
			continue;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "tag", tags[i]->display);
		cJSON_AddNumberToObject(o, "count", (double)tags[i]->notes.n);
		cJSON_AddItemToArray(a, o);
	}
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "tags", a);
	page_add(o, &pg);
	c->json = o;
	return 0;
}

int op_get_headings(struct tool_ctx *c)
{
	READ_LOCKED(c);
	struct note *n;
	int r = op_find(c, arg_str(c, "name", ""), &n);
	if (r < 0)
		return r;
	_cleanup_free_ char *text = NULL;
	size_t len;
	if ((r = read_text(c, n, &text, &len)) < 0)
		return r;
	c->json = headings_json(text, len);
	return 0;
}

int op_read_section(struct tool_ctx *c)
{
	READ_LOCKED(c);
	const char *ref = arg_str(c, "name", "");
	const char *sec = arg_str(c, "section", "");
	struct note *n;
	int r = op_find(c, ref, &n);
	if (r < 0)
		return r;
	_cleanup_free_ char *text = NULL;
	size_t len, s, b, e;
	if ((r = read_text(c, n, &text, &len)) < 0)
		return r;
	if (md_find_section(text, len, sec, &s, &b, &e) < 0)
		return op_fail(c, -ENOENT, "Section %s not found in note %s",
			       QUOTE(sec), QUOTE(ref));
	/* Without the heading line and without blank lines around it. */
	while (e > b && isspace((unsigned char)text[e - 1]))
		e--;
	for (size_t k = b; k < e && isspace((unsigned char)text[k]); k++)
		if (text[k] == '\n')
			b = k + 1;
	c->text = xstrndup(text + b, e - b);
	char ver[TEXT_VERSION_LEN + 1];
	text_version(text, len, ver);
	c->info = xasprintf("Version %s (of the whole note).", ver);
	return 0;
}

static int cmp_recent(const void *a, const void *b)
{
	const struct note *x = *(struct note *const *)a;
	const struct note *y = *(struct note *const *)b;
	if (note_mtime_ns(x) != note_mtime_ns(y))
		return note_mtime_ns(x) < note_mtime_ns(y) ? 1 : -1;
	return strcmp(note_path(x), note_path(y));
}

int op_recent_notes(struct tool_ctx *c)
{
	READ_LOCKED(c);
	long limit = arg_int(c, "limit", 10);
	const char *since = arg_str(c, "since", NULL);
	if (limit < 1 || limit > 1000)
		return op_fail(c, -EINVAL, "limit must be between 1 and 1000");
	int64_t since_s = 0;
	if (since && *since && parse_iso8601(since, &since_s) < 0)
		return op_fail(c, -EINVAL,
			       "Invalid 'since' timestamp %s: use ISO 8601, "
			       "e.g. 2024-01-15T00:00:00Z",
			       QUOTE(since));
	struct index *ix = vault_index(c->v);
	size_t n;
	struct note *const *all = index_sorted(ix, &n);
	struct note **v = xmalloc((n + 1) * sizeof(*v));
	size_t m = 0;
	for (size_t i = 0; i < n; i++)
		if (!since_s ||
		    note_mtime_ns(all[i]) / 1000000000LL > since_s ||
		    (note_mtime_ns(all[i]) / 1000000000LL == since_s &&
		     note_mtime_ns(all[i]) % 1000000000LL))
			v[m++] = all[i];
	qsort(v, m, sizeof(*v), cmp_recent);
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < m && i < (size_t)limit; i++) {
		cJSON *o = note_brief(ix, v[i]);
		cJSON_AddItemToObject(
			o, "tags",
			str_array(note_tags(v[i]), note_ntags(v[i])));
		cJSON_AddItemToArray(a, o);
	}
	free(v);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "notes", a);
	cJSON_AddNumberToObject(o, "total", (double)m);
	if (since_s) {
		char b[32];
		format_iso8601(since_s, b);
		cJSON_AddStringToObject(o, "since", b);
	}
	c->json = o;
	return 0;
}

int op_get_policy(struct tool_ctx *c)
{
	READ_LOCKED(c);
	_cleanup_policy_ struct policy *pol = vault_policy_get(c->v);
	c->json = policy_to_json(pol, vault_index(c->v));
	return 0;
}

int op_list_violations(struct tool_ctx *c)
{
	long limit = arg_int(c, "limit", 20);
	if (limit < 1 || limit > 1000)
		return op_fail(c, -EINVAL, "limit must be between 1 and 1000");
	size_t n;
	struct vault_violation *a = vault_violations(c->v, (int)limit, &n);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "count", (double)n);
	cJSON_AddItemToObject(o, "violations", violations_json(a, n));
	vault_violations_free(a, n);
	c->json = o;
	return 0;
}

int op_get_help(struct tool_ctx *c)
{
	c->json = tools_help_json();
	return 0;
}

/* ---- auto-context ----------------------------------------------------------
 */

#define MISSING_DESCRIPTION                                                  \
	"\xe2\x9a\xa0\xef\xb8\x8f No description. Claude, please add a "     \
	"'description' field to this note's frontmatter explaining when to " \
	"read it."

static char *one_line(const char *s)
{
	struct sbuf b = {0};
	bool sp = false;
	for (const char *p = s; *p; p++) {
		if (isspace((unsigned char)*p)) {
			sp = b.len > 0;
			continue;
		}
		if (sp)
			sb_putc(&b, ' ');
		sp = false;
		sb_putc(&b, *p);
	}
	return sb_steal(&b);
}

char *context_block(struct vault *v)
{
	vault_read_lock(v);
	struct index *ix = vault_index(v);
	struct sbuf b = {0};
	sb_puts(&b, "## Your personal notes\n\n");
	const struct tag_entry *te = index_tag(ix, "claude");
	struct ptrvec notes = {0};
	for (size_t i = 0; te && i < te->notes.n; i++)
		pv_push(&notes, te->notes.v[i]);
	pv_sort(&notes, cmp_note_name);
	if (!notes.n) {
		sb_puts(&b, "No personal notes found. Create notes with tag "
			    "'claude' to use auto-context.\n");
	}
	for (size_t i = 0; i < notes.n; i++) {
		const struct note *n = notes.v[i];
		_cleanup_free_ char *text = NULL;
		_cleanup_free_ char *desc = NULL;
		size_t len;
		if (vault_read_text(v, n, &text, &len) == 0) {
			struct frontmatter fm;
			fm_parse(text, len, &fm);
			const cJSON *d = cJSON_GetObjectItemCaseSensitive(
				fm.data, "description");
			if (cJSON_IsString(d) && d->valuestring[0])
				desc = one_line(d->valuestring);
			else if (d && !cJSON_IsNull(d) && !cJSON_IsString(d))
				desc = json_dumps(d);
			fm_clear(&fm);
		}
		_cleanup_free_ char *dn = index_display_name(ix, n);
		sb_printf(&b, "- \"%s\" \xe2\x80\x94 %s\n", dn,
			  desc && *desc ? desc : MISSING_DESCRIPTION);
	}
	size_t nclaude = notes.n;
	pv_free(&notes);
	if (nclaude)
		sb_puts(&b, "\nUse read_note() to access full content when "
			    "needed.\n");
	sb_putc(&b, '\n');
	sb_puts(&b, "## Allowed tags\n\n");
	_cleanup_policy_ struct policy *pol = vault_policy_get(v);
	_cleanup_strv_free_ char **allowed = policy_allowed_tags(pol, ix);
	if (!allowed[0]) {
		sb_puts(&b, "No tags in the vault yet.\n");
	} else {
		for (char **t = allowed; *t; t++)
			sb_printf(&b, "%s%s", t == allowed ? "" : ", ", *t);
		sb_putc(&b, '\n');
	}
	sb_puts(&b, "\nNEVER create new tags without explicit user permission. "
		    "A tag outside this list is refused; ask the user first.");
	vault_read_unlock(v);
	return sb_steal(&b);
}
