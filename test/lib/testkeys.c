/*
 * testkeys.c — test keys as VAR byte strings (testkeys.h).  The encoding of
 * a 64-bit test key k:
 *
 *   k < 256:   0x01, k, then 0..5 filler bytes           (2..7 bytes)
 *   k >= 256:  0x80, the 7 bytes of k >> 8, k & 0xFF, then filler, then 0
 *
 * Filler bytes are 1..255, their number derived from k (mostly few, some up
 * to the cap).  Two different keys differ within their first 9 bytes, both
 * that long or the short form, so no key is a prefix of another, and the
 * order of the encodings is the order of the numbers.  The suffixes are
 * interned (a hash table of k), so entries made of them stay valid.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testkeys.h"

static int	kv = -1;			/* -1: not read yet */
static uint32_t cap;			/* the longest key (bytes) */

typedef struct slot
{
	uint64_t	k;
	const uint8_t *sfx;			/* NULL: empty slot */
	uint32_t	len;
} slot;

static slot *tab;
static size_t ntab,
			nused;

static uint64_t
mix(uint64_t x)
{
	x += UINT64_C(0x9E3779B97F4A7C15);
	x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
	return x ^ (x >> 31);
}

int
test_key_var(void)
{
	if (kv < 0)
	{
		const char *f = getenv("TREE_KEY_FORMAT");

		kv = f != NULL && strcmp(f, "var") == 0;
	}
	return kv;
}

const char *
test_key_format_name(void)
{
	return test_key_var() ? "var" : "fixed8";
}

int
test_tree_key_opts(dm_tree_opts *opts)
{
	const char *f = getenv("TREE_KEY_FORMAT");
	uint32_t	kmax = dm_tree_key_max(opts->node_size ? opts->node_size : 1024);

	if (f != NULL && *f != '\0' && strcmp(f, "var") != 0 && strcmp(f, "fixed8") != 0)
		return -1;
	if (!test_key_var())
		return 0;
	opts->key_format = DM_KEY_VAR;
	if (cap == 0)
		cap = kmax;
	return cap <= kmax ? 0 : -1;
}

/* Filler bytes of key k beyond its fixed part: mostly 0..3, a quarter up to 20, some up to the cap. */
static uint32_t
filler_len(uint64_t k, uint32_t room)
{
	uint64_t	h = mix(k);
	uint32_t	n;

	switch (h % 8)
	{
		case 0:
			n = (uint32_t) (h >> 8) % (room + 1);
			break;
		case 1:
		case 2:
			n = (uint32_t) (h >> 8) % 21;
			break;
		default:
			n = (uint32_t) (h >> 8) % 4;
	}
	return n < room ? n : room;
}

static void
filler(uint64_t k, uint8_t *out, uint32_t n)
{
	uint64_t	h = mix(k ^ UINT64_C(0x5bd1e995));

	for (uint32_t i = 0; i < n; i++)
	{
		if (i % 7 == 0)
			h = mix(h);
		out[i] = (uint8_t) (1 + (h >> (8 * (i % 7))) % 255);
	}
}

/* The suffix of a long key k (interned). */
static const uint8_t *
long_sfx(uint64_t k, uint32_t *len)
{
	size_t		i;

	if (nused * 2 >= ntab)
	{
		size_t		nn = ntab ? ntab * 2 : 4096;
		slot	   *nt = calloc(nn, sizeof(slot));

		if (nt == NULL)
		{
			fprintf(stderr, "testkeys: out of memory\n");
			abort();
		}
		for (size_t j = 0; j < ntab; j++)
			if (tab[j].sfx)
			{
				for (i = mix(tab[j].k) & (nn - 1); nt[i].sfx; i = (i + 1) & (nn - 1))
					;
				nt[i] = tab[j];
			}
		free(tab);
		tab = nt;
		ntab = nn;
	}
	for (i = mix(k) & (ntab - 1); tab[i].sfx; i = (i + 1) & (ntab - 1))
		if (tab[i].k == k)
		{
			*len = tab[i].len;
			return tab[i].sfx;
		}
	{
		/* the byte k & 0xFF, the filler, the terminating 0: at most cap - 8 */
		uint32_t	n = filler_len(k, cap - 10);
		uint8_t    *s = malloc(n + 2);

		if (s == NULL)
		{
			fprintf(stderr, "testkeys: out of memory\n");
			abort();
		}
		s[0] = (uint8_t) k;
		filler(k, s + 1, n);
		s[n + 1] = 0;
		tab[i].k = k;
		tab[i].sfx = s;
		tab[i].len = n + 2;
		nused++;
		*len = n + 2;
		return s;
	}
}

dm_entry
tk(uint64_t k, uint64_t tid)
{
	dm_entry	e = dm_entry_make(k, tid);

	if (!test_key_var())
		return e;
	if (cap == 0)
		cap = dm_tree_key_max(1024);
	if (k < 256)
	{
		uint8_t		b[8] = {0x01, (uint8_t) k};
		uint32_t	n = filler_len(k, 5);

		filler(k, b + 2, n);
		return dm_entry_from_bytes(b, 2 + n, tid);
	}
	e.key = (UINT64_C(0x80) << 56) | (k >> 8);
	e.sfx = long_sfx(k, &e.sfx_len);
	return e;
}

dm_entry
tk_lo(uint64_t k, int incl)
{
	return tk(k, incl ? 0 : DM_TID_MAX);
}

dm_entry
tk_hi(uint64_t k, int incl)
{
	return tk(k, incl ? DM_TID_MAX : 0);
}

uint64_t
tk_key(dm_entry e)
{
	if (!test_key_var())
		return e.key;
	if ((e.key >> 56) == 0x01)
		return (e.key >> 48) & 0xFF;
	return ((e.key & (UINT64_MAX >> 8)) << 8) | (e.sfx_len ? e.sfx[0] : 0);
}

int
tk_own(dm_entry e, dm_entry *out)
{
	dm_entry	c;

	if (!test_key_var())
	{
		*out = e;
		return 1;
	}
	c = tk(tk_key(e), e.tid);
	*out = c;
	return dm_entry_cmp(c, e) == 0 && c.sfx_len == e.sfx_len;
}

void
tk_intern(uint64_t first, uint64_t count)
{
	for (uint64_t k = first; test_key_var() && k - first < count; k++)
		(void) tk(k, 0);
}

int
tk_lookup(dm_tree *t, uint64_t k, uint64_t *tids, int max, int *n)
{
	if (!test_key_var())
		return dm_tree_lookup(t, k, tids, max, n);
	return dm_tree_lookup_key(t, tk(k, 0), tids, max, n);
}
