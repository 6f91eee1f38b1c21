/*
 * test_robust.c — a memnode must survive anything a client sends and keep
 * serving well-behaved clients: garbage bytes, broken headers, oversized
 * and truncated frames, requests before or without a proper handshake,
 * out-of-range / misaligned / read-only operations (rejected whole, nothing
 * applied), thousands of idle or half-open connections, and a fuzz loop of
 * random frames.  Raw sockets are plain socket code here on purpose: the
 * client library would refuse to send most of this.
 *
 * With DM_TEST_AUTH=1 the same runs against a memnode with --auth-file:
 * every client (raw ones too) authenticates as tenant-a, and the good
 * client's chunk belongs to a tree of tenant-a (test/run-c-tests.sh runs
 * it both ways).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dm_client.h"
#include "dm_region.h"
#include "testauth.h"
#include "testutil.h"

#define FLOOD_CONNS 2000
#define FUZZ_FRAMES 2000

static memnode_proc mn;
static dm_client *good;			/* the well-behaved client */
static uint16_t node;
static dm_gaddr chunk;			/* a chunk the good client owns */
static uint64_t region_size;
static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t
rnd(void)
{
	return xorshift64s(&rng);
}

/* ---- raw sockets ----------------------------------------------------------- */




/* ---- the well-behaved client ------------------------------------------------- */

static uint64_t
read_word(dm_gaddr a)
{
	uint64_t	v = 0xFFFFFFFFFFFFFFFFull;

	if (dm_read(good, a, &v, 8) != DM_OK)
		tap_diag("read_word: %s", dm_client_error(good));
	return v;
}

/* The memnode is alive and serves the good client: ping, write, read back. */
static void
check_serving(const char *after)
{
	static uint64_t counter = 1000;
	uint64_t	v = ++counter,
				back = 0;
	int			rc;

	CHECK(kill(mn.pid, 0) == 0, "after %s: memnode process alive", after);
	rc = dm_ping(good, node);
	if (rc == DM_OK)
		rc = dm_write(good, chunk + 4096, &v, 8);
	if (rc == DM_OK)
		rc = dm_read(good, chunk + 4096, &back, 8);
	CHECK(rc == DM_OK && back == v, "after %s: good client pings, writes and reads (%s)", after,
		  dm_strerror(rc));
}

/* ---- abuse on raw connections ------------------------------------------------- */

