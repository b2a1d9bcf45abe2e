/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Attachments: types, the attachment folder setting, how a reference
 * finds a file, embeds and attachments in get_note_metadata, missing
 * attachments in find_broken_links, list_attachments (unused ones too),
 * and read_attachment: images byte for byte, made smaller, refused
 * (a decompression bomb under a memory cap, a broken file), paths that
 * lead out of the vault; the decoder program (vaultd-image) missing,
 * crashing, answering garbage or running over its time, images read by
 * several threads at once and notes read and written while an image is
 * decoded.
 */
#include "testutil.h"
#include "attach.h"
#include "image.h"
#include "rpc.h"
#include "util.h"
#include "note_int.h" /* white-box: the note's fields */

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

static void json_deletep(cJSON **p)
{
	cJSON_Delete(*p);
}
#define _cleanup_json_ _cleanup_(json_deletep)

/* ---- PNG files made here (zlib, row by row): the tests' inputs ---------- */

typedef void (*row_fn)(unsigned y, unsigned char *row, size_t n);

static void be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static void chunk(FILE *f, const char *type, const unsigned char *d, size_t n)
{
	unsigned char b[4];
	be32(b, (uint32_t)n);
	fwrite(b, 1, 4, f);
	fwrite(type, 1, 4, f);
	if (n)
		fwrite(d, 1, n, f);
	uLong crc = crc32(0, (const Bytef *)type, 4);
	crc = crc32(crc, d, (uInt)n);
	be32(b, (uint32_t)crc);
	fwrite(b, 1, 4, f);
}

/* Gray (color 0) or RGB (color 2), depth bits a sample. */
static void write_png(const char *path, unsigned w, unsigned h, int depth,
		      int color, row_fn fn)
{
	FILE *f = fopen(path, "wb");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fwrite("\x89PNG\r\n\x1a\n", 1, 8, f);
	unsigned char ihdr[13] = {0};
	be32(ihdr, w);
	be32(ihdr + 4, h);
	ihdr[8] = (unsigned char)depth;
	ihdr[9] = (unsigned char)color;
	chunk(f, "IHDR", ihdr, 13);
	size_t rowlen = 1 + ((size_t)w * (color == 2 ? 3 : 1) * depth + 7) / 8;
	unsigned char *row = xcalloc(1, rowlen), out[1 << 16];
	z_stream z = {0};
	deflateInit(&z, Z_BEST_SPEED);
	for (unsigned y = 0; y <= h; y++) {
		if (y < h)
			fn(y, row + 1, rowlen - 1);
		z.next_in = row;
		z.avail_in = y < h ? (uInt)rowlen : 0;
		int r;
		do {
			z.next_out = out;
			z.avail_out = sizeof(out);
			r = deflate(&z, y < h ? Z_NO_FLUSH : Z_FINISH);
			if (sizeof(out) - z.avail_out)
				chunk(f, "IDAT", out,
				      sizeof(out) - z.avail_out);
		} while (y < h ? z.avail_in || !z.avail_out
			       : r != Z_STREAM_END);
	}
	deflateEnd(&z);
	free(row);
	chunk(f, "IEND", NULL, 0);
	fclose(f);
}

static void rows_zero(unsigned y, unsigned char *row, size_t n)
{
	memset(row, 0, n);
}

static void rows_ramp(unsigned y, unsigned char *row, size_t n)
{
	for (size_t i = 0; i < n; i++)
		row[i] = (unsigned char)(i + y);
}

static void rows_noise(unsigned y, unsigned char *row, size_t n)
{
	static uint32_t s = 12345;
	for (size_t i = 0; i < n; i++) {
		s = s * 1103515245u + 12345u;
		row[i] = (unsigned char)(s >> 16);
	}
}

static char *vpath(struct tvault *t, const char *rel)
{
	return xasprintf("%s/%s", t->dir, rel);
}

static void png_in(struct tvault *t, const char *rel, unsigned w, unsigned h,
		   int depth, int color, row_fn fn)
{
	_cleanup_free_ char *p = vpath(t, rel);
	tv_write(t, rel, ""); /* its folders */
	write_png(p, w, h, depth, color, fn);
}

