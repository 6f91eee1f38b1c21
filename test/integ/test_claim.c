/*
 * test_claim.c — instance claims with a lease (src/dm/dm_claim.c) against
 * a real memnode over tcp and shm: two clients standing for two servers
 * (different server ids) claim one instance id; the second is refused while
 * the first's lease runs and told whose lease it is and until when; the
 * holder renews; after expiry the other server takes it over and the old
 * holder can no longer renew; the same server restarted (same id, a new
 * run token) gets its live claim back at once; release frees it at once;
 * ids and clusters are independent; many processes racing for one free
 * claim produce exactly one winner.  Times are passed in, so expiry needs
 * no sleeping.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dm_claim.h"
#include "dm_client.h"
#include "testutil.h"

#define SYSID UINT64_C(7312345678901234567)
#define RACERS 6

static dm_client *
client_for(const memnode_proc *mn, int backend, uint16_t *node)
{
	dm_client  *c = test_client_connect(backend, 0, 5000, "test_claim", mn->addr, NULL);
	dm_node_info ni;

	/* the memnode's id, for the claim calls */
	if (c && dm_client_node_info(c, 0, &ni) == DM_OK)
		*node = ni.node_id;
	return c;
}

static void
run(const char *tag, int backend, const memnode_proc *mn)
{
	uint16_t	node = 0;
	dm_client  *a = client_for(mn, backend, &node),
			   *b = client_for(mn, backend, &node);
	const uint64_t ta = UINT64_C(0x1111222233334444),
				tb = UINT64_C(0x5555666677778888),
				tc = UINT64_C(0x9999aaaabbbbcccc);
	const uint32_t t0 = 1700000000,
				lease = 30;
	dm_claim_state st;
	int			rc;

	if (!CHECK(a && b, "%s: two clients connected", tag))
		return;
	CHECK(dm_claim_holder(ta) != dm_claim_holder(tb) && dm_claim_holder(0) != 0,
		  "%s: holders of distinct tokens differ and are never 0", tag);

	CHECK_STATUS(dm_claim_get(a, node, SYSID, 3, &st), DM_OK, "%s: get before any claim", tag);
	CHECK(st.holder == 0, "%s: nobody holds instance 3 yet", tag);
	CHECK_STATUS(dm_claim_release(a, node, SYSID, 3, ta), DM_OK, "%s: releasing a claim never made is fine", tag);

	CHECK_STATUS(dm_claim_take(a, node, SYSID, 3, ta, ta ^ 0xfeed, t0, lease, &st), DM_OK, "%s: A claims instance 3", tag);
	CHECK(st.holder == dm_claim_holder(ta) && st.lease_end_s == t0 + lease, "%s: A's lease runs to t0+30", tag);

	rc = dm_claim_take(b, node, SYSID, 3, tb, tb ^ 0xfeed, t0 + 1, lease, &st);
	CHECK_STATUS(rc, DM_ERR_EXISTS, "%s: B is refused instance 3 while A's lease runs", tag);
	CHECK(st.holder == dm_claim_holder(ta) && st.lease_end_s == t0 + lease && st.run_token == (ta ^ 0xfeed),
		  "%s: the refusal names A's token and lease end (holder %08x end %u)", tag, st.holder, st.lease_end_s);

	CHECK_STATUS(dm_claim_take(b, node, SYSID, 4, tb, tb ^ 0xfeed, t0 + 1, lease, NULL), DM_OK,
				 "%s: B claims instance 4 meanwhile", tag);
	CHECK_STATUS(dm_claim_take(b, node, SYSID + 1, 3, tb, tb ^ 0xfeed, t0 + 1, lease, NULL), DM_OK,
				 "%s: instance 3 of another cluster is independent", tag);

	/* A renews at t0+20: its lease now ends at t0+50 */
	CHECK_STATUS(dm_claim_take(a, node, SYSID, 3, ta, ta ^ 0xfeed, t0 + 20, lease, &st), DM_OK, "%s: A renews", tag);
	CHECK(st.lease_end_s == t0 + 50, "%s: renewed to t0+50", tag);
	CHECK_STATUS(dm_claim_take(b, node, SYSID, 3, tb, tb ^ 0xfeed, t0 + 35, lease, NULL), DM_ERR_EXISTS,
				 "%s: B still refused at t0+35 (after the first lease would have ended)", tag);
	CHECK_STATUS(dm_claim_take(b, node, SYSID, 3, tb, tb ^ 0xfeed, t0 + 49, lease, NULL), DM_ERR_EXISTS,
				 "%s: B refused one second before the end", tag);

	/* A stops renewing: at the lease end B (a restarted server: another token) takes over */
	CHECK_STATUS(dm_claim_take(b, node, SYSID, 3, tb, tb ^ 0xfeed, t0 + 50, lease, &st), DM_OK,
				 "%s: B takes over the expired lease at t0+50", tag);
	CHECK(st.holder == dm_claim_holder(tb) && st.lease_end_s == t0 + 80, "%s: B holds it to t0+80", tag);
	CHECK_STATUS(dm_claim_take(a, node, SYSID, 3, ta, ta ^ 0xfeed, t0 + 51, lease, &st), DM_ERR_EXISTS,
				 "%s: A, back from a stall, can no longer renew", tag);
	CHECK(st.holder == dm_claim_holder(tb), "%s: and is told B holds it", tag);
	CHECK_STATUS(dm_claim_release(a, node, SYSID, 3, ta), DM_OK, "%s: A's release of B's claim is a no-op", tag);
	CHECK_STATUS(dm_claim_get(a, node, SYSID, 3, &st), DM_OK, "%s: get", tag);
	CHECK(st.holder == dm_claim_holder(tb), "%s: B still holds it after A's release", tag);

	/* B restarts (same server id, new run token) while its lease runs: it gets the claim back */
	CHECK_STATUS(dm_claim_take(b, node, SYSID, 3, tb, UINT64_C(42), t0 + 60, lease, &st), DM_OK,
				 "%s: B restarted takes its own live claim back at once", tag);
	CHECK(st.holder == dm_claim_holder(tb) && st.lease_end_s == t0 + 90 && st.run_token == 42,
		  "%s: with the new run's token, to t0+90", tag);

	/* a clean shutdown: B releases, a new server takes it at once */
	CHECK_STATUS(dm_claim_release(b, node, SYSID, 3, tb), DM_OK, "%s: B releases", tag);
	CHECK_STATUS(dm_claim_get(a, node, SYSID, 3, &st), DM_OK, "%s: get after release", tag);
	CHECK(st.holder == 0, "%s: released claim is free", tag);
	CHECK_STATUS(dm_claim_take(a, node, SYSID, 3, tc, tc ^ 0xfeed, t0 + 52, lease, NULL), DM_OK,
				 "%s: a third server claims it right after the release, within B's lease", tag);

	/* racing processes: one winner for a free claim */
	{
		pid_t		pids[RACERS];
		int			winners = 0,
					losers = 0;

		for (int i = 0; i < RACERS; i++)
		{
			if ((pids[i] = fork()) == 0)
			{
				uint16_t	n2 = 0;
				dm_client  *c = client_for(mn, backend, &n2);
				int			r;

				if (c == NULL)
					_exit(3);
				r = dm_claim_take(c, n2, SYSID, 9, UINT64_C(0xabc0000000000000) + (uint64_t) i * 0x100000001ULL,
								  (uint64_t) i, t0, lease, NULL);
				_exit(r == DM_OK ? 0 : r == DM_ERR_EXISTS ? 1 : 2);
			}
		}
		for (int i = 0; i < RACERS; i++)
		{
			int			s;

			waitpid(pids[i], &s, 0);
			if (WIFEXITED(s) && WEXITSTATUS(s) == 0)
				winners++;
			else if (WIFEXITED(s) && WEXITSTATUS(s) == 1)
				losers++;
		}
		CHECK(winners == 1 && losers == RACERS - 1,
			  "%s: %d processes racing for a free claim: 1 winner (got %d winners, %d refused)",
			  tag, RACERS, winners, losers);
	}
	CHECK(dm_claim_is_claim_name(DM_CLAIM_PREFIX "1 2") && !dm_claim_is_claim_name("bench tree"),
		  "%s: claim names are recognised", tag);
	dm_client_destroy(a);
	dm_client_destroy(b);
}

int
main(void)
{
	const char *const args[] = {"--id", "5", "--size", "16M", "--chunk-size", "1M", "--catalog-size", "64",
	"--shm", NULL};
	static const struct
	{
		const char *tag;
		int			backend;
	}			runs[] = {{"tcp", DM_BACKEND_TCP}, {"shm", DM_BACKEND_SHM}};

	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++)
	{
		memnode_proc mn;
		int			st;

		if (!CHECK(memnode_start(&mn, 0, args) == 0, "%s: memnode started", runs[i].tag))
			continue;
		run(runs[i].tag, runs[i].backend, &mn);
		st = memnode_stop(&mn, SIGTERM);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: memnode stopped cleanly", runs[i].tag);
	}
	return tap_done();
}
