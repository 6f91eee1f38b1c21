/*
 * test_ucx_rpc.c — RPCs over UCX active messages seen from the wire: a raw
 * UCX peer (its own UCX context, worker and endpoint; its control
 * connection a raw socket) sends the memnode (memnode/ucx_rpc.c) what
 * dm_client never would.  The memnode must run only whole RPC frames that
 * carry the token of a live, handshaken control connection, run them as
 * that connection (with DM_TEST_AUTH=1: its identity), and go on serving:
 *   - UCX_ATTACH hands out a token; a second attach on a connection is
 *     refused (INVALID);
 *   - a PING with the token is answered over UCX, with the token, the
 *     seq and the ping's value;
 *   - a wrong token, a short header: dropped unanswered (frames_bad
 *     counts them), the connection stays usable;
 *   - a frame whose length is not the message's, or that is no RPC (a
 *     BATCH with an FAA): the control connection is closed, nothing runs;
 *   - the token of a connection that closed: dropped, the request (a chunk
 *     allocation) does not run;
 *   - a well-behaved client over ucx is served throughout.
 * In the ucx variants (NAME+ucx-tcp, NAME+ucx-posix) over that UCX_TLS;
 * the plain run over UCX's default transports.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dm_client.h"
#include "dm_ucx.h"
#include "testauth.h"
#include "testutil.h"

static memnode_proc mn;
static dm_client *good;
static uint16_t node;
static ucp_context_h ctx;
static ucp_worker_h worker;
static ucp_ep_h ep;				/* to the memnode's worker */
static uint64_t owner = 0x5151;	/* chunks' owner: with authentication a tree of tenant-a */
static int	peer_errors;		/* our endpoint asks for peer failure reports (as dm_ucx.c's) */

/* the last reply that arrived */
static int	got_reply;
static dm_ucx_am_hdr reply_hdr;
static uint8_t reply[4096];
static size_t reply_len;

static ucs_status_t
on_reply(void *arg, const void *header, size_t header_length, void *data, size_t length,
		 const ucp_am_recv_param_t *param)
{
	(void) arg;
	(void) param;
	if (header_length == sizeof(reply_hdr) && length <= sizeof(reply))
	{
		memcpy(&reply_hdr, header, sizeof(reply_hdr));
		memcpy(reply, data, length);
		reply_len = length;
		got_reply = 1;
	}
	return UCS_OK;
}

static void
ep_failed(void *arg, ucp_ep_h failed, ucs_status_t st)
{
	(void) arg;
	(void) failed;
	tap_diag("the raw peer's endpoint failed: %s", U.ucs_status_string(st));
}

static int
ucx_setup(void)
{
	ucp_config_t *config;
	ucp_params_t params;
	ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,.thread_mode = UCS_THREAD_MODE_SINGLE};
	ucp_am_handler_param_t hp = {.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
	UCP_AM_HANDLER_PARAM_FIELD_CB,.id = DM_UCX_AM_REPLY,.flags = UCP_AM_FLAG_WHOLE_MSG,.cb = on_reply};

	if (dm_ucx_load() != NULL || U.ucp_config_read(NULL, NULL, &config) != UCS_OK)
		return -1;
	memset(&params, 0, sizeof(params));
	params.field_mask = UCP_PARAM_FIELD_FEATURES;
	params.features = UCP_FEATURE_AM;
	if (U.ucp_init_version(UCP_API_MAJOR, UCP_API_MINOR, &params, config, &ctx) != UCS_OK)
		return -1;
	U.ucp_config_release(config);
	if (U.ucp_worker_create(ctx, &wp, &worker) != UCS_OK ||
		U.ucp_worker_set_am_recv_handler(worker, &hp) != UCS_OK)
		return -1;
	peer_errors = !dm_ucx_no_peer_errors();
	return 0;
}

/* Progress until a reply came or ms passed: 1 if one came. */
static int
wait_reply(int ms)
{
	uint64_t	until = now_ns() + (uint64_t) ms * 1000000u;

	while (!got_reply && now_ns() < until)
		if (U.ucp_worker_progress(worker) == 0)
			usleep(50);
	return got_reply;
}

