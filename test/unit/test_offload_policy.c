/*
 * test_offload_policy.c — the auto policy's latency estimates (DEX §6.1)
 * on a shared machine: a descheduled process makes a few samples
 * thousands of times the typical one, and those must not steer the
 * decision, while a real change in latency must still show.  No memnode:
 * the estimator and dm_offload_could_win are pure functions of the
 * samples.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* both headers have a now_ns(); this test uses neither */
#define now_ns offload_now_ns
#include "dm_offload_int.h"
#undef now_ns
#include "testutil.h"

/* The estimate after feeding n samples of v to it. */
static uint64_t
feed(uint64_t avg, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		ewma(&avg, v);
	return avg;
}

static void
test_outliers(void)
{
	uint64_t	avg = 0;
	uint64_t	seed = 42;
	uint64_t	worst = 0;

	ewma(&avg, 20000);
	CHECK(avg == 20000, "the first sample is the estimate (%" PRIu64 ")", avg);
	avg = feed(avg, 20000, 50);
	/* one in 16 samples descheduled for 5 ms, the others 18-22 us */
	for (int i = 0; i < 2000; i++)
	{
		uint64_t	s = (xorshift64s(&seed) & 15) == 0 ? 5000000 : 18000 + xorshift64s(&seed) % 4000;

		ewma(&avg, s);
		if (i >= 100 && avg > worst)
			worst = avg;
	}
	CHECK(worst < 40000,
		  "with 1 in 16 samples at 250x, the estimate stays below 2x the typical latency (worst %" PRIu64 " ns)",
		  worst);
	avg = feed(20000, 20000, 1);
	ewma(&avg, 100000000);
	CHECK(avg <= 20000 + 2 * 20000 / 16 + 1, "one 100 ms sample moves a 20 us estimate by at most 2/16 (%" PRIu64 ")",
		  avg);
}

static void
test_real_changes(void)
{
	uint64_t	avg = feed(0, 20000, 20);
	int			n = 0;

	while (avg < 180000 && n < 1000)
	{
		ewma(&avg, 200000);
		n++;
	}
	CHECK(n <= 48, "a real 10x rise reaches 9x within 48 samples (%d)", n);
	avg = feed(avg, 200000, 100);
	CHECK(avg > 190000 && avg <= 200000, "and settles at it (%" PRIu64 ")", avg);
	n = 0;
	while (avg > 40000 && n < 1000)
	{
		ewma(&avg, 20000);
		n++;
	}
	CHECK(n <= 40, "a fall back to 20 us: within 2x of it after 40 samples (%d)", n);
}

/* An auto handle at root level 2 past its warm-up, with estimates of these latencies. */
static void
warm_state(struct dm_offload *o, uint64_t rpc_ns, uint64_t read_ns)
{
	memset(o, 0, sizeof(*o));
	o->mode = DM_OFFLOAD_AUTO;
	o->root_level = 2;
	o->rpc_ns = feed(0, rpc_ns, 20);
	o->read_ns = feed(0, read_ns, 20);
	o->rpc_samples = o->read_samples = WARM_SAMPLES;
}

/* The decision between an RPC and the one-sided path from the root. */
static void
test_could_win(void)
{
	struct dm_offload o;
	int			far;

	warm_state(&o, 25000, 25000);	/* over tcp: an RPC ~ a round trip */
	CHECK(dm_offload_could_win(&o, 0, &far) && !far, "tcp-like: an offload from the root can win");
	/* a burst of descheduled RPCs must not flip it */
	for (int i = 0; i < 3; i++)
		ewma(&o.rpc_ns, 20000000);
	CHECK(dm_offload_could_win(&o, 0, &far) && !far,
		  "after 3 RPCs of 20 ms among 25 us ones it still can (rpc estimate %" PRIu64 " ns)", o.rpc_ns);
	/* over shm: a read is a memory access, an RPC a socket round trip */
	warm_state(&o, 60000, 300);
	CHECK(!dm_offload_could_win(&o, 0, &far) && far, "shm-like: an offload loses by far");
	/* a client descheduled inside a few one-sided operations */
	for (int i = 0; i < 3; i++)
		ewma(&o.read_ns, 10000000);
	CHECK(!dm_offload_could_win(&o, 0, &far) && far,
		  "after 3 one-sided samples of 10 ms it still loses by far (read estimate %" PRIu64 " ns)", o.read_ns);
	o.mode = DM_OFFLOAD_ALWAYS;
	CHECK(dm_offload_could_win(&o, 0, &far) && !far, "always: the model is not asked");
}

/*
 * A new handle: its first one-sided operation is slow (cold mapping and
 * buffers).  Before the warm-up the model does not decide (the policy
 * takes samples of both paths); after it, the cold sample must not make
 * an RPC look cheap.
 */
