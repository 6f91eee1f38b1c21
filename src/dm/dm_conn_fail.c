/*
 * dm_conn_fail.c — failing a connection: the client's error text, and
 * breaking the connection (closing its socket, releasing its backend's
 * mapping or UCX objects) after an error that leaves its byte stream or
 * mapping untrustworthy.  Every layer of the client reports through here
 * (the backends dm_sock.c, dm_shm.c, dm_ucx.c included), and it calls the
 * backends only through the release hook dm_client.c sets, so the
 * backends and the client's connection code do not depend on each other.
 */
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "dm_client_int.h"

/* Errors after which the byte stream (or mapping) can no longer be trusted. */
static int
breaks_connection(int status)
{
	switch (status)
	{
		case DM_ERR_CONNECT:
		case DM_ERR_TIMEOUT:
		case DM_ERR_CLOSED:
		case DM_ERR_INCARNATION:
		case DM_ERR_PROTOCOL:
		case DM_ERR_VERSION:
		case DM_ERR_INTERRUPTED:
		case DM_ERR_AUTH:
			return 1;
		default:
			return 0;
	}
}

void
dm_conn_break(dm_conn *cn, int status)
{
	if (cn->fd >= 0)
		close(cn->fd);
	cn->fd = -1;
	if (cn->release)
		cn->release(cn);		/* the backend's: unmap, UCX objects */
	cn->status = status;
}

int
dm_fail(dm_client *c, dm_conn *cn, int status, const char *fmt,...)
{
	char		detail[400];
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	if (cn != NULL)
	{
		snprintf(c->err, sizeof(c->err), "memnode %s: %s", cn->address, detail);
		if (breaks_connection(status))
			dm_conn_break(cn, status);
	}
	else
		snprintf(c->err, sizeof(c->err), "%s", detail);
	return status;
}
