/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Whole buffers compressed (zpack.h): the per-thread libdeflate
 * compressor and decompressor and zstd contexts, and the calls on them.
 */
#include "zpack.h"
#include "util.h"

#include <errno.h>
#include <libdeflate.h>
#include <pthread.h>
#include <zstd.h>

/* At 10,000 notes in 4 KiB chunks, level 4 makes 4.6 % fewer bytes than
 * zlib's level 1 (its window and hash table sized for a chunk) in 39 %
 * less time; levels 5 and 6 make 0.7 and 1.0 % fewer bytes than level 4
 * in 30 and 45 % more time. */
#define ZLEVEL 4

struct coders {
	struct libdeflate_compressor *c;
	struct libdeflate_decompressor *d;
	ZSTD_CCtx *zc;
	ZSTD_DCtx *zd;
};

static pthread_key_t coders_key;
static pthread_once_t coders_once = PTHREAD_ONCE_INIT;
static bool coders_ok;

static void coders_free(void *p)
{
	struct coders *k = p;
	if (k->c)
		libdeflate_free_compressor(k->c);
	if (k->d)
		libdeflate_free_decompressor(k->d);
	ZSTD_freeCCtx(k->zc);
	ZSTD_freeDCtx(k->zd);
	free(k);
}

static void coders_init(void)
{
	coders_ok = pthread_key_create(&coders_key, coders_free) == 0;
}

static struct coders *coders(void)
{
	pthread_once(&coders_once, coders_init);
	if (!coders_ok)
		return NULL;
	struct coders *k = pthread_getspecific(coders_key);
	if (!k) {
		k = xcalloc(1, sizeof(*k));
		if (pthread_setspecific(coders_key, k) != 0) {
			free(k);
			return NULL;
		}
	}
	return k;
}

size_t zpack_bound(size_t n)
{
	/* Any compressor's bound (libdeflate.h allows NULL). */
	return libdeflate_deflate_compress_bound(NULL, n);
}

size_t zpack_deflate(const void *in, size_t n, void *out, size_t cap)
{
	struct coders *k = coders();
	if (k && !k->c)
		k->c = libdeflate_alloc_compressor(ZLEVEL);
	if (!k || !k->c)
		return 0;
	return libdeflate_deflate_compress(k->c, in, n, out, cap);
}

int zpack_inflate(const void *z, size_t zn, void *out, size_t n)
{
	struct coders *k = coders();
	if (k && !k->d)
		k->d = libdeflate_alloc_decompressor();
	size_t got;
	if (!k || !k->d ||
	    libdeflate_deflate_decompress(k->d, z, zn, out, n, &got) !=
		    LIBDEFLATE_SUCCESS)
		return -EIO;
	return got == n ? 0 : -EIO;
}

size_t zpack_zstd_bound(size_t n)
{
	return ZSTD_compressBound(n);
}

/* The thread's zstd compression context: no checksum, no sizes and no
 * dictionary id in a frame (the caller keeps the sizes and knows the
 * dictionary). */
static ZSTD_CCtx *zstd_cctx(void)
{
	struct coders *k = coders();
	if (!k)
		return NULL;
	if (!k->zc) {
		k->zc = ZSTD_createCCtx();
		if (k->zc && (ZSTD_isError(ZSTD_CCtx_setParameter(
				      k->zc, ZSTD_c_contentSizeFlag, 0)) ||
			      ZSTD_isError(ZSTD_CCtx_setParameter(
				      k->zc, ZSTD_c_dictIDFlag, 0)))) {
			ZSTD_freeCCtx(k->zc);
			k->zc = NULL;
		}
	}
	return k->zc;
}

size_t zpack_zstd(const ZSTD_CDict *dict, const void *in, size_t n, void *out,
		  size_t cap)
{
	ZSTD_CCtx *c = zstd_cctx();
	if (!c || ZSTD_isError(ZSTD_CCtx_refCDict(c, dict)))
		return 0;
	size_t r = ZSTD_compress2(c, out, cap, in, n);
	return ZSTD_isError(r) ? 0 : r;
}

int zpack_unzstd(const ZSTD_DDict *dict, const void *z, size_t zn, void *out,
		 size_t n)
{
	struct coders *k = coders();
	if (k && !k->zd)
		k->zd = ZSTD_createDCtx();
	if (!k || !k->zd || ZSTD_isError(ZSTD_DCtx_refDDict(k->zd, dict)))
		return -EIO;
	size_t r = ZSTD_decompressDCtx(k->zd, out, n, z, zn);
	if (ZSTD_isError(r)) {
		/* A damaged frame can leave the context mid-frame. */
		ZSTD_DCtx_reset(k->zd, ZSTD_reset_session_only);
		return -EIO;
	}
	return r == n ? 0 : -EIO;
}
