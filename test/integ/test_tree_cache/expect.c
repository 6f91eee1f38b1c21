/*
 * expect.c — what a read through the cache may return while others write:
 * exact for the stable entries and the reader's own keys, order and shape
 * only for other writers' keys; scans and lookups checked against that, and
 * whole-tree content checks.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dm_cache.h"
#include "dm_client.h"
#include "dm_region.h"		/* dm_tree_name_named */
#include "dm_tree.h"
#include "entrymodel.h"
#include "testutil.h"

#include "tree_cache.h"

int
ks_own(const keyset *ks, uint64_t key)
{
	if (ks == NULL || ks->mod == 0)
		return 0;
	if (key == UINT64_MAX)
		return ks->nulls;
	return key >= ks->base && key - ks->base < ks->span && key % ks->mod == ks->rem;
}

dm_entry
test_null(uint64_t tid)
{
	return test_key_var() ? tk(UINT64_MAX, tid) : dm_entry_null(tid);
}

dm_entry
ks_entry(const keyset *ks, uint64_t tid)
{
	uint64_t	first = ks->base + (ks->rem + ks->mod - ks->base % ks->mod) % ks->mod;
	uint64_t	count = (ks->base + ks->span - 1 - first) / ks->mod + 1;

	if (ks->nulls && rnd_below(100) < 3)
		return test_null(tid);
	return tk(first + rnd_below(count) * ks->mod, tid);
}
static size_t
expect_count(const expect *x)
{
	return (x->a ? x->a->n : 0) + (x->b ? x->b->n : 0);
}

static int
known(const expect *x, dm_entry e)
{
	return x->strict || (e.tid & ~DM_TID_NULL) == 0 || ks_own(x->own, tk_key(e));
}

/* A writer's entry: tid 1..NTIDS, the NULL flag exactly on key UINT64_MAX. */
static int
plausible(dm_entry e)
{
	uint64_t	tid = e.tid & ~DM_TID_NULL;

	if (test_key_var())
		return tid >= 1 && tid <= NTIDS && !dm_entry_is_null(e);
	return tid >= 1 && tid <= NTIDS && dm_entry_is_null(e) == (e.key == UINT64_MAX);
}

/*
 * Checks a sequence of entries returned for range r, one at a time: strictly
 * ordered in the scan direction, inside r, the known ones exactly the known
 * slice (so nothing known is missed, repeated or invented), the others
 * plausible.
 */
typedef struct seqcheck
{
	const expect *x;
	const dm_range *r;
	size_t		a_lo,
				a_hi,
				b_lo,
				b_hi;			/* known entries still due: [lo, hi) of a and b */
	dm_entry	prev;
	size_t		n;
	char	   *why;
	size_t		whylen;
} seqcheck;

static void
sc_begin(seqcheck *s, const expect *x, const dm_range *r, char *why, size_t whylen)
{
	memset(s, 0, sizeof(*s));
	s->x = x;
	s->r = r;
	s->why = why;
	s->whylen = whylen;
	if (x->a)
		m_range(x->a, r, &s->a_lo, &s->a_hi);
	if (x->b)
		m_range(x->b, r, &s->b_lo, &s->b_hi);
}

/* The next known entry due in scan order (NULL: none); *from_a tells where it is. */
static const dm_entry *
sc_due(const seqcheck *s, int *from_a)
{
	const dm_entry *ea = NULL,
			   *eb = NULL;

	if (s->a_lo < s->a_hi)
		ea = s->r->backward ? &s->x->a->e[s->a_hi - 1] : &s->x->a->e[s->a_lo];
	if (s->b_lo < s->b_hi)
		eb = s->r->backward ? &s->x->b->e[s->b_hi - 1] : &s->x->b->e[s->b_lo];
	if (ea && eb)
	{
		int			c = dm_entry_cmp(*ea, *eb);

		*from_a = s->r->backward ? c > 0 : c < 0;
	}
	else
		*from_a = ea != NULL;
	return *from_a ? ea : eb;
}

static int
sc_feed(seqcheck *s, dm_entry e)
{
	int			bw = s->r->backward,
				from_a;
	dm_entry	own;

	/* e's suffix is the reader's until its next call: prev keeps the interned one */
	if (!tk_own(e, &own))
	{
		snprintf(s->why, s->whylen, "%s: returned %s, whose key bytes are no test key's (%s is)", R(s->r), E(e),
				 E(own));
		return -1;
	}
	e = own;
	if (s->n > 0 && (bw ? dm_entry_cmp(e, s->prev) >= 0 : dm_entry_cmp(e, s->prev) <= 0))
	{
		snprintf(s->why, s->whylen, "%s: %s came after %s (not strictly %s)", R(s->r), E(e), E(s->prev),
				 bw ? "descending" : "ascending");
		return -1;
	}
	if (!in_range(s->r, e))
	{
		snprintf(s->why, s->whylen, "%s: returned %s, outside the range", R(s->r), E(e));
		return -1;
	}
	if (known(s->x, e))
	{
		const dm_entry *due = sc_due(s, &from_a);

		if (due == NULL || dm_entry_cmp(*due, e) != 0)
		{
			snprintf(s->why, s->whylen, "%s: entry #%zu is %s, but the next expected is %s", R(s->r), s->n, E(e),
					 due ? E(*due) : "the end");
			return -1;
		}
		if (from_a && bw)
			s->a_hi--;
		else if (from_a)
			s->a_lo++;
		else if (bw)
			s->b_hi--;
		else
			s->b_lo++;
	}
	else if (!plausible(e))
	{
		snprintf(s->why, s->whylen, "%s: returned %s, which no writer may have inserted", R(s->r), E(e));
		return -1;
	}
	s->prev = e;
	s->n++;
	return 0;
}

