/*
 * offload.c — the memnode's offload executor (DEX §6; DESIGN.md §3): the
 * RPCs DM_RPC_OFF_LOOKUP/SCAN/INSERT/DELETE run the rest of a tree
 * operation from a node of this memnode down to the leaves on this CPU,
 * and DM_RPC_OFF_LOAD reports how busy the executor is.
 *
 * The tree code is the clients' own (src/dm/dm_tree_exec.c): a handle in
 * executor mode on an in-process client (dm_client_local.c) whose every
 * frame goes through the request executor (mn_exec_frame(), given to
 * mn_offload_init) with the caller's connection info.
 * So the executor's batches are bounds-checked, confined to the caller's
 * identity's trees (auth.c) and journaled exactly like that client's tcp
 * batches, and its lock words and version guards are the ones clients use.
 * Over tcp and shm the memnode CPU's atomics are the same memory's atomics
 * that tcp batches (run by these workers) and shm clients (mapping the
 * region) use, so the executor and one-sided clients are mutually safe.
 * With RDMA NICs they are not (NAM paper §3): a ucx/RDMA transport would
 * have to run the executor's atomics through the NIC (loopback), which the
 * in-process client is the place for.
 *
 * Threads (--offload-threads N).  The executor runs on the worker thread
 * that received the RPC, but at most N of them at once: an offload that
 * finds every slot taken is answered DM_ERR_FALLBACK at once (the client
 * does it one-sided), so offloads can never occupy more than N workers and
 * the others keep serving one-sided batches; an executor never waits long
 * for a lock either (dm_tree_io.c: its holder's unlock may be queued on the
 * same worker).  N = 0 disables offloading.  Default: half the workers,
 * at least one.  Each reply and DM_RPC_OFF_LOAD carry the load (offloads
 * in flight, summed executor time) that clients' policies weigh (DEX §6.1).
 *
 * Tokens (DM_RPC_OFF_DRAIN).  A client that gives up on an offloaded write
 * (a timeout, a cancel) does not know whether it ran, and one still
 * running here lands after the client went on: its cached copies of the
 * nodes written would be stale for good (a PostgreSQL scan then misses an
 * entry, or VACUUM fails to remove one whose tid gets reused).  Every
 * offloaded request names itself with a random token; DRAIN puts tokens on
 * a cancelled list (none of them starts afterwards, whichever connection
 * it arrives on and however late) and answers how many of them are
 * running.  The client drops its copies once that is 0.  The list keeps
 * the last CANCELLED_MAX tokens: a request that waits in a socket longer
 * than that many later drains is not stopped by it (its sender's hang-up
 * still is, server.c).  DRAIN needs no ownership check: tokens are random
 * 64-bit names, which another identity cannot guess to cancel.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dm_offload.h"
#include "memnode.h"

static int	slots;
static int	inflight;			/* atomic */

#define CANCELLED_MAX 4096
static pthread_mutex_t tok_lock = PTHREAD_MUTEX_INITIALIZER;
#define SLOTS_MAX 256			/* --offload-threads at most */
static uint64_t running_tok[SLOTS_MAX];	/* tokens of the offloads running (0 = free) */
static uint64_t cancelled[CANCELLED_MAX];	/* ring of drained tokens */
static uint32_t cancelled_next;

/*
 * An index of the ring by token, because every offload asks it: a scan of
 * the 4,096 words took ~80% of this file's time in a profile of YCSB c
 * offloaded over tcp (~6% of the memnode's samples).  Chains of ring
 * positions (+1; 0 ends a chain) hanging from CANCEL_BUCKETS heads.
 */
#define CANCEL_BUCKETS 1024
static uint16_t cancel_head[CANCEL_BUCKETS];
static uint16_t cancel_chain[CANCELLED_MAX];
static uint64_t n_offloads;		/* atomic counters */
static uint64_t n_busy;
static uint64_t n_fallbacks;
static uint64_t busy_ns;

/* per worker thread: the in-process client and the connection it speaks for */
static __thread dm_client *tl_client;
static __thread mn_conn_info tl_ci;
static __thread mn_counters *tl_ctr;
static __thread uint8_t *tl_rep;

/*
 * What a worker thread made for offloads goes with the thread: a key whose
 * destructor runs at the thread's exit (the memnode joins its workers at
 * shutdown), so no memory stays behind that a leak checker would report.
 */
static pthread_key_t tl_key;
static pthread_once_t tl_key_once = PTHREAD_ONCE_INIT;

static void
thread_done(void *unused)
{
	(void) unused;
	if (tl_client)
		dm_client_destroy(tl_client);
	tl_client = NULL;
	free(tl_rep);
	tl_rep = NULL;
}

static void
make_key(void)
{
	(void) pthread_key_create(&tl_key, thread_done);
}

static mn_frame_exec frame_exec;

/*
 * A test hook: DMINDEX_MEMNODE_TEST_WRITE_DELAY_MS in the memnode's
 * environment makes every offloaded write wait that long once it has
 * started (its token registered) and before it runs, so a test can drain a
 * write that is still running when its client gives up (test_offload
 * "drain running").  Unset, as in any real deployment, it costs nothing.
 */
