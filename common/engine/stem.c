/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "stem.h"
#include "util.h"

#include <libstemmer.h>
#include <pthread.h>
#include <stdint.h>
#include <utf8proc.h>

static const char *const ALGO[LANG_COUNT] = {
	[LANG_EN] = "english", [LANG_DE] = "german",  [LANG_FR] = "french",
	[LANG_ES] = "spanish", [LANG_IT] = "italian", [LANG_PT] = "portuguese",
	[LANG_NL] = "dutch",   [LANG_RU] = "russian",
};

/* Function words: what a question is made of besides its subject. */
static const char *const STOP[LANG_COUNT] = {
	[LANG_EN] =
		"a about above after again against all am an and any are as "
		"at be because been before being below between both but by "
		"can could did do does doing down during each few for from "
		"further had has have having he her here hers herself him "
		"himself his how i if in into is it its itself just me more "
		"most my myself no nor not now of off on once only or other "
		"our ours out over own same she should so some such than that "
		"the their theirs them themselves then there these they this "
		"those through to too under until up very was we were what "
		"when where which while who whom whose why will with would you "
		"your yours yourself yourselves",
	[LANG_DE] =
		"aber alle allem allen aller alles als also am an andere "
		"anderen auch auf aus bei bin bis bist da damit dann das dass "
		"daß dein deine dem den denn der des dessen die dies diese "
		"diesem diesen dieser dieses doch dort du durch ein eine einem "
		"einen einer eines er es etwas euch euer für gegen gewesen "
		"habe haben hat hatte hatten hier ich ihr ihre im in ist ja "
		"jede jedem jeden jeder jetzt kann kein keine können man mein "
		"meine mich mir mit muss nach nicht nichts noch nun nur ob oder "
		"ohne sehr sein seine sich sie sind so soll sollte sondern über "
		"um und uns unser unter vom von vor war waren warum was weil "
		"welche welchem welchen welcher wenn wer werden wie wieder wir "
		"wird wo wurde wurden zu zum zur zwischen",
	[LANG_FR] =
		"à au aux avec c ce ces cet cette comme comment d dans de des "
		"du elle elles en est et été être il ils j je l la le les leur "
		"leurs lui m ma mais me même mes moi mon n ne nos notre nous on "
		"ont ou où par pas pour pourquoi qu quand que quel quelle "
		"quelles quels qui quoi s sa sans se ses son sont sur t ta te "
		"tes toi ton tu un une vos votre vous y était étaient",
	[LANG_ES] =
		"a al algo algunas algunos ante antes como cómo con contra cual "
		"cuál cuando cuándo de del desde donde dónde durante e el ella "
		"ellas ellos en entre era eran es esa esas ese eso esos esta "
		"estaba estas este esto estos fue fueron ha han hasta hay la "
		"las le les lo los me mi mis muy ni no nos o otra otro para "
		"pero por porque qué que quien quién quienes se sea ser si sí "
		"sin sobre son su sus también te tiene tienen tu un una uno "
		"unos y ya",
	[LANG_IT] =
		"a ad agli ai al alla alle allo anche che chi ci come con da "
		"dai dal dalla degli dei del della delle dello di e è ed gli ha "
		"hanno i il in la le lo ma mi nei negli nel nella non o per "
		"perché più quale quando questa questo se si sono su sul sulla "
		"tra un una uno",
	[LANG_PT] =
		"a ao aos as com como da das de do dos e é ela ele em entre era "
		"foi isso isto já mais mas na nas não no nos o os ou para pela "
		"pelo por porque quando que se sem ser seu sua são também tem "
		"um uma você",
	[LANG_NL] =
		"aan al als bij dan dat de der die dit door een en er had heb "
		"heeft het hij hoe ik in is je kan maar met mij naar niet nog "
		"nu of om ons ook op over te tot uit van voor was wat we wel "
		"werd wie wij worden zal ze zich zij zijn",
	[LANG_RU] =
		"а без более больше был была были было быть в вам вас ведь во "
		"вот все всегда всего всех всю вы где да даже для до другой его "
		"ее её ей ему если есть еще ещё же за зачем здесь и из или им их "
		"к как какая какие каким каких какой когда кто куда ли между "
		"меня мне много может можно мой моя мы на над надо наконец нас "
		"не него нее неё нельзя нет ни них ничего но ну о об он она они "
		"оно опять от очень перед по под почему потом потому почти при "
		"про раз разве с сам себе себя сейчас со совсем так также такой "
		"там тебя тем теперь то тогда того тоже только том тот три тут "
		"ты у уж уже хоть чем через что чтобы чуть эта эти это этого "
		"этой этом этот эту я",
};

struct stop {
	const char *w;
	unsigned len;
	unsigned mask;
};

/*
 * The stop words of every language in an open-addressed table (a power
 * of two, at most half full), each word once with the mask of its
 * languages: stem_guess() looks up every word of a text's first bytes,
 * a first build's every note (a binary search cost it 6 % of the
 * build's CPU).
 */