static void
test_raw_abuse(void)
{
	uint8_t		buf[8192],
				body[512];
	dm_frame_hdr h,
				rh;
	dm_hello_rep hr;
	uint64_t	before;
	size_t		n,
				got;
	int			fd;

	/* 1. random garbage */
	fd = test_raw_connect(mn.port);
	for (size_t i = 0; i < 512; i++)
		buf[i] = (uint8_t) rnd();
	buf[0] = 'X';				/* surely not the magic */
	CHECK(fd >= 0 && test_raw_send(fd, buf, 512) == 0, "garbage: sent 512 random bytes");
	CHECK(test_raw_closed(fd, 3000, &got) && got == 0, "garbage: memnode closed the connection without a reply");
	close(fd);
	check_serving("garbage");

	/* 2. valid-looking header, wrong magic */
	fd = test_raw_connect(mn.port);
	dm_hdr_init(&h, DM_MSG_HELLO, DM_HDR_SIZE + sizeof(dm_hello_req), 1);
	h.magic = 0x58494D45u;
	memset(buf, 0, sizeof(buf));
	memcpy(buf, &h, sizeof(h));
	CHECK(fd >= 0 && test_raw_send(fd, buf, DM_HDR_SIZE + sizeof(dm_hello_req)) == 0, "wrong magic: sent");
	CHECK(test_raw_closed(fd, 3000, &got) && got == 0, "wrong magic: connection closed, no reply");
	close(fd);
	check_serving("wrong magic");

	/* 3. a header claiming more than DM_FRAME_MAX */
	fd = test_raw_connect(mn.port);
	dm_hdr_init(&h, DM_MSG_HELLO, DM_FRAME_MAX + 8, 1);
	CHECK(fd >= 0 && test_raw_send(fd, &h, sizeof(h)) == 0, "oversized: header claiming 16 MiB + 8 sent");
	CHECK(test_raw_closed(fd, 3000, NULL), "oversized: connection closed at once");
	close(fd);
	/* ... and after a handshake too */
	fd = test_raw_connect(mn.port);
	CHECK(fd >= 0 && test_raw_hello(fd, DM_PROTO_VERSION, &rh, &hr) == 0 && rh.status == DM_OK,
		  "oversized after hello: handshake ok");
	dm_hdr_init(&h, DM_MSG_BATCH, 0xFFFFFFF8u, 2);
	CHECK(test_raw_send(fd, &h, sizeof(h)) == 0 && test_raw_closed(fd, 3000, NULL),
		  "oversized after hello: 4 GiB header closes the connection");
	close(fd);
	/* flags and non-multiple-of-8 lengths */
	fd = test_raw_connect(mn.port);
	dm_hdr_init(&h, DM_MSG_HELLO, DM_HDR_SIZE + sizeof(dm_hello_req), 1);
	h.flags = 4;
	memset(buf, 0, sizeof(buf));
	memcpy(buf, &h, sizeof(h));
	CHECK(fd >= 0 && test_raw_send(fd, buf, DM_HDR_SIZE + sizeof(dm_hello_req)) == 0 &&
		  test_raw_closed(fd, 3000, NULL), "header with flags set: closed");
	close(fd);
	fd = test_raw_connect(mn.port);
	dm_hdr_init(&h, DM_MSG_HELLO, DM_HDR_SIZE + 4, 1);
	memcpy(buf, &h, sizeof(h));
	CHECK(fd >= 0 && test_raw_send(fd, buf, DM_HDR_SIZE + 4) == 0 && test_raw_closed(fd, 3000, NULL),
		  "length not a multiple of 8: closed");
	close(fd);
	check_serving("oversized / bad headers");

	/* 4. a truncated frame, then close: nothing of it may be applied */
	before = read_word(chunk + 8);
	fd = test_raw_connect(mn.port);
	CHECK(fd >= 0 && test_raw_hello(fd, DM_PROTO_VERSION, &rh, &hr) == 0 && rh.status == DM_OK,
		  "truncated: handshake ok");
	{
		dm_batch_hdr bh = {.nops = 2,.bad_index = 0};
		dm_wire_op	ops[2];
		uint32_t	blen;

		memset(ops, 0, sizeof(ops));
		ops[0].kind = DM_OP_FAA;
		ops[0].len = 8;
		ops[0].addr = chunk + 8;
		ops[0].arg0 = 1;
		ops[1].kind = DM_OP_WRITE;
		ops[1].len = 64;
		ops[1].addr = chunk + 128;
		memcpy(body, &bh, sizeof(bh));
		memcpy(body + sizeof(bh), ops, sizeof(ops));
		memset(body + sizeof(bh) + sizeof(ops), 0x77, 64);
		blen = sizeof(bh) + sizeof(ops) + 64;
		n = test_raw_frame(buf, DM_MSG_BATCH, body, blen, 5);
		/* all but the last 8 bytes of the WRITE payload */
		CHECK(test_raw_send(fd, buf, n - 8) == 0, "truncated: sent %zu of %zu bytes", n - 8, n);
	}
	close(fd);
	check_serving("truncated frame");
	CHECK(read_word(chunk + 8) == before, "truncated: the FAA of the incomplete frame was not applied");
	{
		uint8_t		w[64],
					zero[64];

		memset(zero, 0, sizeof(zero));
		CHECK(dm_read(good, chunk + 128, w, 64) == DM_OK && memcmp(w, zero, 64) == 0,
			  "truncated: the WRITE of the incomplete frame was not applied");
	}

	/* 5. BATCH before HELLO */
	before = read_word(chunk + 8);
	fd = test_raw_connect(mn.port);
	n = test_raw_frame(buf, DM_MSG_BATCH, body, test_raw_faa_body(body, chunk + 8), 1);
	CHECK(fd >= 0 && test_raw_send(fd, buf, n) == 0, "batch before hello: sent");
	CHECK(test_raw_closed(fd, 3000, &got) && got == 0, "batch before hello: closed without a reply");
	close(fd);
	CHECK(read_word(chunk + 8) == before, "batch before hello: not applied");
	/* RPC before HELLO */
	fd = test_raw_connect(mn.port);
	{
		uint8_t		rb[16] = {0};
		dm_rpc_hdr	rpch = {.code = DM_RPC_STATS};

		memcpy(rb, &rpch, sizeof(rpch));
		n = test_raw_frame(buf, DM_MSG_RPC, rb, 8, 1);
	}
	CHECK(fd >= 0 && test_raw_send(fd, buf, n) == 0 && test_raw_closed(fd, 3000, &got) && got == 0,
		  "rpc before hello: closed without a reply");
	close(fd);
	check_serving("requests before hello");

	/* 6. HELLO with a wrong version: an error reply, then the memnode hangs up */
	fd = test_raw_connect(mn.port);
	memset(&rh, 0, sizeof(rh));
	CHECK(fd >= 0 && test_raw_hello(fd, DM_PROTO_VERSION + 1, &rh, &hr) == 0, "wrong version: got a reply");
	CHECK(rh.magic == DM_PROTO_MAGIC && rh.type == (DM_MSG_HELLO | DM_MSG_REPLY) && rh.seq == 77,
		  "wrong version: reply header is a HELLO reply echoing the seq");
	CHECK_STATUS((int) rh.status, DM_ERR_VERSION, "wrong version: status VERSION");
	CHECK(hr.version == DM_PROTO_VERSION, "wrong version: reply says which version the memnode speaks");
	CHECK(test_raw_closed(fd, 3000, NULL), "wrong version: connection closed after the reply");
	close(fd);
	/* ... and the client library reports it as VERSION (by design, via its own handshake) */
	check_serving("wrong version");

	/* 7. HELLO twice; HELLO with a short body */
	fd = test_raw_connect(mn.port);
	CHECK(fd >= 0 && test_raw_hello(fd, DM_PROTO_VERSION, &rh, &hr) == 0 && rh.status == DM_OK, "hello twice: first ok");
	CHECK(hr.node_id == node && hr.incarnation == mn.incarnation && hr.region_size == region_size,
		  "hello reply: node id, incarnation and region size");
	{
		dm_frame_hdr rh2;
		dm_hello_rep hr2;

		CHECK(test_raw_hello(fd, DM_PROTO_VERSION, &rh2, &hr2) < 0 && test_raw_closed(fd, 3000, NULL),
			  "hello twice: second hello closes the connection");
	}
	close(fd);
	fd = test_raw_connect(mn.port);
	memset(body, 0, sizeof(body));
	n = test_raw_frame(buf, DM_MSG_HELLO, body, 8, 1);
	CHECK(fd >= 0 && test_raw_send(fd, buf, n) == 0 && test_raw_closed(fd, 3000, &got) && got == 0,
		  "hello with an 8-byte body: closed");
	close(fd);

	/* 8. after a good hello: unknown RPC code (refused, connection kept), bad RPC length, odd types */
	fd = test_raw_connect(mn.port);
	CHECK(fd >= 0 && test_raw_hello(fd, DM_PROTO_VERSION, &rh, &hr) == 0 && rh.status == DM_OK, "rpc abuse: hello ok");
	{
		dm_rpc_hdr	rpch = {.code = 999};
		uint8_t		rb[64];

		memset(rb, 0, sizeof(rb));
		memcpy(rb, &rpch, sizeof(rpch));
		n = test_raw_frame(buf, DM_MSG_RPC, rb, 16, 9);
		memset(&rh, 0, sizeof(rh));
		CHECK(test_raw_send(fd, buf, n) == 0 && test_raw_recv(fd, &rh, sizeof(rh)) == 0,
			  "unknown rpc code: got a reply");
		CHECK(rh.type == (DM_MSG_RPC | DM_MSG_REPLY) && rh.seq == 9 && rh.length >= DM_HDR_SIZE,
			  "unknown rpc code: reply is an RPC reply with our seq");
		CHECK_STATUS((int) rh.status, DM_ERR_INVALID, "unknown rpc code: status INVALID");
		if (rh.length > DM_HDR_SIZE && rh.length < sizeof(buf))
			test_raw_recv(fd, buf, rh.length - DM_HDR_SIZE);
		/* the connection is still usable: ping on it */
		rpch.code = DM_RPC_PING;
		memcpy(rb, &rpch, sizeof(rpch));
		memset(rb + 8, 0xAB, 8);
		n = test_raw_frame(buf, DM_MSG_RPC, rb, 16, 10);
		memset(&rh, 0, sizeof(rh));
		CHECK(test_raw_send(fd, buf, n) == 0 && test_raw_recv(fd, &rh, sizeof(rh)) == 0 && rh.status == DM_OK &&
			  rh.seq == 10 && rh.length == DM_HDR_SIZE + 8 + sizeof(dm_rpc_ping_rep),
			  "unknown rpc code: connection still serves a ping");
		if (rh.length == DM_HDR_SIZE + 8 + sizeof(dm_rpc_ping_rep))
		{
			uint8_t		pr[8 + sizeof(dm_rpc_ping_rep)];

			CHECK(test_raw_recv(fd, pr, sizeof(pr)) == 0 && pr[8] == 0xAB && pr[15] == 0xAB,
				  "raw ping echoes its token");
		}
		/* PING with a 16-byte argument instead of 8 */
		rpch.code = DM_RPC_PING;
		memcpy(rb, &rpch, sizeof(rpch));
		n = test_raw_frame(buf, DM_MSG_RPC, rb, 24, 11);
		CHECK(test_raw_send(fd, buf, n) == 0 && test_raw_closed(fd, 3000, &got) && got == 0,
			  "ping with a wrong body length: closed");
	}
	close(fd);
	{
		static const uint16_t types[] = {0, 4, DM_MSG_HELLO | DM_MSG_REPLY, DM_MSG_BATCH | DM_MSG_REPLY, 0xFFFF};

		for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++)
		{
			fd = test_raw_connect(mn.port);
			CHECK(fd >= 0 && test_raw_hello(fd, DM_PROTO_VERSION, &rh, &hr) == 0 && rh.status == DM_OK,
				  "type 0x%x: hello ok", types[t]);
			n = test_raw_frame(buf, types[t], body, test_raw_faa_body(body, chunk + 8), 3);
			CHECK(test_raw_send(fd, buf, n) == 0 && test_raw_closed(fd, 3000, &got) && got == 0,
				  "frame of type 0x%x: closed without a reply", types[t]);
			close(fd);
		}
		/* a request with a non-zero status field */
		fd = test_raw_connect(mn.port);
		CHECK(fd >= 0 && test_raw_hello(fd, DM_PROTO_VERSION, &rh, &hr) == 0 && rh.status == DM_OK,
			  "status field: hello ok");
		before = read_word(chunk + 8);
		n = test_raw_frame(buf, DM_MSG_BATCH, body, test_raw_faa_body(body, chunk + 8), 3);
		((dm_frame_hdr *) buf)->status = 1;
		CHECK(test_raw_send(fd, buf, n) == 0 && test_raw_closed(fd, 3000, &got) && got == 0,
			  "request with a status set: closed without a reply");
		close(fd);
		CHECK(read_word(chunk + 8) == before, "request with a status set: not applied");
		/* a BATCH with nops 0 */
		fd = test_raw_connect(mn.port);
		CHECK(fd >= 0 && test_raw_hello(fd, DM_PROTO_VERSION, &rh, &hr) == 0, "nops 0: hello ok");
		memset(body, 0, 8);
		n = test_raw_frame(buf, DM_MSG_BATCH, body, 8, 4);
		CHECK(test_raw_send(fd, buf, n) == 0 && test_raw_closed(fd, 3000, &got) && got == 0,
			  "batch with nops 0: closed");
		close(fd);
	}
	check_serving("malformed frames after hello");

	/*
	 * Legal but unusual traffic: 200 pipelined PINGs in one write must be
	 * answered in order with their seqs; a frame trickled one byte at a
	 * time must be executed once complete.
	 */
	fd = test_raw_connect(mn.port);
	CHECK(fd >= 0 && test_raw_hello(fd, DM_PROTO_VERSION, &rh, &hr) == 0 && rh.status == DM_OK, "pipeline: hello ok");
	{
		static uint8_t pbuf[200 * 40];
		size_t		off = 0;
		int			in_order = 1;

		for (int i = 0; i < 200; i++)
		{
			uint8_t		rb[16];
			dm_rpc_hdr	rpch = {.code = DM_RPC_PING};
			uint64_t	token = 5000 + (uint64_t) i;

			memcpy(rb, &rpch, 8);
			memcpy(rb + 8, &token, 8);
			off += test_raw_frame(pbuf + off, DM_MSG_RPC, rb, 16, 1000 + (uint64_t) i);
		}
		CHECK(test_raw_send(fd, pbuf, off) == 0, "pipeline: 200 pings sent in one write");
		for (int i = 0; i < 200 && in_order; i++)
		{
			uint8_t		pr[8 + sizeof(dm_rpc_ping_rep)];
			uint64_t	token;

			if (test_raw_recv(fd, &rh, sizeof(rh)) < 0 || rh.seq != 1000 + (uint64_t) i || rh.status != DM_OK ||
				rh.length != DM_HDR_SIZE + sizeof(pr) || test_raw_recv(fd, pr, sizeof(pr)) < 0)
				in_order = 0;
			else
			{
				memcpy(&token, pr + 8, 8);
				in_order = token == 5000 + (uint64_t) i;
			}
		}
		CHECK(in_order, "pipeline: 200 replies, in order, seqs and tokens echoed");
	}
	before = read_word(chunk + 8);
	n = test_raw_frame(buf, DM_MSG_BATCH, body, test_raw_faa_body(body, chunk + 8), 4242);
	{
		int			sent_ok = 1;

		for (size_t i = 0; i < n && sent_ok; i++)
			sent_ok = test_raw_send(fd, buf + i, 1) == 0;
		CHECK(sent_ok, "trickle: %zu bytes sent one at a time", n);
	}
	memset(&rh, 0, sizeof(rh));
	CHECK(test_raw_recv(fd, &rh, sizeof(rh)) == 0 && rh.seq == 4242 && rh.status == DM_OK &&
		  rh.type == (DM_MSG_BATCH | DM_MSG_REPLY), "trickle: the batch was executed once complete");
	CHECK(read_word(chunk + 8) == before + 1, "trickle: its FAA applied exactly once");
	close(fd);
	check_serving("pipelined and trickled frames");
}