static char *file_bytes(struct tvault *t, const char *rel, size_t *ret_len)
{
	_cleanup_free_ char *p = vpath(t, rel);
	FILE *f = fopen(p, "rb");
	if (!f)
		return NULL;
	struct sbuf b = {0};
	char buf[1 << 16];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		sb_add(&b, buf, n);
	fclose(f);
	*ret_len = b.len;
	return b.s ? sb_steal(&b) : xstrdup("");
}

/* Standard base64 back to bytes (malloc'd); NULL when s is not base64. */
static unsigned char *unbase64(const char *s, size_t *ret_len)
{
	static const char A[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				"abcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t n = strlen(s);
	if (n % 4)
		return NULL;
	unsigned char *out = xmalloc(n / 4 * 3 + 1);
	size_t len = 0;
	for (size_t i = 0; i < n; i += 4) {
		unsigned v = 0, pad = 0;
		for (size_t k = 0; k < 4; k++) {
			const char *c = s[i + k] ? strchr(A, s[i + k]) : NULL;
			if (s[i + k] == '=' && i + 4 == n && k >= 2)
				pad++;
			else if (!c || pad) {
				free(out);
				return NULL;
			}
			v = v << 6 | (c ? (unsigned)(c - A) : 0);
		}
		out[len++] = (unsigned char)(v >> 16);
		if (pad < 2)
			out[len++] = (unsigned char)(v >> 8);
		if (pad < 1)
			out[len++] = (unsigned char)v;
	}
	*ret_len = len;
	return out;
}

/* read_attachment's image: decoded bytes, type, and the PNG's size. */
struct got_image {
	unsigned char *bytes;
	size_t len;
	char mime[32];
	unsigned w, h;
};

static bool read_image(struct tvault *t, const char *path, struct got_image *g)
{
	_cleanup_free_ char *args = xasprintf("{\"path\":\"%s\"}", path);
	struct tool_result r;
	tv_call(t, "read_attachment", args, &r);
	const cJSON *b = cJSON_GetArrayItem(r.content, 0);
	const char *data = cJSON_GetStringValue(cJSON_GetObjectItem(b, "data"));
	bool ok = !r.is_error && data;
	if (ok) {
		g->bytes = unbase64(data, &g->len);
		CU_ASSERT_PTR_NOT_NULL_FATAL(g->bytes);
		snprintf(g->mime, sizeof(g->mime), "%s",
			 cJSON_GetStringValue(
				 cJSON_GetObjectItem(b, "mimeType")));
		g->w = g->h = 0;
		if (g->len > 24 && !memcmp(g->bytes + 12, "IHDR", 4)) {
			const unsigned char *p = g->bytes + 16;
			g->w = (unsigned)p[0] << 24 | p[1] << 16 | p[2] << 8 |
			       p[3];
			g->h = (unsigned)p[4] << 24 | p[5] << 16 | p[6] << 8 |
			       p[7];
		}
	} else {
		fprintf(stderr, "  read_attachment %s: %s\n", path, r.text);
	}
	tool_result_clear(&r);
	return ok;
}

/* ---- types and settings ------------------------------------------------- */

static void test_types(void)
{
	ASSERT_STR_EQ(attach_mime("a/b/Photo.PNG"), "image/png");
	ASSERT_STR_EQ(attach_mime("x.jpeg"), "image/jpeg");
	ASSERT_STR_EQ(attach_mime("doc.pdf"), "application/pdf");
	ASSERT_STR_EQ(attach_mime("noext"), "application/octet-stream");
	ASSERT_STR_EQ(attach_mime(".hidden"), "application/octet-stream");
	CU_ASSERT_EQUAL(attach_kind("a.webp"), ATTACH_IMAGE);
	CU_ASSERT_EQUAL(attach_kind("a.gif"), ATTACH_IMAGE);
	CU_ASSERT_EQUAL(attach_kind("a.svg"), ATTACH_SVG);
	CU_ASSERT_EQUAL(attach_kind("a.bmp"), ATTACH_OTHER);
	CU_ASSERT_EQUAL(attach_kind("a.pdf"), ATTACH_OTHER);
}

static char *folder_with(const char *app_json)
{
	struct tvault t;
	tv_init(&t);
	if (app_json)
		tv_write(&t, ".obsidian/app.json", app_json);
	tv_open(&t);
	char *f = attach_folder(vault_rootfd(t.v));
	tv_close(&t);
	return f;
}

static void test_attachment_folder(void)
{
	static const struct {
		const char *json, *want;
	} cases[] = {
		{NULL, ""},
		{"{}", ""},
		{"{\"attachmentFolderPath\":\"/\"}", ""},
		{"{\"attachmentFolderPath\":\"assets/img/\"}", "assets/img"},
		{"{\"attachmentFolderPath\":\"./\"}", "./"},
		{"{\"attachmentFolderPath\":\"./files\"}", "./files"},
		{"not json", ""},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		_cleanup_free_ char *f = folder_with(cases[i].json);
		ASSERT_STR_EQ(f, cases[i].want);
	}
}

static void test_find(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "a/pic.png", "x");
	tv_write(&t, "assets/pic.png", "x");
	tv_write(&t, "deep/er/only.pdf", "x");
	tv_write(&t, "b/only2.pdf", "x");
	tv_write(&t, "c/only2.pdf", "x");
	tv_write(&t, "N.md", "x");
	tv_open(&t);
	struct index *ix = vault_index(t.v);
	vault_read_lock(t.v);
	/* A path, case-insensitive. */
	const struct note *e = attach_find(ix, "", "ASSETS/Pic.png");
	ASSERT_STR_EQ(e ? e->path : NULL, "assets/pic.png");
	/* A name: the attachment folder first, else the shortest path. */
	e = attach_find(ix, "assets", "pic.png");
	ASSERT_STR_EQ(e ? e->path : NULL, "assets/pic.png");
	e = attach_find(ix, "", "pic.png");
	ASSERT_STR_EQ(e ? e->path : NULL, "a/pic.png");
	e = attach_find(ix, "./", "pic.png");
	ASSERT_STR_EQ(e ? e->path : NULL, "a/pic.png");
	e = attach_find(ix, "", "only.pdf");
	ASSERT_STR_EQ(e ? e->path : NULL, "deep/er/only.pdf");
	e = attach_find(ix, "", "only2.pdf");
	ASSERT_STR_EQ(e ? e->path : NULL, "b/only2.pdf");
	/* Not attachments: a note, a missing file, a path that is not. */
	CU_ASSERT_PTR_NULL(attach_find(ix, "", "N.md"));
	CU_ASSERT_PTR_NULL(attach_find(ix, "", "N"));
	CU_ASSERT_PTR_NULL(attach_find(ix, "", "gone.png"));
	CU_ASSERT_PTR_NULL(attach_find(ix, "", "x/pic.png"));
	vault_read_unlock(t.v);
	tv_close(&t);
}

