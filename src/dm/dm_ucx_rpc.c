/*
 * dm_ucx_rpc.c — RPCs over UCX active messages, the client's half
 * (docs/design.md §4, "RPCs over UCX"; memnode/ucx_rpc.c is the other):
 * dm_client_raw's RPC frame as a message on the endpoint the one-sided
 * operations use, with the connection's token (from UCX_ATTACH, dm_ucx.c)
 * as its header, and the reply frame taken from the message the memnode
 * sends back to this client's worker.  The wait is dm_ucx.c's (the
 * client's wait callback, the control socket watched), so timeouts and a
 * memnode gone give tcp's errors.
 */
#include <stdio.h>
#include <string.h>
#include <ucp/api/ucp.h>

#include "dm_client_int.h"
#include "dm_ucx.h"

/*
 * A reply to an RPC over UCX (dm_ucx_rpc), run inside ucp_worker_progress.
 * Taken only if it names the connection whose reply is awaited (token) and
 * carries the awaited seq; a late reply to a request given up on (its
 * connection was broken, its token forgotten) is dropped.
 */
static ucs_status_t
rpc_reply(void *arg, const void *header, size_t header_length, void *data, size_t length,
		  const ucp_am_recv_param_t *param)
{
	dm_client  *c = arg;
	dm_conn    *cn = c->ucx_rpc_cn;
	dm_ucx_am_hdr ah;
	dm_frame_hdr h;

	if (cn == NULL || header_length != sizeof(ah))
		return UCS_OK;
	memcpy(&ah, header, sizeof(ah));
	if (memcmp(ah.token, cn->ucx_token, sizeof(ah.token)) != 0)
		return UCS_OK;
	if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) || length < DM_HDR_SIZE)
	{
		cn->ucx_rpc_state = -1;
		return UCS_OK;
	}
	memcpy(&h, data, sizeof(h));
	if (h.seq != cn->seq)
		return UCS_OK;
	if (dm_hdr_check(&h, DM_FRAME_MAX) != DM_OK || h.length != length ||
		h.type != (DM_MSG_RPC | DM_MSG_REPLY) || h.status > DM_STATUS_MAX ||
		dm_buf_reserve(&cn->rbuf, &cn->rcap, (uint32_t) length) != DM_OK)
	{
		cn->ucx_rpc_state = -1;
		return UCS_OK;
	}
	memcpy(cn->rbuf, data, length);
	cn->ucx_rpc_state = 1;
	return UCS_OK;
}

/*
 * An RPC as a UCX active message: the frame dm_client_raw built in
 * cn->sbuf, with the connection's token as the message header, on the
 * endpoint the one-sided operations use; the memnode runs it as a frame
 * of our control connection and sends the reply frame back to our worker.
 * What can go wrong goes as over tcp: no reply within the op timeout is
 * DM_ERR_TIMEOUT, the memnode gone (control socket hung up, endpoint
 * failed) DM_ERR_CLOSED, and either breaks the connection -- its control
 * socket closes, so the memnode runs nothing it still receives from us
 * (memnode/ucx_rpc.c), and a reply still on its way matches no token.
 */
int
dm_ucx_rpc(dm_client *c, dm_conn *cn, uint32_t size, uint64_t deadline, dm_frame_hdr **hdr)
{
	ucp_request_param_t p;
	ucs_status_ptr_t r;
	int			rc;

	/* no liveness read first (a batch's): as over tcp, a dead memnode shows as its control socket closing */
	if (!c->ucx_rpc_ready)
	{
		/* this worker's first RPC: replies to it land in rpc_reply */
		ucp_am_handler_param_t hp = {.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
			UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG,
		.id = DM_UCX_AM_REPLY,.flags = UCP_AM_FLAG_WHOLE_MSG,.cb = rpc_reply,.arg = c};
		ucs_status_t st = U.ucp_worker_set_am_recv_handler(c->ucx_worker, &hp);

		if (st != UCS_OK)
			return dm_fail(c, cn, DM_ERR_CLOSED, "cannot receive RPC replies over UCX: %s", U.ucs_status_string(st));
		c->ucx_rpc_ready = 1;
	}
	memset(&p, 0, sizeof(p));
	p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
	p.flags = UCP_AM_SEND_FLAG_EAGER;	/* the memnode takes no rendezvous */
	cn->ucx_rpc_state = 0;
	c->ucx_rpc_cn = cn;
	/* header and frame stay in cn (token, sbuf) until the send is done or the endpoint closed */
	r = U.ucp_am_send_nbx(cn->ucx_ep, DM_UCX_AM_RPC, cn->ucx_token, sizeof(dm_ucx_am_hdr), cn->sbuf, size, &p);
	if (UCS_PTR_IS_ERR(r))
		rc = dm_fail(c, cn, dm_ucx_op_error(cn, UCS_PTR_STATUS(r)), "sending an RPC failed: %s",
					 U.ucs_status_string(UCS_PTR_STATUS(r)));
	else
		rc = dm_ucx_wait(c, cn, r, &cn->ucx_rpc_state, deadline, "an RPC");
	c->ucx_rpc_cn = NULL;
	if (rc != DM_OK)
		return rc;
	if (cn->ucx_rpc_state < 0)
		return dm_fail(c, cn, DM_ERR_PROTOCOL, "malformed RPC reply over UCX");
	if (cn->ucx_ep_status != UCS_OK)
		return dm_fail(c, cn, DM_ERR_CLOSED, "UCX endpoint failed: %s", U.ucs_status_string(cn->ucx_ep_status));
	cn->ctr.rpcs_ucx++;
	*hdr = (dm_frame_hdr *) cn->rbuf;
	return DM_OK;
}
