/*
 * test_proto.c — unit tests of the wire-protocol helpers in
 * src/dm/dm_proto.c: frame header init/check, batch size computations,
 * the strict batch decoder the memnode runs on untrusted input, and the
 * RPC request sizes.  No memnode, no sockets.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include "dm_proto.h"
#include "testutil.h"

/* Batch bodies are decoded in place from 8-aligned buffers (as the memnode does). */
static uint64_t bodybuf[(1 << 20) / 8];

static dm_wire_op
wop(int kind, uint32_t len, uint64_t addr, uint64_t a0, uint64_t a1)
{
	dm_wire_op	o;

	memset(&o, 0, sizeof(o));
	o.kind = (uint8_t) kind;
	o.len = len;
	o.addr = addr;
	o.arg0 = a0;
	o.arg1 = a1;
	return o;
}

/*
 * Lay out a request body: batch header, ops, then each WRITE's payload
 * (filled with a byte pattern derived from the op index) padded to 8.
 * extra is added to the total (negative = truncate), to build bodies
 * whose payload is shorter or longer than the ops claim.
 */
static uint32_t
build_body(const dm_wire_op *ops, uint32_t nops, uint32_t nops_claimed, int extra)
{
	uint8_t    *b = (uint8_t *) bodybuf;
	dm_batch_hdr bh = {.nops = nops_claimed,.bad_index = 0};
	uint32_t	off;

	memset(bodybuf, 0, sizeof(bodybuf));
	memcpy(b, &bh, sizeof(bh));
	off = sizeof(bh);
	memcpy(b + off, ops, (size_t) nops * sizeof(dm_wire_op));
	off += nops * (uint32_t) sizeof(dm_wire_op);
	for (uint32_t i = 0; i < nops; i++)
		if (ops[i].kind == DM_OP_WRITE)
		{
			memset(b + off, 0xA0 + (int) i, ops[i].len);
			off += dm_pad8(ops[i].len);
		}
	return (uint32_t) ((int) off + extra);
}

static void
test_header(void)
{
	dm_frame_hdr h,
				bad;

	dm_hdr_init(&h, DM_MSG_BATCH, 64, 12345);
	CHECK(h.magic == DM_PROTO_MAGIC && h.length == 64 && h.type == DM_MSG_BATCH &&
		  h.flags == 0 && h.status == 0 && h.seq == 12345,
		  "dm_hdr_init fills magic, length, type, seq and zeroes flags/status");
	CHECK(sizeof(dm_frame_hdr) == 24 && DM_HDR_SIZE == 24, "header is 24 bytes");
	CHECK_STATUS(dm_hdr_check(&h, DM_FRAME_MAX), DM_OK, "valid header accepted");

	dm_hdr_init(&h, DM_MSG_HELLO, DM_HDR_SIZE, 1);
	CHECK_STATUS(dm_hdr_check(&h, DM_FRAME_MAX), DM_OK, "header-only frame accepted");

	bad = h;
	bad.magic ^= 1;
	CHECK_STATUS(dm_hdr_check(&bad, DM_FRAME_MAX), DM_ERR_PROTOCOL, "bad magic rejected");
	bad = h;
	bad.magic = 0;
	CHECK_STATUS(dm_hdr_check(&bad, DM_FRAME_MAX), DM_ERR_PROTOCOL, "zero magic rejected");
	bad = h;
	bad.flags = 1;
	CHECK_STATUS(dm_hdr_check(&bad, DM_FRAME_MAX), DM_ERR_PROTOCOL, "non-zero flags rejected");
	bad = h;
	bad.flags = 0x8000;
	CHECK_STATUS(dm_hdr_check(&bad, DM_FRAME_MAX), DM_ERR_PROTOCOL, "high flag bit rejected");

	dm_hdr_init(&bad, DM_MSG_BATCH, 60, 1);
	CHECK_STATUS(dm_hdr_check(&bad, DM_FRAME_MAX), DM_ERR_PROTOCOL, "length not a multiple of 8 rejected");
	dm_hdr_init(&bad, DM_MSG_BATCH, DM_HDR_SIZE + 1, 1);
	CHECK_STATUS(dm_hdr_check(&bad, DM_FRAME_MAX), DM_ERR_PROTOCOL, "length header+1 rejected");
	dm_hdr_init(&bad, DM_MSG_BATCH, 16, 1);
	CHECK_STATUS(dm_hdr_check(&bad, DM_FRAME_MAX), DM_ERR_PROTOCOL, "length < header size rejected");
	dm_hdr_init(&bad, DM_MSG_BATCH, 0, 1);
	CHECK_STATUS(dm_hdr_check(&bad, DM_FRAME_MAX), DM_ERR_PROTOCOL, "length 0 rejected");

	dm_hdr_init(&bad, DM_MSG_BATCH, DM_FRAME_MAX, 1);
	CHECK_STATUS(dm_hdr_check(&bad, DM_FRAME_MAX), DM_OK, "length == max accepted");
	dm_hdr_init(&bad, DM_MSG_BATCH, DM_FRAME_MAX + 8, 1);
	CHECK_STATUS(dm_hdr_check(&bad, DM_FRAME_MAX), DM_ERR_TOOBIG, "length > max rejected as TOOBIG");
	dm_hdr_init(&bad, DM_MSG_BATCH, 0xFFFFFFF8u, 1);
	CHECK_STATUS(dm_hdr_check(&bad, DM_FRAME_MAX), DM_ERR_TOOBIG, "length 4 GiB-8 rejected as TOOBIG");
	dm_hdr_init(&bad, DM_MSG_BATCH, 4096, 1);
	CHECK_STATUS(dm_hdr_check(&bad, 1024), DM_ERR_TOOBIG, "max_len argument is honoured");
}

