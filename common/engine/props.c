/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Layout: entries of key (u32 length, bytes, NUL) and value; a value is
 * a kind byte then: nothing (null, false 'f', true 't'), 8 bytes of
 * double ('d'), u32 length + bytes + NUL ('s' string, 'o' object JSON),
 * or u32 count + u32 bytes of the items + the items ('l', so that a walk
 * skips a list at once). Lists nest PROPS_MAX_DEPTH deep at most; deeper
 * ones are kept as JSON text. Bytes read back from disk are checked once
 * (props_valid()); walks trust them.
 */
#include "props.h"
#include "util.h"

#include <string.h>
#include <strings.h>

#define PROPS_MAX_DEPTH 8

static void put_u32(struct sbuf *b, uint32_t v)
{
	sb_add(b, (const char *)&v, 4);
}

static void put_bytes(struct sbuf *b, const char *s, size_t n)
{
	put_u32(b, (uint32_t)n);
	sb_add(b, s, n);
	sb_putc(b, 0);
}

static void put_value(struct sbuf *b, const cJSON *v, int depth)
{
	if (cJSON_IsNull(v) || cJSON_IsInvalid(v)) {
		sb_putc(b, 'n');
	} else if (cJSON_IsBool(v)) {
		sb_putc(b, cJSON_IsTrue(v) ? 't' : 'f');
	} else if (cJSON_IsNumber(v)) {
		sb_putc(b, 'd');
		sb_add(b, (const char *)&v->valuedouble, 8);
	} else if (cJSON_IsString(v)) {
		sb_putc(b, 's');
		put_bytes(b, v->valuestring, strlen(v->valuestring));
	} else if (cJSON_IsArray(v) && depth < PROPS_MAX_DEPTH) {
		sb_putc(b, 'l');
		put_u32(b, (uint32_t)cJSON_GetArraySize(v));
		size_t at = b->len;
		put_u32(b, 0);
		const cJSON *it;
		cJSON_ArrayForEach(it, v) put_value(b, it, depth + 1);
		uint32_t nb = (uint32_t)(b->len - at - 4);
		memcpy(b->s + at, &nb, 4);
	} else {
		char *s = cJSON_PrintUnformatted(v);
		sb_putc(b, 'o');
		put_bytes(b, s ? s : "null", s ? strlen(s) : 4);
		cJSON_free(s);
	}
}

unsigned char *props_encode(const cJSON *obj, size_t *ret_len)
{
	struct sbuf b = {0};
	const cJSON *kv;
	cJSON_ArrayForEach(kv, obj)
	{
		put_bytes(&b, kv->string, strlen(kv->string));
		put_value(&b, kv, 0);
	}
	*ret_len = b.len;
	return (unsigned char *)sb_steal(&b);
}

struct rd {
	const unsigned char *p, *end;
};

static bool get_u32(struct rd *r, uint32_t *ret)
{
	if (r->end - r->p < 4)
		return false;
	memcpy(ret, r->p, 4);
	r->p += 4;
	return true;
}

static bool get_bytes(struct rd *r, const char **ret, size_t *ret_len)
{
	uint32_t n;
	if (!get_u32(r, &n) || (size_t)(r->end - r->p) < (size_t)n + 1 ||
	    r->p[n] != 0)
		return false;
	*ret = (const char *)r->p;
	*ret_len = n;
	r->p += n + 1;
	return true;
}

/* Step over one value of bytes already checked: what a lookup does for
 * every key before the one it wants, without get_value's copying. */
static inline bool skip_value(struct rd *r)
{
	uint32_t n, nb;
	if (r->p >= r->end)
		return false;
	switch (*r->p++) {
	case 'n':
	case 't':
	case 'f':
		return true;
	case 'd':
		n = 8;
		break;
	case 's':
	case 'o':
		if (!get_u32(r, &n) || n == UINT32_MAX)
			return false;
		n++; /* the NUL */
		break;
	case 'l':
		if (!get_u32(r, &n) || !get_u32(r, &nb))
			return false;
		n = nb;
		break;
	default:
		return false;
	}
	if ((size_t)(r->end - r->p) < n)
		return false;
	r->p += n;
	return true;
}

/* Read one value (depth-checked; check: the items of lists too); ret
 * may be NULL to skip it. */
static bool get_value(struct rd *r, struct prop_val *ret, int depth, bool check)
{
	struct prop_val v = {0};
	if (r->p >= r->end || depth > PROPS_MAX_DEPTH)
		return false;
	switch (*r->p++) {
	case 'n':
		v.kind = PROP_NULL;
		break;
	case 't':
	case 'f':
		v.kind = PROP_BOOL;
		v.b = r->p[-1] == 't';
		break;
	case 'd':
		if (r->end - r->p < 8)
			return false;
		v.kind = PROP_NUM;
		memcpy(&v.num, r->p, 8);
		r->p += 8;
		break;
	case 's':
	case 'o':
		v.kind = r->p[-1] == 's' ? PROP_STR : PROP_OBJ;
		if (!get_bytes(r, &v.str, &v.len))
			return false;
		break;
	case 'l': {
		uint32_t nb;
		v.kind = PROP_LIST;
		if (!get_u32(r, &v.count) || !get_u32(r, &nb) ||
		    v.count > (size_t)(r->end - r->p) ||
		    nb > (size_t)(r->end - r->p))
			return false;
		v.items = r->p;
		v.end = r->p + nb;
		if (check) {
			struct rd in = {r->p, r->p + nb};
			for (uint32_t i = 0; i < v.count; i++)
				if (!get_value(&in, NULL, depth + 1, true))
					return false;
			if (in.p != in.end)
				return false;
		}
		r->p += nb;
		break;
	}
	default:
		return false;
	}
	if (ret)
		*ret = v;
	return true;
}

bool props_valid(const unsigned char *p, size_t len)
{
	struct rd r = {p, p + len};
	while (r.p < r.end) {
		const char *k;
		size_t kn;
		if (!get_bytes(&r, &k, &kn) || !get_value(&r, NULL, 0, true))
			return false;
	}
	return true;
}

bool props_next(const unsigned char *p, size_t len, size_t *pos,
		const char **ret_key, struct prop_val *ret_val)
{
	if (!p || *pos >= len)
		return false;
	struct rd r = {p + *pos, p + len};
	size_t kn;
	if (!get_bytes(&r, ret_key, &kn) || !get_value(&r, ret_val, 0, false))
		return false;
	*pos = (size_t)(r.p - p);
	return true;
}

bool props_get(const unsigned char *p, size_t len, const char *key,
	       struct prop_val *ret)
{
	size_t kl = strlen(key);
	struct rd r = {p, p + len};
	bool found = false;
	while (p && r.p < r.end) {
		const char *k;
		size_t kn;
		struct prop_val v;
		if (!get_bytes(&r, &k, &kn))
			return found;
		bool same = kn == kl && !memcmp(k, key, kl);
		bool fold = !same && !found && kn == kl &&
			    (k[0] | 0x20) == (key[0] | 0x20) &&
			    !strcasecmp(k, key);
		if (!(same || fold ? get_value(&r, &v, 0, false)
				   : skip_value(&r)))
			return found;
		if (same) {
			*ret = v;
			return true;
		}
		if (fold) {
			*ret = v;
			found = true;
		}
	}
	return found;
}

bool props_list_next(const struct prop_val *v, const unsigned char **it,
		     struct prop_val *ret)
{
	if (v->kind != PROP_LIST || !*it || *it >= v->end)
		return false;
	struct rd r = {*it, v->end};
	if (!get_value(&r, ret, 1, false))
		return false;
	*it = r.p;
	return true;
}
