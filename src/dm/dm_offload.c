/*
 * dm_offload.c — the client's side of offloading (DEX §6): where an
 * operation can be handed to a memnode, whether it should be (the model is
 * described here, dm_offload_policy.c computes it), the RPC, and keeping
 * the compute-side cache coherent with what the executor wrote.
 *
 * Where.  The descent walks the cached nodes from the root (no remote
 * read); the first node not in the cache, N at level L, is where the
 * one-sided path would start paying round trips: the rest of the operation
 * can run on N's memnode instead (placement keeps the level-M subtree of N
 * there; the executor falls back if it has to leave it).  Without a cache
 * N is the root.  A path cached down to the leaf is never offloaded.  Only
 * a subtree whose key range this instance owns is offloaded (DEX §6.2):
 * shared nodes are written by other instances and their cached copies may
 * be stale.
 *
 * Whether (DM_OFFLOAD_AUTO, DEX §6.1).  Offload when the moving average of
 * an offload's latency l_p, inflated by the memnode's queue (offloads in
 * flight per executor slot, from every reply) and times c = 1.2, beats
 * (L+1+x) x (l_o + l_s): l_o the moving average of one remote node read
 * (one-sided operations timed per round trip; only one in 16 while an RPC
 * loses by far), l_s a local node search (0.3 us), and x the round trips
 * the operation pays one-sided beyond its descent -- 2 for a write (the
 * leaf's lock, then the write with the unlock), the further leaves of a
 * scan asking for n entries (n / (3/4 of a leaf)), 0 for a lookup.  DEX
 * puts c on the one-sided side, as the cache's own costs; here it is on
 * the RPC's, because of what the two paths leave behind and take from the
 * host.  A miss at the leaf of a lookup is the tie the two differ on: one
 * read against one RPC of about the same latency (8 and 9.5 us over tcp),
 * and with c on the one-sided side every such miss went to the executor.
 * Measured in one run (YCSB c, uniform, 8% cache, tcp, 2 clients): the
 * one-sided path did 224k lookups/s, offloading them 168k: the read admits
 * the leaf (DEX's coin toss) and the executor's work, on a memnode whose
 * CPUs are the clients' (a co-located memnode, or an RPC's extra copy and
 * checks on any), costs more throughput than its latency shows.  With c
 * on the RPC and x counted, a lookup's leaf miss stays one-sided, a miss
 * above the leaf (two reads or more) or a scan over two leaves or a write
 * (three round trips) goes to the executor, which is where each path won
 * in bench/results/offload-cells-2026-11-27.md.  With probability 1/128 the
 * contrary choice is taken, so both estimates stay fresh when the workload
 * changes (1/1024 when an offload loses by more than 2x even from the root,
 * as over shm: there the cache walk for a start node is skipped too).  A
 * memnode whose executor was busy more than 85% of the time since its last
 * load report (DM_RPC_OFF_LOAD, read at most every 100 ms) is not sent
 * more: DEX's Figure 5, where offloading everything saturates the memory
 * side.
 *
 * Coherence (DEX §6.2).  While the offload runs, N is registered in the
 * cache as being fetched (the I/O flag, dm_cache_admit_begin): another
 * process of this instance that reaches N reads it remotely instead of
 * admitting it, and one that wants to write N through the cache waits.
 * The executor returns the nodes it wrote; their cached copies are dropped
 * before the operation returns, so an operation that starts after it sees
 * the change.  A remote read another process did before the executor's
 * write and admits after that drop could still leave a stale copy: the
 * generation check of dm_cache_invalidate_nodes (key ranges branch) closes
 * that, and invalidate_changed() uses it.  A stale owned copy cannot
 * corrupt the tree either way: a write from it fails its version guard
 * (dm_tree_io.c) and is redone from a fresh read.
 *
 * Other instances' caches (hot standbys: src/pg/dmwal.c) learn of writes
 * from the handle's write log (dm_tree_wlog.c): the nodes the executor
 * wrote are added to it, and a write whose reply never came (the executor
 * may have written or not) marks the log lost, so the whole tree is
 * invalidated.  Replica handles offload nothing, reads included: a
 * replica reads the removal horizon after every node (dm_tree_replica.c),
 * which the executor does not.
 *
 * Not over ucx.  A memnode reached through UCX may be written by a NIC
 * whose atomics are not atomic with the memnode CPU's (NAM paper §3): the
 * executor's lock CAS and a client's NIC CAS on the same word could both
 * succeed.  Until the executor's atomics go through the NIC too, nothing
 * of a memnode this client reaches over ucx is offloaded.
 *
 * Sorted batches (the access method's insert buffer, VACUUM's deletes).
 * There is no batch RPC.  With "always" every entry is offered to the
 * executor, one RPC each, and those it declines go one-sided as one sorted
 * batch.  With "auto" a batch of one entry (a one-row transaction's flush)
 * is decided like a single insert or delete; a longer batch goes one-sided:
 * it locks and writes each leaf once for all its entries, which one RPC
 * per entry beats only when every entry lies in a leaf of its own.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dm_offload_int.h"

int
dm_offload_mode_parse(const char *s)
{
	if (strcmp(s, "off") == 0)
		return DM_OFFLOAD_OFF;
	if (strcmp(s, "always") == 0)
		return DM_OFFLOAD_ALWAYS;
	if (strcmp(s, "auto") == 0)
		return DM_OFFLOAD_AUTO;
	return -1;
}

const char *
dm_offload_mode_name(int mode)
{
	return mode == DM_OFFLOAD_ALWAYS ? "always" : mode == DM_OFFLOAD_AUTO ? "auto" : "off";
}

static int	hook_wanted(const dm_tree *t);
static void hook_release(struct dm_offload *o);

/* What the tree's public operations call (dm_tree_int.h) */
static const dm_offload_hooks hooks = {
	.wanted = hook_wanted,
	.write = dm_offload_write,
	.sorted = dm_offload_sorted,
	.lookup = dm_offload_lookup,
	.release = hook_release,
};