static void
test_sizes(void)
{
	dm_wire_op	ops[4];
	uint64_t	want;

	/*
	 * The implementation returns the size of the whole frame (header
	 * included), which is what it compares against DM_FRAME_MAX.
	 */
	ops[0] = wop(DM_OP_READ, 100, 0, 0, 0);
	ops[1] = wop(DM_OP_WRITE, 13, 0, 0, 0);
	ops[2] = wop(DM_OP_CAS, 8, 0, 1, 2);
	ops[3] = wop(DM_OP_WRITE, 16, 0, 0, 0);
	want = DM_HDR_SIZE + sizeof(dm_batch_hdr) + 4 * sizeof(dm_wire_op) + 16 + 16;
	CHECK(dm_batch_request_size(ops, 4) == want,
		  "request size = hdr + batch hdr + ops + padded WRITE payloads (%llu, want %llu)",
		  (unsigned long long) dm_batch_request_size(ops, 4), (unsigned long long) want);
	want = DM_HDR_SIZE + sizeof(dm_batch_hdr) + 4 * 8 + 104;
	CHECK(dm_batch_reply_size(ops, 4) == want,
		  "reply size = hdr + batch hdr + results + padded READ data (%llu, want %llu)",
		  (unsigned long long) dm_batch_reply_size(ops, 4), (unsigned long long) want);

	ops[0] = wop(DM_OP_FAA, 8, 0, 1, 0);
	CHECK(dm_batch_request_size(ops, 1) == DM_HDR_SIZE + 8 + 32 &&
		  dm_batch_reply_size(ops, 1) == DM_HDR_SIZE + 8 + 8,
		  "single atomic: request %u, reply %u bytes", DM_HDR_SIZE + 40, DM_HDR_SIZE + 16);

	/* A WRITE of 16 MiB cannot fit in a frame; nor can a READ reply of it. */
	ops[0] = wop(DM_OP_WRITE, DM_FRAME_MAX, 0, 0, 0);
	CHECK(dm_batch_request_size(ops, 1) == 0, "request larger than DM_FRAME_MAX -> 0");
	CHECK(dm_batch_reply_size(ops, 1) != 0, "WRITE adds nothing to the reply size");
	ops[0] = wop(DM_OP_READ, DM_FRAME_MAX, 0, 0, 0);
	CHECK(dm_batch_reply_size(ops, 1) == 0, "reply larger than DM_FRAME_MAX -> 0");
	CHECK(dm_batch_request_size(ops, 1) != 0, "READ adds nothing to the request size");

	/* Exactly at the limit is fine, one padded unit more is not. */
	{
		uint32_t	fixed = DM_HDR_SIZE + sizeof(dm_batch_hdr) + sizeof(dm_wire_op);

		ops[0] = wop(DM_OP_WRITE, DM_FRAME_MAX - fixed, 0, 0, 0);
		CHECK(dm_batch_request_size(ops, 1) == DM_FRAME_MAX, "request exactly DM_FRAME_MAX allowed");
		ops[0].len += 1;
		CHECK(dm_batch_request_size(ops, 1) == 0, "request DM_FRAME_MAX+1 (padded) -> 0");
	}
	/* Many large ops whose sum overflows 32 bits must not wrap around. */
	{
		static dm_wire_op many[512];

		for (int i = 0; i < 512; i++)
			many[i] = wop(DM_OP_WRITE, 0xFFFFFFF0u, 0, 0, 0);
		CHECK(dm_batch_request_size(many, 512) == 0, "sum of lens beyond 2^32 -> 0 (no wrap)");
		for (int i = 0; i < 512; i++)
			many[i].kind = DM_OP_READ;
		CHECK(dm_batch_reply_size(many, 512) == 0, "sum of READ lens beyond 2^32 -> 0 (no wrap)");
	}
}

