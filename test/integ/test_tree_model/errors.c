/*
 * errors.c — the tree's error paths (bad arguments, names, sizes, entries
 * that do not fit, handles used after errors) and running out of memnode
 * memory: inserts into a 16 MB memnode until DM_ERR_NOSPACE, after which the
 * tree must still verify and hold exactly what was acknowledged.
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
#include <sys/wait.h>
#include <unistd.h>

#include "dm_client.h"
#include "dm_node.h"
#include "dm_offload.h"			/* the tree's node struct and dm_node_seal: for sealed corruption */
#include "dm_region.h"
#include "dm_tree.h"
#include "entrymodel.h"
#include "testutil.h"

#include "tree_model.h"

/* ---- error paths ---------------------------------------------------------------- */

void
run_errors(const tcfg *cf)
{
	dm_client  *c = connect_client(cf, mn.addr);
	dm_tree    *t = NULL,
			   *t2 = NULL;
	dm_tree_name tn;
	dm_tree_opts opts;
	dm_bulk    *b = NULL;
	uint64_t	c0,
				cnt = 0;
	char		msg[256];
	int			rc,
				changed,
				existed,
				found;
	static const uint32_t bad_sizes[] = {100, 128, 300, 1000, 8192, 65536};
	static const uint32_t good_sizes[] = {0, 256, 512, 2048, 4096};
	dm_entry	ents[8];

	rng_seed_label(g_seed, "errors", 0);
	if (!CHECK(c != NULL, "errors: client connects"))
		return;
	c0 = chunks_used(c);

	for (size_t i = 0; i < sizeof(bad_sizes) / sizeof(bad_sizes[0]); i++)
	{
		char		name[64];

		snprintf(name, sizeof(name), "badsize-%u", bad_sizes[i]);
		dm_tree_name_named(&tn, name);
		memset(&opts, 0, sizeof(opts));
		opts.node_size = bad_sizes[i];
		t = NULL;
		rc = dm_tree_create_new(c, 1, &tn, &opts, &t);
		CHECK_STATUS(rc, DM_ERR_INVALID, "errors: node size %u is refused", bad_sizes[i]);
		if (rc == DM_OK)
			dm_tree_destroy(t);
		rc = dm_tree_open_existing(c, 1, &tn, &t2);
		CHECK_STATUS(rc, DM_ERR_NOTFOUND, "errors: refused create of node size %u left no catalog entry",
					 bad_sizes[i]);
	}
	for (size_t i = 0; i < sizeof(good_sizes) / sizeof(good_sizes[0]); i++)
	{
		char		name[64];
		uint32_t	want = good_sizes[i] ? good_sizes[i] : 1024;

		snprintf(name, sizeof(name), "goodsize-%u", good_sizes[i]);
		dm_tree_name_named(&tn, name);
		memset(&opts, 0, sizeof(opts));
		opts.node_size = good_sizes[i];
		t = NULL;
		rc = dm_tree_create_new(c, 1, &tn, &opts, &t);
		if (CHECK_STATUS(rc, DM_OK, "errors: node size %u is accepted", good_sizes[i]))
		{
			CHECK(dm_tree_node_size(t) == want, "errors: node size %u gives %u-byte nodes (got %u)",
				  good_sizes[i], want, dm_tree_node_size(t));
			CHECK_STATUS(dm_tree_insert(t, dm_entry_make(1, 1), NULL), DM_OK,
						 "errors: insert into a %u-byte-node tree (existed may be NULL)", want);
			CHECK_STATUS(dm_tree_destroy(t), DM_OK, "errors: destroy %u-byte-node tree", want);
		}
	}
	CHECK(chunks_used(c) == c0, "errors: every chunk returned after the node-size trees (%" PRIu64 " vs %" PRIu64 ")",
		  chunks_used(c), c0);

	/*
	 * dm_tree_hop_h_max, which the PostgreSQL options check against, says
	 * exactly what dm_tree_create_new accepts: H up to a leaf's buckets
	 * ((N - 88) / 16), at most 16.
	 */
	for (size_t i = 0; i < sizeof(bad_sizes) / sizeof(bad_sizes[0]); i++)
		CHECK(dm_tree_hop_h_max(bad_sizes[i]) == 0, "errors: no neighbourhood for node size %u (got %d)",
			  bad_sizes[i], dm_tree_hop_h_max(bad_sizes[i]));
	for (size_t i = 1; i < sizeof(good_sizes) / sizeof(good_sizes[0]); i++)
	{
		uint32_t	ns = good_sizes[i];
		int			want = (int) (ns - 88) / 16 < DM_TREE_HOP_H_MAX ? (int) (ns - 88) / 16 : DM_TREE_HOP_H_MAX;
		int			hmax = dm_tree_hop_h_max(ns);

		CHECK(hmax == want, "errors: largest neighbourhood for node size %u is %d (got %d)", ns, want, hmax);
		for (int h = hmax; h <= hmax + 1; h++)
		{
			char		name[64];
			int			got = -1;

			snprintf(name, sizeof(name), "hopmax-%u-%d", ns, h);
			dm_tree_name_named(&tn, name);
			memset(&opts, 0, sizeof(opts));
			opts.node_size = ns;
			opts.leaf_format = DM_LEAF_HOPSCOTCH;
			opts.neighborhood = h;
			t = NULL;
			rc = dm_tree_create_new(c, 1, &tn, &opts, &t);
			CHECK_STATUS(rc, h == hmax ? DM_OK : DM_ERR_INVALID, "errors: neighbourhood %d in %u-byte nodes is %s",
						 h, ns, h == hmax ? "accepted" : "refused");
			if (rc == DM_OK)
			{
				int			format = dm_tree_leaf_format(t, &got);

				CHECK(format == DM_LEAF_HOPSCOTCH && got == h,
					  "errors: the tree has hopscotch leaves with neighbourhood %d (got format %d, %d)", h, format, got);
				CHECK_STATUS(dm_tree_destroy(t), DM_OK, "errors: destroy the neighbourhood-%d tree", h);
			}
		}
	}
	CHECK(chunks_used(c) == c0, "errors: every chunk returned after the neighbourhood trees");

	/* a memnode the client is not connected to */
	dm_tree_name_named(&tn, "unknown-memnode");
	memset(&opts, 0, sizeof(opts));
	opts.nmemnodes = 2;
	opts.memnodes[0] = 1;
	opts.memnodes[1] = 9;
	t = NULL;
	rc = dm_tree_create_new(c, 1, &tn, &opts, &t);
	CHECK(rc != DM_OK, "errors: create over a memnode the client has no connection to fails (%s)",
		  dm_strerror(rc));
	if (rc == DM_OK)
		dm_tree_destroy(t);
	rc = dm_tree_open_existing(c, 1, &tn, &t2);
	CHECK_STATUS(rc, DM_ERR_NOTFOUND, "errors: ... and leaves no catalog entry behind");
	if (rc == DM_OK)
		dm_tree_destroy(t2);
	CHECK_STATUS(dm_tree_open_existing(c, 1, &tn, &t2), DM_ERR_NOTFOUND, "errors: open of a missing tree");

	/* duplicate name */
	dm_tree_name_named(&tn, "errors-main");
	memset(&opts, 0, sizeof(opts));
	opts.node_size = 256;
	test_tree_leaf_opts(&opts);
	t = NULL;
	if (!CHECK_STATUS(dm_tree_create_new(c, 1, &tn, &opts, &t), DM_OK, "errors: create errors-main"))
	{
		dm_client_destroy(c);
		return;
	}
	t2 = NULL;
	rc = dm_tree_create_new(c, 1, &tn, &opts, &t2);
	CHECK_STATUS(rc, DM_ERR_EXISTS, "errors: creating an existing name");
	CHECK_STATUS(dm_tree_insert(t, dm_entry_make(5, 5), &existed), DM_OK, "errors: the original still works");

	/* NULL-flagged tids only through dm_entry_null (key MAX) */
	rc = dm_tree_insert(t, dm_entry_make(5, 7 | DM_TID_NULL), &existed);
	CHECK_STATUS(rc, DM_ERR_INVALID, "errors: insert of key 5 with DM_TID_NULL set in the tid");
	ents[0] = dm_entry_make(3, 1);
	ents[1] = dm_entry_make(6, 2 | DM_TID_NULL);
	rc = dm_tree_insert_sorted(t, ents + 1, 1, &changed);
	CHECK_STATUS(rc, DM_ERR_INVALID, "errors: insert_sorted of a NULL-flagged tid with key 6");
	rc = dm_tree_insert(t, dm_entry_null(7), &existed);
	CHECK(rc == DM_OK && existed == 0, "errors: dm_entry_null(7) is inserted (%s)", dm_strerror(rc));
	rc = dm_tree_insert(t, dm_entry_make(UINT64_MAX, 7 | DM_TID_NULL), &existed);
	CHECK(rc == DM_OK && existed == 1, "errors: the same entry spelled out is the same NULL (%s, existed %d)",
		  dm_strerror(rc), existed);
	rc = dm_tree_contains(t, dm_entry_null(7), &found);
	CHECK(rc == DM_OK && found == 1, "errors: contains(dm_entry_null(7))");
	{
		uint64_t	tids[4];
		int			n = -1;

		rc = dm_tree_lookup(t, UINT64_MAX, tids, 4, &n);
		CHECK(rc == DM_OK && n == 0, "errors: lookup(UINT64_MAX) returns no NULL entry (n=%d)", n);
	}

	/* unsorted or duplicate batches are refused, not stored out of order */
	ents[0] = dm_entry_make(9, 1);
	ents[1] = dm_entry_make(8, 1);
	rc = dm_tree_insert_sorted(t, ents, 2, &changed);
	CHECK_STATUS(rc, DM_ERR_INVALID, "errors: insert_sorted of a descending batch");
	ents[1] = dm_entry_make(9, 1);
	rc = dm_tree_insert_sorted(t, ents, 2, &changed);
	CHECK_STATUS(rc, DM_ERR_INVALID, "errors: insert_sorted of a batch with a repeated entry");
	rc = dm_tree_delete_sorted(t, ents, 2, &changed);
	CHECK_STATUS(rc, DM_ERR_INVALID, "errors: delete_sorted of a batch with a repeated entry");
	rc = dm_tree_insert_sorted(t, ents, 0, &changed);
	CHECK(rc == DM_OK && changed == 0, "errors: insert_sorted of 0 entries is a no-op");
	rc = dm_tree_verify(t, &cnt, msg, sizeof(msg));
	CHECK(rc == DM_OK && cnt == 2, "errors: after the refused calls the tree holds exactly 2 entries "
		  "(verify %s, %" PRIu64 ")", dm_strerror(rc), cnt);

	/* bulk load into a non-empty tree fails somewhere and changes nothing */
	ents[0] = dm_entry_make(1, 1);
	ents[1] = dm_entry_make(2, 1);
	b = NULL;
	rc = dm_tree_bulk_begin(t, 90, &b);
	if (rc == DM_OK)
	{
		rc = dm_bulk_add(b, ents, 2);
		if (rc == DM_OK)
			rc = dm_bulk_finish(b);
		else
			dm_bulk_abort(b);
	}
	CHECK(rc != DM_OK, "errors: bulk load into a non-empty tree fails (%s)", dm_strerror(rc));
	rc = dm_tree_verify(t, &cnt, msg, sizeof(msg));
	CHECK(rc == DM_OK && cnt == 2, "errors: ... and leaves its 2 entries alone (verify %s, %" PRIu64 ")",
		  dm_strerror(rc), cnt);
	CHECK_STATUS(dm_tree_destroy(t), DM_OK, "errors: destroy errors-main");

	/* bulk argument checks on an empty tree */
	dm_tree_name_named(&tn, "errors-bulk");
	t = NULL;
	if (CHECK_STATUS(dm_tree_create_new(c, 1, &tn, &opts, &t), DM_OK, "errors: create errors-bulk"))
	{
		CHECK_STATUS(dm_tree_bulk_begin(t, 5, &b), DM_ERR_INVALID, "errors: fillfactor 5 refused");
		CHECK_STATUS(dm_tree_bulk_begin(t, 101, &b), DM_ERR_INVALID, "errors: fillfactor 101 refused");

		rc = dm_tree_bulk_begin(t, 80, &b);
		if (CHECK_STATUS(rc, DM_OK, "errors: bulk_begin ff 80"))
		{
			ents[0] = dm_entry_make(10, 1);
			ents[1] = dm_entry_make(10, 2);
			ents[2] = dm_entry_make(11, 0);
			CHECK_STATUS(dm_bulk_add(b, ents, 3), DM_OK, "errors: bulk_add 3 ascending entries");
			ents[0] = dm_entry_make(11, 0);	/* equal to the last one added */
			CHECK_STATUS(dm_bulk_add(b, ents, 1), DM_ERR_INVALID, "errors: bulk_add of an entry equal to the previous");
			ents[0] = dm_entry_make(4, 0);
			CHECK_STATUS(dm_bulk_add(b, ents, 1), DM_ERR_INVALID, "errors: bulk_add of a smaller entry");
			ents[0] = dm_entry_make(20, 3);
			ents[1] = dm_entry_make(19, 3);
			CHECK_STATUS(dm_bulk_add(b, ents, 2), DM_ERR_INVALID, "errors: bulk_add of a descending piece");
			ents[0] = dm_entry_make(30, 3 | DM_TID_NULL);
			CHECK(dm_bulk_add(b, ents, 1) != DM_OK, "errors: bulk_add of a NULL-flagged tid with key 30 fails");
			dm_bulk_abort(b);
			rc = dm_tree_verify(t, &cnt, msg, sizeof(msg));
			CHECK(rc == DM_OK && cnt == 0, "errors: an aborted bulk load leaves the tree empty (verify %s, %" PRIu64 ")",
				  dm_strerror(rc), cnt);
		}
		/* after the abort a bulk load works */
		rc = dm_tree_bulk_begin(t, 100, &b);
		if (rc == DM_OK)
		{
			ents[0] = dm_entry_make(1, 1);
			ents[1] = dm_entry_null(1);
			rc = dm_bulk_add(b, ents, 2);
			if (rc == DM_OK)
				rc = dm_bulk_finish(b);
			else
				dm_bulk_abort(b);
		}
		CHECK_STATUS(rc, DM_OK, "errors: bulk load after an aborted one");
		rc = dm_tree_verify(t, &cnt, msg, sizeof(msg));
		CHECK(rc == DM_OK && cnt == 2, "errors: ... gives 2 entries (verify %s, %" PRIu64 ")", dm_strerror(rc), cnt);
		CHECK_STATUS(dm_tree_destroy(t), DM_OK, "errors: destroy errors-bulk");
	}

	/*
	 * An insert through another handle while a bulk load is under way (the
	 * tree is still empty, so the insert succeeds into the empty root): the
	 * bulk load must then fail, or the entry must be in the result — it
	 * must not vanish with the superseded root.
	 */
	dm_tree_name_named(&tn, "errors-bulk-race");
	t = t2 = NULL;
	if (CHECK_STATUS(dm_tree_create_new(c, 1, &tn, &opts, &t), DM_OK, "errors: create errors-bulk-race") &&
		CHECK_STATUS(dm_tree_open_existing(c, 1, &tn, &t2), DM_OK, "errors: second handle on errors-bulk-race"))
	{
		dm_entry	many[100];
		int			ins_rc,
					fin_rc;

		rc = dm_tree_bulk_begin(t, 90, &b);
		CHECK_STATUS(rc, DM_OK, "errors: bulk_begin on the empty tree");
		ins_rc = dm_tree_insert(t2, dm_entry_make(7777, 1), &existed);
		CHECK_STATUS(ins_rc, DM_OK, "errors: insert (7777,1) through the other handle during the bulk load");
		for (int i = 0; i < 100; i++)
			many[i] = dm_entry_make((uint64_t) i, 1);
		fin_rc = rc == DM_OK ? dm_bulk_add(b, many, 100) : rc;
		if (rc == DM_OK)
		{
			if (fin_rc == DM_OK)
				fin_rc = dm_bulk_finish(b);
			else
				dm_bulk_abort(b);
		}
		found = 0;
		rc = dm_tree_contains(t2, dm_entry_make(7777, 1), &found);
		CHECK(ins_rc != DM_OK || fin_rc != DM_OK || (rc == DM_OK && found == 1),
			  "errors: the entry inserted during the bulk load is not silently lost "
			  "(bulk load %s, entry %s afterwards)", dm_strerror(fin_rc), found ? "present" : "missing");
		rc = dm_tree_verify(t, &cnt, msg, sizeof(msg));
		CHECK(rc == DM_OK, "errors: ... and the tree verifies (%s, %" PRIu64 " entries) %s", dm_strerror(rc), cnt, msg);
		dm_tree_close(t2);
		CHECK_STATUS(dm_tree_destroy(t), DM_OK, "errors: destroy errors-bulk-race");
	}
	/* tids of stored entries stay below DM_TID_LIMIT (2^62) */
	dm_tree_name_named(&tn, "errors-tids");
	t = NULL;
	if (CHECK_STATUS(dm_tree_create_new(c, 1, &tn, &opts, &t), DM_OK, "errors: create errors-tids"))
	{
		CHECK_STATUS(dm_tree_insert(t, dm_entry_make(5, DM_TID_LIMIT), &existed), DM_ERR_INVALID,
					 "errors: insert of tid DM_TID_LIMIT");
		CHECK_STATUS(dm_tree_insert(t, dm_entry_null(DM_TID_LIMIT), &existed), DM_ERR_INVALID,
					 "errors: insert of dm_entry_null(DM_TID_LIMIT)");
		CHECK_STATUS(dm_tree_insert(t, dm_entry_make(5, DM_TID_LIMIT - 1), &existed), DM_OK,
					 "errors: insert of tid DM_TID_LIMIT - 1");
		CHECK_STATUS(dm_tree_destroy(t), DM_OK, "errors: destroy errors-tids");
	}

	/*
	 * lock_timeout_ms is a property of the tree (dm_tree_opts at creation),
	 * so a handle from dm_tree_open_existing must use it too: a lock left
	 * by a dead holder is taken over after 300 ms, not after the default
	 * 10 s.  (The margin is large: any handle that honours it finishes in
	 * well under 5 s.)
	 */
	dm_tree_name_named(&tn, "errors-locktimeout");
	memset(&opts, 0, sizeof(opts));
	opts.node_size = 256;
	test_tree_leaf_opts(&opts);
	opts.lock_timeout_ms = 300;
	t = t2 = NULL;
	if (CHECK_STATUS(dm_tree_create_new(c, 1, &tn, &opts, &t), DM_OK, "errors: create with lock_timeout_ms 300") &&
		CHECK_STATUS(dm_tree_insert(t, dm_entry_make(1, 1), &existed), DM_OK, "errors: insert into it"))
	{
		dm_tree_info ti;
		dm_gaddr	root = 0;
		uint64_t	old = 1,
					t0;
		double		s1 = -1,
					s2 = -1;

		rc = dm_tree_open(c, 1, &tn, &ti);
		if (rc == DM_OK)
			rc = dm_read(c, ti.root_addr, &root, 8);
		root &= ~DM_GADDR_RESERVED_BIT;
		/* a dead holder's lock on the root leaf */
		if (rc == DM_OK)
			rc = dm_cas(c, root, 0, UINT64_C(0xDEAD00000001), &old);
		if (CHECK(rc == DM_OK && old == 0, "errors: fake a dead holder's lock on the root leaf"))
		{
			t0 = now_ns();
			rc = dm_tree_insert(t, dm_entry_make(2, 1), &existed);
			s1 = (now_ns() - t0) / 1e9;
			CHECK(rc == DM_OK && s1 < 5, "errors: the creating handle takes the lock over (%s in %.2f s)",
				  dm_strerror(rc), s1);
			dm_cas(c, root, 0, UINT64_C(0xDEAD00000002), &old);
			rc = dm_tree_open_existing(c, 1, &tn, &t2);
			if (CHECK_STATUS(rc, DM_OK, "errors: open_existing on it"))
			{
				t0 = now_ns();
				rc = dm_tree_insert(t2, dm_entry_make(3, 1), &existed);
				s2 = (now_ns() - t0) / 1e9;
				CHECK(rc == DM_OK && s2 < 5, "errors: an opened handle honours the tree's lock_timeout_ms too "
					  "(%s in %.2f s)", dm_strerror(rc), s2);
				dm_tree_close(t2);
			}
		}
		rc = dm_tree_verify(t, &cnt, msg, sizeof(msg));
		CHECK(rc == DM_OK && cnt == 3, "errors: after the takeovers the tree verifies with 3 entries (%s, %" PRIu64 ")",
			  dm_strerror(rc), cnt);
		CHECK_STATUS(dm_tree_destroy(t), DM_OK, "errors: destroy errors-locktimeout");
	}

	CHECK(chunks_used(c) == c0, "errors: every chunk returned at the end (%" PRIu64 " vs %" PRIu64 ")",
		  chunks_used(c), c0);
	dm_client_destroy(c);
}

