/*
 * exec.c — executes one complete, header-checked request frame and builds
 * its reply: the versioned handshake (and its authentication, auth.c),
 * batches of one-sided operations (validated whole before any is applied; a
 * failed guard CAS ends one), and RPCs on the allocator and the catalog.
 * Nothing here trusts a length or an address from the client; with
 * authentication, nothing lets one identity touch another's trees or memory
 * (dm_region_check_owner for ops, own_tree_* for RPCs).
 * A batch that changes a region kept in a file is journaled first
 * (dm_journal.h), so that a memnode killed in the middle of it leaves
 * nothing half done once a memnode reattaches.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dm_claim.h"
#include "dm_journal.h"
#include "dm_memops.h"
#include "memnode.h"

/* Make room for a reply of len bytes at the start of *out. */
static int
reserve(uint8_t **out, uint32_t *cap, uint32_t len)
{
	uint32_t	ncap;
	uint8_t    *nb;

	if (len <= *cap)
		return 0;
	ncap = *cap ? *cap : 4096;
	while (ncap < len)
		ncap *= 2;
	if ((nb = aligned_alloc(8, ncap)) == NULL)
		return -1;
	free(*out);
	*out = nb;
	*cap = ncap;
	return 0;
}

static uint8_t *
reply_begin(const dm_frame_hdr *req, uint32_t body_len, int status,
			uint8_t **out, uint32_t *out_len, uint32_t *out_cap)
{
	uint32_t	len = DM_HDR_SIZE + dm_pad8(body_len);
	dm_frame_hdr *h;

	if (reserve(out, out_cap, len) < 0)
		return NULL;
	h = (dm_frame_hdr *) *out;
	dm_hdr_init(h, req->type | DM_MSG_REPLY, len, req->seq);
	h->status = (uint32_t) status;
	memset(*out + DM_HDR_SIZE, 0, len - DM_HDR_SIZE);
	*out_len = len;
	return *out + DM_HDR_SIZE;
}

/* The reply of a completed handshake: who we are and how to reach our region. */
static void
fill_hello_rep(const mn_state *mns, dm_hello_rep *rep)
{
	rep->version = DM_PROTO_VERSION;
	rep->node_id = mns->region.node_id;
	rep->incarnation = mns->region.sb->incarnation;
	rep->region_size = mns->region.size;
	rep->chunk_size = mns->region.sb->chunk_size;
	rep->data_offset = mns->region.sb->data_off;
	if (mns->shm_path[0])
	{
		rep->flags |= DM_HELLO_REP_SHM;
		memcpy(rep->shm_path, mns->shm_path, sizeof(rep->shm_path));
	}
}

static int
exec_hello(mn_conn_info *ci, mn_counters *ctr, const dm_frame_hdr *h, const uint8_t *body, uint32_t blen,
		   uint8_t **out, uint32_t *out_len, uint32_t *out_cap)
{
	dm_hello_req req;
	dm_hello_rep rep;
	uint8_t    *b;
	int			status = DM_OK;
	uint32_t	version;

	/* our HELLO, or that of versions 1 and 2 (which had no credentials) */
	if (ci->handshaken || ci->auth_pending ||
		(blen != sizeof(req) && blen != offsetof(dm_hello_req, identity)))
		return -1;
	memcpy(&version, body, sizeof(version));
	memset(&rep, 0, sizeof(rep));
	rep.version = DM_PROTO_VERSION;
	if (version != DM_PROTO_VERSION)
	{
		/* answer, so that an older client can say why, then hang up */
		mn_log_limited("client %s speaks protocol version %u, we speak %u: refused",
					   ci->peer, version, DM_PROTO_VERSION);
		status = DM_ERR_VERSION;
		ci->close_after_reply = 1;
	}
	else if (blen != sizeof(req))
		return -1;
	else
	{
		memcpy(&req, body, sizeof(req));
		ci->tear = (req.flags & DM_HELLO_TEAR) != 0;
		ci->client_pid = req.client_pid;
		req.client_name[sizeof(req.client_name) - 1] = '\0';
		if (mn_auth_enabled())
			status = mn_auth_hello(ci, ctr, &req, &rep);	/* a challenge, or refused */
		else
		{
			ci->handshaken = 1;
			fill_hello_rep(ci->mns, &rep);
		}
		if (status == DM_OK)
			mn_log(LOG_DEBUG, "client %s (%s) %s%s", ci->peer, req.client_name,
				   ci->handshaken ? "connected" : "challenged", ci->tear ? " in tear mode" : "");
	}
	if ((b = reply_begin(h, sizeof(rep), status, out, out_len, out_cap)) == NULL)
		return -1;
	memcpy(b, &rep, sizeof(rep));
	return 0;
}

