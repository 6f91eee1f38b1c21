/*
 * test_transport_sizes.c — one-sided operations of every size class over
 * both transports: single READ/WRITE from 1 byte to 1 MiB (aligned and
 * not), batches from 1 to DM_BATCH_MAX_OPS operations, replies close to the
 * frame limit, and the limits themselves (DM_ERR_TOOBIG, nothing applied,
 * the same on both transports).
 * Written after a client bug lost every reply larger than its first 4 KiB
 * receive buffer: sizes across buffer-growth boundaries must round-trip.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dm_client.h"
#include "testutil.h"

static void
fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t) (seed * 131 + i * 7 + (i >> 8));
}

static void
run(const char *label, memnode_proc *mp, int backend)
{
	dm_client_opts o = {.backend = backend, .op_timeout_ms = 5000};
	dm_client  *c = dm_client_create(&o);
	uint16_t	id;
	dm_gaddr	chunk;
	uint64_t	csize;
	uint8_t    *src = malloc(4u << 20), *dst = malloc(4u << 20);
	int			rc, bad;

	CHECK_STATUS(dm_client_connect(c, mp->addr, &id), DM_OK, "%s: connect", label);
	rc = dm_chunk_alloc(c, id, 77, &chunk, &csize);
	CHECK(rc == DM_OK && csize == (16u << 20), "%s: a 16 MiB chunk (%s)", label, dm_strerror(rc));

	/* single ops across every power of two and its neighbours, at odd offsets too */
	{
		int			failures = 0, cases = 0;

		for (uint32_t len = 1; len <= (1u << 20); len *= 2)
			for (int d = -1; d <= 1; d++)
				for (uint32_t off = 0; off < 16; off += 5)
				{
					uint32_t	l = len + (uint32_t) d;

					if (l == 0 || l + off > csize)
						continue;
					fill(src, l, l + off);
					memset(dst, 0, l);
					cases++;
					if (dm_write(c, chunk + off, src, l) != DM_OK ||
						dm_read(c, chunk + off, dst, l) != DM_OK || memcmp(src, dst, l) != 0)
					{
						if (failures++ < 3)
							tap_diag("%s: len %u off %u failed: %s", label, l, off, dm_client_error(c));
						dm_client_reconnect(c, id);
					}
				}
		CHECK(failures == 0, "%s: %d single READ/WRITE size cases (1 B .. 1 MiB, odd offsets) round-trip", label, cases);
	}

	/* batches of n reads of 4 KiB: replies from 4 KiB to 16 MiB */
	{
		int			failures = 0;
		static dm_op ops[DM_BATCH_MAX_OPS];

		for (int n = 1; n <= 1024; n *= 2)
		{
			uint32_t	len = 4096;

			if ((uint64_t) n * len > csize)
				break;
			fill(src, (size_t) n * len, (unsigned) n);
			dm_write(c, chunk, src, (uint32_t) ((size_t) n * len > (1u << 20) ? (1u << 20) : (size_t) n * len));
			for (size_t w = 0; w < (size_t) n * len; w += 1u << 20)
				dm_write(c, chunk + w, src + w, (uint32_t) ((size_t) n * len - w > (1u << 20) ? (1u << 20) : (size_t) n * len - w));
			for (int i = 0; i < n; i++)
				dm_op_read(&ops[i], chunk + (uint64_t) i * len, dst + (size_t) i * len, len);
			memset(dst, 0, (size_t) n * len);
			rc = dm_post(c, ops, n, NULL);
			if (rc != DM_OK || memcmp(src, dst, (size_t) n * len) != 0)
			{
				failures++;
				tap_diag("%s: batch of %d x 4 KiB reads: %s", label, n, rc ? dm_client_error(c) : "data differs");
				dm_client_reconnect(c, id);
			}
		}
		CHECK(failures == 0, "%s: batches of 1..1024 x 4 KiB reads (replies up to 4 MiB) return the data", label);

		/* the largest batch: DM_BATCH_MAX_OPS atomics, one round trip */
		{
			dm_counters before, after;
			uint64_t	zero[DM_BATCH_MAX_OPS] = {0};
			int			ok = 1;

			dm_write(c, chunk, zero, sizeof(zero));
			for (int i = 0; i < DM_BATCH_MAX_OPS; i++)
				dm_op_atomic(&ops[i], DM_OP_FAA, chunk + (uint64_t) (i % 64) * 8, 1, 0);
			dm_client_counters(c, -1, &before);
			rc = dm_post(c, ops, DM_BATCH_MAX_OPS, NULL);
			dm_client_counters(c, -1, &after);
			for (int i = 0; i < DM_BATCH_MAX_OPS; i++)
				ok &= ops[i].result == (uint64_t) (i / 64);
			CHECK(rc == DM_OK && ok && after.round_trips - before.round_trips == 1,
				  "%s: %d FAAs in one batch: one round trip, results in order", label, DM_BATCH_MAX_OPS);
		}
	}

	/* limits: too many ops, or a reply over the frame limit, are refused with nothing applied */
	{
		static dm_op ops[DM_BATCH_MAX_OPS + 1];
		uint64_t	marker = 0x1234, v = 0;

		dm_write(c, chunk, &marker, 8);
		for (int i = 0; i <= DM_BATCH_MAX_OPS; i++)
			dm_op_atomic(&ops[i], DM_OP_FAA, chunk, 1, 0);
		rc = dm_post(c, ops, DM_BATCH_MAX_OPS + 1, NULL);
		dm_read(c, chunk, &v, 8);
		CHECK(rc == DM_ERR_TOOBIG && v == marker, "%s: %d ops in one batch refused (DM_ERR_TOOBIG), nothing applied (got %s)",
			  label, DM_BATCH_MAX_OPS + 1, dm_strerror(rc));

		dm_write(c, chunk, &marker, 8);
		for (int i = 0; i < 5; i++)
			dm_op_read(&ops[i], chunk, dst, 4u << 20);
		dm_op_atomic(&ops[5], DM_OP_FAA, chunk, 1, 0);
		rc = dm_post(c, ops, 6, &bad);
		dm_read(c, chunk, &v, 8);
		CHECK(rc == DM_ERR_TOOBIG && v == marker, "%s: a batch whose reply exceeds %u bytes is refused, nothing applied",
			  label, DM_FRAME_MAX);
		CHECK_STATUS(dm_ping(c, id), DM_OK, "%s: connection still usable after refused batches", label);
	}
	free(src);
	free(dst);
	dm_client_destroy(c);
}

