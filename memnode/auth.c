/*
 * auth.c — the memnode's side of authentication and tenant isolation
 * (memnodes started with --auth-file; protocol in src/dm/dm_auth.h and
 * dm_proto.h).
 *
 * Authentication: a HELLO names an identity and brings a client nonce; we
 * answer with a fresh server nonce; the AUTH frame must carry the client's
 * HMAC over both; the AUTH reply carries ours, so the client knows we have
 * the secret too.  Any failure is answered with DM_ERR_AUTH, the connection
 * closes after the reply, and no op runs on it (exec.c accepts nothing but
 * HELLO and AUTH before).  An unknown identity gets a nonce like a known
 * one and fails at AUTH, so the answer does not tell which identities exist.
 * Failures are counted (auth_failures in STATS) and logged rate-limited.
 *
 * Isolation: an authenticated connection may touch only memory of its own
 * trees (dm_region_check_owner) and name only its own trees in RPCs
 * (exec.c).  The check reads chunk owners without the allocator's lock, so
 * a chunk freed by one identity must not be handed to another while a
 * batch checked against the old owner is still executing: every worker
 * holds its own batch lock from a batch's check to its last op, and
 * whoever frees memory (under the allocator's lock, so nothing can be
 * allocated meanwhile) takes and drops every worker's batch lock once
 * (mn_auth_quiesce).  Batches never wait for each other: each worker's lock
 * is its own, uncontended except during a free.
 */
#include <stdlib.h>
#include <string.h>

#include "memnode.h"

static dm_auth_entry *entries;
static int	nentries;
static pthread_mutex_t *batch_locks;	/* one per worker */
static int	nbatch_locks;

int
mn_auth_load(const char *path)
{
	char		err[512];

	if (dm_auth_file_load(path, &entries, &nentries, err, sizeof(err)) != DM_OK)
	{
		mn_log(LOG_ERROR, "%s", err);
		return -1;
	}
	mn_log(LOG_INFO, "authentication required: %d identit%s in \"%s\"", nentries,
		   nentries == 1 ? "y" : "ies", path);
	return 0;
}

int
mn_auth_enabled(void)
{
	return entries != NULL;
}

int
mn_auth_start_workers(int nworkers)
{
	if (!mn_auth_enabled())
		return 0;
	if ((batch_locks = calloc((size_t) nworkers, sizeof(*batch_locks))) == NULL)
		return -1;
	for (int i = 0; i < nworkers; i++)
		pthread_mutex_init(&batch_locks[i], NULL);
	nbatch_locks = nworkers;
	return 0;
}

void
mn_auth_failed(mn_conn_info *ci, mn_counters *ctr, const char *why)
{
	ctr->auth_failures++;
	/* identity is shown only once validated: it could be any bytes */
	mn_log_limited("authentication failed for %s%s%s from %s: %s",
				   ci->identity[0] ? "identity \"" : "a client without identity",
				   ci->identity, ci->identity[0] ? "\"" : "", ci->peer, why);
	ci->auth_pending = 0;
	ci->ident = 0;
	ci->close_after_reply = 1;
}

static const dm_auth_entry *
lookup(const char *identity)
{
	for (int i = 0; i < nentries; i++)
		if (strcmp(entries[i].identity, identity) == 0)
			return &entries[i];
	return NULL;
}

int
mn_auth_hello(mn_conn_info *ci, mn_counters *ctr, const dm_hello_req *req, dm_hello_rep *rep)
{
	if (!mn_auth_enabled())
		return DM_OK;			/* the caller fills in the real reply */
	if (memchr(req->identity, '\0', sizeof(req->identity)) == NULL || !dm_auth_identity_valid(req->identity))
	{
		mn_auth_failed(ci, ctr, req->identity[0] == '\0' ? "no credentials (this memnode requires authentication)"
					   : "malformed identity");
		return DM_ERR_AUTH;
	}
	memcpy(ci->identity, req->identity, sizeof(ci->identity));
	memcpy(ci->client_nonce, req->client_nonce, sizeof(ci->client_nonce));
	if (dm_auth_random(ci->server_nonce, sizeof(ci->server_nonce)) != DM_OK)
	{
		mn_auth_failed(ci, ctr, "no random bytes for a challenge");
		return DM_ERR_AUTH;
	}
	memcpy(rep->server_nonce, ci->server_nonce, sizeof(rep->server_nonce));
	rep->flags = DM_HELLO_REP_AUTH;
	ci->auth_pending = 1;
	return DM_OK;
}

int
mn_auth_verify(mn_conn_info *ci, mn_counters *ctr, const dm_auth_req *req, dm_auth_rep *rep)
{
	const dm_auth_entry *e = lookup(ci->identity);
	uint8_t		want[DM_AUTH_MAC_LEN];

	if (!ci->auth_pending)
	{
		mn_auth_failed(ci, ctr, "AUTH without a challenge");
		return DM_ERR_AUTH;
	}
	ci->auth_pending = 0;		/* one attempt per challenge */
	if (e == NULL)
	{
		mn_auth_failed(ci, ctr, "unknown identity");
		return DM_ERR_AUTH;
	}
	if (dm_auth_mac(e->secret, e->secret_len, DM_AUTH_ROLE_CLIENT, ci->identity,
					ci->client_nonce, ci->server_nonce, want) != DM_OK ||
		!dm_auth_mac_equal(want, req->mac))
	{
		mn_auth_failed(ci, ctr, "wrong proof (secret does not match)");
		return DM_ERR_AUTH;
	}
	if (dm_auth_mac(e->secret, e->secret_len, DM_AUTH_ROLE_SERVER, ci->identity,
					ci->client_nonce, ci->server_nonce, rep->mac) != DM_OK)
	{
		mn_auth_failed(ci, ctr, "cannot compute our proof");
		return DM_ERR_AUTH;
	}
	ci->ident = e->tag;
	mn_log(LOG_DEBUG, "client %s authenticated as \"%s\"", ci->peer, ci->identity);
	return DM_OK;
}

void
mn_auth_batch_begin(const mn_conn_info *ci)
{
	if (batch_locks != NULL)
		pthread_mutex_lock(&batch_locks[ci->worker]);
}

void
mn_auth_batch_end(const mn_conn_info *ci)
{
	if (batch_locks != NULL)
		pthread_mutex_unlock(&batch_locks[ci->worker]);
}

void
mn_auth_quiesce(void)
{
	for (int i = 0; i < nbatch_locks; i++)
	{
		pthread_mutex_lock(&batch_locks[i]);
		pthread_mutex_unlock(&batch_locks[i]);
	}
}