/* ---- links: metadata, broken links, listing ----------------------------- */

static const char *LINKS_NOTE =
	"# Links\n"
	"![[pic.png]] and [[doc.pdf|the doc]] and ![](a%20b.png)\n"
	"![[missing.png]] [[gone.pdf]] [[Other]] ![[Other]] [[pic.png]]\n"
	"`![[in code.png]]`\n";

static struct tvault links_vault(void)
{
	struct tvault t;
	tv_init(&t);
	tv_write(&t, "Links.md", LINKS_NOTE);
	tv_write(&t, "Other.md", "# Other\n");
	tv_write(&t, "assets/pic.png", "x");
	tv_write(&t, "doc.pdf", "%PDF");
	tv_write(&t, "a b.png", "x");
	tv_write(&t, "assets/unused.jpg", "xyz");
	tv_write(&t, "assets/sub/old.gif", "x");
	tv_write(&t, ".obsidian/app.json",
		 "{\"attachmentFolderPath\":\"assets\"}");
	tv_open(&t);
	return t;
}

static void test_metadata(void)
{
	struct tvault t = links_vault();
	_cleanup_json_ cJSON *m =
		tv_call_json(&t, "get_note_metadata", "{\"name\":\"Links\"}");
	CU_ASSERT_TRUE(json_equal_text(
		cJSON_GetObjectItem(m, "embeds"),
		"[\"pic.png\",\"a b.png\",\"missing.png\",\"Other\"]"));
	CU_ASSERT_TRUE(json_equal_text(
		cJSON_GetObjectItem(m, "attachments"),
		"[{\"target\":\"pic.png\",\"path\":\"assets/pic.png\"},"
		"{\"target\":\"doc.pdf\",\"path\":\"doc.pdf\"},"
		"{\"target\":\"a b.png\",\"path\":\"a b.png\"},"
		"{\"target\":\"missing.png\",\"path\":null},"
		"{\"target\":\"gone.pdf\",\"path\":null}]"));
	tv_close(&t);
}