static void
test_warm_up(void)
{
	struct dm_offload o;
	int			far;

	memset(&o, 0, sizeof(o));
	o.mode = DM_OFFLOAD_AUTO;
	o.root_level = 3;
	estimate_add(&o.read_ns, &o.read_samples, 21639);	/* measured: the first insert over shm */
	estimate_add(&o.rpc_ns, &o.rpc_samples, 57000);
	CHECK(dm_offload_could_win(&o, 0, &far) && !estimates_warm(&o), "one sample each: not warm, no decision yet");
	for (int i = 0; i < WARM_SAMPLES; i++)
	{
		estimate_add(&o.read_ns, &o.read_samples, 1500);
		estimate_add(&o.rpc_ns, &o.rpc_samples, 57000);
	}
	CHECK(estimates_warm(&o) && o.read_ns == 1500, "warm: the cold first sample is gone (read estimate %" PRIu64 ")",
		  o.read_ns);
	CHECK(!dm_offload_could_win(&o, 0, &far) && far, "an RPC of 57 us loses by far to a 1.5 us read from level 3");
	for (int i = 0; i < 100; i++)
		estimate_add(&o.read_ns, &o.read_samples, 1500 + (uint64_t) (i % 7) * 100);
	CHECK(o.read_ns >= 1500 && o.read_ns <= 2100, "after the warm-up the moving average follows (%" PRIu64 ")",
		  o.read_ns);
}

/*
 * Where each path wins over tcp (bench/results/offload-cells-2026-11-27.md):
 * a lookup's leaf miss is one read against one RPC of about the same
 * latency, and stays one-sided; two reads or more, a scan over further
 * leaves and a write's three round trips go to the executor.  Over shm
 * nothing does.  A busy executor's queue counts against it.
 */
static void
test_model(void)
{
	struct dm_offload o;
	int			leaf_cap = 60;	/* about a 1 KiB leaf of 16-byte entries */
	int			far;

	warm_state(&o, 9500, 8000);	/* tcp, measured: RPC 9.5 us, read 8 us */
	CHECK(!dm_offload_model(&o, 0, dm_offload_extra_rounds(DM_RPC_OFF_LOOKUP, 64, leaf_cap), 0, 2),
		  "tcp: a lookup missing only its leaf stays one-sided");
	CHECK(dm_offload_model(&o, 1, dm_offload_extra_rounds(DM_RPC_OFF_LOOKUP, 64, leaf_cap), 0, 2),
		  "tcp: a lookup missing from level 1 is offloaded");
	CHECK(dm_offload_extra_rounds(DM_RPC_OFF_SCAN, 1, leaf_cap) == 0 &&
		  dm_offload_extra_rounds(DM_RPC_OFF_SCAN, 45, leaf_cap) == 0 &&
		  dm_offload_extra_rounds(DM_RPC_OFF_SCAN, 46, leaf_cap) == 1 &&
		  dm_offload_extra_rounds(DM_RPC_OFF_SCAN, 100, leaf_cap) == 2,
		  "a scan's further leaves at 3/4 of 60 entries each (%d %d %d %d)",
		  dm_offload_extra_rounds(DM_RPC_OFF_SCAN, 1, leaf_cap), dm_offload_extra_rounds(DM_RPC_OFF_SCAN, 45, leaf_cap),
		  dm_offload_extra_rounds(DM_RPC_OFF_SCAN, 46, leaf_cap), dm_offload_extra_rounds(DM_RPC_OFF_SCAN, 100, leaf_cap));
	CHECK(dm_offload_extra_rounds(DM_RPC_OFF_SCAN, DM_OFF_MAX_ENTRIES, 0) <= DM_TREE_MAX_LEVELS * 4,
		  "a huge scan's extra round trips are bounded");
	CHECK(!dm_offload_model(&o, 0, dm_offload_extra_rounds(DM_RPC_OFF_SCAN, 20, leaf_cap), 0, 2),
		  "tcp: a short scan from its leaf stays one-sided");
	CHECK(dm_offload_model(&o, 0, dm_offload_extra_rounds(DM_RPC_OFF_SCAN, 100, leaf_cap), 0, 2),
		  "tcp: a scan of 100 entries from its leaf (three leaves) is offloaded");
	CHECK(dm_offload_model(&o, 0, dm_offload_extra_rounds(DM_RPC_OFF_INSERT, 0, leaf_cap), 0, 2) &&
		  dm_offload_model(&o, 0, dm_offload_extra_rounds(DM_RPC_OFF_DELETE, 0, leaf_cap), 0, 2),
		  "tcp: a write missing its leaf (three round trips one-sided) is offloaded");
	CHECK(!dm_offload_model(&o, 1, 0, 4, 2), "tcp: with two offloads queued per slot, level 1 stays one-sided");
	CHECK(dm_offload_could_win(&o, 0, &far) && !far, "tcp: could win from the root");
	warm_state(&o, 60000, 1500);	/* shm */
	for (int level = 0; level < 4; level++)
		CHECK(!dm_offload_model(&o, level, dm_offload_extra_rounds(DM_RPC_OFF_INSERT, 0, leaf_cap), 0, 2) &&
			  !dm_offload_model(&o, level, dm_offload_extra_rounds(DM_RPC_OFF_SCAN, 100, leaf_cap), 0, 2),
			  "shm: neither a write nor a scan from level %d is offloaded", level);
	CHECK(!dm_offload_could_win(&o, dm_offload_extra_rounds(DM_RPC_OFF_INSERT, 0, leaf_cap), &far) && far,
		  "shm: a write loses by far even from the root");
}

int
main(void)
{
	test_model();
	test_warm_up();
	test_outliers();
	test_real_changes();
	test_could_win();
	return tap_done();
}
