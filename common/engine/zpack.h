/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Whole buffers compressed, for what the on-disk index compresses (the
 * stored texts, docz.h): raw deflate (libdeflate), or zstd with a
 * dictionary (docz_dict.h), with a compressor and a decompressor of each
 * per thread, made at a thread's first use and freed with the thread (a
 * compressor's tables are hundreds of KiB: made once, not per buffer). No
 * header or checksum: the caller keeps the sizes.
 */
#pragma once

#include <stddef.h>
#include <zstd.h>

/* The most bytes n bytes can deflate to. */
size_t zpack_bound(size_t n);
/* n bytes at in deflated into out (cap bytes): their size, or 0 when
 * they do not fit or no compressor could be made. */
size_t zpack_deflate(const void *in, size_t n, void *out, size_t cap);
/* zn deflated bytes at z inflated into out: 0 when they are exactly n
 * bytes, -EIO otherwise (damaged, or another size). */
int zpack_inflate(const void *z, size_t zn, void *out, size_t n);

/* The same with zstd and a dictionary: a frame without its size,
 * checksum or dictionary id. */
size_t zpack_zstd_bound(size_t n);
size_t zpack_zstd(const ZSTD_CDict *dict, const void *in, size_t n, void *out,
		  size_t cap);
int zpack_unzstd(const ZSTD_DDict *dict, const void *z, size_t zn, void *out,
		 size_t n);