static void test_broken_links(void)
{
	struct tvault t = links_vault();
	_cleanup_json_ cJSON *b = tv_call_json(&t, "find_broken_links", "{}");
	CU_ASSERT_TRUE(json_equal_text(
		b, "[{\"source\":\"Links\",\"target\":\"missing.png\"},"
		   "{\"source\":\"Links\",\"target\":\"gone.pdf\"}]"));
	/* The file comes: the link is whole. */
	tv_write(&t, "missing.png", "x");
	tv_reindex(&t);
	_cleanup_json_ cJSON *b2 = tv_call_json(&t, "find_broken_links", "{}");
	CU_ASSERT_TRUE(json_equal_text(
		b2, "[{\"source\":\"Links\",\"target\":\"gone.pdf\"}]"));
	tv_close(&t);
}

static char *listed(struct tvault *t, const char *args)
{
	_cleanup_json_ cJSON *r = tv_call_json(t, "list_attachments", args);
	struct sbuf b = {0};
	const cJSON *a;
	cJSON_ArrayForEach(a, cJSON_GetObjectItem(r, "attachments"))
	{
		const cJSON *sz = cJSON_GetObjectItem(a, "size");
		sb_printf(&b, "%s%s %s %.0f", b.len ? "," : "",
			  cJSON_GetObjectItem(a, "path")->valuestring,
			  cJSON_GetObjectItem(a, "type")->valuestring,
			  sz ? sz->valuedouble : -1);
	}
	sb_printf(&b, " total=%.0f",
		  cJSON_GetNumberValue(cJSON_GetObjectItem(r, "total")));
	return sb_steal(&b);
}

static void test_list(void)
{
	struct tvault t = links_vault();
	_cleanup_free_ char *all = listed(&t, "{}");
	ASSERT_STR_EQ(all, "a b.png image/png 1,assets/pic.png image/png 1,"
			   "assets/sub/old.gif image/gif 1,"
			   "assets/unused.jpg image/jpeg 3,"
			   "doc.pdf application/pdf 4 total=5");
	_cleanup_free_ char *unused = listed(&t, "{\"unused\":true}");
	ASSERT_STR_EQ(unused, "assets/sub/old.gif image/gif 1,"
			      "assets/unused.jpg image/jpeg 3 total=2");
	_cleanup_free_ char *in = listed(&t, "{\"folder\":\"Assets/sub/\"}");
	ASSERT_STR_EQ(in, "assets/sub/old.gif image/gif 1 total=1");
	_cleanup_free_ char *page =
		listed(&t, "{\"limit\":2,\"offset\":1,\"unused\":false}");
	ASSERT_STR_EQ(page, "assets/pic.png image/png 1,"
			    "assets/sub/old.gif image/gif 1 total=5");
	/* A link made later: the file is used now. */
	_cleanup_json_ cJSON *ap = tv_call_json(
		&t, "append_note",
		"{\"name\":\"Other\",\"text\":\"![](assets/unused.jpg)\"}");
	CU_ASSERT_PTR_NOT_NULL(ap);
	_cleanup_free_ char *unused2 = listed(&t, "{\"unused\":true}");
	ASSERT_STR_EQ(unused2, "assets/sub/old.gif image/gif 1 total=1");
	_cleanup_free_ char *e =
		tv_call_err(&t, "list_attachments", "{\"folder\":\"../x\"}");
	ASSERT_CONTAINS(e, "Invalid folder");
	tv_close(&t);
}

/* ---- read_attachment ----------------------------------------------------- */

