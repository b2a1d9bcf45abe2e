/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The image decoder's work, through libvips: an image within the
 * clients' limits (image.h) is handed on byte for byte once a full
 * decode has shown it is whole (a broken image can break the client's
 * conversation); a bigger one is made smaller. Nothing is decoded by
 * hand.
 *
 * Memory stays bounded whatever the file says: the header is read first
 * and an image with more than IMAGE_MAX_PIXELS is refused unread (the
 * decompression bomb); the rest is decoded in sequential strips
 * (shrink-on-load where the format has it), and the encoder writes into
 * a buffer that stops growing at the data limit. libvips runs with one
 * worker thread, no operation cache and its untrusted loaders blocked.
 */
#pragma once

#include "image_wire.h"

#include <stddef.h>

struct decoded {
	enum image_mime mime;
	int width, height;	     /* of what is sent */
	int orig_width, orig_height; /* of the file */
	int scaled;		     /* 1 when made smaller */
	char *bytes;		     /* what is sent (malloc'd) */
	size_t len;
};

/* libvips started for one image; -ENOSYS when it cannot start. */
int decode_init(const char *argv0);

/*
 * The image in fd (a regular file, read from its start) ready for a
 * client. Returns 0, or -EINVAL (not an image libvips can read whole, or
 * one of a type clients do not take), -EFBIG (over IMAGE_MAX_PIXELS, or
 * over the data limit even made small), or another -errno, with
 * *ret_msg (malloc'd, one line) saying why.
 */
int decode_for_client(int fd, struct decoded *ret, char **ret_msg);
