/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * gen_vault DIR N [SEED]: write a realistic vault of N notes for the
 * benchmarks: nested folders, frontmatter (tags, aliases, dates), about
 * 1-2 KB per note (median ~1.5 KB), wikilinks with aliases and headings,
 * markdown links, a few broken links, inline tags, code blocks, some
 * Cyrillic and CJK text, and a few names shared by two notes. The text
 * mixes a small set of common words with a 20,000-word vocabulary drawn
 * with a Zipf distribution, as natural language is (a few words are
 * everywhere, most are rare), so search benchmarks see realistic posting
 * lists. Deterministic for a given seed.
 *
 * Sizes are mixed as in real vaults: besides the small notes, about one
 * note in 400 carries a long log (pasted transcripts, journals, exports)
 * that brings it to 100 KB - 2 MB, and about one in 50,000 to 5 - 20 MB.
 * Their logs come from a stream of their own, so the small notes are the
 * same as without them.
 *
 * Notes with frontmatter also carry typed properties for the property
 * query benchmarks (priority: number, due: date, some written 2026-3-7,
 * done: checkbox, rating), typed in .obsidian/types.json. They are drawn
 * from a hash of the note's number, not from the text's stream, so the
 * rest of the vault is as without them.
 *
 * About one note in three ends with a task list for the task benchmarks
 * (open, done with ✅, in progress, cancelled, nested; Tasks plugin due
 * and scheduled dates and priorities, inline tags), drawn the same way.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 11);
}

static uint32_t pick(uint32_t n)
{
	return n ? rnd() % n : 0;
}

/* The stream that decides the long notes and writes their logs. */
static uint64_t big_rng = 0xd1b54a32d192ed03ull, big_seed;

static void use_big_stream(bool on)
{
	static uint64_t saved;
	if (on) {
		saved = rng;
		rng = big_rng;
	} else {
		big_rng = rng;
		rng = saved;
	}
}

/* The typed properties of note i (its own hash, no stream). */
static void typed_props(FILE *f, size_t i)
{
	uint64_t h =
		(uint64_t)i * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 29;
	unsigned m = 1 + (unsigned)(h % 12), d = 1 + (unsigned)(h >> 8) % 28;
	fprintf(f, "priority: %u\n", 1 + (unsigned)(h >> 16) % 5);
	if ((h >> 24) % 3)
		fprintf(f,
			(h >> 28) % 2 ? "due: 2026-%u-%u\n"
				      : "due: 2026-%02u-%02u\n",
			m, d);
	fprintf(f, "done: %s\n", (h >> 32) % 4 ? "false" : "true");
	if ((h >> 36) % 2)
		fprintf(f, "rating: %u.%u\n", (unsigned)(h >> 40) % 5,
			(unsigned)(h >> 44) % 10);
}

static const char *const WORDS[];
static char **tags;
static size_t ntags;

/* Note i's hash for its typed properties and tasks (no stream). */
static uint64_t note_hash(size_t i, uint64_t salt)
{
	uint64_t h = (uint64_t)i * 0x9e3779b97f4a7c15ull + salt;
	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 29;
	return h;
}

/* Note i's task list, for about one note in three. */
static void task_list(FILE *f, size_t i)
{
	uint64_t h = note_hash(i, 0x7f4a7c159e3779b9ull);
	if (h % 3)
		return;
	static const char *const SYM[] = {" ", " ", " ", "x", "/", "-"};
	static const char *const PRIO[] = {"", "", " ⏫", " 🔼", " 🔽"};
	fputs("## Tasks\n\n", f);
	for (unsigned k = 0, m = 1 + (unsigned)(h >> 8) % 6; k < m; k++) {
		uint64_t t = note_hash(i * 8 + k, 0x2545f4914f6cdd1dull);
		const char *sym = SYM[t % 6];
		fprintf(f, "%s- [%s] %s the %s%s", (t >> 4) % 4 ? "" : "    ",
			sym, WORDS[(t >> 8) % 26 + 26], WORDS[(t >> 16) % 26],
			PRIO[(t >> 24) % 5]);
		if ((t >> 28) % 4)
			fprintf(f, " 📅 2026-%02u-%02u",
				1 + (unsigned)(t >> 32) % 12,
				1 + (unsigned)(t >> 36) % 28);
		if ((t >> 40) % 5 == 0)
			fprintf(f, " ⏳ 2026-%02u-%02u",
				1 + (unsigned)(t >> 44) % 12,
				1 + (unsigned)(t >> 48) % 28);
		if ((t >> 52) % 3 == 0)
			fprintf(f, " #%s", tags[(t >> 54) % ntags]);
		if (*sym == 'x')
			fprintf(f, " ✅ 2026-%02u-%02u",
				1 + (unsigned)(t >> 56) % 12,
				1 + (unsigned)(t >> 60) % 16);
		fputc('\n', f);
	}
	fputc('\n', f);
}