/* ---- bad operations through a proper client ---------------------------------- */

static void
test_bad_ops(void)
{
	uint8_t		pat[32],
				back[32],
				zero[32];
	uint64_t	v = 1,
				before;
	dm_op		ops[3];
	int			bad,
				rc;

	/* addresses beyond the region */
	CHECK_STATUS(dm_read(good, dm_gaddr_make(node, region_size), &v, 8), DM_ERR_RANGE,
				 "READ at the region size -> RANGE");
	CHECK_STATUS(dm_read(good, dm_gaddr_make(node, region_size - 4), &v, 8), DM_ERR_RANGE,
				 "READ across the region end -> RANGE");
	CHECK_STATUS(dm_read(good, dm_gaddr_make(node, DM_OFFSET_MASK - 7), &v, 8), DM_ERR_RANGE,
				 "READ near 2^48 -> RANGE");
	CHECK_STATUS(dm_write(good, dm_gaddr_make(node, region_size + 4096), &v, 8), DM_ERR_RANGE,
				 "WRITE beyond the region -> RANGE");
	CHECK_STATUS(dm_faa(good, dm_gaddr_make(node, region_size), 1, NULL), DM_ERR_RANGE, "FAA beyond -> RANGE");
	/* misaligned atomics */
	CHECK_STATUS(dm_cas(good, chunk + 4, 0, 1, NULL), DM_ERR_ALIGN, "misaligned CAS -> ALIGN");
	CHECK_STATUS(dm_faa(good, chunk + 1, 1, NULL), DM_ERR_ALIGN, "misaligned FAA -> ALIGN");
	CHECK_STATUS(dm_fetch_or(good, chunk + 12, 1, NULL), DM_ERR_ALIGN, "misaligned FETCH_OR -> ALIGN");
	/* writes to memnode-owned parts */
	CHECK_STATUS(dm_write(good, dm_gaddr_make(node, 0), &v, 8), DM_ERR_READONLY, "WRITE superblock -> READONLY");
	CHECK_STATUS(dm_cas(good, dm_gaddr_make(node, 0), DM_SB_MAGIC, 0, NULL), DM_ERR_READONLY,
				 "CAS superblock magic -> READONLY");
	CHECK_STATUS(dm_faa(good, dm_gaddr_make(node, 4096), 1, NULL), DM_ERR_READONLY, "FAA chunk table -> READONLY");
	{
		dm_superblock sb;

		CHECK_STATUS(dm_read(good, dm_gaddr_make(node, 0), &sb, sizeof(sb)), DM_OK, "READ superblock ok");
		CHECK(sb.magic == DM_SB_MAGIC && sb.incarnation == mn.incarnation && sb.state == DM_SB_LIVE,
			  "superblock intact: magic, incarnation, LIVE");
	}

	/* A batch whose 3rd op is bad applies nothing, not even the 1st op's WRITE. */
	memset(zero, 0, sizeof(zero));
	for (int i = 0; i < 32; i++)
		pat[i] = (uint8_t) (0xC0 + i);
	before = read_word(chunk + 16);
	CHECK(dm_read(good, chunk + 256, back, 32) == DM_OK && memcmp(back, zero, 32) == 0, "target area zero before");
	{
		struct
		{
			dm_gaddr	addr;
			int			want;
			const char *what;
		}			cases[] = {
			{dm_gaddr_make(node, 0), DM_ERR_READONLY, "superblock write"},
			{dm_gaddr_make(node, region_size), DM_ERR_RANGE, "out of range"},
			{chunk + 3, DM_ERR_ALIGN, "misaligned CAS"},
		};

		for (size_t k = 0; k < 3; k++)
		{
			dm_op_write(&ops[0], chunk + 256, pat, 32);
			dm_op_atomic(&ops[1], DM_OP_FAA, chunk + 16, 1, 0);
			if (cases[k].want == DM_ERR_ALIGN)
				dm_op_atomic(&ops[2], DM_OP_CAS, cases[k].addr, 0, 1);
			else
				dm_op_write(&ops[2], cases[k].addr, &v, 8);
			bad = -7;
			rc = dm_post(good, ops, 3, &bad);
			CHECK_STATUS(rc, cases[k].want, "batch with a bad 3rd op (%s) rejected", cases[k].what);
			CHECK(bad == 2, "%s: bad_index = 2 (got %d)", cases[k].what, bad);
			CHECK(dm_read(good, chunk + 256, back, 32) == DM_OK && memcmp(back, zero, 32) == 0,
				  "%s: the 1st op's WRITE was not applied", cases[k].what);
			CHECK(read_word(chunk + 16) == before, "%s: the 2nd op's FAA was not applied", cases[k].what);
		}
	}
	check_serving("rejected ops");

	/*
	 * What the client library would refuse to send, sent through its raw
	 * interface on the good connection: the memnode must check it too.
	 */
	{
		uint8_t		body[256],
					rep[256];
		dm_frame_hdr rh;
		dm_batch_hdr bh = {.nops = 1,.bad_index = 0},
					rbh;
		dm_wire_op	op;
		struct
		{
			uint8_t		kind;
			uint32_t	len;
			uint64_t	addr;
			int			want;
			const char *what;
		}			raw[] = {
			{DM_OP_READ, 8, dm_gaddr_make((uint16_t) (node + 1), dm_gaddr_offset(chunk)), DM_ERR_RANGE,
			"READ with another node id"},
			{DM_OP_READ, 8, chunk | DM_GADDR_RESERVED_BIT, DM_ERR_RANGE, "READ with the reserved bit"},
			{DM_OP_READ, 16, dm_gaddr_make(node, region_size - 8), DM_ERR_RANGE, "READ across the end"},
			{DM_OP_READ, DM_FRAME_MAX, chunk, DM_ERR_TOOBIG, "READ of 16 MiB (reply too big)"},
			{DM_OP_READ, 0xFFFFF000u, dm_gaddr_make(node, 64), -1, "READ len near 2^32 (malformed)"},
			{DM_OP_FAA, 8, dm_gaddr_make(node, DM_OFFSET_MASK - 7), DM_ERR_RANGE, "FAA at 2^48-8"},
			{DM_OP_CAS, 8, chunk + 2, DM_ERR_ALIGN, "misaligned CAS"},
			{DM_OP_FETCH_OR, 8, dm_gaddr_make(node, 8), DM_ERR_READONLY, "FETCH_OR superblock"},
		};

		for (size_t k = 0; k < sizeof(raw) / sizeof(raw[0]); k++)
		{
			memset(&op, 0, sizeof(op));
			op.kind = raw[k].kind;
			op.len = raw[k].len;
			op.addr = raw[k].addr;
			memcpy(body, &bh, sizeof(bh));
			memcpy(body + sizeof(bh), &op, sizeof(op));
			memset(&rh, 0, sizeof(rh));
			memset(rep, 0, sizeof(rep));
			rc = dm_client_raw(good, node, DM_MSG_BATCH, body, sizeof(bh) + sizeof(op), &rh, rep, sizeof(rep));
			if (raw[k].want < 0)
			{
				/* structurally invalid (len > DM_FRAME_MAX): the memnode hangs up */
				CHECK_STATUS(rc, DM_ERR_CLOSED, "raw %s: memnode closed the connection", raw[k].what);
				CHECK_STATUS(dm_client_reconnect(good, node), DM_OK, "raw %s: reconnect", raw[k].what);
				continue;
			}
			CHECK(rc == DM_OK, "raw %s: got a reply (%s)", raw[k].what, dm_strerror(rc));
			CHECK_STATUS((int) rh.status, raw[k].want, "raw %s: rejected", raw[k].what);
			memcpy(&rbh, rep, sizeof(rbh));
			/* TOOBIG is the whole reply's fault, not one op's: no index then */
			CHECK(rh.length >= DM_HDR_SIZE + sizeof(rbh) &&
				  rbh.bad_index == (raw[k].want == DM_ERR_TOOBIG ? UINT32_MAX : 0),
				  "raw %s: bad_index %s (got %u)", raw[k].what,
				  raw[k].want == DM_ERR_TOOBIG ? "~0" : "0", rbh.bad_index);
		}
	}
	check_serving("raw bad ops");
}