int
dm_tree_set_offload(dm_tree *t, int mode)
{
	if (mode != DM_OFFLOAD_OFF && mode != DM_OFFLOAD_ALWAYS && mode != DM_OFFLOAD_AUTO)
		return DM_ERR_INVALID;
	if (mode == DM_OFFLOAD_OFF)
	{
		dm_tree_offload_release(t);
		return DM_OK;
	}
	if (t->off == NULL)
	{
		if ((t->off = calloc(1, sizeof(*t->off))) == NULL)
			return DM_ERR_NOMEM;
		t->off_hooks = &hooks;
		t->off->rng = now_ns() | 1;
		t->off->tok_rng = (now_ns() ^ ((uint64_t) getpid() << 32) ^ (uint64_t) (uintptr_t) t) | 1;
		t->off->root_level = -1;
	}
	t->off->mode = mode;
	return DM_OK;
}

static int
hook_wanted(const dm_tree *t)
{
	/* requests carry 64-bit keys: VAR trees' operations stay one-sided (§5.2) */
	return t->off != NULL && !t->off->local && !t->key_var;
}

int
dm_tree_get_offload(const dm_tree *t)
{
	return t->off ? t->off->mode : DM_OFFLOAD_OFF;
}

static void
hook_release(struct dm_offload *o)
{
	free(o->walk_buf);
	free(o);
}

void
dm_tree_offload_counters_take(dm_tree *t, dm_offload_counters *out)
{
	dm_tree_offload_counters(t, out);
	if (t->off)
		memset(&t->off->ctr, 0, sizeof(t->off->ctr));
}

void
dm_tree_offload_counters(const dm_tree *t, dm_offload_counters *out)
{
	memset(out, 0, sizeof(*out));
	if (t->off == NULL)
		return;
	*out = t->off->ctr;
	out->rpc_ns_avg = t->off->rpc_ns;
	out->read_ns_avg = t->off->read_ns;
	for (int i = 0; i < DM_TREE_MAX_MEMNODES; i++)
		if (t->off->load[i].busy_pct > out->memnode_busy_pct)
			out->memnode_busy_pct = t->off->load[i].busy_pct;
}

