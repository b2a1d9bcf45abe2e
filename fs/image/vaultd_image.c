/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vaultd-image: decodes one image for vaultd, then exits, so that
 * libvips and its codecs (about a hundred shared libraries) are loaded
 * only while an image is read, and a hostile image that crashes or
 * exhausts a decoder ends this process, not the daemon that owns the
 * notes. vaultd starts it per image (common/engine/image.c). Its
 * standard input is the file vaultd opened beneath the vault's root and
 * checked (it never opens a path itself); its standard output is a pipe
 * to vaultd that takes one struct image_wire (image_wire.h) and the
 * bytes. Before it reads anything it caps itself: address space, CPU
 * time, file size, no core, no new privileges, and it dies with
 * the vaultd thread that started it. vaultd stops it after a wall-clock
 * timeout too.
 */
#include "decode.h"
#include "image_wire.h"
#include "util.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>

/* What one image may take: libvips decodes in strips, so a good image
 * needs far less (a 150-megapixel one shrinks in about 100 MB). */
#define ADDRESS_SPACE_MAX (1ul << 30)
#define CPU_SECONDS_MAX 15
/* Files it may write: none but what ORC, libvips's code generator,
 * writes to map its code (64 KiB each). */
#define FILE_SIZE_MAX (1ul << 20)

/* Lower one limit to want (never above the limit it was started with). */
static void cap(int resource, rlim_t want)
{
	struct rlimit l;
	if (getrlimit(resource, &l) < 0)
		return;
	if (l.rlim_max != RLIM_INFINITY && l.rlim_max < want)
		want = l.rlim_max;
	l.rlim_cur = l.rlim_max = want;
	setrlimit(resource, &l);
}

static void limit_self(void)
{
	/* The sanitizers reserve terabytes of address space up front. */
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
	cap(RLIMIT_AS, ADDRESS_SPACE_MAX);
#endif
	cap(RLIMIT_CPU, CPU_SECONDS_MAX);
	cap(RLIMIT_FSIZE, FILE_SIZE_MAX);
	cap(RLIMIT_CORE, 0);
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
}

/* The answer: the header, then the image or the message. */
static int reply(int r, const struct decoded *d, const char *msg)
{
	struct image_wire w = {.magic = IMAGE_WIRE_MAGIC, .status = r};
	const char *body = msg;
	size_t len;
	if (r == 0) {
		w.mime = d->mime;
		w.scaled = (uint32_t)d->scaled;
		w.width = d->width;
		w.height = d->height;
		w.orig_width = d->orig_width;
		w.orig_height = d->orig_height;
		body = d->bytes;
		len = d->len;
	} else {
		len = utf8_cut(msg, strnlen(msg, IMAGE_WIRE_MSG_MAX));
	}
	w.len = (uint32_t)len;
	int e = write_full(STDOUT_FILENO, &w, sizeof(w));
	return e < 0 ? e : write_full(STDOUT_FILENO, body, len);
}

static int decode_stdin(struct decoded *ret, char **ret_msg)
{
	struct stat st;
	if (fstat(STDIN_FILENO, &st) < 0 || !S_ISREG(st.st_mode)) {
		*ret_msg = xstrdup("the image decoder reads a regular file on "
				   "its standard input");
		return -EINVAL;
	}
	/* libvips loads its modules (PDF, HEIF, JPEG XL, OpenSlide,
	 * ImageMagick) from $VIPSHOME/lib at start: none reads a type
	 * clients take (those are built into libvips), and loading them
	 * took longer than the rest of the start. /dev/null holds none. */
	setenv("VIPSHOME", "/dev/null", 1);
	if (decode_init("vaultd-image") < 0) {
		*ret_msg = xstrdup("libvips could not start");
		return -ENOSYS;
	}
	return decode_for_client(STDIN_FILENO, ret, ret_msg);
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		fprintf(stderr,
			"usage: %s <IMAGE >ANSWER\n"
			"vaultd starts it to decode one image; it is not "
			"meant to be run by hand.\n",
			argv[0]);
		return 2;
	}
	limit_self();
	struct decoded d = {0};
	_cleanup_free_ char *msg = NULL;
	int r = decode_stdin(&d, &msg);
	int e = reply(r, &d, msg);
	free(d.bytes);
	return e < 0 ? 1 : 0;
}