/* ---- many idle / half-open connections ------------------------------------------ */

static void
test_flood(void)
{
	static int	fds[FLOOD_CONNS];
	int			opened = 0;
	uint64_t	t0,
				ms;
	dm_node_stats st;
	int			rc;

	for (int i = 0; i < FLOOD_CONNS; i++)
	{
		fds[i] = test_raw_connect(mn.port);
		if (fds[i] < 0)
		{
			tap_diag("flood: connect %d failed: %s", i, strerror(errno));
			break;
		}
		opened++;
		/* odd ones send half a header and stall */
		if (i % 2)
		{
			dm_frame_hdr h;

			dm_hdr_init(&h, DM_MSG_HELLO, DM_HDR_SIZE + sizeof(dm_hello_req), 1);
			test_raw_send(fds[i], &h, 12);
		}
	}
	CHECK(opened == FLOOD_CONNS, "flood: %d connections open (%d idle, %d with half a header)",
		  opened, (opened + 1) / 2, opened / 2);

	t0 = now_ns();
	rc = dm_ping(good, node);
	ms = (now_ns() - t0) / 1000000;
	CHECK(rc == DM_OK && ms < 1000, "flood: the connected client pings in %" PRIu64 " ms (%s)", ms, dm_strerror(rc));
	check_serving("flood");
	/* A new client can still connect and work. */
	{
		dm_client_opts o = {.backend = test_ucx() ? DM_BACKEND_UCX : DM_BACKEND_TCP,.op_timeout_ms = 5000,.connect_timeout_ms = 5000};
		dm_client  *c2;

		if (test_auth_on())
			test_auth_opts(&o, "tenant-a");
		c2 = dm_client_create(&o);
		uint16_t	id = 0;
		uint64_t	w = 0;

		t0 = now_ns();
		rc = dm_client_connect(c2, mn.addr, &id);
		if (rc == DM_OK)
			rc = dm_read(c2, chunk + 4096, &w, 8);
		ms = (now_ns() - t0) / 1000000;
		CHECK(rc == DM_OK && ms < 1000, "flood: a new client connects and reads in %" PRIu64 " ms (%s)", ms,
			  dm_strerror(rc));
		dm_client_destroy(c2);
	}
	memset(&st, 0, sizeof(st));
	rc = dm_node_stats_get(good, node, &st);
	CHECK(rc == DM_OK && st.connections >= (uint64_t) opened,
		  "flood: memnode counts >= %d open connections (%" PRIu64 ")", opened, st.connections);

	for (int i = 0; i < opened; i++)
		close(fds[i]);
	/* The memnode notices the closes: wait for its count to drop (a real condition). */
	{
		uint64_t	deadline = now_ns() + UINT64_C(10000000000);

		do
		{
			if (dm_node_stats_get(good, node, &st) != DM_OK)
				break;
			if (st.connections <= 1)
				break;
			usleep(10000);
		} while (now_ns() < deadline);
		CHECK(st.connections == 1, "flood: connections back to 1 after closing (%" PRIu64 ")", st.connections);
	}
	check_serving("flood closed");
}

