/*
 * dm_proto.c — encoding and strict decoding of memnode protocol frames
 * (layout in dm_proto.h).
 */
#include <string.h>

#include "dm_proto.h"

_Static_assert(sizeof(dm_frame_hdr) == 24, "frame header is 24 bytes on the wire");
_Static_assert(sizeof(dm_wire_op) == 32, "wire op is 32 bytes");
_Static_assert(sizeof(dm_hello_req) % 8 == 0, "bodies are multiples of 8");
_Static_assert(sizeof(dm_hello_rep) % 8 == 0, "bodies are multiples of 8");
_Static_assert(sizeof(dm_tree_name) == 128, "tree name is 128 bytes");
_Static_assert(sizeof(dm_tree_info) % 8 == 0, "bodies are multiples of 8");
_Static_assert(sizeof(dm_node_stats) % 8 == 0, "bodies are multiples of 8");
_Static_assert(sizeof(dm_rpc_list_req) % 8 == 0, "bodies are multiples of 8");

void
dm_hdr_init(dm_frame_hdr *h, uint16_t type, uint32_t length, uint64_t seq)
{
	memset(h, 0, sizeof(*h));
	h->magic = DM_PROTO_MAGIC;
	h->length = length;
	h->type = type;
	h->seq = seq;
}

int
dm_hdr_check(const dm_frame_hdr *h, uint32_t max_len)
{
	if (h->magic != DM_PROTO_MAGIC || h->flags != 0)
		return DM_ERR_PROTOCOL;
	if (h->length < DM_HDR_SIZE || (h->length & 7) != 0)
		return DM_ERR_PROTOCOL;
	if (h->length > max_len)
		return DM_ERR_TOOBIG;
	return DM_OK;
}

static int
op_len_valid(const dm_wire_op *op)
{
	switch (op->kind)
	{
		case DM_OP_READ:
		case DM_OP_WRITE:
			return op->len > 0 && op->len <= DM_FRAME_MAX;
		case DM_OP_CAS:
		case DM_OP_FAA:
		case DM_OP_FETCH_OR:
		case DM_OP_FETCH_MAX:
			return op->len == 8;
		default:
			return 0;
	}
}

uint64_t
dm_batch_request_size(const dm_wire_op *ops, uint32_t nops)
{
	uint64_t	size = DM_HDR_SIZE + sizeof(dm_batch_hdr) + (uint64_t) nops * sizeof(dm_wire_op);

	for (uint32_t i = 0; i < nops; i++)
		if (ops[i].kind == DM_OP_WRITE)
			size += dm_pad8(ops[i].len);
	return size > DM_FRAME_MAX ? 0 : size;
}

uint64_t
dm_batch_reply_size(const dm_wire_op *ops, uint32_t nops)
{
	uint64_t	size = DM_HDR_SIZE + sizeof(dm_batch_hdr) + (uint64_t) nops * sizeof(uint64_t);

	for (uint32_t i = 0; i < nops; i++)
		if (ops[i].kind == DM_OP_READ)
			size += dm_pad8(ops[i].len);
	return size > DM_FRAME_MAX ? 0 : size;
}

int
dm_batch_decode(const uint8_t *body, uint32_t body_len,
				const dm_wire_op **ops_out, uint32_t *nops_out,
				const uint8_t **payload_out, uint32_t *bad_index)
{
	dm_batch_hdr bh;
	const dm_wire_op *ops;
	uint64_t	need;

	*bad_index = UINT32_MAX;
	if (body_len < sizeof(bh))
		return DM_ERR_PROTOCOL;
	memcpy(&bh, body, sizeof(bh));
	if (bh.nops == 0 || bh.nops > DM_BATCH_MAX_OPS)
		return DM_ERR_PROTOCOL;
	need = sizeof(bh) + (uint64_t) bh.nops * sizeof(dm_wire_op);
	if (need > body_len)
		return DM_ERR_PROTOCOL;
	/* body is 8-aligned (frames are read into aligned buffers), so is ops */
	ops = (const dm_wire_op *) (body + sizeof(bh));
	for (uint32_t i = 0; i < bh.nops; i++)
	{
		if (!op_len_valid(&ops[i]) || (ops[i].flags & ~DM_OPF_ALL) != 0 ||
			((ops[i].flags & DM_OPF_GUARD) && ops[i].kind != DM_OP_CAS))
		{
			*bad_index = i;
			return DM_ERR_PROTOCOL;
		}
		if (ops[i].kind == DM_OP_WRITE)
			need += dm_pad8(ops[i].len);
		if (need > body_len)
		{
			*bad_index = i;
			return DM_ERR_PROTOCOL;
		}
	}
	if (need != body_len)
		return DM_ERR_PROTOCOL;
	*ops_out = ops;
	*nops_out = bh.nops;
	*payload_out = body + sizeof(bh) + (uint64_t) bh.nops * sizeof(dm_wire_op);
	return DM_OK;
}

int
dm_rpc_request_size(uint32_t code)
{
	switch ((dm_rpc_code) code)
	{
		case DM_RPC_PING:
		case DM_RPC_CHUNK_ALLOC:
		case DM_RPC_CHUNK_FREE:
		case DM_RPC_CHUNK_FREE_OWNER:
			return (int) sizeof(dm_rpc_u64);
		case DM_RPC_UCX_ATTACH:
			return (int) sizeof(dm_rpc_ucx_attach_req);
		case DM_RPC_CAT_CREATE:
		case DM_RPC_CAT_OPEN:
		case DM_RPC_CAT_DROP:
			return (int) sizeof(dm_tree_name);
		case DM_RPC_CAT_LIST:
			return (int) sizeof(dm_rpc_list_req);
		case DM_RPC_SLAB_ALLOC:
			return (int) sizeof(dm_rpc_slab_req);
		case DM_RPC_SLAB_FREE:
			return (int) sizeof(dm_rpc_slab_free_req);
		case DM_RPC_STATS:
		case DM_RPC_OFF_LOAD:
			return 0;
		case DM_RPC_OFF_LOOKUP:
		case DM_RPC_OFF_SCAN:
		case DM_RPC_OFF_INSERT:
		case DM_RPC_OFF_DELETE:
			return (int) sizeof(dm_rpc_off_req);
		case DM_RPC_OFF_DRAIN:
			return (int) sizeof(dm_rpc_off_drain_req);
	}
	return -1;
}