static int
sc_end(seqcheck *s)
{
	int			from_a;
	const dm_entry *due = sc_due(s, &from_a);

	if (due)
	{
		snprintf(s->why, s->whylen, "%s: ended after %zu entries, but %s (and %zu more) were due", R(s->r), s->n,
				 E(*due), s->a_hi - s->a_lo + s->b_hi - s->b_lo - 1);
		return -1;
	}
	return 0;
}

/* Scan r through t and check the result; *count (may be NULL) gets the entries returned. */
int
scan_check(dm_tree *t, const dm_range *r, const expect *x, size_t *count, char *why, size_t whylen)
{
	dm_iter    *it = NULL;
	seqcheck	s;
	dm_entry	e;
	int			k,
				rc;

	sc_begin(&s, x, r, why, whylen);
	if ((rc = dm_iter_open(t, r, &it)) != DM_OK)
	{
		snprintf(why, whylen, "%s: dm_iter_open: %s: %s", R(r), dm_strerror(rc), terr(t));
		return -1;
	}
	while ((k = dm_iter_next(it, &e)) == 1)
		if (sc_feed(&s, e) != 0)
			break;
	dm_iter_close(it);
	if (count)
		*count = s.n;
	if (k < 0)
	{
		snprintf(why, whylen, "%s: dm_iter_next: %s: %s", R(r), dm_strerror(-k), terr(t));
		return -1;
	}
	return k == 1 ? -1 : sc_end(&s);
}

/* Look key up through t and check its tids like a forward scan of the key. */
int
lookup_check(dm_tree *t, uint64_t key, const expect *x, char *why, size_t whylen)
{
	dm_range	r = {tk_lo(key, 1), 1, tk_hi(key, 1), 1, 0};
	uint64_t	tids[64];
	seqcheck	s;
	int			n = -1,
				rc = tk_lookup(t, key, tids, 64, &n);

	if (rc != DM_OK || n < 0 || n > 64)
	{
		snprintf(why, whylen, "lookup %" PRIu64 ": %s, n = %d: %s", key, dm_strerror(rc), n, terr(t));
		return -1;
	}
	sc_begin(&s, x, &r, why, whylen);
	for (int i = 0; i < n; i++)
		if (sc_feed(&s, tk(key, tids[i])) != 0)
			return -1;
	return sc_end(&s);
}

/*
 * Verify the tree (remote memory) and count its entries, then scan it whole
 * forward and backward through t.  x must be strict.
 */
int
check_contents(const char *label, const char *who, dm_tree *t, const expect *x)
{
	char		msg[512] = "";
	uint64_t	cnt = 0;
	int			rc = dm_tree_verify(t, &cnt, msg, sizeof(msg));
	int			ok = 1;

	if (!CHECK_STATUS(rc, DM_OK, "%s: dm_tree_verify", label))
	{
		tap_diag("  %s", msg);
		ok = 0;
	}
	ok &= CHECK(cnt == expect_count(x), "%s: verify counts %" PRIu64 " entries, expected %zu", label, cnt,
				expect_count(x));
	for (int bw = 0; bw < 2; bw++)
	{
		dm_range	r = {DM_ENTRY_MIN, 1, DM_ENTRY_INF, 1, bw};

		if (!CHECK(scan_check(t, &r, x, NULL, msg, sizeof(msg)) == 0, "%s: full %s scan through %s = expected",
				   label, bw ? "backward" : "forward", who))
		{
			tap_diag("  %s", msg);
			ok = 0;
		}
	}
	return ok;
}

/* Lookups of every step-th key of [lo, hi) through t. */
int
check_lookups(const char *label, const char *who, dm_tree *t, const expect *x, uint64_t lo, uint64_t hi,
			  uint64_t step)
{
	char		msg[512] = "";
	uint64_t	n = 0;
	int			bad = 0;

	for (uint64_t k = lo; k < hi && !bad; k += step, n++)
		bad = lookup_check(t, k, x, msg, sizeof(msg)) != 0;
	if (!CHECK(!bad, "%s: %" PRIu64 " lookups through %s = expected", label, n, who))
		tap_diag("  %s", msg);
	return !bad;
}
