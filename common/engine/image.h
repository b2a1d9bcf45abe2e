/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Images for clients that take them (MCP image content). An image within
 * the clients' limits is handed on byte for byte, once a full decode has
 * shown it is whole (a broken image can break the client's
 * conversation); a bigger one is made smaller; one over IMAGE_MAX_PIXELS
 * is refused from its header (the decompression bomb).
 *
 * The decoding is done by libvips in a separate program, vaultd-image
 * (fs/image/), started per image: the daemon does not load libvips and
 * its codecs (about a hundred shared libraries) and a hostile image that
 * crashes or exhausts a decoder ends that program, not vaultd. It gets
 * the file the caller opened and checked as its standard input (it never
 * opens a path), caps its own memory and CPU time, and is stopped after
 * IMAGE_TIMEOUT_MS. At most two run at once.
 *
 * The program is VAULTD_IMAGE_HELPER when that is set (the tests),
 * else vaultd-image next to the running program (the build tree, a
 * bundle), else the one installed in libexecdir/vaultd.
 * VAULTD_IMAGE_TIMEOUT_MS sets the timeout (the tests).
 */
#pragma once

#include <stddef.h>

/* What MCP clients take (Claude's limits): 5 MB of base64 data and
 * 8,000 pixels a side. */
#define IMAGE_MAX_SIDE 8000
#define IMAGE_MAX_DATA (5u << 20)
/* Images with more pixels than this are refused before decoding. */
#define IMAGE_MAX_PIXELS (150ull * 1000 * 1000)
/* How long one image may take before its decoder is stopped. */
#define IMAGE_TIMEOUT_MS 20000

struct image_out {
	char *data; /* base64 (malloc'd) */
	size_t data_len;
	const char *mime;	     /* static: image/png, image/jpeg, ... */
	int width, height;	     /* of what is sent */
	int orig_width, orig_height; /* of the file */
	size_t bytes;		     /* raw bytes sent (before base64) */
	int scaled;		     /* 1 when made smaller */
};

/*
 * The image in fd (a regular file, read from its start) ready for a
 * client. Returns 0, or -EINVAL (not an image libvips can read whole, or
 * one of a type clients do not take), -EFBIG (over IMAGE_MAX_PIXELS),
 * -ENOSYS (the decoder is missing or cannot start), -ETIMEDOUT (it ran
 * over), -EIO (it crashed or answered garbage), or another -errno, with
 * *ret_msg (malloc'd) saying why. Safe to call from many threads.
 */
int image_for_client(int fd, struct image_out *ret, char **ret_msg);
void image_out_clear(struct image_out *o);