/*
 * Where the one-sided path would first read remotely on its way to e: N and
 * its level (-1 unknown).  DM_ERR_FALLBACK: nowhere to offload (the path is
 * cached to the leaf, N is being fetched, or N's range is not owned).
 */
static int
find_start(dm_tree *t, dm_entry e, dm_gaddr *start, int *level, uint32_t *pframe, int *pslot,
		   dm_gaddr *cached_leaf, uint32_t *leaf_frame)
{
	dm_cache   *c = t->cache;
	uint8_t    *buf;
	dm_gaddr	addr;
	int			want = -1;
	int			rc;
	uint32_t	pf = DM_FRAME_NONE;
	int			ps = -1;
	/*
	 * The frame each node is expected in, from its parent's child hints (as
	 * the descent finds them): a lookup by hint reads the frame's identity
	 * without locking a bucket of the cache's table.  Without hints every
	 * level took the bucket's spin lock -- the root's bucket shared by every
	 * process -- and searched its chain (5% of the samples of YCSB c over
	 * tcp, auto, against none for off).
	 */
	uint32_t	hint = t->root_frame;
	/* the root covers every key: owned only if this instance owns them all */
	int			root_owned = dm_tree_owns_all(t);

	*cached_leaf = 0;
	if (t->root == 0 && (rc = dm_tree_read_root(t, &addr)) != DM_OK)
		return rc;
	addr = t->root;
	if (c == NULL)
	{
		if (!root_owned)
			return DM_ERR_FALLBACK;
		*start = addr;
		/* the root we know may have grown since its level was learnt */
		*level = t->off->root_addr == addr ? t->off->root_level : -1;
		*pframe = DM_FRAME_NONE;
		*pslot = -1;
		return DM_OK;
	}
	/* the handle's own buffer: this walk runs on every operation of auto over tcp */
	if (t->off->walk_buf == NULL || t->off->walk_len != t->node_size)
	{
		free(t->off->walk_buf);
		t->off->walk_len = 0;
		if ((t->off->walk_buf = aligned_alloc(8, t->node_size)) == NULL)
			return DM_ERR_NOMEM;
		t->off->walk_len = t->node_size;
	}
	buf = t->off->walk_buf;
	rc = DM_ERR_FALLBACK;
	for (int depth = 0; depth < DM_TREE_MAX_LEVELS; depth++)
	{
		int			io = 0;
		uint32_t	f = dm_cache_lookup(c, t->ctag, addr, hint, &io);
		dm_node_hdr *h = NODE_HDR(buf);
		int			i;
		dm_entry	hi;

		if (f == DM_FRAME_NONE)
		{
			if (!io && (depth > 0 || root_owned))
			{
				*start = addr;
				*level = want;
				*pframe = pf;
				*pslot = ps;
				rc = DM_OK;
			}
			break;
		}
		/* t->hints: the frame's child hints, as a descent's copy leaves them */
		if (dm_cache_copy(c, f, t->ctag, addr, buf, t->node_size, t->hints, NULL) != DM_CACHE_COPIED ||
			!dm_node_covers(buf, e) || (h->flags & DM_NODE_DEAD))
			break;
		/* found through the table: swizzle the parent's pointer again (as dm_node_fetch) */
		if (f != hint && pf != DM_FRAME_NONE)
			dm_cache_set_hint(c, pf, ps, f);
		if (depth == 0)
			t->root_frame = f;
		if (h->level == 0)
		{
			/* cached to the leaf: nothing to offload, but the one-sided path may start here */
			*cached_leaf = addr;
			*leaf_frame = f;
			*pframe = pf;
			*pslot = ps;
			break;
		}
		if (depth == 0)
		{
			t->off->root_level = h->level;
			t->off->root_addr = addr;
		}
		i = dm_inner_child_index(buf, &e);
		hi = i + 1 < h->count ? dm_node_sep(buf, i + 1) : dm_node_high(buf);
		if (dm_tree_own_class(t, dm_node_sep(buf, i), hi) != DM_OWN_OWNED)
			break;
		addr = dm_node_child(buf, i);
		hint = t->hints ? t->hints[i] : DM_FRAME_NONE;
		want = h->level - 1;
		pf = f;
		ps = i;
	}
	return rc;
}