/* ---- running out of memnode memory ------------------------------------------------ */

/*
 * A 16 MiB memnode fills up: inserts must then fail with DM_ERR_NOSPACE
 * (not crash, hang or corrupt), the tree must still verify and hold every
 * acknowledged entry (the one failed insert may or may not have landed:
 * its leaf split may have succeeded before the parent's failed), and
 * destroy must give every chunk back.
 */
memnode_proc mn_small;

void
run_nospace(const tcfg *cf)
{
	dm_client  *c = connect_client(cf, mn_small.addr);
	dm_tree    *t = NULL;
	dm_tree_name tn;
	dm_tree_opts opts;
	model		m = {0};
	dm_entry	failed_e = {0, 0};
	uint64_t	cnt = 0,
				n_ok = 0,
				c0 = 0;
	dm_node_stats nst;
	char		msg[512] = "";
	int			rc = DM_OK,
				existed;

	rng_seed_label(g_seed, "nospace", 0);
	failmsg[0] = '\0';
	if (!CHECK(c != NULL, "nospace %s: client connects to the 16 MiB memnode", cf->name))
		return;
	if (dm_node_stats_get(c, 2, &nst) == DM_OK)
		c0 = nst.chunks_used;
	dm_tree_name_named(&tn, "nospace");
	memset(&opts, 0, sizeof(opts));
	opts.node_size = 256;
	test_tree_leaf_opts(&opts);
	if (!CHECK(test_tree_key_opts(&opts) == 0, "nospace %s: key format %s", cf->name, test_key_format_name()) ||
		!CHECK_STATUS(dm_tree_create_new(c, 2, &tn, &opts, &t), DM_OK, "nospace %s: create on memnode 2", cf->name))
	{
		dm_client_destroy(c);
		return;
	}
	/*
	 * Random keys: splits everywhere, at every level.  The acknowledged
	 * entries are collected unsorted and made the model once at the end:
	 * m_insert keeps the model sorted by moving its tail, which over the
	 * ~280,000 entries of the fill cost more than the fill itself (and
	 * minutes under ASan).
	 */
	for (uint64_t i = 0; i < 2000000; i++)
	{
		dm_entry	e = tk(rnd() >> 8, rnd_below(4));

		rc = dm_tree_insert(t, e, &existed);
		if (rc != DM_OK)
		{
			failed_e = e;
			break;
		}
		if (m.n == m.cap)
		{
			m.cap = m.cap ? m.cap * 2 : 65536;
			if ((m.e = realloc(m.e, m.cap * sizeof(dm_entry))) == NULL)
			{
				perror("realloc");
				exit(2);
			}
		}
		m.e[m.n++] = e;
	}
	m.n = (size_t) sort_unique(m.e, (int) m.n);
	n_ok = m.n;
	CHECK_STATUS(rc, DM_ERR_NOSPACE, "nospace %s: inserts fail with NOSPACE once the memnode is full "
				 "(after %" PRIu64 " entries): %s", cf->name, n_ok, terr(t));
	rc = dm_tree_verify(t, &cnt, msg, sizeof(msg));
	CHECK_STATUS(rc, DM_OK, "nospace %s: the full tree verifies %s", cf->name, msg);
	if (cnt == m.n + 1 && !m_has(&m, failed_e))
		m_insert(&m, failed_e);	/* the failed insert landed: allowed */
	CHECK(cnt == m.n, "nospace %s: it holds the %zu acknowledged entries (verify counts %" PRIu64 ")", cf->name, m.n,
		  cnt);
	{
		dm_range	full = {DM_ENTRY_MIN, 1, DM_ENTRY_INF, 1, 0};

		check_range(t, &m, &full);
		full.backward = 1;
		check_range(t, &m, &full);
		for (int i = 0; i < 200 && m.n && !failmsg[0]; i++)
			op_contains(t, &m, m.e[rnd_below(m.n)]);
		check_nofail("nospace %s: full scans and contains equal the acknowledged entries", cf->name);
	}
	/* deleting still works on a full memnode (no allocation needed) */
	for (int i = 0; i < 500 && m.n && !failmsg[0]; i++)
		op_delete(t, &m, m.e[rnd_below(m.n)]);
	check_nofail("nospace %s: deletes work on the full memnode", cf->name);
	rc = dm_tree_verify(t, &cnt, msg, sizeof(msg));
	CHECK(rc == DM_OK && cnt == m.n, "nospace %s: verify after the deletes (%s, %" PRIu64 " vs %zu) %s", cf->name,
		  dm_strerror(rc), cnt, m.n, msg);
	CHECK_STATUS(dm_tree_destroy(t), DM_OK, "nospace %s: destroy", cf->name);
	CHECK(dm_node_stats_get(c, 2, &nst) == DM_OK && nst.chunks_used == c0,
		  "nospace %s: chunks_used back to %" PRIu64 " (now %" PRIu64 ")", cf->name, c0, nst.chunks_used);
	/* and the memory is usable again */
	t = NULL;
	rc = dm_tree_create_new(c, 2, &tn, &opts, &t);
	if (CHECK_STATUS(rc, DM_OK, "nospace %s: a new tree on the freed memnode", cf->name))
	{
		for (uint64_t i = 0; i < 20000 && rc == DM_OK; i++)
			rc = dm_tree_insert(t, tk(rnd(), 1), NULL);
		CHECK_STATUS(rc, DM_OK, "nospace %s: 20000 inserts fit again", cf->name);
		dm_tree_destroy(t);
	}
	m_free(&m);
	dm_client_destroy(c);
}
