/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Images for MCP clients through libvips (decode.h says what and why).
 * This runs in vaultd-image, one image per process: a failure here ends
 * one request, never the daemon.
 */
#include "decode.h"
#include "image.h"
#include "image_wire.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vips/vips.h>

/* The raw bytes whose base64 is IMAGE_MAX_DATA. */
#define RAW_MAX ((size_t)IMAGE_MAX_DATA / 4 * 3)

static void quiet(const gchar *domain, GLogLevelFlags level, const gchar *msg,
		  gpointer ud)
{
}

int decode_init(const char *argv0)
{
	if (VIPS_INIT(argv0))
		return -ENOSYS;
	/* One image, then exit: no cache of past operations, one worker,
	 * no loader libvips marks untrusted. */
	vips_cache_set_max(0);
	vips_cache_set_max_mem(0);
	vips_cache_set_max_files(0);
	vips_concurrency_set(1);
	vips_block_untrusted_set(TRUE);
	/* Failures come back in the answer; nothing goes to stderr. */
	g_log_set_handler("VIPS",
			  G_LOG_LEVEL_WARNING | G_LOG_LEVEL_MESSAGE |
				  G_LOG_LEVEL_INFO | G_LOG_LEVEL_DEBUG,
			  quiet, NULL);
	return 0;
}

/* libvips's last error, on one line and short. */
static char *vips_why(void)
{
	char *e = vips_error_buffer_copy();
	struct sbuf b = {0};
	for (const char *p = e ? e : ""; *p && b.len < 300; p++) {
		if (*p == '\n')
			sb_puts(&b, p[1] ? "; " : "");
		else
			sb_putc(&b, *p);
	}
	g_free(e);
	if (!b.len)
		sb_puts(&b, "unknown error");
	return sb_steal(&b);
}

/* The image types clients take, by the loader libvips picks for the
 * bytes (not the file's extension). */
static const struct {
	const char *loader;
	enum image_mime mime;
} TYPES[] = {
	{"pngload", IMAGE_PNG},
	{"jpegload", IMAGE_JPEG},
	{"gifload", IMAGE_GIF},
	{"webpload", IMAGE_WEBP},
};

static VipsSource *source_at_start(int fd)
{
	if (lseek(fd, 0, SEEK_SET) < 0)
		return NULL;
	return vips_source_new_from_descriptor(fd);
}

struct head {
	enum image_mime mime;
	int w, h;
};

/* The loader's nickname ("pngload_source" and the like) for the bytes,
 * or NULL when no loader reads them. */
static const char *loader_of(VipsSource *src)
{
	const char *cls = vips_foreign_find_load_source(src);
	GType type = cls ? g_type_from_name(cls) : 0;
	return type ? vips_nickname_find(type) : NULL;
}

static int read_head(int fd, struct head *ret, char **ret_msg)
{
	VipsSource *src = source_at_start(fd);
	if (!src) {
		*ret_msg = vips_why();
		return -EIO;
	}
	const char *loader = loader_of(src);
	if (!loader) {
		g_object_unref(src);
		vips_error_clear();
		*ret_msg = xstrdup("it is not an image libvips can read");
		return -EINVAL;
	}
	size_t i = 0;
	while (i < ARRAY_SIZE(TYPES) &&
	       !str_has_prefix(loader, TYPES[i].loader))
		i++;
	if (i == ARRAY_SIZE(TYPES)) {
		g_object_unref(src);
		*ret_msg = xasprintf("it is read by libvips's %s, a type "
				     "clients do not take (PNG, JPEG, GIF, "
				     "WebP)",
				     loader);
		return -EINVAL;
	}
	VipsImage *im = vips_image_new_from_source(
		src, "", "access", VIPS_ACCESS_SEQUENTIAL, "fail_on",
		VIPS_FAIL_ON_ERROR, NULL);
	g_object_unref(src);
	if (!im) {
		*ret_msg = vips_why();
		return -EINVAL;
	}
	*ret = (struct head){TYPES[i].mime, vips_image_get_width(im),
			     vips_image_get_height(im)};
	g_object_unref(im);
	return 0;
}

/* Decode every pixel (in strips): a broken file fails here. */
static int check_whole(int fd, char **ret_msg)
{
	VipsSource *src = source_at_start(fd);
	VipsImage *im = src ? vips_image_new_from_source(
				      src, "", "access", VIPS_ACCESS_SEQUENTIAL,
				      "fail_on", VIPS_FAIL_ON_ERROR, NULL)
			    : NULL;
	double min;
	int r = im ? vips_min(im, &min, NULL) : -1;
	if (im)
		g_object_unref(im);
	if (src)
		g_object_unref(src);
	if (r) {
		*ret_msg = vips_why();
		return -EINVAL;
	}
	return 0;
}

/* An encoder's output: kept up to max bytes, all of it counted. */
struct sink {
	char *buf;
	size_t len, max, total;
};

static gint64 sink_write(VipsTargetCustom *t, const void *data, gint64 n,
			 gpointer ud)
{
	struct sink *s = ud;
	size_t len = (size_t)n;
	s->total += len;
	if (s->len + len <= s->max) {
		if (!s->buf)
			s->buf = xmalloc(s->max);
		memcpy(s->buf + s->len, data, len);
		s->len += len;
	}
	return n;
}

