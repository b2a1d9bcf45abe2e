/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Attachment tools: read_attachment (an image as MCP image content, an
 * SVG as text, any other file as a link with its type and size) and
 * list_attachments. The lookup holds the read lock; the file is read and
 * an image decoded after it is let go, so a slow image holds no writer.
 */
#include "attach.h"
#include "fileio.h"
#include "image.h"
#include "tools.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* SVG text sent at most (MCP front-ends cut results further). */
#define SVG_MAX (8u << 20)

/* A part of the path that starts with '.': Obsidian's settings, the
 * trash, git, vaultd's own folder, and dot files are not attachments. */
static const char *hidden_part(const char *path)
{
	for (const char *p = path; p; p = strchr(p, '/')) {
		if (*p == '/')
			p++;
		if (*p == '.')
			return p;
	}
	return NULL;
}

/* Why ref (checked, not an attachment) cannot be read, as the error. */
static int not_found(struct tool_ctx *c, const char *ref)
{
	struct index *ix = vault_index(c->v);
	struct stat st;
	if (index_by_path(ix, ref))
		return op_fail(c, -EINVAL,
			       "%s is a note, not an attachment: read_note "
			       "reads it",
			       QUOTE(ref));
	int r = file_stat(vault_rootfd(c->v), ref, &st);
	if (r == 0 && S_ISLNK(st.st_mode))
		return op_fail(c, -EACCES,
			       "Attachment %s is a symlink: vaultd does not "
			       "follow symlinks (nothing outside the vault "
			       "is read)",
			       QUOTE(ref));
	if (r == 0 && S_ISDIR(st.st_mode))
		return op_fail(c, -EINVAL,
			       "%s is a folder: list_attachments lists its "
			       "files",
			       QUOTE(ref));
	return op_fail(c, -ENOENT,
		       "Attachment not found: %s (list_attachments lists "
		       "them)",
		       QUOTE(ref));
}

/* The vault path of the attachment ref names, under the read lock. */
static int find_attachment(struct tool_ctx *c, const char *arg, char **ret_path)
{
	_cleanup_free_ char *ref = NULL;
	const char *why;
	if (strnlen(arg, PATH_MAX_BYTES + 1) > PATH_MAX_BYTES)
		return op_fail(c, -ENAMETOOLONG,
			       "Invalid path %s: too long (the limit is %d "
			       "bytes)",
			       QUOTE(arg), PATH_MAX_BYTES);
	if (path_check(arg, &ref, &why) < 0)
		return op_fail(c, -EINVAL, "Invalid path %s: %s", QUOTE(arg),
			       why);
	const char *h = hidden_part(ref);
	if (h)
		return op_fail(c, -EACCES,
			       "%s is inside %.*s: files under a name that "
			       "starts with '.' (.obsidian, .trash, .git, "
			       ".vaultd) are not attachments",
			       QUOTE(ref), (int)strcspn(h, "/"), h);
	_cleanup_free_ char *folder = attach_folder(vault_rootfd(c->v));
	READ_LOCKED(c);
	const struct note *e = attach_find(vault_index(c->v), folder, ref);
	if (!e)
		return not_found(c, ref);
	*ret_path = xstrdup(note_path(e));
	return 0;
}

static int send_image(struct tool_ctx *c, const char *path, int fd)
{
	struct image_out img;
	_cleanup_free_ char *msg = NULL;
	int r = image_for_client(fd, &img, &msg);
	if (r < 0)
		return op_fail(c, r, "Cannot send %s as an image: %s",
			       QUOTE(path), msg);
	struct sbuf t = {0};
	sb_printf(&t, "%s: %s, %d x %d pixels, %zu bytes", path, img.mime,
		  img.width, img.height, img.bytes);
	if (img.scaled)
		sb_printf(&t,
			  " (made smaller from %d x %d: clients take at "
			  "most %d pixels a side and %u MB of data)",
			  img.orig_width, img.orig_height, IMAGE_MAX_SIDE,
			  IMAGE_MAX_DATA >> 20);
	c->text = sb_steal(&t);
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "type", "image");
	cJSON_AddStringToObject(b, "data", img.data);
	cJSON_AddStringToObject(b, "mimeType", img.mime);
	c->content = cJSON_CreateArray();
	cJSON_AddItemToArray(c->content, b);
	image_out_clear(&img);
	return 0;
}

