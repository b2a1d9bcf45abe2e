/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The accessors of note.h: the one place outside the parser and the
 * index that knows struct note's fields.
 */
#include "note_int.h"

const char *note_path(const struct note *n)
{
	return n->path;
}

const char *note_name(const struct note *n)
{
	return n->name;
}

const char *note_fold_path(const struct note *n)
{
	return n->fold_path;
}

const char *note_fold_name(const struct note *n)
{
	return n->fold_name;
}

size_t note_dirlen(const struct note *n)
{
	return n->dirlen;
}

char *const *note_tags(const struct note *n)
{
	return n->tags;
}

const char *note_tag(const struct note *n, size_t i)
{
	return n->tags[i];
}

size_t note_ntags(const struct note *n)
{
	return n->ntags;
}

char *const *note_fold_tags(const struct note *n)
{
	return n->fold_tags;
}

char *const *note_aliases(const struct note *n)
{
	return n->aliases;
}

size_t note_naliases(const struct note *n)
{
	return n->naliases;
}

char *const *note_fm_keys(const struct note *n)
{
	return n->fm_keys;
}

const struct link *note_links(const struct note *n)
{
	return n->links;
}

size_t note_nlinks(const struct note *n)
{
	return n->nlinks;
}

const struct link *note_link(const struct note *n, size_t i)
{
	return &n->links[i];
}

const unsigned char *note_props(const struct note *n)
{
	return n->props;
}

uint32_t note_props_len(const struct note *n)
{
	return n->props_len;
}

const unsigned char *note_tasks(const struct note *n)
{
	return n->tasks;
}

uint32_t note_tasks_len(const struct note *n)
{
	return n->tasks_len;
}

int64_t note_mtime_ns(const struct note *n)
{
	return n->mtime_ns;
}

int64_t note_btime(const struct note *n)
{
	return n->btime;
}

int64_t note_size(const struct note *n)
{
	return n->size;
}

uint64_t note_ino(const struct note *n)
{
	return n->ino;
}

bool note_too_big(const struct note *n)
{
	return n->too_big;
}

bool note_fm_invalid(const struct note *n)
{
	return n->fm_invalid;
}

int note_fm_error_line(const struct note *n)
{
	return n->fm_err_line;
}

bool note_fm_unread(const struct note *n)
{
	return n->fm_unread;
}

unsigned note_read_flags(const struct note *n)
{
	return n->read_flags;
}

bool note_racy(const struct note *n)
{
	return n->racy;
}

uint32_t note_hash(const struct note *n)
{
	return n->text_hash;
}

void note_settle(struct note *n)
{
	n->racy = false;
}

/* The properties are packed right after the note (note.c). */
void note_prefetch(const struct note *n)
{
	const char *p = (const char *)n;
	__builtin_prefetch(p);
	__builtin_prefetch(p + 64);
	__builtin_prefetch(p + sizeof(*n));
	__builtin_prefetch(p + sizeof(*n) + 64);
}

void note_set_file(struct note *n, int64_t mtime_ns, int64_t size, uint64_t ino,
		   int64_t btime)
{
	n->mtime_ns = mtime_ns;
	n->size = size;
	n->ino = ino;
	n->btime = btime;
}

void note_set_btime(struct note *n, int64_t btime)
{
	n->btime = btime;
}

void note_mark_too_big(struct note *n)
{
	n->too_big = true;
}

char *const *note_fold_aliases(const struct note *n)
{
	return n->fold_aliases;
}

size_t note_nfold_aliases(const struct note *n)
{
	return n->nfold_aliases;
}
