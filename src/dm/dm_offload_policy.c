/*
 * dm_offload_policy.c — whether to offload (DM_OFFLOAD_AUTO, DEX §6.1): the
 * cost model comparing an offload's measured latency with the one-sided
 * path's from the level of the first cache miss, exploration that keeps
 * both estimates fresh, and the memnodes' executor load.  The model and
 * its constants are described at the top of dm_offload.c.
 */
#include <stdlib.h>
#include <string.h>

#include "dm_offload_int.h"

mn_load *
dm_offload_load_of(dm_tree *t, uint16_t memnode)
{
	for (int i = 0; i < t->nmemnodes; i++)
		if (t->memnodes[i] == memnode)
		{
			t->off->load[i].memnode = memnode;
			return &t->off->load[i];
		}
	return NULL;
}

/*
 * The memnode's executor load, asked for at most every LOAD_INTERVAL_NS;
 * the clock read for that only every LOAD_CHECK_EVERY decisions (a
 * decision is made on every operation of auto over tcp, and each clock
 * read is ~25 ns of it).
 */
#define LOAD_CHECK_EVERY 16

static void
refresh_load(dm_tree *t, mn_load *l)
{
	uint64_t	now;
	dm_rpc_off_load_rep rep;

	if (l->uptime_ns != 0 && (++t->off->load_skip % LOAD_CHECK_EVERY) != 0)
		return;
	now = now_ns();
	if (now - l->last_ns < LOAD_INTERVAL_NS)
		return;
	l->last_ns = now;
	if (dm_client_rpc(t->c, l->memnode, DM_RPC_OFF_LOAD, NULL, 0, &rep, sizeof(rep), sizeof(rep), NULL) != DM_OK)
		return;
	t->off->ctr.load_reports++;
	if (l->uptime_ns != 0 && rep.uptime_ns > l->uptime_ns && rep.slots > 0)
		l->busy_pct = (uint32_t) ((rep.busy_ns - l->busy_ns) * 100 /
								  ((rep.uptime_ns - l->uptime_ns) * rep.slots));
	l->busy_ns = rep.busy_ns;
	l->uptime_ns = rep.uptime_ns;
	l->slots = rep.slots;
	l->inflight = rep.inflight;
}

/*
 * The policy's contrary choice, with probability 1/128 (both estimates stay
 * fresh), or 1/1024 when rare: an offload that loses by a wide margin (over
 * shm an RPC costs ~50 one-sided operations) is still tried often enough to
 * notice a change, without paying ~1% of that margin on every operation.
 */
int
dm_offload_explore_now(struct dm_offload *o, int rare)
{
	o->rng ^= o->rng << 13;
	o->rng ^= o->rng >> 7;
	o->rng ^= o->rng << 17;
	return (o->rng & (rare ? EXPLORE_RARE_MASK : EXPLORE_MASK)) == 0;
}

/*
 * (L + 1 + extra) x (l_o + l_s): the one-sided path from a miss at level
 * L, for an operation paying extra round trips beyond its descent.
 */
static uint64_t
local_cost(const struct dm_offload *o, int level, int extra)
{
	return (uint64_t) (level + 1 + extra) * (o->read_ns + LOCAL_SEARCH_NS);
}

/* l_p x c, inflated by the memnode's queue (offloads in flight per executor slot). */
static uint64_t
rpc_cost(const struct dm_offload *o, uint32_t inflight, uint32_t slots)
{
	uint64_t	ns = o->rpc_ns + (slots ? o->rpc_ns * inflight / slots : 0);

	return ns * COST_C_NUM / COST_C_DEN;
}

int
dm_offload_extra_rounds(uint32_t code, uint32_t max, int leaf_cap)
{
	uint32_t	per_leaf = (uint32_t) (leaf_cap > 0 ? leaf_cap : 1) * SCAN_LEAF_FILL_NUM / SCAN_LEAF_FILL_DEN;

	if (code == DM_RPC_OFF_INSERT || code == DM_RPC_OFF_DELETE)
		return WRITE_EXTRA_ROUNDS;
	if (code == DM_RPC_OFF_SCAN && max > 1)
	{
		uint32_t	more = (max - 1) / (per_leaf ? per_leaf : 1);

		return more < DM_TREE_MAX_LEVELS * 4 ? (int) more : DM_TREE_MAX_LEVELS * 4;
	}
	return 0;					/* a lookup: its key's leaf, as the descent */
}