int
main(void)
{
	memnode_proc mp;
	const char *const args[] = {"--shm", "--size", "128M", "--chunk-size", "16M", NULL};

	if (memnode_start(&mp, 0, args) != 0)
	{
		CHECK(0, "memnode starts");
		return tap_done();
	}
	if (test_backend_wanted(DM_BACKEND_TCP))
	{
		run("tcp", &mp, DM_BACKEND_TCP);
		run("shm", &mp, DM_BACKEND_SHM);
	}
	else
		run("ucx", &mp, DM_BACKEND_UCX);
	CHECK(memnode_stop(&mp, SIGTERM) == 0, "memnode exits cleanly");
	if (test_ucx())
	{
		/*
		 * A region UCX allocates (no --shm): over shared memory the client
		 * runs ops on UCX's mapping of it (ucp_rkey_ptr), over tcp the same
		 * gets and puts as above.  The same sizes and limits either way.
		 */
		const char *const args2[] = {"--size", "128M", "--chunk-size", "16M", NULL};

		if (CHECK(memnode_start(&mp, 0, args2) == 0, "a memnode without --shm starts"))
		{
			run("ucx, region allocated by UCX", &mp, DM_BACKEND_UCX);
			CHECK(memnode_stop(&mp, SIGTERM) == 0, "memnode exits cleanly");
		}
	}
	return tap_done();
}
