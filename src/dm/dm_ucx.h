/*
 * dm_ucx.h — UCX as loaded by dm_ucx_load.c (dlopen at first use, after
 * the environment settings PostgreSQL backends need): the table of UCX
 * functions, shared by the client (dm_ucx.c, dm_ucx_rpc.c) and the memnode
 * (memnode/ucx.c, memnode/ucx_rpc.c) so that neither links UCX and both
 * load it the same way.
 */
#ifndef DM_UCX_H
#define DM_UCX_H

#include <ucp/api/ucp.h>

#define DM_UCX_FUNCS(X) \
	X(ucp_config_read) X(ucp_config_modify) X(ucp_config_release) X(ucp_init_version) \
	X(ucp_worker_create) X(ucp_worker_destroy) X(ucp_worker_get_efd) X(ucp_worker_arm) \
	X(ucp_worker_progress) X(ucp_worker_fence) X(ucp_ep_create) X(ucp_ep_close_nbx) \
	X(ucp_ep_rkey_unpack) X(ucp_rkey_destroy) X(ucp_get_nbx) X(ucp_put_nbx) \
	X(ucp_atomic_op_nbx) X(ucp_ep_flush_nbx) X(ucp_request_check_status) \
	X(ucp_request_free) X(ucs_status_string) \
	X(ucp_mem_map) X(ucp_mem_query) X(ucp_mem_unmap) X(ucp_rkey_pack) \
	X(ucp_rkey_buffer_release) X(ucp_worker_get_address) X(ucp_worker_release_address) \
	X(ucp_am_send_nbx) X(ucp_worker_set_am_recv_handler) X(ucp_worker_signal) X(ucp_rkey_ptr)

typedef struct dm_ucx_api
{
#define DM_UCX_DECL(f) __typeof__(f) *f;
	DM_UCX_FUNCS(DM_UCX_DECL)
} dm_ucx_api;

extern dm_ucx_api U;

/* Load UCX (once per process); NULL, or why it cannot be loaded. */
extern const char *dm_ucx_load(void);

/*
 * 1 if UCX_TLS names only shared-memory transports, which in UCX 1.13
 * cannot report a peer's failure (asking for it logs an error per
 * endpoint): endpoints are then made without error handling.
 */
extern int	dm_ucx_no_peer_errors(void);

#endif
