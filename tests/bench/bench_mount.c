/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench_mount NATIVE MOUNT PLAIN [CREATES]: the same operations on the
 * vault folder itself (NATIVE) and through vaultd's mount of it (MOUNT);
 * prints times, the mount/native ratios and the goals. NATIVE holds a
 * vault's notes (any *.md outside hidden folders and files/) and may
 * hold files/f00000.txt..f09999.txt and big.bin for the stat, readdir and
 * sequential read figures (run-mount-bench.sh makes them in its first
 * vault). PLAIN is an empty folder on the same file system, outside the
 * vault, where the native side of the guarded creates goes (a note made
 * in the vault folder itself would keep vaultd busy meanwhile), and where
 * one safe write of a note is timed too: the floor under a guarded create,
 * whose text must be as durable.
 *
 * Goals (fast-at-any-size issue and mount issue): guarded
 * create+write+close of a note <= 0.6 ms each, warm read of every note
 * <= 3x native, stat <= 15x native, warm sequential re-read >= 30 % of
 * native.
 */
#include <dirent.h>
#include <stdbool.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_d);
	return v[n / 2];
}

/* The vault's notes, relative to NATIVE. */
static char **notes;
static size_t nnotes, capnotes, rootlen;
static uint64_t note_bytes;

static int collect(const char *p, const struct stat *st, int flag,
		   struct FTW *f)
{
	const char *rel = p + rootlen;
	const char *base = p + f->base;
	if (flag == FTW_D && f->level > 0 &&
	    (base[0] == '.' || !strcmp(rel, "/files")))
		return FTW_SKIP_SUBTREE;
	size_t l = strlen(base);
	if (flag != FTW_F || l < 4 || strcmp(base + l - 3, ".md"))
		return FTW_CONTINUE;
	if (nnotes == capnotes) {
		capnotes = capnotes ? 2 * capnotes : 1024;
		notes = realloc(notes, capnotes * sizeof(*notes));
	}
	notes[nnotes++] = strdup(rel);
	note_bytes += (uint64_t)st->st_size;
	return FTW_CONTINUE;
}

static double stat_all(const char *root)
{
	char p[4096];
	struct stat st;
	double t = now_ms();
	for (int i = 0; i < 10000; i++) {
		snprintf(p, sizeof(p), "%s/files/f%05d.txt", root, i);
		if (stat(p, &st) < 0) {
			perror(p);
			exit(1);
		}
	}
	return (now_ms() - t) * 1000.0 / 10000; /* us per stat */
}

static double list_dir(const char *root)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/files", root);
	double t = now_ms();
	DIR *d = opendir(p);
	int n = 0;
	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	if (n < 10000) {
		fprintf(stderr, "%s: %d entries\n", p, n);
		exit(1);
	}
	return now_ms() - t;
}

/* open + read to the end + close of every note; ms. */
static double read_notes(const char *root)
{
	char p[8192];
	static char buf[1 << 16];
	double t = now_ms();
	for (size_t i = 0; i < nnotes; i++) {
		snprintf(p, sizeof(p), "%s%s", root, notes[i]);
		int fd = open(p, O_RDONLY);
		if (fd < 0) {
			perror(p);
			exit(1);
		}
		while (read(fd, buf, sizeof(buf)) > 0) {
		}
		close(fd);
	}
	return now_ms() - t;
}

static double seq_read(const char *root)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/big.bin", root);
	static char buf[1 << 20];
	int fd = open(p, O_RDONLY);
	if (fd < 0) {
		perror(p);
		exit(1);
	}
	double t = now_ms();
	ssize_t r;
	size_t total = 0;
	while ((r = read(fd, buf, sizeof(buf))) > 0)
		total += (size_t)r;
	double ms = now_ms() - t;
	close(fd);
	return (double)total / (1 << 20) / (ms / 1000.0); /* MB/s */
}

/* create + write 4 KiB + close of new notes first..first+n-1 in dir (each
 * text its own, as notes are); the time of each in t[]. */