static struct stop *stops;
static size_t stops_mask;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static size_t stop_slot(const char *w, size_t n)
{
	return (size_t)hash_bytes(w, n) & stops_mask;
}

static struct stop *stop_find(const char *w, size_t n)
{
	for (size_t i = stop_slot(w, n);; i = (i + 1) & stops_mask) {
		struct stop *s = &stops[i];
		if (!s->w || (s->len == n && !memcmp(s->w, w, n)))
			return s;
	}
}

static void build_stops(void)
{
	size_t n = 0;
	for (int l = 0; l < LANG_COUNT; l++)
		for (const char *p = STOP[l]; *p; p++)
			n += *p == ' ';
	n += LANG_COUNT;
	size_t cap = 16;
	while (cap < 2 * n)
		cap *= 2;
	stops = xcalloc(cap, sizeof(*stops));
	stops_mask = cap - 1;
	for (int l = 0; l < LANG_COUNT; l++) {
		const char *p = STOP[l];
		while (*p) {
			const char *e = strchr(p, ' ');
			if (!e)
				e = p + strlen(p);
			struct stop *s = stop_find(p, (size_t)(e - p));
			s->w = p;
			s->len = (unsigned)(e - p);
			s->mask |= 1u << l;
			p = *e ? e + 1 : e;
		}
	}
}

unsigned stem_stopword(const char *w, size_t n)
{
	pthread_once(&once, build_stops);
	return stop_find(w, n)->mask;
}

/* Bytes of text looked at for its language. */
#define GUESS_BYTES 4096

unsigned stem_guess(const char *text, size_t n)
{
	if (n > GUESS_BYTES)
		n = GUESS_BYTES;
	unsigned count[LANG_COUNT] = {0};
	char w[32];
	size_t i = 0;
	while (i < n) {
		unsigned char c = (unsigned char)text[i];
		/* Words: letters (any byte of a multibyte character). */
		if (!(c >= 0x80 || (unsigned)((c | 0x20) - 'a') < 26u)) {
			i++;
			continue;
		}
		size_t wl = 0;
		bool fits = true;
		while (i < n) {
			c = (unsigned char)text[i];
			if (!(c >= 0x80 || (unsigned)((c | 0x20) - 'a') < 26u))
				break;
			if (wl < sizeof(w))
				w[wl++] = c < 0x80 ? (char)(c | 0x20) : (char)c;
			else
				fits = false;
			i++;
		}
		unsigned m = fits ? stem_stopword(w, wl) : 0;
		for (int l = 0; m && l < LANG_COUNT; l++)
			count[l] += (m >> l) & 1;
	}
	int best = -1;
	unsigned second = 0;
	for (int l = 0; l < LANG_RU; l++) {
		if (best < 0 || count[l] > count[best]) {
			if (best >= 0)
				second = count[best];
			best = l;
		} else if (count[l] > second) {
			second = count[l];
		}
	}
	/* Clearly one language: a few of its stop words, half again as
	 * many as any other's (they share some: "a", "in", "de"). */
	if (count[best] >= 3 && 2 * count[best] >= 3 * second)
		return 1u << best | 1u << LANG_RU;
	return LANG_ALL;
}

/* Recent words and their stems: text repeats its words (Zipf), and a
 * stem costs far more than a look-up. */
#define CACHE 4096
#define CACHE_WORD 24

struct centry {
	unsigned mask;
	unsigned char wl, nst;
	char w[CACHE_WORD];
	unsigned char off[LANG_COUNT], len[LANG_COUNT];
	char buf[LANG_COUNT * CACHE_WORD];
};

struct stemmer {
	struct sb_stemmer *sb[LANG_COUNT];
	struct centry *cache;
	/* The stems last returned. */
	char out[LANG_COUNT][128];
};

struct stemmer *stemmer_new(void)
{
	struct stemmer *s = xcalloc(1, sizeof(*s));
	s->cache = xcalloc(CACHE, sizeof(*s->cache));
	return s;
}

void stemmer_free(struct stemmer *s)
{
	if (!s)
		return;
	for (int l = 0; l < LANG_COUNT; l++)
		if (s->sb[l])
			sb_stemmer_delete(s->sb[l]);
	free(s->cache);
	free(s);
}

static bool is_cyrillic(const char *w, size_t n)
{
	/* U+0400..U+04FF: lead bytes 0xd0..0xd3. */
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)w[i];
		if (c >= 0xd0 && c <= 0xd3)
			return true;
	}
	return false;
}

/* s[0..n) mapped by utf8proc with opts into buf (cap bytes); its length,
 * or -1 (not UTF-8, or too long). */
static int map_into(const char *s, size_t n, utf8proc_option_t opts, char *buf,
		    size_t cap)
{
	utf8proc_uint8_t *f = NULL;
	utf8proc_ssize_t l = utf8proc_map((const utf8proc_uint8_t *)s,
					  (utf8proc_ssize_t)n, &f, opts);
	if (l < 0 || (size_t)l >= cap) {
		free(f);
		return -1;
	}
	memcpy(buf, f, (size_t)l);
	free(f);
	return (int)l;
}