static void test_read_refused(void)
{
	struct tvault t = links_vault();
	_cleanup_free_ char *out = xasprintf("%s.outside.png", t.dir);
	FILE *f = fopen(out, "w");
	fputs("secret", f);
	fclose(f);
	_cleanup_free_ char *ln = vpath(&t, "assets/link.png");
	CU_ASSERT_EQUAL(symlink(out, ln), 0);
	tv_reindex(&t);
	static const struct {
		const char *args, *want;
	} cases[] = {
		{"{\"path\":\"../x.png\"}", "'..' is not allowed"},
		{"{\"path\":\"/etc/passwd\"}", "Invalid path"},
		{"{\"path\":\"assets/link.png\"}", "is a symlink"},
		{"{\"path\":\".obsidian/app.json\"}", "inside .obsidian"},
		{"{\"path\":\"x/.git/config\"}", "inside .git"},
		{"{\"path\":\"Links.md\"}", "is a note"},
		{"{\"path\":\"assets\"}", "is a folder"},
		{"{\"path\":\"nothing.png\"}", "Attachment not found"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		_cleanup_free_ char *e =
			tv_call_err(&t, "read_attachment", cases[i].args);
		if (!e || !strstr(e, cases[i].want))
			fprintf(stderr, "  %s: %s\n", cases[i].args,
				e ? e : "(no error)");
		ASSERT_CONTAINS(e, cases[i].want);
		ASSERT_NOT_CONTAINS(e, "secret");
	}
	unlink(out);
	tv_close(&t);
}

static void test_read_kinds(void)
{
	struct tvault t = links_vault();
	static const char svg[] = "<svg xmlns=\"http://www.w3.org/2000/svg\">"
				  "<rect width=\"4\" height=\"4\"/></svg>\n";
	tv_write(&t, "assets/d.svg", svg);
	tv_reindex(&t);
	struct tool_result r;
	tv_call(&t, "read_attachment", "{\"path\":\"d.svg\"}", &r);
	CU_ASSERT_FALSE(r.is_error);
	ASSERT_STR_EQ(r.text, svg);
	ASSERT_CONTAINS(r.info, "image/svg+xml");
	CU_ASSERT_PTR_NULL(r.content);
	tool_result_clear(&r);
	tv_call(&t, "read_attachment", "{\"path\":\"doc.pdf\"}", &r);
	CU_ASSERT_FALSE(r.is_error);
	CU_ASSERT_TRUE(json_equal_text(
		r.content, "[{\"type\":\"resource_link\",\"path\":\"doc.pdf\","
			   "\"name\":\"doc.pdf\",\"mimeType\":"
			   "\"application/pdf\",\"size\":4}]"));
	tool_result_clear(&r);
	tv_close(&t);
}

static void test_read_small(void)
{
	struct tvault t;
	tv_init(&t);
	png_in(&t, "img/ramp.png", 300, 200, 8, 2, rows_ramp);
	tv_open(&t);
	struct got_image g;
	CU_ASSERT_FATAL(read_image(&t, "ramp.png", &g));
	size_t len;
	_cleanup_free_ char *want = file_bytes(&t, "img/ramp.png", &len);
	CU_ASSERT_EQUAL(g.len, len);
	CU_ASSERT(want && g.len == len && !memcmp(g.bytes, want, len));
	ASSERT_STR_EQ(g.mime, "image/png");
	free(g.bytes);
	tv_close(&t);
}

/* Big, huge and broken images, in a child with bounded memory. */
static void capped_images(void *ud)
{
	struct tvault *t = ud;
	tv_open(t);
	struct got_image g;
	/* Wider than clients take: made smaller, still whole. */
	CU_ASSERT(read_image(t, "wide.png", &g));
	ASSERT_STR_EQ(g.mime, "image/png");
	CU_ASSERT_EQUAL(g.w, IMAGE_MAX_SIDE);
	CU_ASSERT_EQUAL(g.h, 133);
	free(g.bytes);
	/* Over the data limit (noise does not compress): smaller until
	 * it fits. */
	CU_ASSERT(read_image(t, "noise.png", &g));
	CU_ASSERT(g.len <= IMAGE_MAX_DATA / 4 * 3);
	CU_ASSERT(g.w > 100 && g.w < 2200 && g.w == g.h);
	free(g.bytes);
	/* 30000 x 30000 in 110 KB: refused before it is decoded. */
	_cleanup_free_ char *e =
		tv_call_err(t, "read_attachment", "{\"path\":\"bomb.png\"}");
	ASSERT_CONTAINS(e, "30000 x 30000 pixels");
	ASSERT_CONTAINS(e, "megapixels are not decoded");
	/* Cut short: the header reads, the pixels do not. */
	_cleanup_free_ char *e2 =
		tv_call_err(t, "read_attachment", "{\"path\":\"cut.png\"}");
	ASSERT_CONTAINS(e2, "Cannot send 'cut.png' as an image");
	_cleanup_free_ char *e3 =
		tv_call_err(t, "read_attachment", "{\"path\":\"text.png\"}");
	ASSERT_CONTAINS(e3, "not an image libvips can read");
	/* And the next image is read as ever. */
	CU_ASSERT(read_image(t, "wide.png", &g));
	free(g.bytes);
	tv_close(t);
}

static void test_read_big(void)
{
#if defined(__SANITIZE_THREAD__)
	/* The decoder is built with ThreadSanitizer too, libvips and its
	 * codecs are not: it sees each hand-over of pixels between
	 * libvips's worker and the decoder's code as a race, and weighing
	 * each one makes these images run over the decoder's time limit.
	 * The small ones run. */
	fputs("  skipped under ThreadSanitizer (libvips is not "
	      "instrumented)\n",
	      stderr);
	return;
#endif
	struct tvault t;
	tv_init(&t);
	png_in(&t, "wide.png", 12000, 200, 8, 0, rows_ramp);
	png_in(&t, "noise.png", 2200, 2200, 8, 2, rows_noise);
	png_in(&t, "bomb.png", 30000, 30000, 1, 0, rows_zero);
	png_in(&t, "cut.png", 600, 600, 8, 2, rows_noise);
	_cleanup_free_ char *cut = vpath(&t, "cut.png");
	CU_ASSERT_EQUAL(truncate(cut, 4000), 0);
	tv_write(&t, "text.png", "not a png at all\n");
	struct stat st;
	_cleanup_free_ char *bomb = vpath(&t, "bomb.png");
	CU_ASSERT(stat(bomb, &st) == 0 && st.st_size < 1000000);
	/* Decoding the bomb would take 900 MB. */
	CU_ASSERT_TRUE(run_capped(capped_images, &t, 768u << 20, 120));
	tv_close(&t);
}

/* ---- the decoder program: missing, crashing, slow, shared ------------- */

/* The decoder the build made (meson sets it), put back after a test
 * that replaced it. */
static char *real_helper;

static void restore_helper(void)
{
	if (real_helper)
		setenv("VAULTD_IMAGE_HELPER", real_helper, 1);
	else
		unsetenv("VAULTD_IMAGE_HELPER");
	unsetenv("VAULTD_IMAGE_TIMEOUT_MS");
}

/* A stand-in decoder: a shell script under .helpers/ (not an
 * attachment), made the one image.c starts. */
static void use_helper(struct tvault *t, const char *name, const char *script)
{
	_cleanup_free_ char *rel = xasprintf(".helpers/%s", name);
	_cleanup_free_ char *text = xasprintf("#!/bin/sh\n%s\n", script);
	tv_write(t, rel, text);
	_cleanup_free_ char *p = vpath(t, rel);
	CU_ASSERT_EQUAL(chmod(p, 0755), 0);
	setenv("VAULTD_IMAGE_HELPER", p, 1);
}

/* Every decoder started was reaped (this process has no child). */
static bool no_children(void)
{
	return waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD;
}

static struct tvault small_image_vault(void)
{
	struct tvault t;
	tv_init(&t);
	png_in(&t, "a.png", 40, 30, 8, 2, rows_ramp);
	png_in(&t, "b.png", 300, 200, 8, 2, rows_noise);
	tv_write(&t, "Note.md", "# Note\nbody\n");
	tv_open(&t);
	return t;
}

static void test_helper_missing(void)
{
	struct tvault t = small_image_vault();
	_cleanup_free_ char *gone = vpath(&t, ".helpers/vaultd-image");
	setenv("VAULTD_IMAGE_HELPER", gone, 1);
	_cleanup_free_ char *e =
		tv_call_err(&t, "read_attachment", "{\"path\":\"a.png\"}");
	ASSERT_CONTAINS(e, "Cannot send 'a.png' as an image: the image "
			   "decoder ");
	ASSERT_CONTAINS(e, gone);
	ASSERT_CONTAINS(e, "cannot be run: No such file or directory");
	/* Without the override it is looked for next to this program
	 * (tests/, where the build does not put it), then where meson
	 * installs it. */
	unsetenv("VAULTD_IMAGE_HELPER");
	struct tool_result r;
	tv_call(&t, "read_attachment", "{\"path\":\"a.png\"}", &r);
	if (r.is_error) {
		ASSERT_CONTAINS(r.text, "the image decoder vaultd-image is not "
					"installed (looked for ");
		ASSERT_CONTAINS(r.text, "tests/vaultd-image and /");
	} else {
		fputs("  (an installed vaultd-image read it)\n", stderr);
		CU_ASSERT_PTR_NOT_NULL(r.content);
	}
	tool_result_clear(&r);
	restore_helper();
	struct got_image g;
	CU_ASSERT(read_image(&t, "a.png", &g));
	free(g.bytes);
	tv_close(&t);
}

static void test_helper_crash(void)
{
	struct tvault t = small_image_vault();
	static const struct {
		const char *script, *want;
	} cases[] = {
		{"kill -SEGV $$",
		 "the image decoder crashed (signal 11, Segmentation fault)"},
		{"exit 3", "the image decoder ended (exit status 3) without "
			   "an answer"},
		{"printf '%0100d' 0",
		 "the image decoder's answer is not one vaultd understands"},
		/* A whole header that claims 2 GB of image. */
		{"printf 'IMG1\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0"
		 "\\1\\0\\0\\0\\1\\0\\0\\0\\1\\0\\0\\0\\1\\0\\0\\0"
		 "\\377\\377\\377\\177'",
		 "the image decoder's answer is not one vaultd understands"},
		/* A header and half the image it announces. */
		{"printf 'IMG1\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0"
		 "\\1\\0\\0\\0\\1\\0\\0\\0\\1\\0\\0\\0\\1\\0\\0\\0"
		 "\\10\\0\\0\\0half'",
		 "the image decoder ended (exit status 0) without an answer"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		_cleanup_free_ char *name = xasprintf("bad%zu", i);
		use_helper(&t, name, cases[i].script);
		_cleanup_free_ char *e = tv_call_err(&t, "read_attachment",
						     "{\"path\":\"a.png\"}");
		if (!e || !strstr(e, cases[i].want))
			fprintf(stderr, "  %s: %s\n", cases[i].script,
				e ? e : "(no error)");
		ASSERT_CONTAINS(e, "Cannot send 'a.png' as an image: ");
		ASSERT_CONTAINS(e, cases[i].want);
	}
	CU_ASSERT(no_children());
	restore_helper();
	struct got_image g;
	CU_ASSERT(read_image(&t, "a.png", &g));
	free(g.bytes);
	tv_close(&t);
}

static void test_helper_timeout(void)
{
	struct tvault t = small_image_vault();
	use_helper(&t, "slow", "exec /bin/sleep 30");
	setenv("VAULTD_IMAGE_TIMEOUT_MS", "300", 1);
	uint64_t t0 = now_ns();
	struct tool_result r;
	tv_call(&t, "read_attachment", "{\"path\":\"a.png\"}", &r);
	double secs = (double)(now_ns() - t0) / 1e9;
	CU_ASSERT(r.is_error);
	ASSERT_CONTAINS(r.text, "the image decoder did not finish within "
				"300 ms and was stopped");
	CU_ASSERT_EQUAL(r.code, RPC_TIMEOUT);
	CU_ASSERT(secs < 5);
	tool_result_clear(&r);
	CU_ASSERT(no_children());
	restore_helper();
	tv_close(&t);
}

struct bg_read {
	struct tvault *t;
	const char *path;
	struct tool_result r;
	bool done;
};

static void *bg_read(void *ud)
{
	struct bg_read *b = ud;
	_cleanup_free_ char *args = xasprintf("{\"path\":\"%s\"}", b->path);
	tv_call(b->t, "read_attachment", args, &b->r);
	__atomic_store_n(&b->done, true, __ATOMIC_RELEASE);
	return NULL;
}

/* While a decoder runs, notes are read and written as ever. */
static void test_note_during_image(void)
{
	struct tvault t = small_image_vault();
	use_helper(&t, "slow", "exec /bin/sleep 30");
	setenv("VAULTD_IMAGE_TIMEOUT_MS", "3000", 1);
	struct bg_read b = {.t = &t, .path = "a.png"};
	pthread_t th;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, bg_read, &b), 0);
	usleep(200 * 1000);
	uint64_t t0 = now_ns();
	struct tool_result r;
	tv_call(&t, "read_note", "{\"name\":\"Note\"}", &r);
	CU_ASSERT_FALSE(r.is_error);
	ASSERT_CONTAINS(r.text, "body");
	tool_result_clear(&r);
	tv_call(&t, "append_note", "{\"name\":\"Note\",\"text\":\"more\"}", &r);
	CU_ASSERT_FALSE(r.is_error);
	tool_result_clear(&r);
	double secs = (double)(now_ns() - t0) / 1e9;
	CU_ASSERT(secs < 1.5);
	CU_ASSERT_FALSE(__atomic_load_n(&b.done, __ATOMIC_ACQUIRE));
	pthread_join(th, NULL);
	CU_ASSERT(b.r.is_error);
	ASSERT_CONTAINS(b.r.text, "did not finish within 3000 ms");
	tool_result_clear(&b.r);
	_cleanup_free_ char *text = tv_read(&t, "Note.md");
	ASSERT_CONTAINS(text, "more");
	CU_ASSERT(no_children());
	restore_helper();
	tv_close(&t);
}