/* ---- fuzz ------------------------------------------------------------------------ */

static size_t
fuzz_frame(uint8_t *buf, size_t cap)
{
	uint32_t	mode = (uint32_t) (rnd() % 8);
	uint16_t	type;
	uint32_t	body_len = (uint32_t) (rnd() % 512) & ~7u;
	dm_frame_hdr *h = (dm_frame_hdr *) buf;
	uint8_t    *body = buf + DM_HDR_SIZE;

	(void) cap;
	for (uint32_t i = 0; i < body_len; i++)
		body[i] = (uint8_t) rnd();
	switch (rnd() % 6)
	{
		case 0:
			type = DM_MSG_HELLO;
			break;
		case 1:
		case 2:
			type = DM_MSG_BATCH;
			break;
		case 3:
		case 4:
			type = DM_MSG_RPC;
			break;
		default:
			type = (uint16_t) rnd();
	}
	if (type == DM_MSG_BATCH && rnd() % 2)
	{
		/* structurally plausible batch: small nops, ops with random fields */
		dm_batch_hdr bh = {.nops = (uint32_t) (rnd() % 6),.bad_index = 0};
		uint32_t	nops = bh.nops;

		body_len = (uint32_t) (sizeof(bh) + nops * sizeof(dm_wire_op));
		memcpy(body, &bh, sizeof(bh));
		for (uint32_t k = 0; k < nops; k++)
		{
			dm_wire_op	op;

			memset(&op, 0, sizeof(op));
			op.kind = (uint8_t) (rnd() % 7);
			op.len = rnd() % 3 ? 8 : (uint32_t) rnd();
			/* mostly READs and atomics; WRITE payload is random junk below */
			switch (rnd() % 4)
			{
				case 0:
					op.addr = rnd();
					break;
				case 1:
					op.addr = dm_gaddr_make(node, rnd() % (region_size + 4096));
					break;
				case 2:
					/* the superblock / catalog: must stay intact */
					op.addr = dm_gaddr_make(node, rnd() % 16384);
					break;
				default:
					op.addr = dm_gaddr_make((uint16_t) rnd(), rnd());
			}
			op.arg0 = rnd();
			op.arg1 = rnd();
			memcpy(body + sizeof(bh) + k * sizeof(op), &op, sizeof(op));
		}
		if (rnd() % 2)
			body_len += (uint32_t) (rnd() % 64) & ~7u;
	}
	else if (type == DM_MSG_RPC && rnd() % 2)
	{
		dm_rpc_hdr	rh = {.code = (uint32_t) (rnd() % (DM_RPC_CODE_MAX + 3))};
		int			need = dm_rpc_request_size(rh.code);

		/* never drop / free things for real: only harmless codes get valid lengths */
		if (rh.code == DM_RPC_CAT_DROP || rh.code == DM_RPC_CHUNK_FREE || rh.code == DM_RPC_CHUNK_FREE_OWNER)
			rh.code = DM_RPC_PING;
		need = dm_rpc_request_size(rh.code);
		memcpy(body, &rh, sizeof(rh));
		body_len = (uint32_t) sizeof(rh) + (uint32_t) (need > 0 && rnd() % 2 ? need : (int) (rnd() % 64) & ~7);
	}
	dm_hdr_init(h, type, DM_HDR_SIZE + body_len, rnd());
	switch (mode)
	{
		case 0:
			h->length = (uint32_t) rnd();	/* any length at all */
			break;
		case 1:
			h->flags = (uint16_t) rnd();
			break;
		case 2:
			h->magic = (uint32_t) rnd();
			break;
		case 3:
			h->status = (uint32_t) rnd();
			break;
		default:
			break;				/* consistent header */
	}
	return DM_HDR_SIZE + body_len;
}