/*
 * auto: could an offload win from any level, even the root's?  When not
 * (over shm, where a remote read is a memory access and an RPC a socket
 * round trip), the cache walk that finds where it would start
 * (find_start) is not worth making: it is a second descent through the
 * cache on every operation.  Only exploration walks then.
 */
int
dm_offload_could_win(const struct dm_offload *o, int extra, int *far)
{
	uint64_t	most,
				rpc;

	*far = 0;
	if (o->mode != DM_OFFLOAD_AUTO || !estimates_warm(o))
		return 1;
	most = local_cost(o, o->root_level >= 0 ? o->root_level : 2, extra);
	rpc = rpc_cost(o, 0, 0);
	*far = rpc > 2 * most;
	return rpc < most;
}

int
dm_offload_model(const struct dm_offload *o, int level, int extra, uint32_t inflight, uint32_t slots)
{
	return rpc_cost(o, inflight, slots) < local_cost(o, level, extra);
}

/*
 * The policy: offload the rest of an operation from a miss at level L?
 * explore: the caller already drew the contrary choice (could_win said no).
 */
int
dm_offload_decide(dm_tree *t, int level, int extra, uint16_t memnode, int explore)
{
	struct dm_offload *o = t->off;
	mn_load    *l = dm_offload_load_of(t, memnode);
	int			offload;

	if (l == NULL)
		return 0;
	if (o->mode == DM_OFFLOAD_ALWAYS)
	{
		o->ctr.decided_offload++;
		return 1;
	}
	refresh_load(t, l);
	if (l->slots == 0 && l->uptime_ns != 0)
		offload = 0;			/* the memnode runs no executor */
	else if (l->busy_pct > BUSY_LIMIT_PCT)
		offload = 0;
	else if (explore)
	{
		offload = 1;
		o->ctr.explored++;
	}
	else
	{
		if (!estimates_warm(o))
			offload = o->rpc_samples < o->read_samples;	/* a few samples of each first */
		else
		{
			if (level < 0)
				level = o->root_level >= 0 ? o->root_level : 2;	/* not known yet: a guess */
			offload = dm_offload_model(o, level, extra, l->inflight, l->slots);
		}
		if (dm_offload_explore_now(o, 0))
		{
			offload = !offload;
			o->ctr.explored++;
		}
	}
	if (offload)
		o->ctr.decided_offload++;
	else
		o->ctr.decided_local++;
	return offload;
}

/*
 * The one-sided path, timed for l_o: two clock reads and two sums of the
 * client's counters around the operation.  Where an RPC loses by far (over
 * shm an operation is ~1-2 us of loads, and these cost ~0.1-0.2 us) only
 * one operation in SAMPLE_FAR_EVERY is timed: the estimate then only has
 * to notice a change of regime, which a sample every few operations does.
 * Elsewhere, once warm, one in SAMPLE_EVERY: the moving average spans ~16
 * samples, so it still follows within ~64 one-sided operations, and the
 * operations not timed skip two clock reads.
 */
#define SAMPLE_FAR_EVERY 16
#define SAMPLE_EVERY 4

void
dm_offload_sample_begin(dm_tree *t, dm_offload_sample *s)
{
	struct dm_offload *o = t->off;
	int			far;

	s->on = 0;
	if (o == NULL)
		return;
	if (!dm_offload_could_win(o, 0, &far) && far)
	{
		if ((++o->sample_skip % SAMPLE_FAR_EVERY) != 0)
			return;
	}
	else if (estimates_warm(o) && (++o->sample_skip % SAMPLE_EVERY) != 0)
		return;
	s->on = 1;
	s->t0 = now_ns();
	s->rt0 = dm_client_round_trips(t->c);
}

void
dm_offload_sample_end(dm_tree *t, const dm_offload_sample *s)
{
	uint64_t	rts;

	if (!s->on)
		return;
	rts = dm_client_round_trips(t->c) - s->rt0;
	if (rts > 0)
	{
		uint64_t	ns = now_ns() - s->t0;

		estimate_add(&t->off->read_ns, &t->off->read_samples, ns / rts);
		t->off->ctr.read_ns_total += ns;
		t->off->ctr.reads += rts;
	}
}
