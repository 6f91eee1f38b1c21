/*
 * fuzz_batch.c — libFuzzer target: batch validation under tenant isolation.
 * The input is the body of one BATCH from tenant-a's authenticated
 * connection (addresses are folded into the small region so that the
 * fuzzer hits the catalog, the chunk table, tenant-b's chunk and its own
 * often).  Checked: whatever is accepted lies in tenant-a's memory (or is
 * a READ of the superblock), a rejected batch changes nothing, and
 * tenant-b's chunk and catalog entry are never changed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dm_auth.h"
#include "fuzz_memnode.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int	ready;
	static uint64_t frame[(DM_FRAME_MAX + 7) / 8];
	static uint8_t before[4 << 20];
	mn_conn_info ci;
	uint8_t    *out = NULL;
	uint32_t	out_len = 0,
				out_cap = 0;
	dm_batch_hdr bh;
	dm_wire_op *ops;
	uint32_t	blen;

	if (!ready)
	{
		fz_init(1);
		ready = 1;
	}
	if (size < sizeof(dm_batch_hdr) || size > sizeof(frame) - DM_HDR_SIZE)
		return 0;
	fz_reset();
	blen = (uint32_t) ((size + 7) & ~(size_t) 7);
	memset(frame, 0, DM_HDR_SIZE + blen);
	dm_hdr_init((dm_frame_hdr *) frame, DM_MSG_BATCH, DM_HDR_SIZE + blen, 9);
	memcpy((uint8_t *) frame + DM_HDR_SIZE, data, size);
	memcpy(&bh, (uint8_t *) frame + DM_HDR_SIZE, sizeof(bh));
	ops = (dm_wire_op *) ((uint8_t *) frame + DM_HDR_SIZE + sizeof(bh));
	/* fold addresses into the region: node 1, offset modulo a bit more than its size */
	for (uint32_t i = 0; i < bh.nops && sizeof(bh) + (uint64_t) (i + 1) * sizeof(dm_wire_op) <= blen; i++)
		if (!(ops[i].addr & DM_GADDR_RESERVED_BIT))
			ops[i].addr = dm_gaddr_make(1, dm_gaddr_offset(ops[i].addr) % (mn.region.size + 4096));

	memset(&ci, 0, sizeof(ci));
	ci.mns = &mn;
	snprintf(ci.peer, sizeof(ci.peer), "fuzz");
	snprintf(ci.identity, sizeof(ci.identity), "tenant-a");
	ci.handshaken = 1;
	ci.ident = dm_auth_ident_tag("tenant-a");
	memcpy(before, mn.region.base, mn.region.size);

	if (mn_exec_frame(&ci, &mn.worker_counters[0], (const uint8_t *) frame, &out, &out_len, &out_cap) == 0)
	{
		dm_frame_hdr rh;

		memcpy(&rh, out, sizeof(rh));
		if (rh.status != DM_OK)
			FZ_ASSERT(memcmp(before, mn.region.base, mn.region.size) == 0, "a rejected batch changed memory");
		else
		{
			/* accepted: every op was within tenant-a's memory (or reads the superblock) */
			for (uint32_t i = 0; i < bh.nops; i++)
				FZ_ASSERT(dm_region_check_owner(&mn.region, dm_gaddr_offset(ops[i].addr), ops[i].len,
												ci.ident) == DM_OK,
						  "an op outside tenant-a's memory was accepted");
		}
	}
	else
		FZ_ASSERT(memcmp(before, mn.region.base, mn.region.size) == 0, "a malformed batch changed memory");
	FZ_ASSERT(fz_b_intact(), "tenant-b's memory changed");
	free(out);
	return 0;
}