/* Four threads, two images: more callers than decoders run at once. */
static void test_images_at_once(void)
{
	struct tvault t = small_image_vault();
	struct bg_read b[4];
	pthread_t th[4];
	for (size_t i = 0; i < 4; i++) {
		b[i] = (struct bg_read){.t = &t,
					.path = i % 2 ? "b.png" : "a.png"};
		CU_ASSERT_EQUAL_FATAL(
			pthread_create(&th[i], NULL, bg_read, &b[i]), 0);
	}
	for (size_t i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		CU_ASSERT_FALSE(b[i].r.is_error);
		const cJSON *blk = cJSON_GetArrayItem(b[i].r.content, 0);
		const char *data =
			cJSON_GetStringValue(cJSON_GetObjectItem(blk, "data"));
		size_t n = 0, want_n = 0;
		_cleanup_free_ unsigned char *got =
			data ? unbase64(data, &n) : NULL;
		_cleanup_free_ char *want = file_bytes(&t, b[i].path, &want_n);
		CU_ASSERT(got && want && n == want_n && !memcmp(got, want, n));
		tool_result_clear(&b[i].r);
	}
	CU_ASSERT(no_children());
	tv_close(&t);
}

int main(void)
{
	const char *helper = getenv("VAULTD_IMAGE_HELPER");
	real_helper = helper ? xstrdup(helper) : NULL;
	static const struct test_case tests[] = {
		/* First: the capped child starts libvips itself. */
		{"read_big", test_read_big},
		{"types", test_types},
		{"attachment_folder", test_attachment_folder},
		{"find", test_find},
		{"metadata", test_metadata},
		{"broken_links", test_broken_links},
		{"list", test_list},
		{"read_refused", test_read_refused},
		{"read_kinds", test_read_kinds},
		{"read_small", test_read_small},
		{"helper_missing", test_helper_missing},
		{"helper_crash", test_helper_crash},
		{"helper_timeout", test_helper_timeout},
		{"note_during_image", test_note_during_image},
		{"images_at_once", test_images_at_once},
	};
	return run_tests("attach", tests, ARRAY_SIZE(tests));
}