static int	test_write_delay_ms;

void
mn_offload_init(int nslots, mn_frame_exec exec)
{
	const char *d = getenv("DMINDEX_MEMNODE_TEST_WRITE_DELAY_MS");

	slots = nslots < SLOTS_MAX ? nslots : SLOTS_MAX;
	frame_exec = exec;
	if (d != NULL && atoi(d) > 0)
	{
		test_write_delay_ms = atoi(d);
		mn_log(LOG_WARN, "test hook: every offloaded write waits %d ms before it runs", test_write_delay_ms);
	}
}

static uint32_t
cancel_bucket(uint64_t token)
{
	return (uint32_t) ((token * UINT64_C(0x9E3779B97F4A7C15)) >> 54) % CANCEL_BUCKETS;
}

/* Under tok_lock, as the two below. */
static int
is_cancelled(uint64_t token)
{
	for (uint32_t p = cancel_head[cancel_bucket(token)]; p != 0; p = cancel_chain[p - 1])
		if (cancelled[p - 1] == token)
			return 1;
	return 0;
}

/* Put token (not on the list) on it, in place of the oldest when full. */
static void
cancel_add(uint64_t token)
{
	uint32_t	pos = cancelled_next;

	if (cancelled[pos] != 0)
	{
		/* unchain the oldest token, which this one replaces */
		uint16_t   *link = &cancel_head[cancel_bucket(cancelled[pos])];

		while (*link != 0 && *link != pos + 1)
			link = &cancel_chain[*link - 1];
		if (*link != 0)
			*link = cancel_chain[pos];
	}
	cancelled[pos] = token;
	cancel_chain[pos] = cancel_head[cancel_bucket(token)];
	cancel_head[cancel_bucket(token)] = (uint16_t) (pos + 1);
	cancelled_next = (pos + 1) % CANCELLED_MAX;
}

/*
 * Register a starting offload under its token; 0 if it was drained (it
 * must not run).  Under the same lock as DRAIN, so a drain that answered
 * "0 running" is never followed by the start of one of its tokens.
 */
static int
token_start(uint64_t token)
{
	int			ok = 1;

	if (token == 0)
		return 1;
	pthread_mutex_lock(&tok_lock);
	if (is_cancelled(token))
		ok = 0;
	else
		for (int i = 0; i < slots; i++)
			if (running_tok[i] == 0)
			{
				running_tok[i] = token;
				break;
			}
	pthread_mutex_unlock(&tok_lock);
	return ok;
}

static void
token_end(uint64_t token)
{
	if (token == 0)
		return;
	pthread_mutex_lock(&tok_lock);
	for (int i = 0; i < slots; i++)
		if (running_tok[i] == token)
		{
			running_tok[i] = 0;
			break;
		}
	pthread_mutex_unlock(&tok_lock);
}

/* DM_RPC_OFF_DRAIN: cancel the tokens; how many of them run now. */
static int
drain(const uint8_t *args, uint8_t *rep, uint32_t *replen)
{
	dm_rpc_off_drain_req req;
	dm_rpc_off_drain_rep dr = {0};

	memcpy(&req, args, sizeof(req));
	if (req.n == 0 || req.n > DM_OFF_DRAIN_MAX)
		return DM_ERR_INVALID;
	pthread_mutex_lock(&tok_lock);
	for (uint32_t k = 0; k < req.n; k++)
	{
		if (req.tokens[k] == 0)
			continue;
		if (!is_cancelled(req.tokens[k]))
			cancel_add(req.tokens[k]);
		for (int i = 0; i < slots; i++)
			if (running_tok[i] == req.tokens[k])
				dr.running++;
	}
	pthread_mutex_unlock(&tok_lock);
	memcpy(rep, &dr, sizeof(dr));
	*replen = sizeof(dr);
	return DM_OK;
}

int
mn_offload_slots(void)
{
	return slots;
}

static int
local_exec(void *arg, const uint8_t *frame, uint8_t **out, uint32_t *out_len, uint32_t *out_cap)
{
	(void) arg;
	return frame_exec(&tl_ci, tl_ctr, frame, out, out_len, out_cap);
}

static dm_client *
client(const mn_conn_info *ci)
{
	dm_node_info ni;

	/* a connection broken by an error stays broken: start a new one */
	if (tl_client && (dm_client_node_info(tl_client, 0, &ni) != DM_OK || ni.status != DM_OK))
	{
		dm_client_destroy(tl_client);
		tl_client = NULL;
	}
	if (tl_client == NULL)
		tl_client = dm_client_create_local(ci->mns->region.node_id, ci->mns->region.size,
										   ci->mns->region.sb->chunk_size, local_exec, NULL);
	return tl_client;
}