/*
 * The nodes the executor wrote: into the write log, and out of the cache
 * (dm_cache_invalidate_nodes, whose generation check also stops a copy read
 * before the write from being admitted after this).
 */
static void
invalidate_changed(dm_tree *t, const dm_rpc_off_rep *rep)
{
	/* other instances' caches: the write log names them (WAL for standbys) */
	for (uint32_t i = 0; i < rep->nchanged; i++)
		dm_tree_wlog_add(t, rep->changed[i]);
	if (t->cache == NULL || rep->nchanged == 0)
		return;
	/* the generation first: a copy read before the write is not admitted after this */
	(void) dm_cache_invalidate_nodes(t->cache, t->ctag, rep->changed, (int) rep->nchanged);
	t->off->ctr.invalidated += rep->nchanged;
}

/* Whether this client reaches memnode mn through UCX (see the top of this file). */
static int
over_ucx(const dm_tree *t, uint16_t mn)
{
	dm_node_info ni;

	for (int i = 0; i < dm_client_nnodes(t->c); i++)
		if (dm_client_node_info(t->c, i, &ni) == DM_OK && ni.node_id == mn)
			return ni.backend == DM_BACKEND_UCX;
	return 0;
}

/*
 * One offload RPC from the start node for e.  DM_ERR_FALLBACK when the
 * policy says no or the executor declined.
 */
/*
 * An offloaded write whose outcome is unknown (no reply, or one we cannot
 * read): any node under its start may have changed.  Standbys are told to
 * drop the whole tree (the write log), and so is this server's cache: an
 * owned frame is trusted without a remote read (dm_tree_cacheio.c), so a
 * copy older than what the executor wrote would hide it.
 */
static void
write_outcome_unknown(dm_tree *t)
{
	dm_tree_wlog_lost(t);
	if (t->cache)
		dm_cache_invalidate_tree(t->cache, t->ctag);
	t->off->ctr.lost_writes++;
}

static uint64_t
next_token(struct dm_offload *o)
{
	o->tok_rng ^= o->tok_rng << 13;
	o->tok_rng ^= o->tok_rng >> 7;
	o->tok_rng ^= o->tok_rng << 17;
	return o->tok_rng ? o->tok_rng : 1;
}


/*
 * Where the next reader descent for e starts (dm_tree_descend_impl): node
 * addr of that level, reached from child slot of the cached parent frame.
 */
static void
set_hint(dm_tree *t, dm_gaddr addr, dm_entry e, int level, uint32_t pframe, int slot, uint32_t frame)
{
	t->desc_hint = addr;
	t->desc_hint_e = e;
	t->desc_hint_level = level;
	t->desc_hint_pframe = pframe;
	t->desc_hint_slot = slot;
	t->desc_hint_frame = frame;
}