static void creates(const char *dir, int first, int n, double *t)
{
	char p[4096], body[4096];
	for (int i = first; i < first + n; i++) {
		int h = snprintf(body, sizeof(body),
				 "---\ntags: [project]\n---\n# Note %d\n\n", i);
		for (int j = h; j < (int)sizeof(body); j++)
			body[j] = (j % 64 == 63)
					  ? '\n'
					  : (char)('a' + (i * 7 + j) % 26);
		snprintf(p, sizeof(p), "%s/n%06d.md", dir, i);
		double a = now_ms();
		int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || write(fd, body, sizeof(body)) != sizeof(body) ||
		    close(fd) < 0) {
			perror(p);
			exit(1);
		}
		t[i] = now_ms() - a;
	}
}

/* The floor of a guarded create: one safe write of the same text in dir
 * (temp file, fsync, rename over the note, fsync of the folder), the
 * time of each in t[]. */
static void safe_writes(const char *dir, int first, int n, double *t)
{
	char p[4096], tmp[4096], body[4096];
	memset(body, 'a', sizeof(body));
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	if (dfd < 0) {
		perror(dir);
		exit(1);
	}
	for (int i = first; i < first + n; i++) {
		snprintf(p, sizeof(p), "%s/s%06d.md", dir, i);
		snprintf(tmp, sizeof(tmp), "%s/.s%06d.md.tmp", dir, i);
		double a = now_ms();
		int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0 || write(fd, body, sizeof(body)) != sizeof(body) ||
		    fsync(fd) < 0 || close(fd) < 0 || rename(tmp, p) < 0 ||
		    fsync(dfd) < 0) {
			perror(tmp);
			exit(1);
		}
		t[i] = now_ms() - a;
	}
	close(dfd);
}

static double mean(const double *v, size_t n)
{
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s += v[i];
	return n ? s / (double)n : 0;
}

/* stat and readdir of files/ (10k small files). */
static void bench_files(const char *nat, const char *mnt)
{
	double sn1 = stat_all(nat), sm1 = stat_all(mnt);
	double sn2 = stat_all(nat), sm2 = stat_all(mnt);
	printf("stat, first time:     native %7.2f us, mount %7.2f us  "
	       "(%.1fx)\n",
	       sn1, sm1, sm1 / sn1);
	printf("stat, again:          native %7.2f us, mount %7.2f us  "
	       "(%.1fx, goal <= 15x)\n",
	       sn2, sm2, sm2 / sn2);
	double ln = list_dir(nat), lm = list_dir(mnt);
	double ln2 = list_dir(nat), lm2 = list_dir(mnt);
	printf("readdir 10k entries:  native %7.2f ms, mount %7.2f ms  "
	       "(%.1fx); again %.2f / %.2f ms (%.1fx)\n",
	       ln, lm, lm / ln, ln2, lm2, lm2 / ln2);
}

/* Every note: the first time through the mount (kernel caches cold),
 * then warm, alternating sides; the median of 5. */
static void bench_notes(const char *nat, const char *mnt)
{
	/* vaultd (started with this limit too) holds a descriptor for each
	 * file the kernel has looked up through the mount. */
	struct rlimit lim;
	if (getrlimit(RLIMIT_NOFILE, &lim) == 0 &&
	    lim.rlim_cur != RLIM_INFINITY && nnotes + 2000 > lim.rlim_cur) {
		printf("read of all %zu notes: not measured, vaultd's "
		       "descriptor limit here is %llu (vaultd@.service gives "
		       "524288)\n",
		       nnotes, (unsigned long long)lim.rlim_cur);
		return;
	}
	double rn1 = read_notes(nat), rm1 = read_notes(mnt);
	double rn[5], rm[5];
	for (int i = 0; i < 5; i++) {
		rn[i] = read_notes(nat);
		rm[i] = read_notes(mnt);
	}
	double rnw = median(rn, 5), rmw = median(rm, 5);
	printf("read of all %zu notes, first time: native %.2f ms, mount "
	       "%.2f ms (%.1fx)\n",
	       nnotes, rn1, rm1, rm1 / rn1);
	printf("warm read of all %zu notes: native %.2f ms (%.2f us each), "
	       "mount %.2f ms (%.2f us each)  (%.1fx, goal <= 3x)\n",
	       nnotes, rnw, rnw * 1000 / (double)nnotes, rmw,
	       rmw * 1000 / (double)nnotes, rmw / rnw);
}