static void
test_decode_valid(void)
{
	dm_wire_op	ops[6];
	const dm_wire_op *dops = NULL;
	const uint8_t *payload = NULL;
	uint32_t	nops = 0,
				bad = 0,
				len;
	int			rc;

	ops[0] = wop(DM_OP_WRITE, 13, 0x1000, 0, 0);
	ops[1] = wop(DM_OP_READ, 4096, 0x2000, 0, 0);
	ops[2] = wop(DM_OP_CAS, 8, 0x3000, 5, 6);
	ops[3] = wop(DM_OP_FAA, 8, 0x3008, 1, 0);
	ops[4] = wop(DM_OP_FETCH_OR, 8, 0x3010, 0x80, 0);
	ops[5] = wop(DM_OP_WRITE, 24, 0x4000, 0, 0);
	len = build_body(ops, 6, 6, 0);
	CHECK(len == 8 + 6 * 32 + 16 + 24, "test body laid out (%u bytes)", len);
	rc = dm_batch_decode((const uint8_t *) bodybuf, len, &dops, &nops, &payload, &bad);
	CHECK_STATUS(rc, DM_OK, "valid mixed batch decodes");
	CHECK(nops == 6, "nops = 6 (got %u)", nops);
	CHECK(dops == (const dm_wire_op *) ((uint8_t *) bodybuf + 8), "ops point into the body after the batch header");
	CHECK(dops && memcmp(dops, ops, sizeof(ops)) == 0, "ops decoded unchanged");
	CHECK(payload == (const uint8_t *) bodybuf + 8 + 6 * 32, "payload points after the ops");
	CHECK(payload && payload[0] == 0xA0 && payload[12] == 0xA0 && payload[16] == 0xA5 && payload[39] == 0xA5,
		  "payload holds WRITE data in op order, padded to 8");
	CHECK(bad == UINT32_MAX, "bad_index = ~0 on success");

	/* Maximum number of ops, all atomics (no payload). */
	{
		static dm_wire_op many[DM_BATCH_MAX_OPS];

		for (int i = 0; i < DM_BATCH_MAX_OPS; i++)
			many[i] = wop(DM_OP_FAA, 8, 8 * (uint64_t) i, 1, 0);
		len = build_body(many, DM_BATCH_MAX_OPS, DM_BATCH_MAX_OPS, 0);
		rc = dm_batch_decode((const uint8_t *) bodybuf, len, &dops, &nops, &payload, &bad);
		CHECK_STATUS(rc, DM_OK, "batch of DM_BATCH_MAX_OPS (%d) ops decodes", DM_BATCH_MAX_OPS);
		CHECK(nops == DM_BATCH_MAX_OPS, "nops = max");
	}

	/* A READ-only batch has an empty payload; payload points at the end. */
	ops[0] = wop(DM_OP_READ, 1, 0x10, 0, 0);
	len = build_body(ops, 1, 1, 0);
	rc = dm_batch_decode((const uint8_t *) bodybuf, len, &dops, &nops, &payload, &bad);
	CHECK_STATUS(rc, DM_OK, "single 1-byte READ decodes");
	CHECK(payload == (const uint8_t *) bodybuf + len, "empty payload points at the body end");
}