/* The client's proof (after a HELLO that was challenged). */
static int
exec_auth(mn_conn_info *ci, mn_counters *ctr, const dm_frame_hdr *h, const uint8_t *body, uint32_t blen,
		  uint8_t **out, uint32_t *out_len, uint32_t *out_cap)
{
	dm_auth_req req;
	dm_auth_rep rep;
	uint8_t    *b;
	int			status;

	memset(&rep, 0, sizeof(rep));
	if (blen != sizeof(req))
	{
		mn_auth_failed(ci, ctr, "malformed AUTH frame");
		status = DM_ERR_AUTH;
	}
	else
	{
		memcpy(&req, body, sizeof(req));
		status = mn_auth_verify(ci, ctr, &req, &rep);
	}
	if (status == DM_OK)
	{
		ci->handshaken = 1;
		fill_hello_rep(ci->mns, &rep.hello);
	}
	if ((b = reply_begin(h, status == DM_OK ? sizeof(rep) : 0, status, out, out_len, out_cap)) == NULL)
		return -1;
	if (status == DM_OK)
		memcpy(b, &rep, sizeof(rep));
	return 0;
}

static int
exec_batch(mn_conn_info *ci, mn_counters *ctr, const dm_frame_hdr *h, const uint8_t *body,
		   uint32_t blen, uint8_t **out, uint32_t *out_len, uint32_t *out_cap)
{
	mn_state   *mns = ci->mns;
	const dm_wire_op *ops;
	const uint8_t *payload;
	uint32_t	nops, bad = UINT32_MAX;
	uint64_t	rsize;
	int			status = DM_OK;
	uint8_t    *b;
	uint64_t   *results;
	uint8_t    *data;
	int			skip = 0;
	dm_journal_slot *jslot = NULL;	/* journaling this batch */
	dm_journal_slot *jused = NULL;	/* the slot this batch marked (ACTIVE or UNLOGGED) */
	pthread_mutex_t *jlock = NULL;

	if (dm_batch_decode(body, blen, &ops, &nops, &payload, &bad) != DM_OK)
		return -1;
	rsize = dm_batch_reply_size(ops, nops);
	if (rsize == 0)
		status = DM_ERR_TOOBIG;
	/* from the ownership check to the last op: see auth.c */
	mn_auth_batch_begin(ci);
	for (uint32_t i = 0; i < nops && status == DM_OK; i++)
	{
		if ((ops[i].addr & DM_GADDR_RESERVED_BIT) != 0 || dm_gaddr_node(ops[i].addr) != mns->region.node_id)
			status = DM_ERR_RANGE;
		else
			status = dm_region_check_op(&mns->region, ops[i].kind, dm_gaddr_offset(ops[i].addr), ops[i].len);
		if (status == DM_OK && ci->ident != 0 &&
			(status = dm_region_check_owner(&mns->region, dm_gaddr_offset(ops[i].addr), ops[i].len, ci->ident)) != DM_OK)
			ctr->access_denied++;
		if (status != DM_OK)
			bad = i;
	}
	if (status != DM_OK)
	{
		dm_batch_hdr bh = {.nops = 0, .bad_index = bad};

		mn_auth_batch_end(ci);
		ctr->requests_rejected++;
		mn_log_limited("client %s: batch rejected at op %u: %s", ci->peer, bad, dm_strerror(status));
		if ((b = reply_begin(h, sizeof(bh), status, out, out_len, out_cap)) == NULL)
			return -1;
		memcpy(b, &bh, sizeof(bh));
		return 0;
	}

	if ((b = reply_begin(h, (uint32_t) rsize - DM_HDR_SIZE, DM_OK, out, out_len, out_cap)) == NULL)
	{
		mn_auth_batch_end(ci);
		return -1;
	}
	((dm_batch_hdr *) b)->nops = nops;
	((dm_batch_hdr *) b)->bad_index = UINT32_MAX;
	results = (uint64_t *) (b + sizeof(dm_batch_hdr));
	data = (uint8_t *) (results + nops);
	if (mns->region.journal != NULL && dm_journal_needed(ops, nops))
	{
		uint32_t	k = (uint32_t) mn_worker_id % (uint32_t) mns->region.sb->journal_slots;

		if (mns->journal_locks)
			pthread_mutex_lock(jlock = &mns->journal_locks[k]);
		jused = dm_journal_slot_at(&mns->region, k);
		if (dm_journal_begin(jused, body, blen))
			jslot = jused;		/* else too big: executed unjournaled (the slot says so) */
	}
	for (uint32_t i = 0; i < nops; i++)
	{
		uint8_t    *p = mns->region.base + dm_gaddr_offset(ops[i].addr);

		if (skip)
		{
			/* after a failed guard: nothing more is applied; READ data stays zero */
			if (ops[i].kind == DM_OP_READ)
				data += dm_pad8(ops[i].len);
			else if (ops[i].kind == DM_OP_WRITE)
				payload += dm_pad8(ops[i].len);
			continue;
		}
		switch (ops[i].kind)
		{
			case DM_OP_READ:
				dm_mem_read(data, p, ops[i].len, ci->tear);
				data += dm_pad8(ops[i].len);
				break;
			case DM_OP_WRITE:
				dm_mem_write(p, payload, ops[i].len, ci->tear);
				payload += dm_pad8(ops[i].len);
				break;
			case DM_OP_CAS:
				results[i] = dm_mem_cas(p, ops[i].arg0, ops[i].arg1);
				skip = (ops[i].flags & DM_OPF_GUARD) && results[i] != ops[i].arg0;
				break;
			case DM_OP_FAA:
				results[i] = dm_mem_faa(p, ops[i].arg0);
				break;
			case DM_OP_FETCH_OR:
				results[i] = dm_mem_fetch_or(p, ops[i].arg0);
				break;
			case DM_OP_FETCH_MAX:
				results[i] = dm_mem_fetch_max(p, ops[i].arg0);
				break;
		}
		ctr->ops[ops[i].kind]++;
		if (jslot && !skip)
			dm_journal_progress(jslot, i + 1);
		else if (jslot)
		{
			/* a failed guard: nothing more will be applied, so nothing to finish */
			dm_journal_end(jslot);
			jslot = NULL;
		}
	}
	if (jused)
		dm_journal_end(jused);
	if (jlock)
		pthread_mutex_unlock(jlock);
	mn_auth_batch_end(ci);
	ctr->batches++;
	return 0;
}

