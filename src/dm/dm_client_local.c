/*
 * dm_client_local.c — an in-process client: the transport the memnode's
 * offload executor (memnode/offload.c) gives the tree code.
 *
 * The executor runs the very functions clients run (dm_tree_descend.c
 * descent, dm_tree.c level_apply, dm_tree_io.c locks and fenced writes) on a dm_tree handle
 * whose client has one connection, to the memnode itself, that hands each
 * frame to the memnode's request executor (mn_exec_frame) instead of a
 * socket.  Its batches are thus validated, checked against the calling
 * identity's trees (auth.c) and journaled exactly like a tcp client's, and
 * they use the memnode CPU's atomics — the same atomics on the same memory
 * that tcp batches (executed by the memnode's workers) and shm clients
 * (mapping the region) use, so the executor and remote clients exclude each
 * other by the same lock words and version guards.  With an RDMA NIC that
 * would not hold (NIC atomics are not atomic with CPU atomics, NAM paper
 * §3): there the executor would have to send its atomics through the NIC
 * (a loopback queue pair); see docs/design.md §3.
 *
 * The connection behaves like a tcp one (dm_client_is_local() is 0): no
 * redo slots, because the memnode executes each batch whole and journals
 * it, as for tcp.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dm_client_int.h"

dm_client *
dm_client_create_local(uint16_t node_id, uint64_t region_size, uint64_t chunk_size,
					   dm_local_exec_fn exec, void *arg)
{
	dm_client_opts opts = {.backend = DM_BACKEND_TCP, .spin_us = -1, .name = "offload"};
	dm_client  *c = dm_client_create(&opts);
	dm_conn    *cn;

	if (c == NULL)
		return NULL;
	cn = calloc(1, sizeof(*cn));
	c->conns = malloc(sizeof(dm_conn *));
	if (cn == NULL || c->conns == NULL || exec == NULL)
	{
		free(cn);
		dm_client_destroy(c);
		return NULL;
	}
	snprintf(cn->address, sizeof(cn->address), "local:%u", node_id);
	cn->node_id = node_id;
	cn->fd = -1;
	cn->status = DM_OK;
	cn->backend = DM_BACKEND_TCP;
	cn->region_size = region_size;
	cn->chunk_size = chunk_size;
	cn->local_exec = exec;
	cn->local_arg = arg;
	c->conns[0] = cn;
	c->nconns = 1;
	return c;
}