/* Sequential read of big.bin, cold then warm. */
static void bench_seq(const char *nat, const char *mnt)
{
	double qn = seq_read(nat), qm = seq_read(mnt);
	double qn2 = seq_read(nat), qm2 = seq_read(mnt);
	printf("sequential read 256 MB: native %6.0f MB/s, mount %6.0f MB/s "
	       "(%.0f %%)\n",
	       qn, qm, 100 * qm / qn);
	printf("warm sequential re-read: native %6.0f MB/s, mount %6.0f MB/s "
	       "(%.0f %%, goal >= 30 %%)\n",
	       qn2, qm2, 100 * qm2 / qn2);
}

/* Guarded creates through the mount against plain ones, in turns of a
 * tenth, so that both see the same machine. */
static int bench_creates(const char *mnt, const char *plain, int ncreate)
{
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/bench-new", mnt);
	if (mkdir(dir, 0755) < 0) {
		perror(dir);
		return -1;
	}
	double *tn = calloc((size_t)ncreate, sizeof(double));
	double *tm = calloc((size_t)ncreate, sizeof(double));
	double *ts = calloc((size_t)ncreate, sizeof(double));
	int step = ncreate >= 10 ? ncreate / 10 : ncreate;
	for (int i = 0; i < ncreate; i += step) {
		int k = i + step <= ncreate ? step : ncreate - i;
		creates(plain, i, k, tn);
		safe_writes(plain, i, k, ts);
		creates(dir, i, k, tm);
	}
	double cnm = mean(tn, (size_t)ncreate), cmm = mean(tm, (size_t)ncreate);
	double cn = median(tn, (size_t)ncreate),
	       cm = median(tm, (size_t)ncreate);
	printf("guarded create+write+close of a 4 KB note (%d): native "
	       "median %.3f ms (mean %.3f, p95 %.3f), mount median %.3f ms "
	       "(mean %.3f, p95 %.3f)  (goal <= 0.6 ms)\n",
	       ncreate, cn, cnm, tn[(ncreate * 95) / 100], cm, cmm,
	       tm[(ncreate * 95) / 100]);
	double cs = median(ts, (size_t)ncreate); /* sorts ts, for the p95 */
	printf("one safe write of a 4 KB note on this disk (temp, fsync, "
	       "rename, fsync of the folder): median %.3f ms (p95 %.3f)\n",
	       cs, ts[(ncreate * 95) / 100]);
	free(tn);
	free(tm);
	free(ts);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 4 && argc != 5) {
		fprintf(stderr,
			"usage: bench_mount NATIVE MOUNT PLAIN [CREATES]\n");
		return 2;
	}
	const char *nat = argv[1], *mnt = argv[2], *plain = argv[3];
	int ncreate = argc == 5 ? atoi(argv[4]) : 1000;
	rootlen = strlen(nat);
	nftw(nat, collect, 64, FTW_PHYS | FTW_ACTIONRETVAL);
	if (!nnotes) {
		fprintf(stderr, "%s: no notes\n", nat);
		return 1;
	}
	printf("%zu notes, %.1f MB of markdown\n", nnotes,
	       (double)note_bytes / 1e6);
	char files[4096];
	struct stat st;
	snprintf(files, sizeof(files), "%s/files", nat);
	bool have_files = stat(files, &st) == 0;
	if (have_files)
		bench_files(nat, mnt);
	bench_notes(nat, mnt);
	if (have_files)
		bench_seq(nat, mnt);
	return bench_creates(mnt, plain, ncreate) < 0 ? 1 : 0;
}