static int
offload_rpc(dm_tree *t, uint32_t code, dm_entry lo, int lo_incl, dm_entry hi, int hi_incl,
			uint32_t max, dm_rpc_off_rep *rep, dm_entry *ents)
{
	struct dm_offload *o = t->off;
	dm_rpc_off_req req;
	dm_gaddr	start;
	int			level,
				rc,
				pos = -1,
				explore = 0,
				extra,
				pslot = -1,
				far;
	uint32_t	pframe = DM_FRAME_NONE,
				leaf_frame = DM_FRAME_NONE;
	dm_gaddr	leaf = 0;
	uint16_t	mn;
	uint32_t	f = DM_FRAME_NONE,
				existing,
				got = 0;
	uint64_t	t0;
	int			write = code == DM_RPC_OFF_INSERT || code == DM_RPC_OFF_DELETE;
	size_t		cap = sizeof(*rep) + (size_t) max * sizeof(dm_entry_wire);
	uint8_t    *rbuf;

	/* requests and replies carry 64-bit keys: VAR trees stay one-sided (DESIGN.md §5.2) */
	if (o->mode == DM_OFFLOAD_OFF || o->local || t->replica || t->key_var ||
		(write && (t->writer_refused || !dm_tree_owns_entry(t, lo))))
		return DM_ERR_FALLBACK;
	extra = dm_offload_extra_rounds(code, max, t->leaf_cap);
	if (!dm_offload_could_win(o, extra, &far))
	{
		if (!dm_offload_explore_now(o, far) ||
			(far && now_ns() - o->far_explored_ns < EXPLORE_FAR_INTERVAL_NS))
		{
			o->ctr.decided_local++;
			o->ctr.unwalked++;
			return DM_ERR_FALLBACK;
		}
		explore = 1;
		if (far)
			o->far_explored_ns = now_ns();
	}
	if ((rc = find_start(t, lo, &start, &level, &pframe, &pslot, &leaf, &leaf_frame)) != DM_OK)
	{
		/* the walk reached lo's leaf in the cache: a reader's descent starts there */
		if (rc == DM_ERR_FALLBACK && leaf != 0 && !write)
			set_hint(t, leaf, lo, 0, pframe, pslot, leaf_frame);
		return rc;
	}
	mn = dm_gaddr_node(start);
	for (int i = 0; i < t->nmemnodes; i++)
		if (t->memnodes[i] == mn)
			pos = i;
	if (pos < 0 || over_ucx(t, mn) || !dm_offload_decide(t, level, extra, mn, explore))
	{
		/*
		 * One-sided, from where the walk stopped: a reader's descent for
		 * lo starts at N (dm_tree_descend_impl), not again at the root --
		 * on a lookup missing only its leaf the second walk through the
		 * cached levels cost ~15% of throughput (YCSB c over tcp, 8%).
		 */
		if (!write && t->cache != NULL)
			set_hint(t, start, lo, level, pframe, pslot, DM_FRAME_NONE);
		return DM_ERR_FALLBACK;
	}
	memset(&req, 0, sizeof(req));
	/*
	 * The high-water mark the write depends on (dm_tree_writer_require) is
	 * up before the executor writes anything: its first write batch carries
	 * the raise when the word is on mn (as a one-sided write's batch does;
	 * before protocol 6 this was a round trip of its own per transaction),
	 * else it is raised here by a round trip.
	 */
	if (write && (rc = dm_tree_writer_offload_carry(t, mn, &req.hw_word, &req.hw_mark)) != DM_OK)
		return rc;
	req.tree_id = t->info.tree_id;
	req.start = start;
	req.writer = t->writer;
	req.fence = write ? t->fence[pos] : 0;
	req.lo.key = lo.key;
	req.lo.tid = lo.tid;
	req.hi.key = hi.key;
	req.hi.tid = hi.tid;
	req.level = level < 0 ? UINT32_MAX : (uint32_t) level;
	req.max = max;
	req.node_size = t->node_size;
	req.lock_timeout_ms = (uint32_t) t->lock_timeout_ms;
	req.flags = (lo_incl ? DM_OFF_LO_INCL : 0) | (hi_incl ? DM_OFF_HI_INCL : 0);
	req.token = next_token(o);
	if ((rbuf = malloc(cap)) == NULL)
		return DM_ERR_NOMEM;

	/* the I/O flag on N: nobody of this instance admits or writes it meanwhile */
	if (t->cache)
	{
		f = dm_cache_admit_begin(t->cache, t->ctag, start, &existing);
		if (f == DM_FRAME_NONE && existing != DM_FRAME_NONE)
		{
			free(rbuf);
			return DM_ERR_FALLBACK;	/* admitted meanwhile: the one-sided path uses it */
		}
	}
	t0 = now_ns();
	rc = dm_client_rpc(t->c, mn, code, &req, sizeof(req), rbuf, sizeof(*rep), (uint32_t) cap, &got);
	if (rc == DM_OK || rc == DM_ERR_FALLBACK)
	{
		uint64_t	ns = now_ns() - t0;

		estimate_add(&o->rpc_ns, &o->rpc_samples, ns);
		o->ctr.rpc_ns_total += ns;
		o->ctr.rpcs++;
	}
	/*
	 * N's frame first: dropping the tree's frames waits for every frame of
	 * the tree that is mid-admission, this one included.
	 */
	if (f != DM_FRAME_NONE)
		dm_cache_admit_abort(t->cache, f);
	/* a write whose outcome is unknown: any node of the subtree may have changed */
	if (write && rc != DM_OK && rc != DM_ERR_FALLBACK)
	{
		/* the token first: a settle between the two must not miss it */
		dm_offload_remember_unknown(t, mn, req.token);
		write_outcome_unknown(t);
	}
	if (rc != DM_OK)
	{
		free(rbuf);
		if (rc == DM_ERR_FALLBACK)
			o->ctr.fallbacks++;
		else if (rc == DM_ERR_FENCED)
			dm_tree_fail(t, rc, "the tree is written by another writer now (offloaded write refused)");
		else
			dm_tree_fail(t, rc, "%s", dm_client_error(t->c));
		return rc;
	}
	memcpy(rep, rbuf, sizeof(*rep));
	if (rep->count > max || got != sizeof(*rep) + rep->count * sizeof(dm_entry_wire) ||
		rep->nchanged > DM_OFF_MAX_CHANGED)
	{
		free(rbuf);
		if (write)
			write_outcome_unknown(t);
		return dm_tree_fail(t, DM_ERR_PROTOCOL, "malformed reply to an offloaded operation");
	}
	for (uint32_t i = 0; ents && i < rep->count; i++)
	{
		dm_entry_wire w;

		memcpy(&w, rbuf + sizeof(*rep) + (size_t) i * sizeof(w), sizeof(w));
		ents[i] = dm_entry_make(w.key, w.tid);
	}
	/* below the mark: not raised by this write (nothing written); raised by the next */
	if (req.hw_mark != 0 && rep->high_water >= req.hw_mark)
		dm_tree_writer_raised(t, rep->high_water);
	free(rbuf);
	if (level < 0 && start == t->root)
	{
		o->root_level = (int) rep->start_level;
		o->root_addr = start;
	}
	{
		mn_load    *l = dm_offload_load_of(t, mn);

		if (l)
		{
			l->inflight = rep->inflight > 0 ? rep->inflight - 1 : 0;
			l->slots = rep->slots;
		}
	}
	/* the executor's writes: drop our copies before the operation returns */
	invalidate_changed(t, rep);
	o->ctr.offloads++;
	return DM_OK;
}