/* Send one message (header of hlen bytes) and wait for its local completion. */
static int
send_am(const void *hdr, size_t hlen, const void *data, size_t len)
{
	ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,.flags = UCP_AM_SEND_FLAG_EAGER};
	ucs_status_ptr_t r;
	ucs_status_t st = UCS_OK;
	uint64_t	until = now_ns() + 5000000000u;

	got_reply = 0;
	r = U.ucp_am_send_nbx(ep, DM_UCX_AM_RPC, hdr, hlen, data, len, &p);
	if (UCS_PTR_IS_ERR(r))
		return -1;
	if (r != NULL)
	{
		while ((st = U.ucp_request_check_status(r)) == UCS_INPROGRESS && now_ns() < until)
			U.ucp_worker_progress(worker);
		U.ucp_request_free(r);
	}
	return st == UCS_OK ? 0 : -1;
}

/*
 * A raw control connection: handshake, then UCX_ATTACH with our worker's
 * address.  Its token in token; the first call also makes ep from the
 * memnode's worker address.  The socket, or -1.  attach_status gets the
 * attach's status.
 */
static int
raw_attach(uint64_t token[2], uint32_t *attach_status)
{
	static struct
	{
		dm_rpc_hdr	rh;
		dm_rpc_ucx_attach_req ar;
	}			body;
	static uint8_t frame[DM_HDR_SIZE + sizeof(body)];
	static uint8_t rbody[8192];
	dm_frame_hdr h;
	dm_hello_rep hr;
	dm_rpc_ucx_rep rep;
	ucp_address_t *addr;
	size_t		alen,
				n;
	int			fd = test_raw_connect(mn.port);

	if (fd < 0 || test_raw_hello(fd, DM_PROTO_VERSION, &h, &hr) != 0 || h.status != DM_OK ||
		U.ucp_worker_get_address(worker, &addr, &alen) != UCS_OK)
		return -1;
	memset(&body, 0, sizeof(body));
	body.rh.code = DM_RPC_UCX_ATTACH;
	body.ar.flags = peer_errors ? DM_UCX_PEER_ERRORS : 0;
	body.ar.addr_len = (uint32_t) alen;
	memcpy(body.ar.addr, addr, alen);
	U.ucp_worker_release_address(worker, addr);
	n = test_raw_frame(frame, DM_MSG_RPC, &body, sizeof(body), 900);
	if (test_raw_send(fd, frame, n) != 0 || test_raw_recv(fd, &h, sizeof(h)) != 0 ||
		h.length < DM_HDR_SIZE || h.length - DM_HDR_SIZE > sizeof(rbody) ||
		test_raw_recv(fd, rbody, h.length - DM_HDR_SIZE) != 0)
		return -1;
	*attach_status = h.status;
	if (h.status != DM_OK)
		return fd;
	memcpy(&rep, rbody + sizeof(dm_rpc_hdr), sizeof(rep));
	memcpy(token, rep.token, sizeof(rep.token));
	if (ep == NULL)
	{
		ucp_ep_params_t ep_params = {.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS,
		.address = (const ucp_address_t *) (rbody + sizeof(dm_rpc_hdr) + sizeof(rep) + rep.rkey_len)};

		/* the error handling we told the memnode (its endpoint to us mirrors it) */
		if (peer_errors)
		{
			ep_params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
			ep_params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
			ep_params.err_handler.cb = ep_failed;
		}
		if (U.ucp_ep_create(worker, &ep_params, &ep) != UCS_OK)
			return -1;
	}
	return fd;
}

/* An RPC frame (code, args) with seq into buf; its length. */
static size_t
rpc_frame(uint8_t *buf, uint32_t code, const void *args, uint32_t alen, uint64_t seq)
{
	uint8_t		body[sizeof(dm_rpc_hdr) + 256];
	dm_rpc_hdr	rh = {.code = code};

	memset(body, 0, sizeof(body));
	memcpy(body, &rh, sizeof(rh));
	memcpy(body + sizeof(rh), args, alen);
	return test_raw_frame(buf, DM_MSG_RPC, body, (uint32_t) (sizeof(rh) + dm_pad8(alen)), seq);
}

static uint64_t
frames_bad(void)
{
	dm_node_stats st;

	return dm_node_stats_get(good, node, &st) == DM_OK ? st.frames_bad : UINT64_MAX;
}

static uint64_t
chunks_used(void)
{
	dm_node_stats st;

	return dm_node_stats_get(good, node, &st) == DM_OK ? st.chunks_used : UINT64_MAX;
}