static const char *const WORDS[] = {
	"alpha",  "bravo",  "charlie",	"delta",   "echo",     "foxtrot",
	"garden", "harbor", "island",	"jungle",  "kernel",   "lantern",
	"meadow", "nebula", "orbit",	"prairie", "quartz",   "river",
	"summit", "timber", "umbra",	"valley",  "willow",   "xenon",
	"yonder", "zephyr", "project",	"meeting", "review",   "design",
	"index",  "search", "graph",	"note",	   "idea",     "draft",
	"plan",	  "budget", "research", "paper",   "method",   "result",
	"signal", "memory", "vector",	"syntax",  "protocol", "server",
	"client", "cache",  "thread",	"socket",  "buffer",   "stream",
	"token",  "проект", "заметка",	"встреча", "идея",     "東京",
	"会議",	  "研究",   "計画",
};
#define NWORDS (sizeof(WORDS) / sizeof(WORDS[0]))

static const char *const TAGROOTS[] = {
	"project", "area", "status", "topic",	 "person", "meeting", "idea",
	"reading", "work", "home",   "research", "draft",  "проект",  "研究",
};

static char **names; /* note names */
static char **paths; /* note paths without .md */
/* The Zipf vocabulary: pseudo-words made of syllables, rank r drawn
 * with weight 1/r. */
#define NVOCAB 20000
static char *vocab[NVOCAB];
static double cumw[NVOCAB];

static void make_vocab(void)
{
	static const char *const syl[] = {
		"ka",  "ri",  "mo",  "ten", "sa", "lu",	 "ve", "dor",
		"pi",  "na",  "gor", "el",  "tu", "bra", "si", "om",
		"fe",  "zan", "qui", "lo",  "ta", "mer", "ni", "ro",
		"cha", "vu",  "les", "di",  "po", "ar",
	};
	const size_t ns = sizeof(syl) / sizeof(*syl);
	double acc = 0;
	for (size_t r = 0; r < NVOCAB; r++) {
		char b[64] = "";
		size_t x = r;
		/* Rank -> syllables (base ns), at least two: unique words. */
		do {
			strcat(b, syl[x % ns]);
			x /= ns;
		} while (x);
		if (r < ns)
			strcat(b, syl[(r * 7 + 3) % ns]);
		vocab[r] = strdup(b);
		acc += 1.0 / (double)(r + 1);
		cumw[r] = acc;
	}
}

static const char *zipf_word(void)
{
	double u = (double)rnd() / 2097152.0 / 1024.0; /* [0, 1) */
	double target = u * cumw[NVOCAB - 1];
	size_t lo = 0, hi = NVOCAB - 1;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (cumw[mid] < target)
			lo = mid + 1;
		else
			hi = mid;
	}
	return vocab[lo];
}

static void word(FILE *f)
{
	if (pick(100) < 70)
		fputs(zipf_word(), f);
	else
		fputs(WORDS[pick(NWORDS)], f);
}

static void mkdirs(const char *p)
{
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s", p);
	for (char *s = buf + 1; *s; s++) {
		if (*s == '/') {
			*s = 0;
			if (mkdir(buf, 0755) < 0 && errno != EEXIST) {
				perror(buf);
				exit(1);
			}
			*s = '/';
		}
	}
	if (mkdir(buf, 0755) < 0 && errno != EEXIST) {
		perror(buf);
		exit(1);
	}
}

