/*
 * dm_tree_hop.c — point lookups in a tree of hopscotch leaves (DESIGN.md
 * §5.1, CHIME §4): descend through the (cached) inner nodes to the leaf's
 * address, then read in one round trip the leaf's version, its header,
 * the key's neighbourhood and the version again, instead of the whole
 * leaf; or, for a key of the hotspot buffer (dm_tree_hot.c), only the
 * version and checksum words of the leaf that answered it last.
 *
 * The neighbourhood read is a seqlock: four READs in one batch, executed
 * in order (DM_OPF_ORDERED for ucx, dm_client.h): [8,16) v1, [16,88) the
 * header, the H buckets, [8,16) v2.  Every write of a node makes its
 * version DIRTY (guard CAS) before its first store and clean and higher
 * after its last (dm_tree_io.c), and versions at an address only grow.  So
 * if v1 is clean and equals v2, no write started between the two reads
 * and none was under way at the first: every word read between them
 * belongs to the image of version v1, however each READ tore.  The words
 * of one READ are not ordered among themselves (tear mode reads them
 * backwards, RDMA in any order), which is why v1 is a READ of its own: a
 * header read in the same READ as v1 may hold words of an image older
 * than v1 (fences from before a split whose entries the buckets no
 * longer hold).
 *
 * A speculative read is one READ of [8,24): the version and checksum
 * words.  The key's entry pins (version, checksum) of the leaf image the
 * answer was read from, through the seqlock above or a whole validated
 * copy.  If the version word still holds that clean version, no write of
 * the node has started since (versions at an address only grow, also
 * across reclamation and reuse, dm_tree_reclaim.c), so the node is that
 * image now: the same fences, not DEAD, the same buckets, the same answer,
 * true at the moment the version word was read.  A moved, hopped, deleted
 * or added entry, a split, a reclaimed or reused leaf all wrote the node
 * and changed the version.  The checksum (which covers the tree tag)
 * guards the one case versions do not order: the memory given back to a
 * memnode and made a node of another tree (a dropped tree); the checksum
 * word may be read at another instant than the version word, which can
 * only make a match fail.  A rejected speculation costs its 16 bytes and
 * the lookup goes the ordinary way, which pins the key again.
 *
 * A home whose overflow flag is set has its entries anywhere in the leaf:
 * the leaf is then read whole (by address, validated by checksum).
 * Whatever else one leaf cannot answer — the key possibly continuing in
 * the next leaf, a leaf that does not cover the key (split since the
 * parent was read, reused, dead), reads that keep failing validation —
 * goes to the iterator (dm_tree_scan.c), which reads whole leaves and
 * moves right, restarts, waits out or repairs as for sorted leaves.
 */
#include <stdlib.h>
#include <string.h>

#include "dm_hop.h"
#include "dm_tree_int.h"

#define HOP_READ_TRIES 16

/*
 * The tids of key among n entries/buckets (flags stripped), ascending, as
 * dm_tree_lookup gives them; *first is the first of them (for the hotspot
 * buffer, whatever max is).
 */
static void
collect(const dm_rawent *b, int nb, uint64_t key, uint64_t *tids, int max, int *n, uint64_t *first)
{
	uint64_t	found[DM_NODE_MAX / sizeof(dm_rawent)];
	int			k = 0;

	for (int i = 0; i < nb; i++)
		if (dm_hop_used(&b[i]) && b[i].key == key && !(b[i].tid & DM_TID_NULL))
		{
			uint64_t	tid = b[i].tid & ~DM_HOP_OVF;
			int			p = k++;

			/* insertion sort: a handful of entries */
			while (p > 0 && found[p - 1] > tid)
			{
				found[p] = found[p - 1];
				p--;
			}
			found[p] = tid;
		}
	for (int i = 0; i < k && i < max; i++)
		tids[i] = found[i];
	*first = k > 0 ? found[0] : 0;
	*n = k;
}

/*
 * A speculative read for a key of the hotspot buffer (top comment): *done
 * = 1 if the leaf that answered it is unchanged, the answer in tids/n.
 * at: the leaf the descent reached (0: none made), which the pinned leaf
 * must be.
 */
static int
spec_read(dm_tree *t, uint64_t key, dm_gaddr at, uint64_t *tids, int max, int *n, int *done)
{
	uint64_t	tag;
	dm_hot_table *ht = dm_tree_hot_table(t, 0, &tag);
	dm_hot_ent	he;
	uint64_t	w[2];
	dm_op		op;
	int			rc;

	/*
	 * he is one whole tuple (dm_hot.c's seqlock): its key, leaf, version,
	 * checksum and answer were pinned together, so a leaf that still shows
	 * that version and checksum answers for that key.  A key whose
	 * speculation failed keeps its way (and count) until pinned again.
	 */
	if (ht == NULL || !dm_hot_find(ht, tag, key, &he) || (he.version & DM_VERSION_DIRTY) ||
		(at != 0 && he.addr != at))
		return DM_OK;
	dm_op_read(&op, he.addr + 8, w, 16);
	if ((rc = dm_post(t->c, &op, 1, NULL)) != DM_OK)
		return dm_tree_transport_error(t, rc);
	t->ctr.node_reads++;
	/* he.version is clean: a DIRTY version word never matches */
	if (w[0] != he.version || w[1] != he.checksum)
	{
		t->ctr.hop_spec_stale++;
		dm_hot_unpin(ht, &he, DM_VERSION_DIRTY);	/* no more speculation until a lookup pins it */
		return DM_OK;
	}
	*n = (int) he.ntids;
	if (he.ntids == 1 && max > 0)
		tids[0] = he.tid;
	dm_hot_hit(ht, &he);
	t->ctr.hop_spec_hits++;
	*done = 1;
	return DM_OK;
}