int
dm_offload_write(dm_tree *t, dm_entry e, int del, int *existed)
{
	dm_rpc_off_rep rep;
	int			rc = offload_rpc(t, del ? DM_RPC_OFF_DELETE : DM_RPC_OFF_INSERT, e, 1, e, 1, 0, &rep, NULL);
	dm_offload_sample smp;

	if (rc != DM_ERR_FALLBACK)
	{
		if (rc == DM_OK && existed)
			*existed = rep.done != 0;
		return rc;
	}
	t->off->local = 1;
	dm_offload_sample_begin(t, &smp);
	rc = del ? dm_tree_delete(t, e, existed) : dm_tree_insert(t, e, existed);
	dm_offload_sample_end(t, &smp);
	t->off->local = 0;
	return rc;
}

int
dm_offload_lookup(dm_tree *t, uint64_t key, uint64_t *tids, int max, int *n)
{
	dm_rpc_off_rep rep;
	dm_entry	ents[LOOKUP_MAX];
	int			rc = offload_rpc(t, DM_RPC_OFF_LOOKUP, dm_entry_make(key, 0), 1,
								 dm_entry_make(key, DM_TID_MAX), 1, LOOKUP_MAX, &rep, ents);
	dm_offload_sample smp;

	if (rc == DM_OK && rep.done == 1)
	{
		*n = (int) rep.count;
		for (int i = 0; i < *n && i < max; i++)
			tids[i] = ents[i].tid;
		return DM_OK;
	}
	if (rc != DM_OK && rc != DM_ERR_FALLBACK)
		return rc;
	/* declined, or more than one reply's worth (or beyond this memnode): one-sided */
	t->off->local = 1;
	dm_offload_sample_begin(t, &smp);
	rc = dm_tree_lookup(t, key, tids, max, n);
	dm_offload_sample_end(t, &smp);
	t->off->local = 0;
	t->desc_hint = 0;			/* used by its descent, or none came (a hopscotch hit, a hot key) */
	return rc;
}

