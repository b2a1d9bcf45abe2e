/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the image decoder (fs/image/, the program vaultd-image) writes
 * back to vaultd on its standard output: one fixed header, then len
 * bytes (the image to send when status is 0, else a one-line message
 * saying why). Both ends are built from this tree for the same machine,
 * so the header is the struct as it lies in memory; vaultd checks magic,
 * status, mime and len before it believes any of it.
 */
#pragma once

#include <stdint.h>

#define IMAGE_WIRE_MAGIC 0x31474d49u /* "IMG1" */
/* The longest message the decoder sends with an error. */
#define IMAGE_WIRE_MSG_MAX 512u

struct image_wire {
	uint32_t magic;
	int32_t status;	 /* 0, or -errno as image_for_client returns it */
	uint32_t mime;	 /* enum image_mime */
	uint32_t scaled; /* 1 when made smaller */
	int32_t width;	 /* of what is sent */
	int32_t height;
	int32_t orig_width; /* of the file */
	int32_t orig_height;
	uint32_t len; /* bytes that follow */
};

/* The image types clients take. */
enum image_mime {
	IMAGE_PNG,
	IMAGE_JPEG,
	IMAGE_GIF,
	IMAGE_WEBP,
	IMAGE_MIMES /* how many */
};

static const char *const IMAGE_WIRE_MIMES[IMAGE_MIMES] = {
	[IMAGE_PNG] = "image/png",
	[IMAGE_JPEG] = "image/jpeg",
	[IMAGE_GIF] = "image/gif",
	[IMAGE_WEBP] = "image/webp",
};