/* The leaf covers every entry of key (a copy or a header read of it). */
static int
holds_key(const dm_node_hdr *h, uint64_t key)
{
	dm_entry	first = dm_entry_make(key, 0);
	dm_entry	last = dm_entry_make(key, DM_TID_MAX);

	dm_entry	high = dm_raw_entry(h->high);	/* hopscotch leaves are FIXED8: fences are two words */

	if (dm_entry_cmp(first, dm_raw_entry(h->low)) < 0)
		return 0;
	return dm_entry_cmp(high, DM_ENTRY_INF) == 0 || dm_entry_cmp(high, last) > 0;
}

int
dm_tree_hop_lookup(dm_tree *t, uint64_t key, uint64_t *tids, int max, int *n, int *done)
{
	int			nb = t->leaf_cap;
	int			H = t->leaf_hop;
	int			home = dm_hop_home(key, nb, H);
	dm_fetch_ctx ctx = DM_FETCH_CTX_NONE;
	uint8_t    *buf;
	dm_gaddr	addr;
	uint64_t	first;
	int			remote = 0;		/* buf was read from remote memory (not the cache): pin it */
	int			rc;

	*done = 0;
	*n = 0;
	/*
	 * Without a cache of leaves the speculation comes first and saves the
	 * descent too.  With one it comes after the cache had its say, so the
	 * cache sees every leaf access as it would without the buffer (hot
	 * leaves are admitted and stay, answering for nothing) and the buffer
	 * only stands in for neighbourhood reads.
	 */
	if (!(t->cache && dm_cache_caches_level(t->cache, 0)) &&
		((rc = spec_read(t, key, 0, tids, max, n, done)) != DM_OK || *done))
		return rc;
	if ((buf = aligned_alloc(8, t->node_size)) == NULL)
		return dm_tree_fail(t, DM_ERR_NOMEM, "out of memory");
	if ((rc = dm_tree_descend_impl(t, dm_entry_make(key, 0), 0, 0, DM_DESCEND_READER, &addr, buf, &ctx)) != DM_OK)
		goto out;
	/* the root is the leaf (read whole), or the cache has it or wants it whole */
	if (ctx.slot < 0 || (rc = dm_node_fetch_if_cached(t, addr, ctx, buf)) == 1)
	{
		rc = DM_OK;
		goto whole;
	}
	if (rc < 0)
	{
		rc = -rc;
		goto out;
	}
	if (t->cache && dm_cache_caches_level(t->cache, 0) &&
		((rc = spec_read(t, key, addr, tids, max, n, done)) != DM_OK || *done))
		goto out;

	for (int k = 0; k < HOP_READ_TRIES; k++)
	{
		uint8_t		hdr[DM_NODE_HEADER];
		dm_rawent	nbhd[DM_HOP_H_MAX];
		uint64_t	v2 = 0;
		dm_node_hdr *h = NODE_HDR(hdr);
		dm_op		ops[4];

		memset(hdr, 0, 8);
		/* v1 alone first: the words of one READ are not ordered (top comment) */
		dm_op_read(&ops[0], addr + 8, hdr + 8, 8);
		dm_op_read(&ops[1], addr + 16, hdr + 16, DM_NODE_HEADER - 16);
		ops[1].flags |= DM_OPF_ORDERED;
		dm_op_read(&ops[2], addr + DM_NODE_HEADER + (uint32_t) home * sizeof(dm_rawent), nbhd,
				   (uint32_t) H * sizeof(dm_rawent));
		ops[2].flags |= DM_OPF_ORDERED;
		dm_op_read(&ops[3], addr + 8, &v2, 8);
		ops[3].flags |= DM_OPF_ORDERED;
		if ((rc = dm_post(t->c, ops, 4, NULL)) != DM_OK)
		{
			rc = dm_tree_transport_error(t, rc);
			goto out;
		}
		t->ctr.node_reads++;
		if ((h->version & DM_VERSION_DIRTY) || h->version != v2)
		{
			t->ctr.hop_retries++;
			dm_tree_backoff(k);
			continue;
		}
		/* one consistent version of the header and the neighbourhood */
		if (h->magic != DM_NODE_MAGIC || h->tree_tag != t->info.tree_id || h->level != 0 || h->size_log2 > 12 ||
			(h->flags & (DM_NODE_HOP | DM_NODE_DEAD)) != DM_NODE_HOP || h->hop_h != H ||
			(1u << h->size_log2) != t->node_size || !holds_key(h, key))
			break;
		if (nbhd[0].tid & DM_HOP_OVF)
		{
			/* the home overflowed: the key's entries may be anywhere in this leaf, read it whole */
			if ((rc = dm_node_read(t, addr, buf)) != DM_OK)
				goto out;
			remote = 1;
			goto whole;
		}
		collect(nbhd, H, key, tids, max, n, &first);
		dm_tree_hot_put(t, key, addr, h->version, h->checksum, &first, *n);
		t->ctr.hop_reads++;
		*done = 1;
		goto out;
	}
	t->ctr.hop_fallbacks++;
	goto out;

whole:
	/* a whole copy of the leaf: it answers if it is still the key's leaf */
	if (dm_hop_is(buf) && !(NODE_HDR(buf)->flags & DM_NODE_DEAD) && holds_key(NODE_HDR(buf), key))
	{
		collect(HOP_BUCKETS(buf), nb, key, tids, max, n, &first);
		/* a cached frame answers for free: only a remote copy is worth pinning */
		if (remote)
			dm_tree_hot_put(t, key, addr, NODE_HDR(buf)->version, NODE_HDR(buf)->checksum, &first, *n);
		t->ctr.hop_whole++;
		*done = 1;
	}
	else
		t->ctr.hop_fallbacks++;
out:
	free(buf);
	return rc;
}
