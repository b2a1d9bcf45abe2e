/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Images for MCP clients through libvips (image.h says what and why).
 * One image is worked on at a time: with libvips's one worker thread
 * that bounds what images cost the daemon however many callers ask.
 */
#include "image.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vips/vips.h>

/* The raw bytes whose base64 is IMAGE_MAX_DATA. */
#define RAW_MAX ((size_t)IMAGE_MAX_DATA / 4 * 3)

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static bool init_failed;
static pthread_mutex_t one_image = PTHREAD_MUTEX_INITIALIZER;

static void quiet(const gchar *domain, GLogLevelFlags level, const gchar *msg,
		  gpointer ud)
{
}

static void image_init(void)
{
	if (VIPS_INIT("vaultd")) {
		init_failed = true;
		return;
	}
	/* A daemon: no cache of past operations (it would hold files and
	 * memory), one worker, no loader libvips marks untrusted. */
	vips_cache_set_max(0);
	vips_cache_set_max_mem(0);
	vips_cache_set_max_files(0);
	vips_concurrency_set(1);
	vips_block_untrusted_set(TRUE);
	/* Failures come back in the result; nothing goes to stderr. */
	g_log_set_handler("VIPS",
			  G_LOG_LEVEL_WARNING | G_LOG_LEVEL_MESSAGE |
				  G_LOG_LEVEL_INFO | G_LOG_LEVEL_DEBUG,
			  quiet, NULL);
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
	const char *mime;
} TYPES[] = {
	{"pngload", "image/png"},
	{"jpegload", "image/jpeg"},
	{"gifload", "image/gif"},
	{"webpload", "image/webp"},
};

static VipsSource *source_at_start(int fd)
{
	if (lseek(fd, 0, SEEK_SET) < 0)
		return NULL;
	return vips_source_new_from_descriptor(fd);
}

struct head {
	const char *mime;
	int w, h;
};

static int read_head(int fd, struct head *ret, char **ret_msg)
{
	VipsSource *src = source_at_start(fd);
	if (!src) {
		*ret_msg = vips_why();
		return -EIO;
	}
	/* A class name: its nickname is "pngload_source" and the like. */
	const char *cls = vips_foreign_find_load_source(src);
	GType type = cls ? g_type_from_name(cls) : 0;
	const char *loader = type ? vips_nickname_find(type) : NULL;
	if (!loader) {
		g_object_unref(src);
		vips_error_clear();
		*ret_msg = xstrdup("it is not an image libvips can read");
		return -EINVAL;
	}
	const char *mime = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(TYPES) && !mime; i++)
		if (str_has_prefix(loader, TYPES[i].loader))
			mime = TYPES[i].mime;
	if (!mime) {
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
	*ret = (struct head){mime, vips_image_get_width(im),
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

static int save(VipsImage *im, VipsTarget *t, const char *mime)
{
	if (!strcmp(mime, "image/jpeg"))
		return vips_jpegsave_target(im, t, "Q", 85, "strip", TRUE,
					    NULL);
	if (!strcmp(mime, "image/webp"))
		return vips_webpsave_target(im, t, "Q", 80, "strip", TRUE,
					    NULL);
	return vips_pngsave_target(im, t, "compression", 6, "strip", TRUE,
				   NULL);
}

/* One try: the image fitted in side x side pixels, encoded as mime. */
static int shrink_once(int fd, int side, const char *mime, struct sink *s,
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
static int shrink(int fd, const struct head *h, struct image_out *o,
		  char **ret_msg)
{
	int side = h->w > h->h ? h->w : h->h;
	if (side > IMAGE_MAX_SIDE)
		side = IMAGE_MAX_SIDE;
	/* GIF frames come out as PNG (the first frame). */
	const char *mime = strcmp(h->mime, "image/gif") ? h->mime : "image/png";
	for (int pass = 0; pass < 6; pass++) {
		struct sink s = {.max = RAW_MAX};
		int w, hh;
		int r = shrink_once(fd, side, mime, &s, &w, &hh, ret_msg);
		if (r < 0) {
			free(s.buf);
			return r;
		}
		if (s.total <= s.max && s.buf) {
			o->data = g_base64_encode((guchar *)s.buf, s.len);
			o->data_len = strlen(o->data);
			o->bytes = s.len;
			o->mime = mime;
			o->width = w;
			o->height = hh;
			o->scaled = 1;
			free(s.buf);
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
		      struct image_out *o, char **ret_msg)
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
	o->data = g_base64_encode((guchar *)buf, size);
	o->data_len = strlen(o->data);
	o->bytes = size;
	o->mime = h->mime;
	o->width = h->w;
	o->height = h->h;
	o->scaled = 0;
	return 0;
}

static int for_client(int fd, struct image_out *o, char **ret_msg)
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
	o->orig_width = h.w;
	o->orig_height = h.h;
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
		return send_as_is(fd, (size_t)st.st_size, &h, o, ret_msg);
	return shrink(fd, &h, o, ret_msg);
}

int image_for_client(int fd, struct image_out *ret, char **ret_msg)
{
	pthread_once(&init_once, image_init);
	if (init_failed) {
		*ret_msg = xstrdup("libvips could not start");
		return -ENOSYS;
	}
	struct image_out o = {0};
	pthread_mutex_lock(&one_image);
	int r = for_client(fd, &o, ret_msg);
	vips_error_clear();
	pthread_mutex_unlock(&one_image);
	if (r < 0) {
		image_out_clear(&o);
		return r;
	}
	*ret = o;
	return 0;
}

void image_out_clear(struct image_out *o)
{
	g_free(o->data);
	memset(o, 0, sizeof(*o));
}
