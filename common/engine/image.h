/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Images for clients that take them (MCP image content), through libvips.
 * An image within the clients' limits is handed on byte for byte, once a
 * full decode has shown it is whole (a broken image can break the
 * client's conversation); a bigger one is made smaller. Nothing is
 * decoded by hand.
 *
 * Memory stays bounded whatever the file says: the header is read first
 * and an image with more than IMAGE_MAX_PIXELS is refused unread (the
 * decompression bomb); the rest is decoded in sequential strips
 * (shrink-on-load where the format has it), and the encoder writes into
 * a buffer that stops growing at the data limit. libvips runs with one
 * worker thread and no operation cache: the daemon serves many callers
 * and an image is one request among them.
 */
#pragma once

#include <stddef.h>

/* What MCP clients take (Claude's limits): 5 MB of base64 data and
 * 8,000 pixels a side. */
#define IMAGE_MAX_SIDE 8000
#define IMAGE_MAX_DATA (5u << 20)
/* Images with more pixels than this are refused before decoding. */
#define IMAGE_MAX_PIXELS (150ull * 1000 * 1000)

struct image_out {
	char *data; /* base64 */
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
 * one of a type clients do not take), -EFBIG (over IMAGE_MAX_PIXELS), or
 * another -errno, with *ret_msg saying why.
 */
int image_for_client(int fd, struct image_out *ret, char **ret_msg);
void image_out_clear(struct image_out *o);