static void
fill_stats(mn_state *mns, dm_node_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->region_size = mns->region.size;
	st->chunk_size = mns->region.sb->chunk_size;
	st->chunks_total = mns->region.sb->nchunks;
	st->chunks_used = mns->region.sb->chunks_used;
	st->catalog_capacity = mns->region.sb->catalog_capacity;
	st->incarnation = mns->region.sb->incarnation;
	st->uptime_ms = (mn_mono_ns() - mns->start_mono_ns) / 1000000u;
	st->connections = (uint64_t) __atomic_load_n(&mns->connections, __ATOMIC_RELAXED);
	st->node_id = mns->region.node_id;
	st->threads = (uint32_t) mns->cfg.threads;
	/* a walk of the chunk table and the returned ranges: under the allocator's lock */
	pthread_mutex_lock(&mns->region_lock);
	st->bytes_in_use = dm_region_bytes_in_use(&mns->region);
	/* instance claims (dm_claim.h) are catalog entries, not trees */
	st->trees = mns->region.sb->trees - dm_region_cat_count_named(&mns->region, DM_CLAIM_PREFIX);
	pthread_mutex_unlock(&mns->region_lock);
	/* racy reads of other workers' counters: fine for statistics */
	for (int w = 0; w < mns->cfg.threads; w++)
	{
		const mn_counters *k = &mns->worker_counters[w];

		st->connections_total += k->connections_total;
		st->frames_bad += k->frames_bad;
		st->requests_rejected += k->requests_rejected;
		st->batches += k->batches;
		for (int j = 0; j <= DM_OP_KIND_MAX; j++)
			st->ops[j] += k->ops[j];
		st->rpcs += k->rpcs;
		st->rpcs_ucx += k->rpcs_ucx;
		st->bytes_in += k->bytes_in;
		st->bytes_out += k->bytes_out;
		st->auth_failures += k->auth_failures;
		st->access_denied += k->access_denied;
	}
	st->frames_bad += __atomic_load_n(&mns->ucx_dropped, __ATOMIC_RELAXED);
}