static void
expect_bad(const char *what, uint32_t len, int want_rc, uint32_t want_bad)
{
	const dm_wire_op *dops = NULL;
	const uint8_t *payload = NULL;
	uint32_t	nops = 0,
				bad = 12345;
	int			rc;

	rc = dm_batch_decode((const uint8_t *) bodybuf, len, &dops, &nops, &payload, &bad);
	CHECK_STATUS(rc, want_rc, "%s: rejected", what);
	CHECK(bad == want_bad, "%s: bad_index = %d (got %d)", what, (int) want_bad, (int) bad);
}

static void
test_decode_invalid(void)
{
	dm_wire_op	ops[4];
	uint32_t	len;
	dm_batch_hdr bh;

	/* Body shorter than the batch header itself. */
	expect_bad("empty body", 0, DM_ERR_PROTOCOL, UINT32_MAX);
	expect_bad("4-byte body", 4, DM_ERR_PROTOCOL, UINT32_MAX);

	/* nops 0 */
	bh.nops = 0;
	bh.bad_index = 0;
	memset(bodybuf, 0, 64);
	memcpy(bodybuf, &bh, sizeof(bh));
	expect_bad("nops 0", 8, DM_ERR_PROTOCOL, UINT32_MAX);
	expect_bad("nops 0 with trailing bytes", 40, DM_ERR_PROTOCOL, UINT32_MAX);

	/* nops > max: the body even has room for the ops, still refused. */
	{
		static dm_wire_op many[DM_BATCH_MAX_OPS + 1];

		for (int i = 0; i <= DM_BATCH_MAX_OPS; i++)
			many[i] = wop(DM_OP_FAA, 8, 0, 1, 0);
		len = build_body(many, DM_BATCH_MAX_OPS + 1, DM_BATCH_MAX_OPS + 1, 0);
		expect_bad("nops = DM_BATCH_MAX_OPS + 1", len, DM_ERR_PROTOCOL, UINT32_MAX);
	}
	bh.nops = UINT32_MAX;
	memcpy(bodybuf, &bh, sizeof(bh));
	expect_bad("nops = 2^32-1", 64, DM_ERR_PROTOCOL, UINT32_MAX);

	/* nops claims more ops than the body holds. */
	ops[0] = wop(DM_OP_FAA, 8, 0, 1, 0);
	ops[1] = wop(DM_OP_FAA, 8, 8, 1, 0);
	len = build_body(ops, 2, 3, 0);
	expect_bad("nops larger than the ops present", len, DM_ERR_PROTOCOL, UINT32_MAX);
	len = build_body(ops, 2, 2, -8);
	expect_bad("last op truncated", len, DM_ERR_PROTOCOL, UINT32_MAX);

	/* Unknown kinds, at various positions: bad_index names the op. */
	ops[0] = wop(DM_OP_READ, 8, 0, 0, 0);
	ops[1] = wop(0, 8, 0, 0, 0);
	len = build_body(ops, 2, 2, 0);
	expect_bad("kind 0", len, DM_ERR_PROTOCOL, 1);
	ops[1] = wop(DM_OP_KIND_MAX + 1, 8, 0, 0, 0);
	len = build_body(ops, 2, 2, 0);
	expect_bad("kind KIND_MAX+1", len, DM_ERR_PROTOCOL, 1);
	ops[0] = wop(0xFF, 8, 0, 0, 0);
	len = build_body(ops, 2, 2, 0);
	expect_bad("kind 255 at index 0", len, DM_ERR_PROTOCOL, 0);

	/* Atomics must have len 8. */
	{
		static const int kinds[] = {DM_OP_CAS, DM_OP_FAA, DM_OP_FETCH_OR, DM_OP_FETCH_MAX};
		static const uint32_t lens[] = {0, 4, 16};

		for (int k = 0; k < 4; k++)
			for (int l = 0; l < 3; l++)
			{
				char		what[64];

				ops[0] = wop(DM_OP_READ, 8, 0, 0, 0);
				ops[1] = wop(DM_OP_FAA, 8, 0, 0, 0);
				ops[2] = wop(kinds[k], lens[l], 0, 0, 0);
				len = build_body(ops, 3, 3, 0);
				snprintf(what, sizeof(what), "atomic kind %d with len %u", kinds[k], lens[l]);
				expect_bad(what, len, DM_ERR_PROTOCOL, 2);
			}
	}

	/* Zero-length READ / WRITE */
	ops[0] = wop(DM_OP_READ, 0, 0, 0, 0);
	len = build_body(ops, 1, 1, 0);
	expect_bad("READ len 0", len, DM_ERR_PROTOCOL, 0);
	ops[0] = wop(DM_OP_FAA, 8, 0, 1, 0);
	ops[1] = wop(DM_OP_WRITE, 0, 0, 0, 0);
	len = build_body(ops, 2, 2, 0);
	expect_bad("WRITE len 0", len, DM_ERR_PROTOCOL, 1);

	/* READ longer than any reply frame can carry. */
	ops[0] = wop(DM_OP_READ, DM_FRAME_MAX + 1, 0, 0, 0);
	len = build_body(ops, 1, 1, 0);
	expect_bad("READ len > DM_FRAME_MAX", len, DM_ERR_PROTOCOL, 0);
	ops[0] = wop(DM_OP_READ, UINT32_MAX, 0, 0, 0);
	len = build_body(ops, 1, 1, 0);
	expect_bad("READ len 2^32-1", len, DM_ERR_PROTOCOL, 0);

	/* WRITE payload shorter than claimed: the op whose payload runs out is named. */
	ops[0] = wop(DM_OP_WRITE, 16, 0, 0, 0);
	ops[1] = wop(DM_OP_WRITE, 32, 16, 0, 0);
	len = build_body(ops, 2, 2, -8);
	expect_bad("WRITE payload 8 bytes short", len, DM_ERR_PROTOCOL, 1);
	len = build_body(ops, 2, 2, -32);
	expect_bad("second WRITE payload missing entirely", len, DM_ERR_PROTOCOL, 1);
	len = build_body(ops, 2, 2, -48);
	expect_bad("both WRITE payloads missing", len, DM_ERR_PROTOCOL, 0);

	/* WRITE whose claimed len is huge (would wrap a 32-bit sum). */
	ops[0] = wop(DM_OP_WRITE, 8, 0, 0, 0);
	ops[1] = wop(DM_OP_WRITE, 0xFFFFFFF8u, 0, 0, 0);
	len = build_body(ops, 1, 2, 0);	/* only op 0's payload present */
	/* the second op is laid out by hand: build_body wrote only one op */
	memcpy((uint8_t *) bodybuf + 8 + 32, &ops[1], 32);
	len = 8 + 2 * 32 + 8;
	expect_bad("WRITE len 2^32-8", len, DM_ERR_PROTOCOL, 1);

	/* WRITE payload longer than claimed (trailing garbage). */
	ops[0] = wop(DM_OP_WRITE, 16, 0, 0, 0);
	ops[1] = wop(DM_OP_CAS, 8, 0, 0, 1);
	len = build_body(ops, 2, 2, 8);
	{
		const dm_wire_op *dops = NULL;
		const uint8_t *payload = NULL;
		uint32_t	nops = 0,
					bad = 0;

		CHECK_STATUS(dm_batch_decode((const uint8_t *) bodybuf, len, &dops, &nops, &payload, &bad),
					 DM_ERR_PROTOCOL, "trailing 8 bytes after the payload rejected");
	}
	/* Trailing bytes with no WRITE at all. */
	ops[0] = wop(DM_OP_READ, 8, 0, 0, 0);
	len = build_body(ops, 1, 1, 8);
	expect_bad("trailing bytes after a READ-only batch", len, DM_ERR_PROTOCOL, UINT32_MAX);

	/* Op flags: GUARD only on a CAS, no unknown bits. */
	ops[0] = wop(DM_OP_CAS, 8, 0, 1, 2);
	ops[0].flags = DM_OPF_GUARD;
	ops[1] = wop(DM_OP_READ, 8, 0, 0, 0);
	len = build_body(ops, 2, 2, 0);
	{
		const dm_wire_op *dops = NULL;
		const uint8_t *payload = NULL;
		uint32_t	nops = 0,
					bad = 0;

		CHECK_STATUS(dm_batch_decode((const uint8_t *) bodybuf, len, &dops, &nops, &payload, &bad),
					 DM_OK, "a guard CAS decodes");
		CHECK(nops == 2 && dops[0].flags == DM_OPF_GUARD, "the guard flag survives decoding");
	}
	ops[1].flags = DM_OPF_GUARD;
	len = build_body(ops, 2, 2, 0);
	expect_bad("GUARD on a READ", len, DM_ERR_PROTOCOL, 1);
	ops[1].flags = 0;
	ops[0].flags = 0x80;
	len = build_body(ops, 2, 2, 0);
	expect_bad("unknown op flag", len, DM_ERR_PROTOCOL, 0);

	/* A WRITE of 5 bytes needs 8 payload bytes (padding is mandatory). */
	ops[0] = wop(DM_OP_WRITE, 5, 0, 0, 0);
	len = build_body(ops, 1, 1, -3);
	expect_bad("unpadded 5-byte WRITE payload", len, DM_ERR_PROTOCOL, 0);
}