static void
test_fuzz(void)
{
	static uint8_t buf[DM_HDR_SIZE + 1024];
	int			sent = 0,
				conn_fail = 0,
				alive = 1;
	dm_superblock sb;

	for (int i = 0; i < FUZZ_FRAMES; i++)
	{
		int			fd = test_raw_connect(mn.port);
		size_t		n;
		dm_frame_hdr rh;
		dm_hello_rep hr;

		if (fd < 0)
		{
			conn_fail++;
			continue;
		}
		/* half of the time after a proper handshake, to reach the deeper decoders */
		if (rnd() % 2)
			test_raw_hello(fd, DM_PROTO_VERSION, &rh, &hr);
		n = fuzz_frame(buf, sizeof(buf));
		/* sometimes cut the frame short, sometimes send two */
		if (rnd() % 8 == 0)
			n = (size_t) (rnd() % n);
		if (test_raw_send(fd, buf, n) == 0)
			sent++;
		if (rnd() % 8 == 0)
		{
			n = fuzz_frame(buf, sizeof(buf));
			test_raw_send(fd, buf, n);
		}
		/* abortive close half of the time (RST instead of FIN) */
		if (rnd() % 2)
		{
			struct linger lg = {.l_onoff = 1,.l_linger = 0};

			setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		}
		close(fd);
		if (i % 250 == 249)
		{
			if (kill(mn.pid, 0) != 0 || dm_ping(good, node) != DM_OK)
			{
				alive = 0;
				tap_diag("fuzz: memnode stopped serving after frame %d (seed state %" PRIx64 ")", i, rng);
				break;
			}
		}
	}
	CHECK(alive, "fuzz: memnode served pings throughout %d random frames", FUZZ_FRAMES);
	CHECK(conn_fail == 0, "fuzz: every connection was accepted (%d failed)", conn_fail);
	CHECK(sent > FUZZ_FRAMES / 2, "fuzz: %d frames sent", sent);
	check_serving("fuzz");
	CHECK(dm_read(good, dm_gaddr_make(node, 0), &sb, sizeof(sb)) == DM_OK && sb.magic == DM_SB_MAGIC &&
		  sb.incarnation == mn.incarnation && sb.state == DM_SB_LIVE && sb.node_id == node,
		  "fuzz: superblock intact");
}