/*
 * Tenant isolation for RPCs (auth.c): with authentication, an allocator RPC
 * must name a live tree of the caller as owner, a catalog RPC one of its
 * trees; DM_ERR_PERMISSION otherwise.  Called under the region lock.
 */
static int
own_tree_id(const mn_conn_info *ci, uint64_t tree_id)
{
	uint64_t	ident;

	if (ci->ident == 0)
		return DM_OK;
	if (dm_region_tree_owner(&ci->mns->region, tree_id, &ident) != DM_OK || ident != ci->ident)
		return DM_ERR_PERMISSION;
	return DM_OK;
}

static int
own_tree_name(const mn_conn_info *ci, const dm_tree_name *name)
{
	uint64_t	ident;
	int			rc;

	if (ci->ident == 0)
		return DM_OK;
	if ((rc = dm_region_cat_owner(&ci->mns->region, name, &ident, NULL)) != DM_OK)
		return rc;				/* NOTFOUND / INVALID: as without authentication */
	return ident == ci->ident ? DM_OK : DM_ERR_PERMISSION;
}

/* The chunk at a global address must belong to one of the caller's trees. */
static int
own_chunk(const mn_conn_info *ci, dm_gaddr addr)
{
	if (ci->ident == 0)
		return DM_OK;
	if ((addr & DM_GADDR_RESERVED_BIT) || dm_gaddr_node(addr) != ci->mns->region.node_id ||
		dm_gaddr_offset(addr) >= ci->mns->region.size)
		return DM_ERR_RANGE;
	return dm_region_check_owner(&ci->mns->region, dm_gaddr_offset(addr), 1, ci->ident);
}