static int save(VipsImage *im, VipsTarget *t, enum image_mime mime)
{
	if (mime == IMAGE_JPEG)
		return vips_jpegsave_target(im, t, "Q", 85, "strip", TRUE,
					    NULL);
	if (mime == IMAGE_WEBP)
		return vips_webpsave_target(im, t, "Q", 80, "strip", TRUE,
					    NULL);
	return vips_pngsave_target(im, t, "compression", 6, "strip", TRUE,
				   NULL);
}

/* One try: the image fitted in side x side pixels, encoded as mime. */
static int shrink_once(int fd, int side, enum image_mime mime, struct sink *s,
		       int *ret_w, int *ret_h, char **ret_msg)
{
	VipsSource *src = source_at_start(fd);
	VipsImage *t = NULL;
	if (!src || vips_thumbnail_source(src, &t, side, "height", side, "size",
					  VIPS_SIZE_DOWN, "fail_on",
					  VIPS_FAIL_ON_ERROR, NULL)) {
		if (src)
			g_object_unref(src);
		*ret_msg = vips_why();
		return -EINVAL;
	}
	g_object_unref(src);
	VipsTargetCustom *tg = vips_target_custom_new();
	g_signal_connect(tg, "write", G_CALLBACK(sink_write), s);
	int r = save(t, VIPS_TARGET(tg), mime);
	*ret_w = vips_image_get_width(t);
	*ret_h = vips_image_get_height(t);
	g_object_unref(tg);
	g_object_unref(t);
	if (r) {
		*ret_msg = vips_why();
		return -EINVAL;
	}
	return 0;
}

/* Smaller until it fits: each try that comes out too big tells by how
 * much, and the next is scaled by that. */
static int shrink(int fd, const struct head *h, struct decoded *o,
		  char **ret_msg)
{
	int side = h->w > h->h ? h->w : h->h;
	if (side > IMAGE_MAX_SIDE)
		side = IMAGE_MAX_SIDE;
	/* GIF frames come out as PNG (the first frame). */
	enum image_mime mime = h->mime == IMAGE_GIF ? IMAGE_PNG : h->mime;
	for (int pass = 0; pass < 6; pass++) {
		struct sink s = {.max = RAW_MAX};
		int w, hh;
		int r = shrink_once(fd, side, mime, &s, &w, &hh, ret_msg);
		if (r < 0) {
			free(s.buf);
			return r;
		}
		if (s.total <= s.max && s.buf) {
			o->bytes = s.buf;
			o->len = s.len;
			o->mime = mime;
			o->width = w;
			o->height = hh;
			o->scaled = 1;
			return 0;
		}
		free(s.buf);
		int next = (int)(side * sqrt((double)s.max / (double)s.total) *
				 0.9);
		side = next < side ? next : side - 1;
		if (side < 16)
			break;
	}
	*ret_msg = xstrdup("it does not come under the size limit even "
			   "made small");
	return -EFBIG;
}

static int send_as_is(int fd, size_t size, const struct head *h,
		      struct decoded *o, char **ret_msg)
{
	int r = check_whole(fd, ret_msg);
	if (r < 0)
		return r;
	_cleanup_free_ char *buf = xmalloc(size ? size : 1);
	size_t got = 0;
	while (got < size) {
		ssize_t n = pread(fd, buf + got, size - got, (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			*ret_msg = xasprintf("cannot read it: %s",
					     n ? strerror(errno)
					       : "it got shorter");
			return n ? -errno : -EIO;
		}
		got += (size_t)n;
	}
	o->bytes = TAKE_PTR(buf);
	o->len = size;
	o->mime = h->mime;
	o->width = h->w;
	o->height = h->h;
	o->scaled = 0;
	return 0;
}

int decode_for_client(int fd, struct decoded *ret, char **ret_msg)
{
	struct stat st;
	if (fstat(fd, &st) < 0) {
		*ret_msg = xasprintf("cannot read it: %s", strerror(errno));
		return -errno;
	}
	struct head h;
	int r = read_head(fd, &h, ret_msg);
	if (r < 0)
		return r;
	struct decoded o = {.orig_width = h.w, .orig_height = h.h};
	if ((unsigned long long)h.w * (unsigned long long)h.h >
	    IMAGE_MAX_PIXELS) {
		*ret_msg = xasprintf(
			"it is %d x %d pixels (%.0f megapixels); images over "
			"%.0f megapixels are not decoded",
			h.w, h.h, (double)h.w * h.h / 1e6,
			(double)IMAGE_MAX_PIXELS / 1e6);
		return -EFBIG;
	}
	if (h.w <= IMAGE_MAX_SIDE && h.h <= IMAGE_MAX_SIDE &&
	    (size_t)st.st_size <= RAW_MAX)
		r = send_as_is(fd, (size_t)st.st_size, &h, &o, ret_msg);
	else
		r = shrink(fd, &h, &o, ret_msg);
	if (r < 0)
		return r;
	*ret = o;
	return 0;
}
