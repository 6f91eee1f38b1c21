/*
 * fuzz_frame.c — libFuzzer target: the frame decoder.  The input is a byte
 * stream of frames on one connection of a memnode without authentication
 * (its first byte picks whether the connection has shaken hands already);
 * every complete frame goes through dm_hdr_check and mn_exec_frame (HELLO,
 * BATCH with dm_batch_decode, RPC with dm_rpc_request_size), as server.c
 * would.  Checked: no crash or sanitizer report, every reply a well-formed
 * frame answering its request, and dm_batch_decode's result agreeing with
 * dm_batch_request_size.
 */
#include <stdio.h>
#include <string.h>

#include "fuzz_memnode.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int	ready;
	mn_conn_info ci;
	static uint64_t body[(DM_FRAME_MAX + 7) / 8];

	if (!ready)
	{
		fz_init(0);
		ready = 1;
	}
	if (size < 1)
		return 0;
	fz_reset();
	memset(&ci, 0, sizeof(ci));
	ci.mns = &mn;
	snprintf(ci.peer, sizeof(ci.peer), "fuzz");
	ci.handshaken = data[0] & 1;
	ci.tear = 0;

	/* the decoder alone, on the rest taken as one BATCH body */
	if (size - 1 <= sizeof(body) && ((size - 1) & 7) == 0)
	{
		const dm_wire_op *ops;
		const uint8_t *payload;
		uint32_t	nops,
					bad;

		memcpy(body, data + 1, size - 1);
		if (dm_batch_decode((const uint8_t *) body, (uint32_t) (size - 1), &ops, &nops, &payload, &bad) == DM_OK)
			FZ_ASSERT(dm_batch_request_size(ops, nops) == DM_HDR_SIZE + (size - 1) &&
					  payload <= (const uint8_t *) body + (size - 1), "decoded batch size disagrees");
	}
	fz_run_stream(&ci, &mn.worker_counters[0], data + 1, size - 1, 0);
	return 0;
}