static int
exec_rpc(mn_conn_info *ci, mn_counters *ctr, const dm_frame_hdr *h, const uint8_t *body,
		 uint32_t blen, uint8_t **out, uint32_t *out_len, uint32_t *out_cap)
{
	mn_state   *mns = ci->mns;
	dm_rpc_hdr	rh;
	int			need;
	const uint8_t *args;
	/* reply args, sized for the largest reply (a catalog listing) */
	static __thread uint8_t rep[sizeof(dm_rpc_list_rep) + DM_LIST_MAX * sizeof(dm_tree_info)];
	uint32_t	replen = 0;
	int			status = DM_OK;
	uint8_t    *b;
	const uint8_t *repp = rep;

	if (blen < sizeof(rh))
		return -1;
	memcpy(&rh, body, sizeof(rh));
	need = dm_rpc_request_size(rh.code);
	args = body + sizeof(rh);
	if (need < 0)
		status = DM_ERR_INVALID;	/* well-formed but unknown: refuse, keep the connection */
	else if (blen != sizeof(rh) + dm_pad8((uint32_t) need))
		return -1;
	ctr->rpcs++;

	if (status == DM_OK && rh.code >= DM_RPC_OFF_LOOKUP && rh.code <= DM_RPC_OFF_DRAIN)
		status = mn_offload_rpc(ci, ctr, rh.code, args, &repp, &replen);	/* offload.c */
	else if (status == DM_OK)
	{
		switch ((dm_rpc_code) rh.code)
		{
			case DM_RPC_PING:
				{
					dm_rpc_ping_rep pr;

					memcpy(&pr.token, args, 8);
					pr.server_mono_ns = mn_mono_ns();
					memcpy(rep, &pr, sizeof(pr));
					replen = sizeof(pr);
					break;
				}
			case DM_RPC_STATS:
				fill_stats(ci->mns, (dm_node_stats *) rep);
				replen = sizeof(dm_node_stats);
				break;
			case DM_RPC_UCX_ATTACH:
				/* handshaken (authenticated) by now: the rkey may be handed out */
				{
					/* (in a block: a declaration may not follow a case label in C11) */
					_Static_assert(sizeof(dm_rpc_ucx_rep) + DM_UCX_BLOB_MAX <= sizeof(rep), "UCX attach fits a reply");
				}
				if (mns->ucx_blob == NULL || mns->ucx_bind == NULL)
					status = DM_ERR_NOSHM;
				else
				{
					dm_rpc_ucx_attach_req ar;
					uint64_t	token[2];

					/* the client's worker address: where replies to its RPCs over UCX go */
					memcpy(&ar, args, sizeof(ar));
					if ((status = mns->ucx_bind(ci, &ar, token)) == DM_OK)
					{
						memcpy(rep, mns->ucx_blob, mns->ucx_blob_len);
						memcpy(rep + offsetof(dm_rpc_ucx_rep, token), token, sizeof(token));
						replen = mns->ucx_blob_len;
					}
				}
				break;
			default:
				{
					dm_rpc_u64	u;
					dm_tree_name name;
					uint64_t	off;
					int			freed = 0;

					memcpy(&u, args, sizeof(u));
					memcpy(&name, args, sizeof(name) <= (size_t) need ? sizeof(name) : 0);
					pthread_mutex_lock(&mns->region_lock);
					switch ((dm_rpc_code) rh.code)
					{
						case DM_RPC_CHUNK_ALLOC:
							if ((status = own_tree_id(ci, u.value)) != DM_OK)
								break;
							status = dm_region_chunk_alloc(&mns->region, u.value, mn_unix_ns(), &off);
							if (status == DM_OK)
							{
								dm_rpc_alloc_rep ar = {.chunk = dm_gaddr_make(mns->region.node_id, off),
								.size = mns->region.sb->chunk_size};

								memcpy(rep, &ar, sizeof(ar));
								replen = sizeof(ar);
							}
							break;
						case DM_RPC_SLAB_ALLOC:
							{
								dm_rpc_slab_req sr;

								memcpy(&sr, args, sizeof(sr));
								if ((status = own_tree_id(ci, sr.owner)) != DM_OK)
									break;
								status = dm_region_slab_alloc(&mns->region, sr.owner, sr.size, mn_unix_ns(), &off);
								if (status == DM_OK)
								{
									dm_rpc_alloc_rep ar = {.chunk = dm_gaddr_make(mns->region.node_id, off),
									.size = sr.size};

									memcpy(rep, &ar, sizeof(ar));
									replen = sizeof(ar);
								}
								break;
							}
						case DM_RPC_SLAB_FREE:
							{
								dm_rpc_slab_free_req fr;

								memcpy(&fr, args, sizeof(fr));
								if ((fr.addr & DM_GADDR_RESERVED_BIT) || dm_gaddr_node(fr.addr) != mns->region.node_id)
									status = DM_ERR_RANGE;
								else if ((status = own_tree_id(ci, fr.owner)) == DM_OK)
									status = dm_region_slab_free(&mns->region, fr.owner, dm_gaddr_offset(fr.addr), fr.size);
								freed = status == DM_OK;
								break;
							}
						case DM_RPC_CHUNK_FREE:
							if ((u.value & DM_GADDR_RESERVED_BIT) || dm_gaddr_node(u.value) != mns->region.node_id)
								status = DM_ERR_RANGE;
							else if ((status = own_chunk(ci, u.value)) == DM_OK)
								status = dm_region_chunk_free(&mns->region, dm_gaddr_offset(u.value));
							freed = status == DM_OK;
							break;
						case DM_RPC_CHUNK_FREE_OWNER:
							if ((status = own_tree_id(ci, u.value)) != DM_OK)
								break;
							u.value = dm_region_chunk_free_owner(&mns->region, u.value);
							freed = 1;
							memcpy(rep, &u, sizeof(u));
							replen = sizeof(u);
							break;
						case DM_RPC_CAT_CREATE:
							status = dm_region_cat_create_owned(&mns->region, &name, ci->client_pid, ci->ident,
																mn_unix_ns(), (dm_tree_info *) rep);
							replen = sizeof(dm_tree_info);
							break;
						case DM_RPC_CAT_OPEN:
							if ((status = own_tree_name(ci, &name)) == DM_OK)
								status = dm_region_cat_open(&mns->region, &name, (dm_tree_info *) rep);
							replen = sizeof(dm_tree_info);
							break;
						case DM_RPC_CAT_DROP:
							if ((status = own_tree_name(ci, &name)) == DM_OK)
								status = dm_region_cat_drop(&mns->region, &name, &u.value);
							freed = status == DM_OK;
							memcpy(rep, &u, sizeof(u));
							replen = sizeof(u);
							break;
						case DM_RPC_CAT_LIST:
							{
								dm_rpc_list_req lr;
								dm_rpc_list_rep lp;

								memcpy(&lr, args, sizeof(lr));
								if (lr.max == 0 || lr.max > DM_LIST_MAX)
								{
									status = DM_ERR_INVALID;
									break;
								}
								/* with authentication, only the caller's trees */
								lp.count = dm_region_cat_list_owned(&mns->region, lr.start_slot, lr.max, lr.kind,
																	lr.dboid, lr.sysid,
																	ci->ident != 0 ? &ci->ident : NULL,
																	(dm_tree_info *) (rep + sizeof(lp)),
																	&lp.next_slot);
								memcpy(rep, &lp, sizeof(lp));
								replen = sizeof(lp) + lp.count * sizeof(dm_tree_info);
								break;
							}
						default:
							status = DM_ERR_INVALID;
					}
					/* freed memory may go to another identity: not while old batches run */
					if (freed && ci->ident != 0)
						mn_auth_quiesce();
					pthread_mutex_unlock(&mns->region_lock);
				}
		}
	}
	if (status != DM_OK && status != DM_ERR_FALLBACK)
	{
		ctr->requests_rejected++;
		if (status == DM_ERR_PERMISSION)
		{
			ctr->access_denied++;
			mn_log_limited("client %s (identity \"%s\"): RPC %u refused: %s", ci->peer,
						   ci->identity, rh.code, dm_strerror(status));
		}
	}
	if (status != DM_OK)
		replen = 0;
	if ((b = reply_begin(h, sizeof(rh) + replen, status, out, out_len, out_cap)) == NULL)
		return -1;
	memcpy(b, &rh, sizeof(rh));
	memcpy(b + sizeof(rh), repp, replen);
	return 0;
}