static void
test_rpc_sizes(void)
{
	CHECK(dm_rpc_request_size(DM_RPC_PING) == (int) sizeof(dm_rpc_u64), "PING: 8 bytes");
	CHECK(dm_rpc_request_size(DM_RPC_CHUNK_ALLOC) == (int) sizeof(dm_rpc_u64), "CHUNK_ALLOC: owner (8 bytes)");
	CHECK(dm_rpc_request_size(DM_RPC_CHUNK_FREE) == (int) sizeof(dm_rpc_u64), "CHUNK_FREE: addr (8 bytes)");
	CHECK(dm_rpc_request_size(DM_RPC_CHUNK_FREE_OWNER) == (int) sizeof(dm_rpc_u64), "CHUNK_FREE_OWNER: owner (8 bytes)");
	CHECK(dm_rpc_request_size(DM_RPC_CAT_CREATE) == (int) sizeof(dm_tree_name), "CAT_CREATE: tree name");
	CHECK(dm_rpc_request_size(DM_RPC_CAT_OPEN) == (int) sizeof(dm_tree_name), "CAT_OPEN: tree name");
	CHECK(dm_rpc_request_size(DM_RPC_CAT_DROP) == (int) sizeof(dm_tree_name), "CAT_DROP: tree name");
	CHECK(dm_rpc_request_size(DM_RPC_CAT_LIST) == (int) sizeof(dm_rpc_list_req), "CAT_LIST: list request");
	CHECK(dm_rpc_request_size(DM_RPC_STATS) == 0, "STATS: no argument");
	CHECK(dm_rpc_request_size(DM_RPC_SLAB_ALLOC) == (int) sizeof(dm_rpc_slab_req) && sizeof(dm_rpc_slab_req) == 16,
		  "SLAB_ALLOC: owner + size (16 bytes)");
	CHECK(dm_rpc_request_size(DM_RPC_SLAB_FREE) == (int) sizeof(dm_rpc_slab_free_req) && sizeof(dm_rpc_slab_free_req) == 24,
		  "SLAB_FREE: owner + address + size (24 bytes)");
	CHECK(sizeof(dm_tree_name) == 128 && sizeof(dm_rpc_list_req) == 24, "tree name 128, list req 24 bytes");
	CHECK(dm_rpc_request_size(0) == -1, "code 0 unknown");
	CHECK(dm_rpc_request_size(DM_RPC_CODE_MAX + 1) == -1, "code MAX+1 unknown");
	CHECK(dm_rpc_request_size(0xFFFFFFFFu) == -1, "code 2^32-1 unknown");
	for (uint32_t c = 1; c <= DM_RPC_CODE_MAX; c++)
		if (dm_rpc_request_size(c) < 0 || dm_rpc_request_size(c) % 8 != 0)
			CHECK(0, "code %u has a valid multiple-of-8 size", c);
	CHECK(dm_pad8(0) == 0 && dm_pad8(1) == 8 && dm_pad8(8) == 8 && dm_pad8(9) == 16, "dm_pad8");
}

