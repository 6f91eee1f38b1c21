/*
 * dm_claim.h — instance claims with a lease (DESIGN.md §7).
 *
 * A compute instance id (dmindex.instance_id in PostgreSQL) names one
 * server of a cluster in the partition maps of its trees.  Two running
 * servers with the same id would both treat the same nodes as theirs, so
 * a server claims its id on a memnode before it uses a tree there, and
 * keeps the claim alive by renewing it.  A claim is a catalog entry of the
 * memnode named "dmindex-claim <sysid> <instance>" whose root word is
 *
 *     holder (high 32 bits, never 0) | lease end in Unix seconds (low 32)
 *
 * changed only by CAS, so taking, renewing, taking over and releasing are
 * each one atomic step.  The holder is a 32-bit mix of the server's
 * identity (`server`: whatever the caller makes unique per server and
 * stable across its restarts, so a restarted server gets its claim back at
 * once); meta word 0 keeps the 64-bit token of the run that wrote it last,
 * for diagnostics.  Times come from the callers' clocks, which must agree
 * within a fraction of the lease.
 */
#ifndef DM_CLAIM_H
#define DM_CLAIM_H

#include <stdint.h>

#include "dm_client.h"

/* Catalog name prefix of claim entries (dm_tree_name kind DM_TREE_NAMED). */
#define DM_CLAIM_PREFIX "dmindex-claim "

typedef struct dm_claim_state
{
	uint32_t	holder;			/* 0: nobody holds it */
	uint32_t	lease_end_s;	/* Unix seconds */
	uint64_t	run_token;		/* the token of the holder's run that wrote it last */
} dm_claim_state;

/* The 32-bit holder value of a 64-bit server identity (never 0). */
extern uint32_t dm_claim_holder(uint64_t server);

/*
 * Take or renew the claim of `instance` of cluster `sysid` on memnode
 * `node` for server `server` (run `run_token`), until now_s + lease_s.
 * Free, expired (lease end <= now_s) and own claims are taken.  DM_OK on success; DM_ERR_EXISTS when
 * another holder's lease is still running (*state, which may be NULL,
 * tells whose and until when); a transport status otherwise.
 */
extern int	dm_claim_take(dm_client *c, uint16_t node, uint64_t sysid, uint32_t instance,
						  uint64_t server, uint64_t run_token, uint32_t now_s, uint32_t lease_s,
						  dm_claim_state *state);

/* Give the claim up if server holds it (DM_OK also when it does not). */
extern int	dm_claim_release(dm_client *c, uint16_t node, uint64_t sysid, uint32_t instance,
							 uint64_t server);

/* Read the claim (holder 0 when there is none). */
extern int	dm_claim_get(dm_client *c, uint16_t node, uint64_t sysid, uint32_t instance,
						 dm_claim_state *state);

/* Whether a catalog name is a claim's (so that tree counts can leave it out). */
extern int	dm_claim_is_claim_name(const char *name);

#endif							/* DM_CLAIM_H */