/*
 * A scan reply is believed only if it can be right: its entries ascending
 * and inside [lo, hi], and a resume point past what it returned (or past
 * lo when it returned nothing) -- the scan has no recheck, and a resume
 * point that does not move would loop.  DM_ERR_PROTOCOL otherwise.
 */
static int
scan_reply_valid(dm_tree *t, dm_entry lo, int lo_incl, dm_entry hi, int hi_incl,
				 const dm_rpc_off_rep *rep, const dm_entry *out)
{
	dm_entry	resume = {rep->resume.key, rep->resume.tid};
	int			c;

	if (rep->done > DM_OFF_RESUME_INCL)
		return dm_tree_fail(t, DM_ERR_PROTOCOL, "offloaded scan: bad end marker %u", (unsigned) rep->done);
	for (uint32_t i = 0; i < rep->count; i++)
	{
		if ((c = dm_entry_cmp(out[i], lo)) < 0 || (c == 0 && !lo_incl) ||
			(c = dm_entry_cmp(out[i], hi)) > 0 || (c == 0 && !hi_incl) ||
			(i > 0 && dm_entry_cmp(out[i - 1], out[i]) >= 0))
			return dm_tree_fail(t, DM_ERR_PROTOCOL, "offloaded scan: entry %u out of order or outside the range", i);
	}
	if (rep->done == 1)
		return DM_OK;
	/* the rest starts at resume (inclusive if DM_OFF_RESUME_INCL): it must move on */
	c = rep->count > 0 ? dm_entry_cmp(resume, out[rep->count - 1]) : dm_entry_cmp(resume, lo);
	if (rep->count > 0 ? (c < 0 || (c == 0 && rep->done == DM_OFF_RESUME_INCL)) :
		(c < 0 || (c == 0 && (rep->done == DM_OFF_RESUME_INCL || !lo_incl))))
		return dm_tree_fail(t, DM_ERR_PROTOCOL, "offloaded scan: the resume point does not move on");
	return DM_OK;
}

int
dm_offload_scan_batch(dm_tree *t, dm_entry lo, int lo_incl, dm_entry hi, int hi_incl,
					  dm_entry *out, int max, int *n, int *more, dm_entry *resume)
{
	dm_rpc_off_rep rep;
	int			rc;

	*n = 0;
	*more = 0;
	if (max <= 0)
		return DM_ERR_INVALID;
	if (t->off == NULL)
		return DM_ERR_FALLBACK;
	rc = offload_rpc(t, DM_RPC_OFF_SCAN, lo, lo_incl, hi, hi_incl,
					 (uint32_t) (max < DM_OFF_MAX_ENTRIES ? max : DM_OFF_MAX_ENTRIES), &rep, out);
	if (rc != DM_OK)
		return rc;
	if ((rc = scan_reply_valid(t, lo, lo_incl, hi, hi_incl, &rep, out)) != DM_OK)
		return rc;
	*n = (int) rep.count;
	*more = rep.done == 1 ? 0 : rep.done == DM_OFF_RESUME_INCL ? DM_OFF_RESUME_INCL : 1;
	/* a whole entry: the caller's may be undefined beyond the words set here */
	*resume = dm_entry_make(rep.resume.key, rep.resume.tid);
	return DM_OK;
}

