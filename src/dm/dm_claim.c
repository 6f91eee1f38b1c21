/*
 * dm_claim.c — instance claims with a lease in a memnode's catalog
 * (dm_claim.h; DESIGN.md §7).
 *
 * Every change of the claim word is one CAS from the value just read, so
 * two servers racing for a free or expired claim cannot both win, and a
 * holder renewing races safely with a server taking over an expired lease:
 * whichever CAS lands first decides, the other sees the new word.
 */
#include <stdio.h>
#include <string.h>

#include "dm_claim.h"
#include "dm_region.h"

#define HOLDER(w)	((uint32_t) ((w) >> 32))
#define LEASE_END(w) ((uint32_t) (w))

uint32_t
dm_claim_holder(uint64_t server)
{
	/* a 64-bit mix (splitmix64's finaliser), so ids differing anywhere give different holders */
	uint64_t	z = server;
	uint32_t	h;

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	z ^= z >> 31;
	h = (uint32_t) (z >> 32);

	return h != 0 ? h : 1;
}

int
dm_claim_is_claim_name(const char *name)
{
	return strncmp(name, DM_CLAIM_PREFIX, strlen(DM_CLAIM_PREFIX)) == 0;
}

/* The claim's catalog entry, made on first use. */
static int
claim_entry(dm_client *c, uint16_t node, uint64_t sysid, uint32_t instance, int create,
			dm_tree_info *info)
{
	dm_tree_name name;
	char		buf[64];
	int			rc;

	snprintf(buf, sizeof(buf), DM_CLAIM_PREFIX "%llu %u", (unsigned long long) sysid, instance);
	if ((rc = dm_tree_name_named(&name, buf)) != DM_OK)
		return rc;
	rc = dm_tree_open(c, node, &name, info);
	if (rc != DM_ERR_NOTFOUND || !create)
		return rc;
	rc = dm_tree_create(c, node, &name, info);
	if (rc == DM_ERR_EXISTS)	/* another server made it just now */
		rc = dm_tree_open(c, node, &name, info);
	return rc;
}

static void
fill_state(dm_claim_state *st, uint64_t word, uint64_t token)
{
	if (st)
	{
		st->holder = HOLDER(word);
		st->lease_end_s = LEASE_END(word);
		st->run_token = token;
	}
}

int
dm_claim_take(dm_client *c, uint16_t node, uint64_t sysid, uint32_t instance,
			  uint64_t server, uint64_t run_token, uint32_t now_s, uint32_t lease_s,
			  dm_claim_state *state)
{
	dm_tree_info info;
	uint32_t	me = dm_claim_holder(server);
	uint64_t	w, seen, tok = 0;
	int			rc;

	if (lease_s == 0)
		return DM_ERR_INVALID;
	if ((rc = claim_entry(c, node, sysid, instance, 1, &info)) != DM_OK)
		return rc;
	if ((rc = dm_read(c, info.root_addr, &w, 8)) != DM_OK)
		return rc;
	for (int tries = 0; tries < 100; tries++)
	{
		uint64_t	want = ((uint64_t) me << 32) | (uint32_t) (now_s + lease_s);

		if (w != 0 && HOLDER(w) != me && LEASE_END(w) > now_s)
		{
			/* someone else's live lease */
			(void) dm_read(c, info.meta_addr, &tok, 8);
			fill_state(state, w, tok);
			return DM_ERR_EXISTS;
		}
		if ((rc = dm_cas(c, info.root_addr, w, want, &seen)) != DM_OK)
			return rc;
		if (seen == w)
		{
			/* the run's token, for diagnostics only: the word decides */
			if ((rc = dm_write(c, info.meta_addr, &run_token, 8)) != DM_OK)
				return rc;
			fill_state(state, want, run_token);
			return DM_OK;
		}
		w = seen;				/* changed under us: judge the new word */
	}
	return DM_ERR_TIMEOUT;
}

int
dm_claim_release(dm_client *c, uint16_t node, uint64_t sysid, uint32_t instance, uint64_t server)
{
	dm_tree_info info;
	uint64_t	w, seen;
	int			rc;

	rc = claim_entry(c, node, sysid, instance, 0, &info);
	if (rc == DM_ERR_NOTFOUND)
		return DM_OK;
	if (rc != DM_OK || (rc = dm_read(c, info.root_addr, &w, 8)) != DM_OK)
		return rc;
	if (w == 0 || HOLDER(w) != dm_claim_holder(server))
		return DM_OK;
	/* a failed CAS means someone took it over meanwhile: nothing of ours to give back */
	return dm_cas(c, info.root_addr, w, 0, &seen);
}

int
dm_claim_get(dm_client *c, uint16_t node, uint64_t sysid, uint32_t instance, dm_claim_state *state)
{
	dm_tree_info info;
	uint64_t	w, tok = 0;
	int			rc;

	memset(state, 0, sizeof(*state));
	rc = claim_entry(c, node, sysid, instance, 0, &info);
	if (rc == DM_ERR_NOTFOUND)
		return DM_OK;
	if (rc != DM_OK || (rc = dm_read(c, info.root_addr, &w, 8)) != DM_OK ||
		(rc = dm_read(c, info.meta_addr, &tok, 8)) != DM_OK)
		return rc;
	fill_state(state, w, tok);
	return DM_OK;
}
