/*
 * fuzz_handshake.c — libFuzzer target: the authenticating handshake.  The
 * input is a byte stream of frames on a fresh connection of a memnode with
 * an auth file (tenant-a, tenant-b).  An AUTH frame whose proof is all
 * 0xAA, after a HELLO as tenant-a, is given the right proof by the harness,
 * so inputs also reach batches and RPCs after authentication.  Checked: a
 * connection is handshaken only as tenant-a through a right proof, no BATCH
 * or RPC runs before that, the connection closes after a failed proof, and
 * tenant-b's memory never changes.
 */
#include <stdio.h>
#include <string.h>

#include "dm_auth.h"
#include "fuzz_memnode.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int	ready;
	mn_conn_info ci;
	mn_counters *ctr;

	if (!ready)
	{
		fz_init(1);
		ready = 1;
	}
	fz_reset();
	ctr = &mn.worker_counters[0];
	memset(&ci, 0, sizeof(ci));
	ci.mns = &mn;
	snprintf(ci.peer, sizeof(ci.peer), "fuzz");
	fz_run_stream(&ci, ctr, data, size, 1);
	if (ci.handshaken)
		FZ_ASSERT(ci.ident == dm_auth_ident_tag("tenant-a") && strcmp(ci.identity, "tenant-a") == 0,
				  "handshaken without tenant-a's proof");
	else
		FZ_ASSERT(ctr->batches == 0 && ctr->rpcs == 0, "a request ran before authentication");
	FZ_ASSERT(fz_b_intact(), "tenant-b's memory changed");
	return 0;
}