int
dm_offload_iter_open(dm_tree *t, const dm_range *r, dm_iter **out)
{
	dm_offload_sample smp;
	int			rc;

	if (t->off == NULL)
		return dm_iter_open(t, r, out);
	/*
	 * Without this sample a process whose reads all go through its own
	 * iterator (the access method's scans) never learns l_o: the policy
	 * then takes an offload as possibly winning on every operation (a cache
	 * walk each time) and explores at 1/128 however badly RPCs lose (over
	 * shm: ~50 one-sided reads' worth each).
	 */
	dm_offload_sample_begin(t, &smp);
	rc = dm_iter_open(t, r, out);
	t->desc_hint = 0;			/* a declined batch's start (dm_offload_scan_batch): used or not */
	if (rc == DM_OK)
		dm_offload_sample_end(t, &smp);
	return rc;
}

int
dm_tree_offload_scan(dm_tree *t, dm_entry lo, int lo_incl, dm_entry hi, int hi_incl,
					 dm_entry *out, int max, int *n, int *more, dm_entry *resume)
{
	int			rc = dm_offload_scan_batch(t, lo, lo_incl, hi, hi_incl, out, max, n, more, resume);
	dm_range	r = {lo, lo_incl, hi, hi_incl, 0};
	dm_iter    *it;
	dm_entry	e;
	dm_offload_sample smp;

	if (rc != DM_ERR_FALLBACK)
		return rc;
	dm_offload_sample_begin(t, &smp);
	rc = dm_iter_open(t, &r, &it);
	t->desc_hint = 0;			/* offload_rpc's start for lo: used by that descent or not at all */
	if (rc != DM_OK)
		return rc;
	while (*n < max && (rc = dm_iter_next(it, &e)) == 1)
		out[(*n)++] = e;
	if (*n == max)
	{
		/*
		 * Maybe more: not peeked at, since the entry after the last may be
		 * in the next leaf, a remote read a caller wanting max entries
		 * does not need (scans of YCSB e read 18% more leaves with it).
		 */
		*more = 1;
		*resume = out[*n - 1];
		rc = 0;
	}
	dm_iter_close(it);
	t->desc_hint = 0;
	dm_offload_sample_end(t, &smp);
	return rc == 0 ? DM_OK : -rc;
}

int
dm_offload_sorted(dm_tree *t, const dm_entry *e, int n, int del, int *changed)
{
	struct dm_offload *o = t->off;
	uint32_t	code = del ? DM_RPC_OFF_DELETE : DM_RPC_OFF_INSERT;
	dm_entry   *rest;
	int			nrest = 0,
				done = 0,
				local_changed = 0,
				rc = DM_OK;
	int			offer = !(o->mode == DM_OFFLOAD_AUTO && n > 1);
	dm_offload_sample smp;

	if (changed)
		*changed = 0;
	if (n <= 0)
		return DM_OK;
	if ((rest = malloc(sizeof(dm_entry) * (size_t) n)) == NULL)
		return DM_ERR_NOMEM;
	if (!offer)
	{
		/* auto, several entries: one-sided, each leaf written once for all its entries */
		memcpy(rest, e, sizeof(dm_entry) * (size_t) n);
		nrest = n;
		o->ctr.decided_local++;
	}
	for (int i = 0; offer && i < n; i++)
	{
		dm_rpc_off_rep rep;

		rc = offload_rpc(t, code, e[i], 1, e[i], 1, 0, &rep, NULL);
		if (rc == DM_OK)
		{
			/* rep.done: the entry was there */
			if (rep.done ? del : !del)
				done++;
			continue;
		}
		if (rc != DM_ERR_FALLBACK)
			break;
		rc = DM_OK;
		rest[nrest++] = e[i];
	}
	if (rc == DM_OK && nrest > 0)
	{
		o->local = 1;
		dm_offload_sample_begin(t, &smp);
		rc = del ? dm_tree_delete_sorted(t, rest, nrest, &local_changed)
			: dm_tree_insert_sorted(t, rest, nrest, &local_changed);
		dm_offload_sample_end(t, &smp);
		o->local = 0;
	}
	free(rest);
	if (changed)
		*changed = done + local_changed;
	return rc;
}