static void
check_serving(const char *after)
{
	dm_gaddr	ch = 0;
	dm_counters k;

	CHECK(kill(mn.pid, 0) == 0 && dm_ping(good, node) == DM_OK && dm_chunk_alloc(good, node, owner, &ch, NULL) == DM_OK &&
		  dm_chunk_free(good, ch) == DM_OK, "after %s: the memnode serves a client over ucx (%s)", after,
		  dm_client_error(good));
	dm_client_counters(good, node, &k);
	CHECK(k.rpcs_ucx == k.rpcs, "after %s: its %" PRIu64 " RPCs went over UCX (%" PRIu64 ")", after, k.rpcs,
		  k.rpcs_ucx);
}

int
main(void)
{
	const char *args[] = {"--id", "9", "--size", "64M", "--chunk-size", "1M", "--threads", "2", NULL, NULL, NULL, NULL};
	dm_client_opts o = {.backend = DM_BACKEND_UCX,.op_timeout_ms = 5000};
	uint8_t		frame[512];
	uint64_t	ta[2] = {0, 0},
				tb[2],
				tc[2],
				td[2],
				bad0,
				used0,
				value = 0x1234ABCD;
	uint32_t	ast = 0;
	size_t		n;
	int			fa,
				fb,
				fc,
				fd;

	/* the ucx variants add --ucx themselves; the plain run uses UCX's default transports */
	if (!test_ucx())
		args[8] = "--ucx";
	if (test_auth_on())
	{
		args[test_ucx() ? 8 : 9] = "--auth-file";
		args[test_ucx() ? 9 : 10] = test_auth_file();
		test_auth_opts(&o, "tenant-a");
	}
	if (!CHECK(memnode_start(&mn, 0, args) == 0, "memnode started with --ucx"))
		return tap_done();
	good = dm_client_create(&o);
	if (!CHECK(good && dm_client_connect(good, mn.addr, &node) == DM_OK, "a client over ucx connected") ||
		!CHECK(ucx_setup() == 0, "a raw UCX peer"))
	{
		memnode_stop(&mn, SIGKILL);
		return tap_done();
	}
	if (test_auth_on())
	{
		/* with authentication a chunk's owner must be a tree of the caller */
		dm_tree_name tn;
		dm_tree_info ti;

		dm_tree_name_named(&tn, "ucx-rpc");
		CHECK_STATUS(dm_tree_create(good, node, &tn, &ti), DM_OK, "tenant-a's tree");
		owner = ti.tree_id;
	}
	{
		/* the raw peer's allocation below must be one that would run (a sound RPC) */
		dm_gaddr	ch = 0;

		CHECK(dm_chunk_alloc(good, node, owner, &ch, NULL) == DM_OK && dm_chunk_free(good, ch) == DM_OK,
			  "the owner used below can be allocated for");
	}

	/* the attach, and a PING over UCX */
	fa = raw_attach(ta, &ast);
	CHECK(fa >= 0 && ast == DM_OK && (ta[0] | ta[1]) != 0 && ep != NULL, "attach: a token (%s)", dm_strerror((int) ast));
	n = rpc_frame(frame, DM_RPC_PING, &value, 8, 41);
	CHECK(send_am(ta, sizeof(ta), frame, n) == 0 && wait_reply(3000), "ping over UCX: answered");
	{
		dm_frame_hdr h;
		dm_rpc_ping_rep pr;

		memcpy(&h, reply, sizeof(h));
		memcpy(&pr, reply + DM_HDR_SIZE + sizeof(dm_rpc_hdr), sizeof(pr));
		CHECK(got_reply && memcmp(reply_hdr.token, ta, sizeof(ta)) == 0 && reply_len == h.length &&
			  h.type == (DM_MSG_RPC | DM_MSG_REPLY) && h.seq == 41 && h.status == DM_OK && pr.token == value,
			  "ping over UCX: the reply carries the token, the seq and the value");
	}

	/* dropped: a wrong token, a short header; the connection stays usable */
	bad0 = frames_bad();
	{
		uint64_t	wrong[2] = {ta[0] ^ 1, ta[1]};

		CHECK(send_am(wrong, sizeof(wrong), frame, n) == 0 && !wait_reply(300), "wrong token: no answer");
		CHECK(send_am(ta, 8, frame, n) == 0 && !wait_reply(300), "an 8-byte header: no answer");
		CHECK(frames_bad() == bad0 + 2, "both counted in frames_bad (%" PRIu64 " more)", frames_bad() - bad0);
	}
	CHECK(send_am(ta, sizeof(ta), frame, n) == 0 && wait_reply(3000), "the connection still works over UCX");
	CHECK(!test_raw_closed(fa, 100, NULL), "and its control socket is open");

	/* closed: a frame shorter than its header says; a BATCH (an FAA) over UCX */
	fb = raw_attach(tb, &ast);
	CHECK(fb >= 0 && ast == DM_OK, "a second attached connection");
	fc = raw_attach(tc, &ast);
	CHECK(fc >= 0 && ast == DM_OK, "a third attached connection");
	CHECK(send_am(tb, sizeof(tb), frame, n - 8) == 0 && !wait_reply(300) && test_raw_closed(fb, 2000, NULL),
		  "a truncated frame: no answer, the control connection closed");
	{
		dm_gaddr	ch = 0;
		uint8_t		body[TEST_FAA_BODY_MAX];
		uint64_t	w = 1;
		uint32_t	blen;

		CHECK_STATUS(dm_chunk_alloc(good, node, owner, &ch, NULL), DM_OK, "a chunk for the FAA");
		blen = test_raw_faa_body(body, ch);
		n = test_raw_frame(frame, DM_MSG_BATCH, body, blen, 42);
		CHECK(send_am(tc, sizeof(tc), frame, n) == 0 && !wait_reply(300) && test_raw_closed(fc, 2000, NULL),
			  "a BATCH over UCX: no answer, the control connection closed");
		CHECK(dm_read(good, ch, &w, 8) == DM_OK && w == 0, "and the FAA was not applied (word %" PRIu64 ")", w);
		dm_chunk_free(good, ch);
	}

	/* the token of a connection that closed: its request does not run */
	fd = raw_attach(td, &ast);
	CHECK(fd >= 0 && ast == DM_OK, "another attached connection");
	close(fd);
	usleep(200 * 1000);			/* the memnode notices the hang-up */
	used0 = chunks_used();
	bad0 = frames_bad();
	{
		n = rpc_frame(frame, DM_RPC_CHUNK_ALLOC, &owner, 8, 43);
		CHECK(send_am(td, sizeof(td), frame, n) == 0 && !wait_reply(300), "a closed connection's token: no answer");
	}
	CHECK(chunks_used() == used0 && frames_bad() == bad0 + 1,
		  "its chunk allocation did not run (%" PRIu64 " chunks in use, %" PRIu64 " before), counted as bad",
		  chunks_used(), used0);
	{
		dm_frame_hdr h;
		dm_rpc_alloc_rep ar;

		/* the same request with a live token runs */
		CHECK(send_am(ta, sizeof(ta), frame, n) == 0 && wait_reply(3000), "the same allocation, live token: answered");
		memcpy(&h, reply, sizeof(h));
		memcpy(&ar, reply + DM_HDR_SIZE + sizeof(dm_rpc_hdr), sizeof(ar));
		CHECK(h.status == DM_OK && chunks_used() == used0 + 1 && dm_chunk_free(good, ar.chunk) == DM_OK,
			  "and ran (%s, %" PRIu64 " chunks in use)", dm_strerror((int) h.status), chunks_used());
	}

	/* a second attach on one connection is refused */
	{
		static struct
		{
			dm_rpc_hdr	rh;
			dm_rpc_ucx_attach_req ar;
		}			body;
		static uint8_t af[DM_HDR_SIZE + sizeof(body)];
		dm_frame_hdr h;
		uint8_t		rest[64];

		memset(&body, 0, sizeof(body));
		body.rh.code = DM_RPC_UCX_ATTACH;
		body.ar.addr_len = 16;	/* never looked at: refused first */
		n = test_raw_frame(af, DM_MSG_RPC, &body, sizeof(body), 44);
		CHECK(test_raw_send(fa, af, n) == 0 && test_raw_recv(fa, &h, sizeof(h)) == 0 && h.status == DM_ERR_INVALID &&
			  h.length - DM_HDR_SIZE <= sizeof(rest) && test_raw_recv(fa, rest, h.length - DM_HDR_SIZE) == 0,
			  "a second attach on a connection: INVALID (%s)", dm_strerror((int) h.status));
		n = rpc_frame(frame, DM_RPC_PING, &value, 8, 45);
		CHECK(send_am(ta, sizeof(ta), frame, n) == 0 && wait_reply(3000), "its first token still works");
	}
	check_serving("all that");
	close(fa);
	dm_client_destroy(good);
	CHECK(WIFEXITED(memnode_stop(&mn, SIGTERM)), "memnode exits on SIGTERM");
	return tap_done();
}
