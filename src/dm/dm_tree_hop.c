/*
 * dm_tree_hop.c — point lookups in a tree of hopscotch leaves (DESIGN.md
 * §5.1, CHIME §4): descend through the (cached) inner nodes to the leaf's
 * address, then read in one round trip the leaf header, the key's
 * neighbourhood and the version word again, instead of the whole leaf.
 *
 * The read is a seqlock.  Every write of a node makes its version DIRTY
 * (guard CAS) before its first store and clean and higher after its last
 * (dm_tree_io.c), and versions at an address only grow; the three reads
 * execute in order (DM_OPF_ORDERED for ucx, dm_client.h).  So if the
 * version read first is clean and equals the one read last, no write
 * started in between and none was under way before: every word read in
 * between belongs to that one version, however the reads tore.
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

/* The tids of key among n entries/buckets (flags stripped), ascending, as dm_tree_lookup gives them. */
static void
collect(const dm_entry *b, int nb, uint64_t key, uint64_t *tids, int max, int *n)
{
	uint64_t	found[DM_NODE_MAX / sizeof(dm_entry)];
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
	*n = k;
}

/* The leaf covers every entry of key (a copy or a header read of it). */
static int
holds_key(const dm_node_hdr *h, uint64_t key)
{
	dm_entry	first = dm_entry_make(key, 0);
	dm_entry	last = dm_entry_make(key, DM_TID_MAX);

	if (dm_entry_cmp(first, h->low) < 0)
		return 0;
	return dm_entry_cmp(h->high, DM_ENTRY_INF) == 0 || dm_entry_cmp(h->high, last) > 0;
}

int
dm_tree_hop_lookup(dm_tree *t, uint64_t key, uint64_t *tids, int max, int *n, int *done)
{
	int			nb = t->leaf_cap;
	int			H = t->leaf_hop;
	int			home = dm_hop_home(key, nb, H);
	dm_fetch_ctx ctx = DM_FETCH_CTX_NONE;
	uint8_t    *buf = aligned_alloc(8, t->node_size);
	dm_gaddr	addr;
	int			rc;

	*done = 0;
	*n = 0;
	if (buf == NULL)
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

	for (int k = 0; k < HOP_READ_TRIES; k++)
	{
		uint8_t		hdr[DM_NODE_HEADER];
		dm_entry	nbhd[DM_HOP_H_MAX];
		uint64_t	v2 = 0;
		dm_node_hdr *h = NODE_HDR(hdr);
		dm_op		ops[3];

		memset(hdr, 0, 8);
		dm_op_read(&ops[0], addr + 8, hdr + 8, DM_NODE_HEADER - 8);
		dm_op_read(&ops[1], addr + DM_NODE_HEADER + (uint32_t) home * sizeof(dm_entry), nbhd,
				   (uint32_t) H * sizeof(dm_entry));
		ops[1].flags |= DM_OPF_ORDERED;
		dm_op_read(&ops[2], addr + 8, &v2, 8);
		ops[2].flags |= DM_OPF_ORDERED;
		if ((rc = dm_post(t->c, ops, 3, NULL)) != DM_OK)
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
			goto whole;
		}
		collect(nbhd, H, key, tids, max, n);
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
		collect(HOP_BUCKETS(buf), nb, key, tids, max, n);
		t->ctr.hop_whole++;
		*done = 1;
	}
	else
		t->ctr.hop_fallbacks++;
out:
	free(buf);
	return rc;
}
