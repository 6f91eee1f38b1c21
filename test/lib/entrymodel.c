/*
 * entrymodel.c — the sorted-array model and PRNG of the tree tests, and the
 * check of a whole tree against the model (see entrymodel.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "entrymodel.h"
#include "testutil.h"

const char *
E(dm_entry e)
{
	static char buf[16][64];
	static int	i;
	char	   *b = buf[i++ & 15];

	if (e.key == UINT64_MAX && e.tid == UINT64_MAX)
		snprintf(b, 64, "(INF)");
	else if (dm_entry_is_null(e))
		snprintf(b, 64, "(NULL,%" PRIu64 ")", e.tid & ~DM_TID_NULL);
	else
		snprintf(b, 64, "(%" PRIu64 ",%" PRIu64 ")", e.key, e.tid);
	return b;
}

const char *
R(const dm_range *r)
{
	static char buf[4][200];
	static int	i;
	char	   *b = buf[i++ & 3];

	snprintf(b, 200, "%s%s .. %s%s %s", r->lo_incl ? "[" : "(", E(r->lo), E(r->hi),
			 r->hi_incl ? "]" : ")", r->backward ? "backward" : "forward");
	return b;
}

/* First index whose entry is >= x. */
size_t
m_lower(const model *m, dm_entry x)
{
	size_t		lo = 0,
				hi = m->n;

	while (lo < hi)
	{
		size_t		mid = (lo + hi) / 2;

		if (dm_entry_cmp(m->e[mid], x) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* First index whose entry is > x. */
size_t
m_upper(const model *m, dm_entry x)
{
	size_t		lo = 0,
				hi = m->n;

	while (lo < hi)
	{
		size_t		mid = (lo + hi) / 2;

		if (dm_entry_cmp(m->e[mid], x) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int
m_has(const model *m, dm_entry x)
{
	size_t		i = m_lower(m, x);

	return i < m->n && dm_entry_cmp(m->e[i], x) == 0;
}

int
m_insert(model *m, dm_entry x)
{
	size_t		i = m_lower(m, x);

	if (i < m->n && dm_entry_cmp(m->e[i], x) == 0)
		return 0;
	if (m->n == m->cap)
	{
		m->cap = m->cap ? m->cap * 2 : 1024;
		m->e = realloc(m->e, m->cap * sizeof(dm_entry));
		if (!m->e)
		{
			perror("realloc");
			exit(2);
		}
	}
	memmove(m->e + i + 1, m->e + i, (m->n - i) * sizeof(dm_entry));
	m->e[i] = x;
	m->n++;
	return 1;
}

int
m_delete(model *m, dm_entry x)
{
	size_t		i = m_lower(m, x);

	if (i >= m->n || dm_entry_cmp(m->e[i], x) != 0)
		return 0;
	memmove(m->e + i, m->e + i + 1, (m->n - i - 1) * sizeof(dm_entry));
	m->n--;
	return 1;
}

void
m_copy(model *dst, const model *src)
{
	dst->n = 0;
	for (size_t i = 0; i < src->n; i++)
	{
		/* appending in order: m_insert hits the end every time */
		m_insert(dst, src->e[i]);
	}
}

void
m_free(model *m)
{
	free(m->e);
	memset(m, 0, sizeof(*m));
}

/* The model's slice [*from, *to) for a range (empty if lo > hi). */
void
m_range(const model *m, const dm_range *r, size_t *from, size_t *to)
{
	*from = r->lo_incl ? m_lower(m, r->lo) : m_upper(m, r->lo);
	*to = r->hi_incl ? m_upper(m, r->hi) : m_lower(m, r->hi);
	if (*to < *from)
		*to = *from;
}

int
in_range(const dm_range *r, dm_entry e)
{
	int			a = dm_entry_cmp(e, r->lo),
				b = dm_entry_cmp(e, r->hi);

	return (r->lo_incl ? a >= 0 : a > 0) && (r->hi_incl ? b <= 0 : b < 0);
}

uint64_t	rng;

uint64_t
rnd(void)
{
	uint64_t	z = (rng += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

uint64_t
rnd_below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

void
rng_seed_label(uint64_t seed, const char *label, uint64_t idx)
{
	uint64_t	h = seed * UINT64_C(0x100000001B3) + idx;

	/* FNV-1a over the label: each section's stream is independent of the others */
	for (const char *p = label; *p; p++)
		h = (h ^ (uint8_t) *p) * UINT64_C(0x100000001B3);
	rng = h;
}

void
tree_test_env(uint64_t *seed, int *scale)
{
	const char *s;

	if ((s = getenv("TREE_SEED")) && *s)
		*seed = strtoull(s, NULL, 0);
	if ((s = getenv("TREE_SCALE")) && *s && atoi(s) > 0)
		*scale = atoi(s);
	tap_diag("TREE_SEED=%" PRIu64 " TREE_SCALE=%d", *seed, *scale);
}

static int
cmp_entry_qsort(const void *a, const void *b)
{
	return dm_entry_cmp(*(const dm_entry *) a, *(const dm_entry *) b);
}

int
sort_unique(dm_entry *e, int n)
{
	int			k = 0;

	qsort(e, (size_t) n, sizeof(dm_entry), cmp_entry_qsort);
	for (int i = 0; i < n; i++)
		if (k == 0 || dm_entry_cmp(e[k - 1], e[i]) != 0)
			e[k++] = e[i];
	return k;
}

int
tree_matches_model(dm_tree *t, const model *m, int lookups, const char *what)
{
	char		msg[512] = "";
	uint64_t	cnt = 0;
	int			ok = 1;

	if (!CHECK_STATUS(dm_tree_verify(t, &cnt, msg, sizeof(msg)), DM_OK, "%s: tree verifies %s", what, msg))
		return 0;
	for (int bw = 0; bw < 2 && ok; bw++)
	{
		dm_range	r = {DM_ENTRY_MIN, 1, DM_ENTRY_INF, 1, bw};
		dm_iter    *it;
		dm_entry	e;
		size_t		i = 0;
		int			rc;

		if (dm_iter_open(t, &r, &it) != DM_OK)
		{
			ok = 0;
			break;
		}
		while ((rc = dm_iter_next(it, &e)) == 1)
		{
			size_t		want = bw ? m->n - 1 - i : i;

			if (i >= m->n || dm_entry_cmp(e, m->e[want]) != 0)
			{
				tap_diag("%s: scan %s: entry %zu is %s, model has %s", what, bw ? "backward" : "forward",
						 i, E(e), i < m->n ? E(m->e[want]) : "nothing");
				ok = 0;
				break;
			}
			i++;
		}
		if (rc < 0 || i != m->n)
		{
			tap_diag("%s: scan %s: rc %d, %zu entries, model %zu", what, bw ? "backward" : "forward", rc, i, m->n);
			ok = 0;
		}
		dm_iter_close(it);
	}
	/* and point lookups of a sample */
	for (size_t i = 0; lookups && i < m->n && ok; i += 1 + m->n / 50)
	{
		int			found = 0;

		if (dm_tree_contains(t, m->e[i], &found) != DM_OK || !found)
		{
			tap_diag("%s: lookup of %s fails", what, E(m->e[i]));
			ok = 0;
		}
	}
	return CHECK(ok && cnt == m->n, "%s: verify counts %" PRIu64 " entries; %s equal the model (%zu)",
				 what, cnt, lookups ? "scans both ways and lookups" : "full scans both ways", m->n);
}

uint64_t
tree_node_count(dm_tree *t, int *height, uint64_t *inner)
{
	dm_tree_stats st;
	uint64_t	n = 0;

	if (dm_tree_stats_get(t, &st) != DM_OK)
		return 0;
	for (int l = 0; l < 16; l++)
		n += st.nodes[l];
	if (height)
		*height = st.height;
	if (inner)
		*inner = n - st.nodes[0];
	return n;
}