/* The tree must be one of the caller's (with authentication). */
static int
own_tree(const mn_conn_info *ci, uint64_t tree_id)
{
	uint64_t	ident;
	int			rc = DM_OK;

	if (ci->ident == 0)
		return DM_OK;
	pthread_mutex_lock(&ci->mns->region_lock);
	if (dm_region_tree_owner(&ci->mns->region, tree_id, &ident) != DM_OK || ident != ci->ident)
		rc = DM_ERR_PERMISSION;
	pthread_mutex_unlock(&ci->mns->region_lock);
	return rc;
}

int
mn_offload_rpc(const mn_conn_info *ci, mn_counters *ctr, uint32_t code, const uint8_t *args,
			   const uint8_t **rep, uint32_t *replen)
{
	dm_rpc_off_req req;
	dm_rpc_off_rep *orep;
	dm_tree    *t = NULL;
	dm_client  *c;
	uint64_t	t0;
	int			rc,
				now;

	*replen = 0;
	if (tl_rep == NULL)
	{
		if ((tl_rep = malloc(sizeof(dm_rpc_off_rep) + DM_OFF_MAX_ENTRIES * sizeof(dm_entry_wire))) == NULL)
			return DM_ERR_NOMEM;
		(void) pthread_once(&tl_key_once, make_key);
		(void) pthread_setspecific(tl_key, tl_rep);	/* non-NULL: the destructor runs */
	}
	*rep = tl_rep;
	if (code == DM_RPC_OFF_DRAIN)
		return drain(args, tl_rep, replen);
	if (code == DM_RPC_OFF_LOAD)
	{
		dm_rpc_off_load_rep lr = {
			.slots = (uint32_t) slots,
			.inflight = (uint32_t) __atomic_load_n(&inflight, __ATOMIC_RELAXED),
			.offloads = __atomic_load_n(&n_offloads, __ATOMIC_RELAXED),
			.declined_busy = __atomic_load_n(&n_busy, __ATOMIC_RELAXED),
			.fallbacks = __atomic_load_n(&n_fallbacks, __ATOMIC_RELAXED),
			.busy_ns = __atomic_load_n(&busy_ns, __ATOMIC_RELAXED),
			.uptime_ns = mn_mono_ns() - ci->mns->start_mono_ns};

		memcpy(tl_rep, &lr, sizeof(lr));
		*replen = sizeof(lr);
		return DM_OK;
	}
	memcpy(&req, args, sizeof(req));
	if ((rc = own_tree(ci, req.tree_id)) != DM_OK)
		return rc;
	now = __atomic_add_fetch(&inflight, 1, __ATOMIC_ACQ_REL);
	if (now > slots)
	{
		__atomic_sub_fetch(&inflight, 1, __ATOMIC_ACQ_REL);
		__atomic_add_fetch(&n_busy, 1, __ATOMIC_RELAXED);
		return DM_ERR_FALLBACK;
	}
	if (!token_start(req.token))
	{
		/* its sender drained it: it gave up and must not be surprised by it */
		__atomic_sub_fetch(&inflight, 1, __ATOMIC_ACQ_REL);
		__atomic_add_fetch(&n_fallbacks, 1, __ATOMIC_RELAXED);
		return DM_ERR_FALLBACK;
	}
	if (test_write_delay_ms > 0 && (code == DM_RPC_OFF_INSERT || code == DM_RPC_OFF_DELETE))
	{
		struct timespec ts = {test_write_delay_ms / 1000, (long) (test_write_delay_ms % 1000) * 1000000L};

		nanosleep(&ts, NULL);
	}
	t0 = mn_mono_ns();
	tl_ci = *ci;
	tl_ci.close_after_reply = 0;
	tl_ctr = ctr;
	orep = (dm_rpc_off_rep *) tl_rep;
	if ((c = client(ci)) == NULL)
		rc = DM_ERR_NOMEM;
	else if ((rc = dm_tree_exec_open(c, ci->mns->region.node_id, &req, &t)) == DM_OK)
	{
		rc = dm_tree_exec_run(t, code, &req, orep, (dm_entry_wire *) (tl_rep + sizeof(*orep)));
		if (rc != DM_OK && rc != DM_ERR_FALLBACK && rc != DM_ERR_FENCED)
			mn_log(LOG_DEBUG, "offloaded request %u from %s failed: %s (%s)", code, ci->peer,
				   dm_strerror(rc), dm_tree_exec_error(t));
		dm_tree_close(t);
	}
	orep->inflight = (uint32_t) __atomic_load_n(&inflight, __ATOMIC_RELAXED);
	orep->slots = (uint32_t) slots;
	orep->exec_ns = mn_mono_ns() - t0;
	__atomic_add_fetch(&busy_ns, orep->exec_ns, __ATOMIC_RELAXED);
	token_end(req.token);
	__atomic_sub_fetch(&inflight, 1, __ATOMIC_ACQ_REL);
	if (rc == DM_OK)
	{
		__atomic_add_fetch(&n_offloads, 1, __ATOMIC_RELAXED);
		*replen = (uint32_t) (sizeof(*orep) + orep->count * sizeof(dm_entry_wire));
	}
	else if (rc == DM_ERR_FALLBACK)
		__atomic_add_fetch(&n_fallbacks, 1, __ATOMIC_RELAXED);
	return rc;
}