/* Lower case (NFC, case folded) copy of w into buf; its length, or -1. */
static int lower(const char *w, size_t n, char *buf, size_t cap, bool *ascii)
{
	*ascii = true;
	for (size_t i = 0; i < n; i++)
		*ascii &= (unsigned char)w[i] < 0x80;
	if (*ascii) {
		if (n >= cap)
			return -1;
		for (size_t i = 0; i < n; i++)
			buf[i] = (char)((w[i] >= 'A' && w[i] <= 'Z')
						? w[i] | 0x20
						: w[i]);
		return (int)n;
	}
	return map_into(w, n, UTF8PROC_COMPOSE | UTF8PROC_CASEFOLD, buf, cap);
}

/* s[0..n) without diacritics, into buf (cap bytes); its length or -1. */
static int plain(const char *s, size_t n, char *buf, size_t cap)
{
	return map_into(s, n, UTF8PROC_COMPOSE | UTF8PROC_STRIPMARK, buf, cap);
}

static uint32_t hash(const char *w, size_t n, unsigned mask)
{
	uint32_t h = 2166136261u ^ mask;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)w[i]) * 16777619u;
	return h;
}

static int compute(struct stemmer *s, const char *lw, size_t ln, bool ascii,
		   unsigned mask, const char **ret, size_t *ret_len)
{
	int k = 0;
	for (int l = 0; l < LANG_COUNT; l++) {
		if (!((mask >> l) & 1))
			continue;
		if (!s->sb[l])
			s->sb[l] = sb_stemmer_new(ALGO[l], "UTF_8");
		if (!s->sb[l])
			continue;
		const sb_symbol *st = sb_stemmer_stem(
			s->sb[l], (const sb_symbol *)lw, (int)ln);
		int sl = st ? sb_stemmer_length(s->sb[l]) : -1;
		if (sl <= 0)
			continue;
		char *o = s->out[k];
		int pl;
		if (ascii) {
			pl = sl < (int)sizeof(s->out[k]) ? sl : -1;
			if (pl > 0)
				memcpy(o, st, (size_t)sl);
		} else {
			pl = plain((const char *)st, (size_t)sl, o,
				   sizeof(s->out[k]));
		}
		if (pl <= 0)
			continue;
		bool dup = false;
		for (int j = 0; j < k && !dup; j++)
			dup = ret_len[j] == (size_t)pl &&
			      !memcmp(ret[j], o, (size_t)pl);
		if (dup)
			continue;
		ret[k] = o;
		ret_len[k] = (size_t)pl;
		k++;
	}
	return k;
}

int stemmer_stems(struct stemmer *s, const char *w, size_t n, unsigned mask,
		  const char *skip, size_t skipn, const char **ret,
		  size_t *ret_len)
{
	/* Words of two letters or fewer, and words with digits, as they are. */
	if (n < 3)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (w[i] >= '0' && w[i] <= '9')
			return 0;
	mask &= is_cyrillic(w, n) ? 1u << LANG_RU : LANG_LATIN;
	if (!mask)
		return 0;
	uint32_t h = hash(w, n, mask);
	struct centry *e = &s->cache[h % CACHE];
	int k;
	if (n < CACHE_WORD && e->mask == mask && e->wl == n &&
	    !memcmp(e->w, w, n)) {
		k = e->nst;
		for (int j = 0; j < k; j++) {
			memcpy(s->out[j], e->buf + e->off[j], e->len[j]);
			ret[j] = s->out[j];
			ret_len[j] = e->len[j];
		}
	} else {
		char lw[128];
		bool ascii;
		int ln = lower(w, n, lw, sizeof(lw), &ascii);
		if (ln < 0)
			return 0;
		k = compute(s, lw, (size_t)ln, ascii, mask, ret, ret_len);
		size_t used = 0;
		bool fits = n < CACHE_WORD;
		for (int j = 0; j < k && fits; j++) {
			fits = ret_len[j] < CACHE_WORD;
			used += ret_len[j];
		}
		if (fits) {
			e->mask = mask;
			e->wl = (unsigned char)n;
			memcpy(e->w, w, n);
			e->nst = (unsigned char)k;
			used = 0;
			for (int j = 0; j < k; j++) {
				e->off[j] = (unsigned char)used;
				e->len[j] = (unsigned char)ret_len[j];
				memcpy(e->buf + used, ret[j], ret_len[j]);
				used += ret_len[j];
			}
		}
	}
	/* Not the word itself: it is indexed already. */
	int u = 0;
	for (int j = 0; j < k; j++) {
		if (ret_len[j] == skipn && !memcmp(ret[j], skip, skipn))
			continue;
		ret[u] = ret[j];
		ret_len[u] = ret_len[j];
		u++;
	}
	return u;
}
