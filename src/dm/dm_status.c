/*
 * dm_status.c — names of dm_status codes, for messages and logs.
 */
#include "dm_types.h"

const char *
dm_strerror(int status)
{
	switch ((dm_status) status)
	{
		case DM_OK: return "success";
		case DM_ERR_CONNECT: return "could not connect to memory node";
		case DM_ERR_TIMEOUT: return "memory node did not answer in time";
		case DM_ERR_CLOSED: return "connection to memory node lost";
		case DM_ERR_INCARNATION: return "memory node restarted with new contents";
		case DM_ERR_PROTOCOL: return "protocol violation";
		case DM_ERR_VERSION: return "protocol version mismatch";
		case DM_ERR_RANGE: return "address out of range";
		case DM_ERR_ALIGN: return "atomic operation on unaligned address";
		case DM_ERR_NOSPACE: return "memory node region is full";
		case DM_ERR_NOTFOUND: return "not found";
		case DM_ERR_EXISTS: return "already exists";
		case DM_ERR_INVALID: return "invalid argument";
		case DM_ERR_INTERRUPTED: return "wait interrupted";
		case DM_ERR_NOMEM: return "out of memory";
		case DM_ERR_CATALOG_FULL: return "tree catalog is full";
		case DM_ERR_READONLY: return "address is not writable by clients";
		case DM_ERR_NOSHM: return "shared-memory transport not available";
		case DM_ERR_TOOBIG: return "request too large";
		case DM_ERR_CORRUPT: return "data failed validation";
		case DM_ERR_INTERNAL: return "internal error";
		case DM_ERR_NOTOWNER: return "key outside this instance's partition";
		case DM_ERR_REPLICA: return "tree handle is read-only (replica)";
		case DM_ERR_FENCED: return "the tree is written by another writer now";
		case DM_ERR_AUTH: return "authentication with memory node failed";
		case DM_ERR_PERMISSION: return "memory or tree belongs to another identity";
		case DM_ERR_FALLBACK: return "offloaded operation declined by the memory node";
	}
	return "unknown error";
}