int
mn_exec_frame(mn_conn_info *ci, mn_counters *ctr, const uint8_t *frame,
			  uint8_t **out, uint32_t *out_len, uint32_t *out_cap)
{
	const dm_frame_hdr *h = (const dm_frame_hdr *) frame;
	const uint8_t *body = frame + DM_HDR_SIZE;
	uint32_t	blen = h->length - DM_HDR_SIZE;

	if (h->status != 0)
		return -1;
	if (ci->auth_pending && h->type != DM_MSG_AUTH)
	{
		/* challenged but no proof: nothing else runs; close */
		mn_auth_failed(ci, ctr, "request before authentication");
		return -1;
	}
	if (!ci->handshaken && h->type != DM_MSG_HELLO && h->type != DM_MSG_AUTH)
		return -1;
	switch (h->type)
	{
		case DM_MSG_HELLO:
			return exec_hello(ci, ctr, h, body, blen, out, out_len, out_cap);
		case DM_MSG_AUTH:
			if (ci->handshaken)
				return -1;
			return exec_auth(ci, ctr, h, body, blen, out, out_len, out_cap);
		case DM_MSG_BATCH:
			return exec_batch(ci, ctr, h, body, blen, out, out_len, out_cap);
		case DM_MSG_RPC:
			return exec_rpc(ci, ctr, h, body, blen, out, out_len, out_cap);
		default:
			return -1;
	}
}