static void
test_wire_layout(void)
{
	/* Values are on the wire: a change here breaks compatibility. */
	CHECK(sizeof(dm_wire_op) == 32 && sizeof(dm_batch_hdr) == 8 && sizeof(dm_rpc_hdr) == 8,
		  "wire op 32, batch hdr 8, rpc hdr 8 bytes");
	CHECK(sizeof(dm_hello_req) % 8 == 0 && sizeof(dm_hello_rep) % 8 == 0 &&
		  sizeof(dm_tree_info) % 8 == 0 && sizeof(dm_node_stats) % 8 == 0,
		  "HELLO, tree info and stats bodies are multiples of 8");
	CHECK(DM_PROTO_MAGIC == 0x58494D44u && DM_PROTO_VERSION == 7,
		  "magic 'DMIX', version 7 (6: offloaded writes carry the high-water raise; 7: RPCs over UCX active messages)");
	CHECK(sizeof(dm_rpc_ucx_attach_req) == 4096 && dm_rpc_request_size(DM_RPC_UCX_ATTACH) == 4096 &&
		  offsetof(dm_rpc_ucx_rep, token) == 24 && sizeof(dm_rpc_ucx_rep) == 40 && sizeof(dm_ucx_am_hdr) == 16 &&
		  DM_UCX_AM_RPC == 1 && DM_UCX_AM_REPLY == 2 && DM_UCX_PEER_ERRORS == 1,
		  "UCX attach: 4 KiB request with the worker address, token at 24 of the reply; 16-byte AM header");
	CHECK(offsetof(dm_wire_op, flags) == 1 && DM_OPF_GUARD == 1, "op flags at byte 1, GUARD = 1");
	CHECK(dm_gaddr_node(dm_gaddr_make(0x7FFF, DM_OFFSET_MASK)) == 0x7FFF &&
		  dm_gaddr_offset(dm_gaddr_make(3, 0x123456789ABCull)) == 0x123456789ABCull &&
		  (dm_gaddr_make(0xFFFF, 0) & DM_GADDR_RESERVED_BIT) == 0,
		  "gaddr packing: 15-bit node id, 48-bit offset, bit 63 never set");
	CHECK(strcmp(dm_strerror(DM_ERR_TIMEOUT), dm_strerror(DM_ERR_CLOSED)) != 0 &&
		  dm_strerror(9999) != NULL && dm_strerror(-1) != NULL,
		  "dm_strerror distinguishes codes and survives unknown ones");
}

int
main(void)
{
	test_header();
	test_sizes();
	test_decode_valid();
	test_decode_invalid();
	test_rpc_sizes();
	test_wire_layout();
	return tap_done();
}