int
main(void)
{
	struct rlimit rl;
	const char *args[] = {"--id", "3", "--size", "64M", "--chunk-size", "1M", "--threads", "2",
	"--log-level", "error", NULL, NULL, NULL};
	dm_client_opts o;
	dm_node_stats st;
	int			rc;

	/* 2000 connections from this process, plus the memnode's side (it inherits the limit) */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max)
	{
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < FLOOD_CONNS + 100)
		tap_diag("RLIMIT_NOFILE is %llu: the flood test will open fewer connections",
				 (unsigned long long) rl.rlim_cur);

	if (test_auth_on())
	{
		args[10] = "--auth-file";
		args[11] = test_auth_file();
		tap_diag("with authentication (DM_TEST_AUTH): every client is tenant-a");
	}
	if (memnode_start(&mn, 0, (const char *const *) args) != 0)
	{
		CHECK(0, "memnode started");
		return tap_done();
	}
	memset(&o, 0, sizeof(o));
	/* the ucx variant: the well-behaved clients use ucx (after the same handshake) */
	o.backend = test_ucx() ? DM_BACKEND_UCX : DM_BACKEND_TCP;
	o.op_timeout_ms = 5000;
	if (test_auth_on())
		test_auth_opts(&o, "tenant-a");
	good = dm_client_create(&o);
	rc = dm_client_connect(good, mn.addr, &node);
	CHECK_STATUS(rc, DM_OK, "good client connected");
	if (rc != DM_OK)
	{
		memnode_stop(&mn, SIGKILL);
		return tap_done();
	}
	{
		dm_node_info ni;

		dm_client_node_info(good, 0, &ni);
		region_size = ni.region_size;
		CHECK(node == 3 && ni.incarnation == mn.incarnation && region_size == (UINT64_C(64) << 20),
			  "node id 3, incarnation as in the ready line, 64 MiB");
	}
	if (test_auth_on())
	{
		/* with authentication a chunk's owner must be a tree of the caller */
		dm_tree_name tn;
		dm_tree_info ti;

		dm_tree_name_named(&tn, "robust");
		CHECK_STATUS(dm_tree_create(good, node, &tn, &ti), DM_OK, "good client creates its tree");
		CHECK_STATUS(dm_chunk_alloc(good, node, ti.tree_id, &chunk, NULL), DM_OK, "good client has a chunk");
	}
	else
		CHECK_STATUS(dm_chunk_alloc(good, node, 0xABCD, &chunk, NULL), DM_OK, "good client has a chunk");
	check_serving("start");

	test_raw_abuse();
	test_bad_ops();
	test_flood();
	test_fuzz();

	rc = dm_node_stats_get(good, node, &st);
	CHECK_STATUS(rc, DM_OK, "stats");
	CHECK(st.frames_bad > 0, "stats: frames_bad = %" PRIu64, st.frames_bad);
	CHECK(st.requests_rejected > 0, "stats: requests_rejected = %" PRIu64, st.requests_rejected);
	CHECK(st.connections_total > FLOOD_CONNS + FUZZ_FRAMES / 2, "stats: connections_total = %" PRIu64,
		  st.connections_total);
	tap_diag("stats: frames_bad=%" PRIu64 " requests_rejected=%" PRIu64 " batches=%" PRIu64 " rpcs=%" PRIu64
			 " connections_total=%" PRIu64,
			 st.frames_bad, st.requests_rejected, st.batches, st.rpcs, st.connections_total);

	dm_client_destroy(good);
	rc = memnode_stop(&mn, SIGTERM);
	CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "memnode exits cleanly on SIGTERM after all that");
	return tap_done();
}
