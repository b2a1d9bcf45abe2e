/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Attachments as links reach them (attach.h). */
#include "attach.h"
#include "base64.h"
#include "fileio.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <sys/stat.h>

static const struct {
	const char *ext;
	const char *mime;
	enum attach_kind kind;
} TYPES[] = {
	{"png", "image/png", ATTACH_IMAGE},
	{"jpg", "image/jpeg", ATTACH_IMAGE},
	{"jpeg", "image/jpeg", ATTACH_IMAGE},
	{"gif", "image/gif", ATTACH_IMAGE},
	{"webp", "image/webp", ATTACH_IMAGE},
	{"svg", "image/svg+xml", ATTACH_SVG},
	{"avif", "image/avif", ATTACH_OTHER},
	{"bmp", "image/bmp", ATTACH_OTHER},
	{"pdf", "application/pdf", ATTACH_OTHER},
	{"mp3", "audio/mpeg", ATTACH_OTHER},
	{"wav", "audio/wav", ATTACH_OTHER},
	{"m4a", "audio/mp4", ATTACH_OTHER},
	{"ogg", "audio/ogg", ATTACH_OTHER},
	{"flac", "audio/flac", ATTACH_OTHER},
	{"3gp", "audio/3gpp", ATTACH_OTHER},
	{"webm", "video/webm", ATTACH_OTHER},
	{"mp4", "video/mp4", ATTACH_OTHER},
	{"mov", "video/quicktime", ATTACH_OTHER},
	{"mkv", "video/x-matroska", ATTACH_OTHER},
	{"ogv", "video/ogg", ATTACH_OTHER},
	{"canvas", "application/json", ATTACH_OTHER},
	{"base", "application/yaml", ATTACH_OTHER},
	{"json", "application/json", ATTACH_OTHER},
	{"txt", "text/plain", ATTACH_OTHER},
	{"csv", "text/csv", ATTACH_OTHER},
	{"html", "text/html", ATTACH_OTHER},
	{"zip", "application/zip", ATTACH_OTHER},
};

/* The extension of the last path component, or NULL. */
static const char *extension(const char *path)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	const char *dot = strrchr(b, '.');
	return dot && dot != b && dot[1] ? dot + 1 : NULL;
}

static int type_of(const char *path)
{
	const char *ext = extension(path);
	for (size_t i = 0; ext && i < ARRAY_SIZE(TYPES); i++)
		if (!strcasecmp(ext, TYPES[i].ext))
			return (int)i;
	return -1;
}

const char *attach_mime(const char *path)
{
	int t = type_of(path);
	return t < 0 ? "application/octet-stream" : TYPES[t].mime;
}

enum attach_kind attach_kind(const char *path)
{
	int t = type_of(path);
	return t < 0 ? ATTACH_OTHER : TYPES[t].kind;
}

#define APP_JSON_MAX (1u << 20)

char *attach_folder(int rootfd)
{
	_cleanup_free_ char *text = NULL;
	size_t len;
	if (file_read(rootfd, ".obsidian/app.json", APP_JSON_MAX, &text, &len,
		      NULL) < 0)
		return xstrdup("");
	cJSON *j = cJSON_ParseWithLength(text, len);
	const char *f = cJSON_GetStringValue(
		cJSON_GetObjectItemCaseSensitive(j, "attachmentFolderPath"));
	size_t n = f ? strlen(f) : 0;
	/* "folder/" and "folder" are one folder; "./" stays "./". */
	while (n > 1 && f[n - 1] == '/' && !(n == 2 && f[0] == '.'))
		n--;
	char *r = !f || !strcmp(f, "/") ? xstrdup("") : xstrndup(f, n);
	cJSON_Delete(j);
	return r;
}

const struct note *attach_find(const struct index *ix, const char *folder,
			       const char *ref)
{
	const struct note *e = index_file(ix, ref);
	if (e || strchr(ref, '/'))
		return e;
	if (folder && *folder && !str_has_prefix(folder, "./")) {
		_cleanup_free_ char *p = xasprintf("%s/%s", folder, ref);
		if ((e = index_file(ix, p)))
			return e;
	}
	bool file;
	e = index_resolve_entry(ix, NULL, NULL, ref, LINK_WIKI, &file);
	return file ? e : NULL;
}

bool link_is_attachment(const struct link *l)
{
	if (l->resolved_file)
		return true;
	if (l->to || !*l->target)
		return false;
	const char *ext = extension(l->target);
	return ext && strcasecmp(ext, "md") != 0;
}

const struct note *link_attachment(const struct index *ix, const struct link *l)
{
	if (!l->resolved_file)
		return NULL;
	bool file;
	const struct note *e = index_resolve_entry(ix, NULL, l->src, l->target,
						   l->kind, &file);
	return file ? e : NULL;
}

struct hmap *attach_used(const struct index *ix)
{
	struct hmap *used = hmap_new();
	size_t it = 0;
	struct note *n;
	while (index_next(ix, &it, &n)) {
		for (size_t k = 0; k < note_nlinks(n); k++) {
			const struct note *e =
				link_attachment(ix, note_link(n, k));
			if (e)
				hmap_put(used, note_fold_path(e), (void *)e);
		}
	}
	return used;
}

int attach_read_base64(int rootfd, const char *path, size_t max, char **ret,
		       size_t *ret_size)
{
	*ret = NULL;
	*ret_size = 0;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	struct stat st = {0};
	int r = file_read(rootfd, path, max, &buf, &len, &st);
	if (r == -EFBIG)
		*ret_size = (size_t)st.st_size;
	if (r < 0)
		return r;
	*ret_size = len;
	*ret = base64_encode(buf ? buf : "", len, NULL);
	return 0;
}