static int send_link(struct tool_ctx *c, const char *path,
		     const struct stat *st)
{
	const char *mime = attach_mime(path);
	const char *base = strrchr(path, '/');
	c->text = xasprintf("%s: %s, %lld bytes (not an image: its content "
			    "is not sent, the link below names it)",
			    path, mime, (long long)st->st_size);
	cJSON *b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "type", "resource_link");
	cJSON_AddStringToObject(b, "path", path);
	cJSON_AddStringToObject(b, "name", base ? base + 1 : path);
	cJSON_AddStringToObject(b, "mimeType", mime);
	cJSON_AddNumberToObject(b, "size", (double)st->st_size);
	c->content = cJSON_CreateArray();
	cJSON_AddItemToArray(c->content, b);
	return 0;
}

int op_read_attachment(struct tool_ctx *c)
{
	_cleanup_free_ char *path = NULL;
	int r = find_attachment(c, arg_str(c, "path", ""), &path);
	if (r < 0)
		return r;
	int rootfd = vault_rootfd(c->v);
	enum attach_kind kind = attach_kind(path);
	if (kind == ATTACH_SVG) {
		size_t len;
		r = file_read(rootfd, path, SVG_MAX, &c->text, &len, NULL);
		if (r < 0)
			return op_fail(c, r, "Cannot read %s: %s", QUOTE(path),
				       r == -EFBIG ? "over 8 MB"
						   : strerror(-r));
		c->info = xasprintf("%s: image/svg+xml, %zu bytes", path, len);
		return 0;
	}
	_cleanup_close_ int fd = beneath_open(
		rootfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return op_fail(c, fd < 0 ? fd : -EINVAL, "Cannot read %s: %s",
			       QUOTE(path),
			       fd < 0 ? strerror(-fd) : "not a regular file");
	if (kind == ATTACH_IMAGE)
		return send_image(c, path, fd);
	return send_link(c, path, &st);
}

static int cmp_path(const void *a, const void *b)
{
	const struct note *x = *(const struct note *const *)a;
	const struct note *y = *(const struct note *const *)b;
	return strcmp(note_fold_path(x), note_fold_path(y));
}

/* The attachments listed: under folder (folded, "" for all), unused
 * ones only if asked, sorted by path. */
static void gather(const struct index *ix, const char *ffold, bool unused,
		   struct ptrvec *ret)
{
	struct hmap *used = unused ? attach_used(ix) : NULL;
	size_t fl = strlen(ffold), it = 0;
	const struct note *e;
	while (index_next_file(ix, &it, &e)) {
		if (fl && (strncmp(note_fold_path(e), ffold, fl) ||
			   note_fold_path(e)[fl] != '/'))
			continue;
		if (used && hmap_get(used, note_fold_path(e)))
			continue;
		pv_push(ret, (void *)e);
	}
	hmap_free(used);
	if (ret->n)
		qsort(ret->v, ret->n, sizeof(*ret->v), cmp_path);
}

int op_list_attachments(struct tool_ctx *c)
{
	const char *f = arg_str(c, "folder", "");
	size_t fn = strlen(f);
	while (fn && f[fn - 1] == '/')
		fn--;
	_cleanup_free_ char *folder = NULL, *ffold = NULL;
	const char *why;
	if (fn) {
		_cleanup_free_ char *t = xstrndup(f, fn);
		if (path_check(t, &folder, &why) < 0)
			return op_fail(c, -EINVAL, "Invalid folder %s: %s",
				       QUOTE(f), why);
	}
	ffold = fold_key(folder ? folder : "");
	READ_LOCKED(c);
	struct ptrvec all = {0};
	gather(vault_index(c->v), ffold, arg_bool(c, "unused", false), &all);
	struct page pg = page_args(c);
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < all.n; i++) {
		const struct note *e = all.v[i];
		if (!page_take(&pg))
			continue;
		struct stat st;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "path", note_path(e));
		cJSON_AddStringToObject(o, "type", attach_mime(note_path(e)));
		if (file_stat(vault_rootfd(c->v), note_path(e), &st) == 0)
			cJSON_AddNumberToObject(o, "size", (double)st.st_size);
		cJSON_AddItemToArray(a, o);
	}
	pv_free(&all);
	c->json = cJSON_CreateObject();
	cJSON_AddItemToObject(c->json, "attachments", a);
	page_add(c->json, &pg);
	return 0;
}