static void link_to(FILE *f, size_t n, size_t self)
{
	size_t t = pick((uint32_t)n);
	if (t == self)
		t = (t + 1) % n;
	uint32_t kind = pick(100);
	if (kind < 3)
		fprintf(f, "[[Missing %u]]", pick(500)); /* broken */
	else if (kind < 13)
		fprintf(f, "[[%s|%s]]", names[t], WORDS[pick(NWORDS)]);
	else if (kind < 20)
		fprintf(f, "[[%s#Summary]]", names[t]);
	else if (kind < 24)
		fprintf(f, "![[%s]]", names[t]);
	else if (kind < 30)
		fprintf(f, "[[%s]]", paths[t]);
	else
		fprintf(f, "[[%s]]", names[t]);
}

/* For about one note in 400, a log that brings it to 100 KB - 2 MB
 * (log-uniform); one in 50,000, to 5 - 20 MB. Dated entries of prose
 * with now and then a link or a tag, as a long journal has. */
static void long_log(FILE *f, size_t n, size_t self)
{
	/* Which notes: a hash of the note's number (spread evenly). */
	uint64_t h = (uint64_t)self * 0x9e3779b97f4a7c15ull + big_seed;
	h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
	h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
	uint32_t r = (uint32_t)((h ^ (h >> 31)) % 50000);
	use_big_stream(true);
	double lo = 0, hi = 0;
	if (r == 0) {
		lo = 5e6;
		hi = 2e7;
	} else if (r < 125) {
		lo = 1e5;
		hi = 2e6;
	}
	if (hi > 0) {
		double u = (double)pick(1u << 30) / (double)(1u << 30);
		long want = (long)(lo * pow(hi / lo, u));
		long start = ftell(f);
		fputs("\n## Log\n\n", f);
		for (uint32_t day = 0; ftell(f) - start < want; day++) {
			fprintf(f, "### 2025-%02u-%02u\n\n", 1 + day / 28 % 12,
				1 + day % 28);
			for (uint32_t w = 0, m = 80 + pick(200); w < m; w++) {
				if (w)
					fputc(' ', f);
				uint32_t k = pick(1000);
				if (k < 5)
					link_to(f, n, self);
				else if (k < 7)
					fprintf(f, "#%s",
						tags[pick((uint32_t)ntags)]);
				else
					word(f);
			}
			fputs(".\n\n", f);
		}
	}
	use_big_stream(false);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: gen_vault DIR N [SEED]\n");
		return 2;
	}
	const char *dir = argv[1];
	size_t n = strtoul(argv[2], NULL, 10);
	if (argc > 3)
		rng ^= strtoull(argv[3], NULL, 10) * 0x2545f4914f6cdd1dull;
	big_seed = rng;
	if (!n)
		return 2;
	make_vocab();
	/* An Obsidian vault: vaultd serves no other folder. */
	char *dot = malloc(strlen(dir) + sizeof("/.obsidian"));
	sprintf(dot, "%s/.obsidian", dir);
	mkdirs(dot);
	char *types = malloc(strlen(dot) + sizeof("/types.json"));
	sprintf(types, "%s/types.json", dot);
	FILE *tf = fopen(types, "w");
	if (!tf) {
		perror(types);
		return 1;
	}
	fputs("{\"types\": {\"priority\": \"number\", \"due\": \"date\", "
	      "\"done\": \"checkbox\", \"rating\": \"number\", "
	      "\"created\": \"date\", \"status\": \"text\"}}\n",
	      tf);
	fclose(tf);
	free(types);
	free(dot);
	/* Folders: about one per 40 notes, nested up to three levels. */
	size_t nfolders = n / 40 + 1;
	char **folders = calloc(nfolders, sizeof(char *));
	for (size_t i = 0; i < nfolders; i++) {
		char buf[512];
		if (i < 8 || pick(3) == 0) {
			snprintf(buf, sizeof(buf), "%s %zu",
				 WORDS[pick(NWORDS)], i);
		} else {
			const char *parent = folders[pick((uint32_t)i)];
			snprintf(buf, sizeof(buf), "%s/%s %zu", parent,
				 WORDS[pick(NWORDS)], i);
		}
		if (strchr(buf, '/') && strchr(strchr(buf, '/') + 1, '/') &&
		    strchr(strchr(strchr(buf, '/') + 1, '/') + 1, '/'))
			snprintf(buf, sizeof(buf), "%s %zu",
				 WORDS[pick(NWORDS)], i);
		folders[i] = strdup(buf);
	}
	ntags = 150;
	tags = calloc(ntags, sizeof(char *));
	for (size_t i = 0; i < ntags; i++) {
		char buf[128];
		const char *root =
			TAGROOTS[i % (sizeof(TAGROOTS) / sizeof(*TAGROOTS))];
		if (i < 14)
			snprintf(buf, sizeof(buf), "%s", root);
		else
			snprintf(buf, sizeof(buf), "%s/%s%zu", root,
				 WORDS[pick(NWORDS)], i);
		tags[i] = strdup(buf);
	}
	names = calloc(n, sizeof(char *));
	paths = calloc(n, sizeof(char *));
	for (size_t i = 0; i < n; i++) {
		char nb[256], pb[1024];
		/* About 1% of names are shared by two notes. */
		if (i > 10 && pick(100) == 0)
			snprintf(nb, sizeof(nb), "%s",
				 names[pick((uint32_t)i)]);
		else
			snprintf(nb, sizeof(nb), "%s %s %zu",
				 WORDS[pick(NWORDS)], WORDS[pick(NWORDS)], i);
		const char *folder = folders[pick((uint32_t)nfolders)];
		snprintf(pb, sizeof(pb), "%s/%s", folder, nb);
		names[i] = strdup(nb);
		paths[i] = strdup(pb);
	}
	size_t total = 0;
	for (size_t i = 0; i < n; i++) {
		char fp[4096];
		snprintf(fp, sizeof(fp), "%s/%s.md", dir, paths[i]);
		char *slash = strrchr(fp, '/');
		*slash = 0;
		mkdirs(fp);
		*slash = '/';
		FILE *f = fopen(fp, "w");
		if (!f) {
			perror(fp);
			return 1;
		}
		if (pick(100) < 85) {
			fputs("---\ntags:\n", f);
			for (uint32_t k = 0, m = 1 + pick(4); k < m; k++)
				fprintf(f, "  - %s\n",
					tags[pick((uint32_t)ntags)]);
			fprintf(f, "created: 2026-%02u-%02u\n", 1 + pick(12),
				1 + pick(28));
			if (pick(10) == 0)
				fprintf(f, "aliases: [%s %zu]\n",
					WORDS[pick(NWORDS)], i);
			if (pick(4) == 0)
				fputs("status: draft\n", f);
			typed_props(f, i);
			fputs("---\n", f);
		}
		fprintf(f, "# %s\n\n## Summary\n\n", names[i]);
		/* Paragraph count spread gives sizes of ~0.5 KB to ~5 KB. */
		uint32_t paras = 2 + pick(5) + (pick(8) == 0 ? pick(12) : 0);
		for (uint32_t p = 0; p < paras; p++) {
			uint32_t words = 25 + pick(40);
			for (uint32_t w = 0; w < words; w++) {
				if (w)
					fputc(' ', f);
				uint32_t r = pick(100);
				if (r < 5)
					link_to(f, n, i);
				else if (r < 6)
					fprintf(f, "#%s",
						tags[pick((uint32_t)ntags)]);
				else
					word(f);
			}
			fputs(".\n\n", f);
			if (p == 1 && pick(5) == 0)
				fputs("```\n[[Not A Link]] #not-a-tag\nint x = 1;\n```\n\n",
				      f);
			if (p == 0 && pick(2) == 0)
				fputs("## Details\n\n", f);
		}
		if (pick(5) == 0) {
			size_t t = pick((uint32_t)n);
			fprintf(f, "See also [%s](", names[t]);
			for (const char *s = paths[t]; *s; s++) {
				if (*s == ' ')
					fputs("%20", f);
				else
					fputc(*s, f);
			}
			fputs(".md) from the vault root.\n", f);
		}
		task_list(f, i);
		long_log(f, n, i);
		total += (size_t)ftell(f);
		fclose(f);
	}
	printf("%zu notes, %zu bytes of markdown, %zu folders in %s\n", n,
	       total, nfolders, dir);
	for (size_t i = 0; i < n; i++) {
		free(names[i]);
		free(paths[i]);
	}
	for (size_t i = 0; i < nfolders; i++)
		free(folders[i]);
	for (size_t i = 0; i < ntags; i++)
		free(tags[i]);
	free(names);
	free(paths);
	free(folders);
	free(tags);
	for (size_t i = 0; i < NVOCAB; i++)
		free(vocab[i]);
	return 0;
}
