/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench_mount NATIVE MOUNT: the same operations on the vault folder itself
 * (NATIVE) and through vaultd's mount of it (MOUNT); prints times and the
 * mount/native ratios. NATIVE must hold files/f00000.txt..f09999.txt,
 * notes/n0000.md..n1999.md and big.bin (256 MiB) (run-mount-bench.sh
 * makes them). Goals (mount issue): stat <= 15x native, warm sequential
 * re-read >= 30 % of native, guarded note commit <= 1 ms median.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	while (readdir(d))
		n++;
	closedir(d);
	if (n < 10000)
		exit(1);
	return now_ms() - t;
}

static double read_notes(const char *root)
{
	char p[4096], buf[65536];
	double t = now_ms();
	for (int i = 0; i < 2000; i++) {
		snprintf(p, sizeof(p), "%s/notes/n%04d.md", root, i);
		int fd = open(p, O_RDONLY);
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
	double t = now_ms();
	ssize_t r;
	size_t total = 0;
	while ((r = read(fd, buf, sizeof(buf))) > 0)
		total += (size_t)r;
	double ms = now_ms() - t;
	close(fd);
	return (double)total / (1 << 20) / (ms / 1000.0); /* MB/s */
}

/* create + write 4 KiB + close of a new note; median ms per note */
static double commits(const char *root, const char *tag, int n, double *p95)
{
	char p[4096], body[4096];
	memset(body, 'x', sizeof(body));
	memcpy(body, "---\ntags: [bench]\n---\n# note\n", 29);
	for (int i = 30; i < 4096; i += 64)
		body[i] = '\n';
	double *t = calloc((size_t)n, sizeof(double));
	for (int i = 0; i < n; i++) {
		snprintf(p, sizeof(p), "%s/notes/%s%04d.md", root, tag, i);
		double a = now_ms();
		int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || write(fd, body, sizeof(body)) != sizeof(body) ||
		    close(fd) < 0) {
			perror(p);
			exit(1);
		}
		t[i] = now_ms() - a;
	}
	qsort(t, (size_t)n, sizeof(double), cmp_d);
	double med = t[n / 2];
	*p95 = t[(n * 95) / 100];
	free(t);
	return med;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: bench_mount NATIVE MOUNT\n");
		return 2;
	}
	const char *nat = argv[1], *mnt = argv[2];
	double sn1 = stat_all(nat), sm1 = stat_all(mnt);
	double sn2 = stat_all(nat), sm2 = stat_all(mnt);
	printf("stat, first time:     native %7.2f us, mount %7.2f us  (%.1fx)\n",
	       sn1, sm1, sm1 / sn1);
	printf("stat, again:          native %7.2f us, mount %7.2f us  (%.1fx, goal <= 15x)\n",
	       sn2, sm2, sm2 / sn2);
	double ln = list_dir(nat), lm = list_dir(mnt);
	double ln2 = list_dir(nat), lm2 = list_dir(mnt);
	printf("readdir 10k entries:  native %7.2f ms, mount %7.2f ms  (%.1fx); again %.2f / %.2f ms (%.1fx)\n",
	       ln, lm, lm / ln, ln2, lm2, lm2 / ln2);
	double rn = read_notes(nat), rm = read_notes(mnt);
	double rn2 = read_notes(nat), rm2 = read_notes(mnt);
	printf("open+read 2000 notes: native %7.2f ms, mount %7.2f ms  (%.1fx); again %.2f / %.2f ms (%.1fx)\n",
	       rn, rm, rm / rn, rn2, rm2, rm2 / rn2);
	double qn = seq_read(nat), qm = seq_read(mnt);
	double qn2 = seq_read(nat), qm2 = seq_read(mnt);
	printf("sequential read 256 MB: native %6.0f MB/s, mount %6.0f MB/s (%.0f %%)\n",
	       qn, qm, 100 * qm / qn);
	printf("warm sequential re-read: native %6.0f MB/s, mount %6.0f MB/s (%.0f %%, goal >= 30 %%)\n",
	       qn2, qm2, 100 * qm2 / qn2);
	double p95n, p95m;
	double cn = commits(nat, "native", 500, &p95n);
	double cm = commits(mnt, "mount", 500, &p95m);
	printf("create+write+close 4 KB note: native median %.3f ms (p95 %.3f), "
	       "mount (guarded) median %.3f ms (p95 %.3f)  (goal <= 1 ms median)\n",
	       cn, p95n, cm, p95m);
	return 0;
}
