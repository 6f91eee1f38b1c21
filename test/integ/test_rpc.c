/*
 * test_rpc.c — the memnode's RPCs end to end through dm_client, over tcp,
 * shm and ucx (on the socket for tcp and shm, the catalog words they
 * return then used through the mapping; as UCX active messages for ucx,
 * which the client's and the memnode's counters must show): ping, chunk
 * alloc/free/free-owner, slabs given back and reused, tree catalog create/open/drop/list with filters
 * and pagination, stats, client counters, client-side limits, and a
 * request that arrives after its client gave up.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dm_client.h"
#include "dm_region.h"
#include "testutil.h"

#define NTREES 70				/* more than one DM_LIST_MAX page */

static void
run(const char *tag, int backend, const memnode_proc *mn)
{
	dm_client_opts o;
	dm_client  *c;
	dm_node_stats st0,
				st;
	dm_tree_name tn,
				pg;
	dm_tree_info ti,
				ti2,
				list[DM_LIST_MAX];
	dm_rpc_list_req lr;
	dm_counters ctr;
	dm_gaddr	ch[4];
	uint64_t	sz = 0,
				n = 0,
				v;
	uint32_t	cnt = 0,
				next = 0;
	uint16_t	node = 0;
	int			rc;

	memset(&o, 0, sizeof(o));
	o.backend = backend;
	o.op_timeout_ms = 5000;
	c = dm_client_create(&o);
	rc = dm_client_connect(c, mn->addr, &node);
	if (!CHECK(rc == DM_OK, "%s: connected (%s)", tag, dm_strerror(rc)))
	{
		dm_client_destroy(c);
		return;
	}
	CHECK_STATUS(dm_ping(c, node), DM_OK, "%s: ping", tag);
	CHECK_STATUS(dm_ping(c, node + 1), DM_ERR_NOTFOUND, "%s: ping an unknown node id -> NOTFOUND", tag);
	CHECK_STATUS(dm_node_stats_get(c, node, &st0), DM_OK, "%s: stats", tag);
	CHECK(st0.node_id == node && st0.incarnation == mn->incarnation && st0.region_size == (UINT64_C(64) << 20) &&
		  st0.chunk_size == (UINT64_C(1) << 20) && st0.catalog_capacity == 128 && st0.threads == 2,
		  "%s: stats: id, incarnation, size, chunk size, catalog size, threads", tag);

	/* chunks */
	dm_client_reset_counters(c);
	for (int i = 0; i < 4; i++)
		CHECK_STATUS(dm_chunk_alloc(c, node, i < 3 ? 0x1111 : 0x2222, &ch[i], &sz), DM_OK, "%s: alloc chunk %d", tag, i);
	CHECK(sz == (UINT64_C(1) << 20), "%s: chunk size reported", tag);
	CHECK(ch[0] != ch[1] && ch[1] != ch[2] && ch[2] != ch[3] && ch[0] != ch[3] && dm_gaddr_node(ch[0]) == node,
		  "%s: distinct chunks on this node", tag);
	dm_client_counters(c, node, &ctr);
	CHECK(ctr.rpcs == 4 && ctr.round_trips == 0, "%s: counters: 4 rpcs, no batches (%" PRIu64 ", %" PRIu64 ")",
		  tag, ctr.rpcs, ctr.round_trips);
	/* over ucx the RPCs are UCX active messages: not a byte on the socket (a fall back to tcp fails here) */
	if (backend == DM_BACKEND_UCX)
		CHECK(ctr.rpcs_ucx == 4 && ctr.wire_bytes_sent == 0 && ctr.wire_bytes_recv == 0,
			  "%s: the 4 rpcs went over UCX (%" PRIu64 "), none on the socket (%" PRIu64 " bytes sent, %" PRIu64
			  " received)", tag, ctr.rpcs_ucx, ctr.wire_bytes_sent, ctr.wire_bytes_recv);
	else
		CHECK(ctr.rpcs_ucx == 0 && ctr.wire_bytes_sent > 0, "%s: the rpcs went on the socket (%" PRIu64 " over UCX)",
			  tag, ctr.rpcs_ucx);
	CHECK_STATUS(dm_node_stats_get(c, node, &st), DM_OK, "%s: stats after alloc", tag);
	CHECK(st.chunks_used == st0.chunks_used + 4, "%s: stats count 4 more chunks used", tag);
	/* and the memnode says so too: every RPC since the first stats came over UCX, or none did */
	CHECK(backend == DM_BACKEND_UCX ? st.rpcs - st0.rpcs == 5 && st.rpcs_ucx - st0.rpcs_ucx == 5 : st.rpcs_ucx == 0,
		  "%s: the memnode counts %" PRIu64 " of %" PRIu64 " RPCs as having come over UCX", tag,
		  st.rpcs_ucx - st0.rpcs_ucx, st.rpcs - st0.rpcs);
	v = 0x77;
	CHECK_STATUS(dm_write(c, ch[1] + (UINT64_C(1) << 20) - 8, &v, 8), DM_OK, "%s: write the chunk's last word", tag);
	CHECK_STATUS(dm_chunk_free(c, ch[0]), DM_OK, "%s: free chunk 0", tag);
	CHECK_STATUS(dm_chunk_free(c, ch[0]), DM_ERR_NOTFOUND, "%s: free it again -> NOTFOUND", tag);
	CHECK_STATUS(dm_chunk_free(c, ch[1] + 64), DM_ERR_INVALID, "%s: free a non-chunk address -> INVALID", tag);
	CHECK_STATUS(dm_chunk_free_owner(c, node, 0x1111, &n), DM_OK, "%s: free owner 0x1111", tag);
	CHECK(n == 2, "%s: freed its 2 remaining chunks (got %" PRIu64 ")", tag, n);
	CHECK_STATUS(dm_chunk_free_owner(c, node, 0x2222, &n), DM_OK, "%s: free owner 0x2222", tag);
	CHECK(n == 1, "%s: freed 1", tag);
	CHECK_STATUS(dm_chunk_alloc(c, node, 0, &ch[0], NULL), DM_ERR_INVALID, "%s: owner 0 -> INVALID", tag);
	/* a reused chunk is zeroed */
	{
		dm_gaddr	again[3];
		int			zero = 1;

		for (int i = 0; i < 3; i++)
		{
			if (dm_chunk_alloc(c, node, 0x3333, &again[i], NULL) != DM_OK)
				zero = 0;
			else if (again[i] == ch[1])
			{
				v = 1;
				zero = dm_read(c, ch[1] + (UINT64_C(1) << 20) - 8, &v, 8) == DM_OK && v == 0;
			}
		}
		CHECK(zero, "%s: a freed chunk handed out again is zeroed", tag);
		dm_chunk_free_owner(c, node, 0x3333, NULL);
	}

	/* slabs: carved from the owner's chunk, freed with the owner */
	{
		dm_gaddr	s1 = 0,
					s2 = 0;

		CHECK_STATUS(dm_slab_alloc(c, node, 0x6666, 8192, &s1), DM_OK, "%s: slab of 8 KiB", tag);
		CHECK_STATUS(dm_slab_alloc(c, node, 0x6666, 4096, &s2), DM_OK, "%s: second slab", tag);
		CHECK(dm_gaddr_node(s1) == node && s2 == s1 + 8192, "%s: second slab follows the first", tag);
		CHECK_STATUS(dm_slab_alloc(c, node, 0x6666, 1000, &s2), DM_ERR_INVALID, "%s: slab size not 4 KiB aligned -> INVALID", tag);
		CHECK_STATUS(dm_slab_alloc(c, node, 0x6666, UINT64_C(2) << 20, &s2), DM_ERR_INVALID, "%s: slab bigger than a chunk -> INVALID", tag);
		v = 0x5AB;
		CHECK(dm_write(c, s1 + 8184, &v, 8) == DM_OK && dm_read(c, s1 + 8184, &v, 8) == DM_OK && v == 0x5AB,
			  "%s: slab is usable", tag);
		CHECK(dm_chunk_free_owner(c, node, 0x6666, &n) == DM_OK && n == 1, "%s: slabs freed with their owner (1 chunk)", tag);
	}

	/* slabs given back: counted, refused when not the owner's or twice, reused */
	{
		dm_gaddr	s1 = 0,
					s2 = 0;
		dm_node_stats a, b;

		CHECK_STATUS(dm_node_stats_get(c, node, &a), DM_OK, "%s: stats before slabs", tag);
		CHECK_STATUS(dm_slab_alloc(c, node, 0x7777, 4096, &s1), DM_OK, "%s: slab of 4 KiB", tag);
		CHECK_STATUS(dm_slab_alloc(c, node, 0x7777, 256, &s2), DM_OK, "%s: slab of one 256-byte node", tag);
		CHECK_STATUS(dm_node_stats_get(c, node, &b), DM_OK, "%s: stats after slabs", tag);
		CHECK(b.bytes_in_use == a.bytes_in_use + 4096 + 256, "%s: bytes_in_use counts both slabs", tag);
		CHECK_STATUS(dm_slab_free(c, 0x7778, s1 + 1024, 3072), DM_ERR_INVALID, "%s: give back another owner's slab -> INVALID", tag);
		CHECK_STATUS(dm_slab_free(c, 0x7777, s1 + 1024, 3072), DM_OK, "%s: give back the last 3 KiB of the first slab", tag);
		CHECK_STATUS(dm_slab_free(c, 0x7777, s1 + 2048, 1024), DM_ERR_INVALID, "%s: give back part of it again -> INVALID", tag);
		CHECK_STATUS(dm_slab_free(c, 0x7777, dm_gaddr_make(node + 1, dm_gaddr_offset(s1)), 256), DM_ERR_NOTFOUND,
					 "%s: address on a memnode the client does not know -> NOTFOUND", tag);
		CHECK_STATUS(dm_slab_free(c, 0x7777, s1 + 8192, 256), DM_ERR_INVALID,
					 "%s: beyond what was carved -> INVALID", tag);
		CHECK_STATUS(dm_node_stats_get(c, node, &b), DM_OK, "%s: stats after giving back", tag);
		CHECK(b.bytes_in_use == a.bytes_in_use + 1024 + 256, "%s: bytes_in_use drops by 3 KiB", tag);
		v = 0;
		CHECK_STATUS(dm_slab_alloc(c, node, 0x7777, 2048, &s2), DM_OK, "%s: a 2 KiB slab", tag);
		CHECK(s2 == s1 + 1024 && dm_read(c, s2, &v, 8) == DM_OK && v == 0,
			  "%s: it reuses the range given back, zeroed", tag);
		CHECK(dm_chunk_free_owner(c, node, 0x7777, &n) == DM_OK && n == 1, "%s: freed with their owner", tag);
		CHECK_STATUS(dm_node_stats_get(c, node, &b), DM_OK, "%s: stats at the end of slabs", tag);
		CHECK(b.bytes_in_use == a.bytes_in_use, "%s: bytes_in_use back where it was", tag);
	}

	/* catalog */
	dm_tree_name_named(&tn, "rpc-tree");
	CHECK_STATUS(dm_tree_create(c, node, &tn, &ti), DM_OK, "%s: create named tree", tag);
	CHECK(dm_gaddr_node(ti.tree_id) == node && ti.tree_id != 0 && dm_gaddr_node(ti.root_addr) == node &&
		  ti.meta_addr == ti.root_addr + 8 && ti.state == DM_TREE_STATE_LIVE && ti.chunks == 0,
		  "%s: tree info: id and addresses on this node, LIVE, no chunks", tag);
	CHECK(ti.owner_pid == (uint64_t) getpid(), "%s: owner_pid is the creating client's pid (%" PRIu64 ", want %d)",
		  tag, ti.owner_pid, (int) getpid());
	CHECK_STATUS(dm_tree_create(c, node, &tn, &ti2), DM_ERR_EXISTS, "%s: create twice -> EXISTS", tag);
	CHECK_STATUS(dm_tree_open(c, node, &tn, &ti2), DM_OK, "%s: open", tag);
	CHECK(ti2.tree_id == ti.tree_id && ti2.root_addr == ti.root_addr, "%s: open finds the same tree", tag);
	/* root word: CAS-able by clients */
	CHECK_STATUS(dm_cas(c, ti.root_addr, 0, 0xABC0, &v), DM_OK, "%s: CAS the root word", tag);
	CHECK(v == 0, "%s: root word was 0", tag);
	CHECK_STATUS(dm_write(c, ti.meta_addr + (DM_TREE_META_WORDS - 1) * 8, &v, 8), DM_OK, "%s: write the last meta word", tag);
	CHECK_STATUS(dm_write(c, ti.meta_addr + DM_TREE_META_WORDS * 8, &v, 8), DM_ERR_READONLY,
				 "%s: the word after the meta words is memnode-owned -> READONLY", tag);
	/* chunks of the tree are counted and dropped with it */
	CHECK_STATUS(dm_chunk_alloc(c, node, ti.tree_id, &ch[0], NULL), DM_OK, "%s: chunk for the tree", tag);
	CHECK_STATUS(dm_chunk_alloc(c, node, ti.tree_id, &ch[1], NULL), DM_OK, "%s: second chunk for the tree", tag);
	CHECK(dm_tree_open(c, node, &tn, &ti2) == DM_OK && ti2.chunks == 2, "%s: tree owns 2 chunks", tag);
	{
		dm_tree_name bad = tn;

		bad.kind = 77;
		CHECK_STATUS(dm_tree_create(c, node, &bad, &ti2), DM_ERR_INVALID, "%s: invalid name -> INVALID", tag);
		/* the memnode checks too: send it raw */
		{
			uint8_t		body[8 + sizeof(dm_tree_name)],
						rep[512];
			dm_rpc_hdr	rh = {.code = DM_RPC_CAT_CREATE};
			dm_frame_hdr fh;

			memset(bad.name, 'x', sizeof(bad.name));
			bad.kind = DM_TREE_NAMED;	/* not NUL-terminated */
			memcpy(body, &rh, sizeof(rh));
			memcpy(body + 8, &bad, sizeof(bad));
			rc = dm_client_raw(c, node, DM_MSG_RPC, body, sizeof(body), &fh, rep, sizeof(rep));
			CHECK(rc == DM_OK && fh.status == DM_ERR_INVALID, "%s: memnode refuses an unterminated name (%s)", tag,
				  dm_strerror(rc == DM_OK ? (int) fh.status : rc));
		}
	}
	dm_tree_name_named(&tn, "no-such-tree");
	CHECK_STATUS(dm_tree_open(c, node, &tn, &ti2), DM_ERR_NOTFOUND, "%s: open missing -> NOTFOUND", tag);
	CHECK_STATUS(dm_tree_drop(c, node, &tn, &n), DM_ERR_NOTFOUND, "%s: drop missing -> NOTFOUND", tag);

	/* many trees: pg names in two databases, listed in pages */
	for (int i = 0; i < NTREES; i++)
	{
		dm_tree_name_pg(&pg, 0xC1C1, i % 2 ? 16384 : 16385, 20000 + i, 0);
		if ((rc = dm_tree_create(c, node, &pg, &ti2)) != DM_OK)
			break;
	}
	CHECK_STATUS(rc, DM_OK, "%s: created %d pg trees", tag, NTREES);
	memset(&lr, 0, sizeof(lr));
	lr.max = DM_LIST_MAX;
	{
		int			total = 0,
					pages = 0,
					ok = 1;

		do
		{
			rc = dm_tree_list(c, node, &lr, list, &cnt, &next);
			if (rc != DM_OK || next <= lr.start_slot)
			{
				ok = 0;
				break;
			}
			for (uint32_t k = 0; k < cnt; k++)
				if (list[k].state != DM_TREE_STATE_LIVE || list[k].slot < lr.start_slot || list[k].slot >= next)
					ok = 0;
			total += (int) cnt;
			pages++;
			lr.start_slot = next;
		} while (next < 128 && pages < 10);
		CHECK(ok && total == NTREES + 1 && pages >= 2, "%s: list all: %d trees in %d pages", tag, total, pages);
	}
	lr.start_slot = 0;
	lr.kind = DM_TREE_PG;
	lr.dboid = 16384;
	rc = dm_tree_list(c, node, &lr, list, &cnt, &next);
	{
		int			ok = rc == DM_OK && cnt == NTREES / 2;

		for (uint32_t k = 0; ok && k < cnt; k++)
			ok = list[k].name.kind == DM_TREE_PG && list[k].name.dboid == 16384 && list[k].name.sysid == 0xC1C1;
		CHECK(ok, "%s: list dboid 16384: %u trees", tag, cnt);
	}
	lr.dboid = 0;
	lr.kind = DM_TREE_NAMED;
	CHECK(dm_tree_list(c, node, &lr, list, &cnt, &next) == DM_OK && cnt == 1 &&
		  strcmp(list[0].name.name, "rpc-tree") == 0 && next == 128, "%s: list named: 1, done", tag);
	lr.kind = 0;
	lr.sysid = 0xDEAD;
	CHECK(dm_tree_list(c, node, &lr, list, &cnt, &next) == DM_OK && cnt == 1,
		  "%s: list sysid 0xDEAD: only the named tree (sysid filters pg trees only)", tag);
	lr.sysid = 0;
	lr.max = 0;
	CHECK_STATUS(dm_tree_list(c, node, &lr, list, &cnt, &next), DM_ERR_INVALID, "%s: list max 0 -> INVALID", tag);
	lr.max = DM_LIST_MAX + 1;
	CHECK_STATUS(dm_tree_list(c, node, &lr, list, &cnt, &next), DM_ERR_INVALID, "%s: list max 65 -> INVALID", tag);

	/* catalog full */
	{
		int			made = 0;

		for (int i = 0; i < 200; i++)
		{
			char		name[32];

			snprintf(name, sizeof(name), "fill-%d", i);
			dm_tree_name_named(&tn, name);
			rc = dm_tree_create(c, node, &tn, &ti2);
			if (rc != DM_OK)
				break;
			made++;
		}
		CHECK_STATUS(rc, DM_ERR_CATALOG_FULL, "%s: catalog full after %d more trees", tag, made);
		CHECK(made == 128 - NTREES - 1, "%s: exactly the free slots were used (%d)", tag, made);
		for (int i = 0; i < made; i++)
		{
			char		name[32];

			snprintf(name, sizeof(name), "fill-%d", i);
			dm_tree_name_named(&tn, name);
			dm_tree_drop(c, node, &tn, NULL);
		}
	}
	for (int i = 0; i < NTREES; i++)
	{
		dm_tree_name_pg(&pg, 0xC1C1, i % 2 ? 16384 : 16385, 20000 + i, 0);
		dm_tree_drop(c, node, &pg, NULL);
	}
	dm_tree_name_named(&tn, "rpc-tree");
	CHECK_STATUS(dm_tree_drop(c, node, &tn, &n), DM_OK, "%s: drop the named tree", tag);
	CHECK(n == 2, "%s: drop freed its 2 chunks (got %" PRIu64 ")", tag, n);
	CHECK_STATUS(dm_node_stats_get(c, node, &st), DM_OK, "%s: stats at the end", tag);
	CHECK(st.trees == 0 && st.chunks_used == st0.chunks_used, "%s: no trees, no chunks left (%" PRIu64 ", %" PRIu64 ")",
		  tag, st.trees, st.chunks_used);
	/* the dropped tree's root word was cleared: a new tree in the slot starts empty */
	dm_tree_name_named(&tn, "rpc-tree-2");
	CHECK(dm_tree_create(c, node, &tn, &ti2) == DM_OK && ti2.root_addr == ti.root_addr && dm_read(c, ti2.root_addr, &v, 8) == DM_OK,
		  "%s: new tree reuses the slot", tag);
	CHECK(v == 0, "%s: its root word starts at 0 (got 0x%" PRIx64 ")", tag, v);
	dm_tree_drop(c, node, &tn, NULL);

	/*
	 * Large transfers: replies bigger than any earlier one make the client
	 * grow its receive buffer mid-frame (after the header has arrived).
	 */
	{
		size_t		big_len = 256 * 1024;
		uint8_t    *wbuf = malloc(big_len),
				   *rbuf = calloc(1, big_len),
				   *r2 = calloc(1, 100000),
				   *r3 = calloc(1, 5000);
		dm_gaddr	bc = 0;
		dm_op		ops[3];

		for (size_t i = 0; i < big_len; i++)
			wbuf[i] = (uint8_t) (i * 7 + (i >> 9));
		CHECK_STATUS(dm_chunk_alloc(c, node, 0x4444, &bc, NULL), DM_OK, "%s: chunk for large transfers", tag);
		CHECK_STATUS(dm_write(c, bc, wbuf, (uint32_t) big_len), DM_OK, "%s: 256 KiB WRITE", tag);
		rc = dm_read(c, bc, rbuf, (uint32_t) big_len);
		CHECK_STATUS(rc, DM_OK, "%s: 256 KiB READ (%s)", tag, rc ? dm_client_error(c) : "ok");
		CHECK(memcmp(rbuf, wbuf, big_len) == 0, "%s: 256 KiB read back intact", tag);
		dm_op_read(&ops[0], bc + 1000, r3, 5000);
		dm_op_read(&ops[1], bc + 3, r2, 100000);
		dm_op_read(&ops[2], bc + 200000, rbuf, 50000);
		rc = dm_post(c, ops, 3, NULL);
		CHECK_STATUS(rc, DM_OK, "%s: batch of 3 large unaligned READs (%s)", tag, rc ? dm_client_error(c) : "ok");
		CHECK(memcmp(r3, wbuf + 1000, 5000) == 0 && memcmp(r2, wbuf + 3, 100000) == 0 &&
			  memcmp(rbuf, wbuf + 200000, 50000) == 0, "%s: each READ got its own bytes", tag);
		CHECK_STATUS(dm_chunk_free_owner(c, node, 0x4444, NULL), DM_OK, "%s: free the chunk", tag);
		free(wbuf);
		free(rbuf);
		free(r2);
		free(r3);
	}

	/* client-side limits */
	{
		uint8_t    *big = malloc(DM_FRAME_MAX);
		dm_op		ops[2];
		int			bad = -2;

		/* the same limit on both backends, so code tested over shm also works over tcp */
		CHECK_STATUS(dm_read(c, dm_gaddr_make(node, 0), big, DM_FRAME_MAX), DM_ERR_TOOBIG,
					 "%s: a 16 MiB READ does not fit a reply frame -> TOOBIG", tag);
		dm_op_read(&ops[0], dm_gaddr_make(node, 0), big, 8);
		dm_op_read(&ops[1], dm_gaddr_make(node, 0), NULL, 8);
		CHECK_STATUS(dm_post(c, ops, 2, &bad), DM_ERR_INVALID, "%s: READ into NULL -> INVALID", tag);
		CHECK(bad == 1, "%s: bad_index 1", tag);
		dm_op_read(&ops[1], dm_gaddr_make(node, 0) | DM_GADDR_RESERVED_BIT, big, 8);
		CHECK_STATUS(dm_post(c, ops, 2, &bad), DM_ERR_INVALID, "%s: address with the swizzle bit -> INVALID", tag);
		ops[1] = ops[0];
		ops[1].kind = 9;
		CHECK_STATUS(dm_post(c, ops, 2, &bad), DM_ERR_INVALID, "%s: unknown op kind -> INVALID", tag);
		CHECK_STATUS(dm_post(c, ops, 0, &bad), DM_OK, "%s: empty batch is a no-op", tag);
		free(big);
		CHECK_STATUS(dm_ping(c, node), DM_OK, "%s: connection fine after client-side refusals", tag);
	}
	/*
	 * A request that arrives after its client gave up (DM_FAULT_LATE_RPC):
	 * the caller sees TIMEOUT at once, the memnode runs it when it comes
	 * (over ucx too the child sends it on the abandoned control socket: UCX
	 * does not survive fork).
	 */
	{
		dm_fault	f = {DM_FAULT_LATE_RPC, 1, 200, 0};
		dm_gaddr	late = 0;
		dm_node_stats a, b;
		int			landed = 0, wst = 0;
		pid_t		child;

		CHECK_STATUS(dm_node_stats_get(c, node, &a), DM_OK, "%s: stats before a late RPC", tag);
		dm_client_set_fault(c, &f);
		CHECK_STATUS(dm_chunk_alloc(c, node, 0x8888, &late, NULL), DM_ERR_TIMEOUT, "%s: a late RPC: TIMEOUT at once", tag);
		child = wait(&wst);
		CHECK(child > 0 && WIFEXITED(wst), "%s: a late RPC: its sender finished", tag);
		CHECK_STATUS(dm_client_reconnect(c, node), DM_OK, "%s: a late RPC: reconnected", tag);
		if (dm_node_stats_get(c, node, &b) == DM_OK)
			landed = b.chunks_used == a.chunks_used + 1;
		CHECK(landed, "%s: a late RPC: it ran when it arrived (%" PRIu64 " chunks in use, %" PRIu64 " before)", tag,
			  b.chunks_used, a.chunks_used);
		CHECK(dm_chunk_free_owner(c, node, 0x8888, &n) == DM_OK && n == 1, "%s: a late RPC: its chunk freed", tag);
	}
	dm_client_destroy(c);
}

int
main(void)
{
	const char *const args[] = {"--id", "7", "--size", "64M", "--chunk-size", "1M", "--catalog-size", "128",
	"--shm", NULL};
	static const struct
	{
		const char *tag;
		int			backend;
	}			runs[] = {{"tcp", DM_BACKEND_TCP}, {"shm", DM_BACKEND_SHM}, {"ucx", DM_BACKEND_UCX}};

	/* a fresh memnode per run, so one run's failure cannot cascade into the next */
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++)
	{
		memnode_proc mn;
		int			st;

		if (!test_backend_wanted(runs[i].backend))
			continue;
		if (!CHECK(memnode_start(&mn, 0, args) == 0, "%s: memnode started", runs[i].tag))
			continue;
		run(runs[i].tag, runs[i].backend, &mn);
		st = memnode_stop(&mn, SIGTERM);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: memnode stopped cleanly", runs[i].tag);
	}
	return tap_done();
}
