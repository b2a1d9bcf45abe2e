/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Attachments: the vault's files that are not notes (images, PDFs,
 * audio...), as links and embeds reach them. Their MIME types (by
 * extension), where Obsidian puts new ones (.obsidian/app.json's
 * attachmentFolderPath), how a tool's reference finds one, and which
 * ones no note links to or embeds. The index keeps them (index.h); this
 * module only reads it, under the caller's read lock.
 */
#pragma once

#include "hmap.h"
#include "index.h"

enum attach_kind {
	ATTACH_IMAGE, /* sent as image content (png, jpeg, gif, webp) */
	ATTACH_SVG,   /* an image that is text: sent as text */
	ATTACH_OTHER, /* sent as a link with its type and size */
};

/* The MIME type for a file name ("application/octet-stream" when its
 * extension says nothing); static. */
const char *attach_mime(const char *path);
enum attach_kind attach_kind(const char *path);

/*
 * Obsidian's "Default location for new attachments" (attachmentFolderPath
 * in .obsidian/app.json): "" for the vault root (no setting, or "/"),
 * else as written ("assets", "./", "./files"); a leading "./" means
 * "beside the note". A file that cannot be read counts as no setting.
 */
char *attach_folder(int rootfd);

/*
 * The attachment a tool's reference names (ref is path_check()ed): its
 * vault path (case-insensitive); else, for a bare file name, the one in
 * the attachment folder (a fixed one: folder as attach_folder() gives
 * it), else Obsidian's pick among the files of that name (the shortest
 * path). NULL when none.
 */
const struct note *attach_find(const struct index *ix, const char *folder,
			       const char *ref);

/* Whether a link leads (or, missing, was meant) to an attachment: it
 * resolves to one, or names a file whose extension is not .md. */
bool link_is_attachment(const struct link *l);
/* The attachment a link resolves to, or NULL. */
const struct note *link_attachment(const struct index *ix,
				   const struct link *l);

/* Every attachment some note links to or embeds: its folded path ->
 * the entry (borrowed from the index). */
struct hmap *attach_used(const struct index *ix);

/* The most bytes of an attachment a resource read sends (base64 makes
 * 4/3 of it; what MCP clients take in one message). */
#define ATTACH_READ_MAX (8u << 20)

/*
 * An attachment's bytes as base64 (malloc'd), at most max raw bytes:
 * 0, -EFBIG when the file is bigger (*ret_size: its size), or -errno.
 * Read beneath the vault root, symlinks not followed.
 */
int attach_read_base64(int rootfd, const char *path, size_t max, char **ret,
		       size_t *ret_size);
