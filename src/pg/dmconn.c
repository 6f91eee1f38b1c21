/*
 * dmconn.c — the glue between PostgreSQL backends and the dm client: the
 * memnode list parser, the backend's lazily created client, the wait
 * callback that makes every network wait a latch wait, and the mapping of
 * dm_status codes to ereport() with SQLSTATEs.
 *
 * Rule of this file: no PostgreSQL error may longjmp through code under
 * src/dm/.  That code holds connection state (a half-sent frame, a reply
 * still in flight) that only it can clean up, so the wait callback never
 * raises: it asks the dm layer to give up (DM_ERR_INTERRUPTED) and the
 * caller, back in PostgreSQL code, services the interrupt or re-throws an
 * error the wait ran into.
 */
#include "postgres.h"

#include <ctype.h>

#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "dmindex.h"

/* More than any real cluster uses; keeps the duplicate check cheap. */
#define DMINDEX_MAX_MEMNODES 1024

/* Until _PG_init installs the GUC's value: no memnodes. */
static DmMemnodeList empty_memnode_list = {0};
DmMemnodeList *dmindex_memnode_list = &empty_memnode_list;

/*
 * The backend's client and the settings it was built with.  The client
 * allocates with malloc and lives as long as the backend (or until a
 * setting changes); its sockets and mappings go away with the process, so
 * nothing is registered for exit.  In particular no exit callback may run
 * dm code: a FATAL error or postmaster death can end the process while a dm
 * call is suspended in the wait callback.
 */
typedef struct ClientConfig
{
	char	   *memnodes;		/* in TopMemoryContext */
	int			transport;
	int			connect_timeout;
	int			op_timeout;
	char	   *auth_file;		/* in TopMemoryContext */
} ClientConfig;

static dm_client *backend_client = NULL;
static ClientConfig backend_config;
static uint64 backend_generation = 0;

/*
 * An error raised inside the wait callback (WaitLatchOrSocket can fail, e.g.
 * when out of file descriptors) is kept here, in its own context, until the
 * caller reports the DM_ERR_INTERRUPTED the dm layer returns for it.
 */
static MemoryContext wait_error_cxt = NULL;
static ErrorData *wait_error = NULL;

struct DmTempClient
{
	dm_client  *client;
	MemoryContextCallback callback;
};

/* ------------------------------------------------------------------------
 * Memnode lists
 * ------------------------------------------------------------------------
 */

static bool
is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/*
 * Check one trimmed entry (len bytes at s, not NUL-terminated) for the
 * form host:port, or [ipv6]:port.  Only the syntax is checked: resolving
 * host names here would make a configuration reload wait for DNS.
 */
static bool
check_entry(const char *s, int len, char *errbuf, Size errbuf_len)
{
	const char *colon = NULL;
	const char *host = s;
	int			hostlen;
	long		port = 0;
	int			i;

	if (len > DMINDEX_ADDRESS_MAX)
	{
		snprintf(errbuf, errbuf_len,
				 "Memnode address \"%.*s...\" is longer than %d bytes.",
				 32, s, DMINDEX_ADDRESS_MAX);
		return false;
	}

	if (s[0] == '[')
	{
		const char *close = memchr(s, ']', len);

		if (close == NULL || close + 1 >= s + len || close[1] != ':')
			goto bad_form;
		host = s + 1;
		hostlen = close - host;
		colon = close + 1;
		for (i = 0; i < hostlen; i++)
			if (!isxdigit((unsigned char) host[i]) && host[i] != ':' &&
				host[i] != '.')
				goto bad_host;
	}
	else
	{
		for (i = len - 1; i >= 0; i--)
			if (s[i] == ':')
			{
				colon = s + i;
				break;
			}
		if (colon == NULL)
			goto bad_form;
		hostlen = colon - s;
		if (memchr(s, ':', hostlen) != NULL)
		{
			snprintf(errbuf, errbuf_len,
					 "IPv6 address \"%.*s\" must be written in brackets, as in [::1]:7400.",
					 len, s);
			return false;
		}
		for (i = 0; i < hostlen; i++)
			if (!isalnum((unsigned char) host[i]) && host[i] != '.' &&
				host[i] != '-' && host[i] != '_')
				goto bad_host;
	}
	if (hostlen == 0)
		goto bad_form;

	/* The port: 1 to 5 digits, 1..65535. */
	if (colon + 1 == s + len || s + len - (colon + 1) > 5)
		goto bad_port;
	for (const char *p = colon + 1; p < s + len; p++)
	{
		if (!isdigit((unsigned char) *p))
			goto bad_port;
		port = port * 10 + (*p - '0');
	}
	if (port < 1 || port > 65535)
		goto bad_port;
	return true;

bad_form:
	snprintf(errbuf, errbuf_len,
			 "Memnode address \"%.*s\" is not of the form host:port.", len, s);
	return false;
bad_host:
	snprintf(errbuf, errbuf_len,
			 "The host in memnode address \"%.*s\" contains invalid characters.",
			 len, s);
	return false;
bad_port:
	snprintf(errbuf, errbuf_len,
			 "The port in memnode address \"%.*s\" is not a number between 1 and 65535.",
			 len, s);
	return false;
}

DmMemnodeList *
dmindex_parse_memnodes(const char *value, void *(*alloc) (Size),
					   char *errbuf, Size errbuf_len)
{
	struct
	{
		const char *start;
		int			len;
	}			entries[DMINDEX_MAX_MEMNODES];
	DmMemnodeList *list;
	const char *p = value;
	char	   *dst;
	int			count = 0;
	Size		size;

	while (is_space(*p))
		p++;

	/* Pass 1: find and check the entries.  All blank means no memnodes. */
	while (*p != '\0')
	{
		const char *start;
		const char *end;

		while (is_space(*p))
			p++;
		start = p;
		while (*p && *p != ',')
			p++;
		end = p;
		while (end > start && is_space(end[-1]))
			end--;

		if (end == start)
		{
			snprintf(errbuf, errbuf_len,
					 "The list of memnodes contains an empty entry.");
			return NULL;
		}
		if (!check_entry(start, end - start, errbuf, errbuf_len))
			return NULL;
		if (count == DMINDEX_MAX_MEMNODES)
		{
			snprintf(errbuf, errbuf_len,
					 "At most %d memnodes can be listed.", DMINDEX_MAX_MEMNODES);
			return NULL;
		}
		/* Host names are case-insensitive, so compare that way. */
		for (int i = 0; i < count; i++)
			if (entries[i].len == end - start &&
				pg_strncasecmp(entries[i].start, start, end - start) == 0)
			{
				snprintf(errbuf, errbuf_len,
						 "Memnode \"%.*s\" is listed more than once.",
						 (int) (end - start), start);
				return NULL;
			}
		entries[count].start = start;
		entries[count].len = end - start;
		count++;

		if (*p == ',')
		{
			p++;
			/* "a," has an empty last entry; catch it in the next round. */
			if (*p == '\0')
			{
				snprintf(errbuf, errbuf_len,
						 "The list of memnodes contains an empty entry.");
				return NULL;
			}
		}
	}

	/*
	 * Pass 2: one block with the pointer array followed by the entries.  They
	 * need at most strlen(value) + 1 bytes: each entry's NUL takes the place
	 * of the comma (or the final NUL) after it.
	 */
	size = offsetof(DmMemnodeList, addresses) + count * sizeof(char *) +
		strlen(value) + 1;
	list = alloc(size);
	if (list == NULL)
	{
		snprintf(errbuf, errbuf_len, "Out of memory.");
		return NULL;
	}
	list->count = count;
	dst = (char *) &list->addresses[count];
	for (int i = 0; i < count; i++)
	{
		memcpy(dst, entries[i].start, entries[i].len);
		dst[entries[i].len] = '\0';
		list->addresses[i] = dst;
		dst += entries[i].len + 1;
	}
	return list;
}

/* ------------------------------------------------------------------------
 * Waiting
 * ------------------------------------------------------------------------
 */

/*
 * Should a wait give up so that the caller can service an interrupt?  Only
 * for interrupts that CHECK_FOR_INTERRUPTS() will turn into an error right
 * now (cancel, statement or lock timeout, termination, lost client).  The
 * others (barriers, memory-context logging, ...) wait until the operation
 * is done; and while interrupts are held off, giving up would only turn a
 * working operation into a failed one.
 */
static bool
interrupt_wanted(void)
{
	if (!InterruptPending || InterruptHoldoffCount != 0 ||
		CritSectionCount != 0)
		return false;
	return ProcDiePending || ClientConnectionLost ||
		(QueryCancelPending && QueryCancelHoldoffCount == 0);
}

/* Keep an error raised by WaitLatchOrSocket for dmindex_report(). */
static void
save_wait_error(MemoryContext callercxt)
{
	if (wait_error_cxt == NULL)
		wait_error_cxt = AllocSetContextCreate(TopMemoryContext,
											   "dmindex wait error",
											   ALLOCSET_SMALL_SIZES);
	if (wait_error == NULL)
	{
		MemoryContextSwitchTo(wait_error_cxt);
		wait_error = CopyErrorData();
	}
	MemoryContextSwitchTo(callercxt);
	FlushErrorState();
}

/*
 * dm_wait_fn: wait for fd to become readable (or writable) with the latch,
 * so that signals, cancel and postmaster death are noticed.  Returns 1 when
 * ready, 0 on timeout, -1 to make the dm call fail with DM_ERR_INTERRUPTED.
 */
static int
dmindex_wait(void *arg, int fd, int want_write, int timeout_ms)
{
	int			events = WL_LATCH_SET | WL_EXIT_ON_PM_DEATH;
	TimestampTz start = 0;
	long		remaining = -1;

	if (fd >= 0)
		events |= want_write ? WL_SOCKET_WRITEABLE : WL_SOCKET_READABLE;
	if (timeout_ms >= 0)
	{
		events |= WL_TIMEOUT;
		remaining = timeout_ms;
		start = GetCurrentTimestamp();
	}

	for (;;)
	{
		MemoryContext cxt = CurrentMemoryContext;
		uint32		holdoff = InterruptHoldoffCount;
		uint32		cancel_holdoff = QueryCancelHoldoffCount;
		volatile int rc = 0;
		volatile bool failed = false;

		if (interrupt_wanted())
			return -1;

		PG_TRY();
		{
			rc = WaitLatchOrSocket(MyLatch, events, fd, remaining,
								   PG_WAIT_EXTENSION);
		}
		PG_CATCH();
		{
			/* errfinish() zeroed these for the longjmp; our caller's count */
			InterruptHoldoffCount = holdoff;
			QueryCancelHoldoffCount = cancel_holdoff;
			save_wait_error(cxt);
			failed = true;
		}
		PG_END_TRY();
		if (failed)
			return -1;

		if (rc & WL_LATCH_SET)
			ResetLatch(MyLatch);
		if (rc & WL_SOCKET_MASK)
			return 1;
		if (rc & WL_TIMEOUT)
			return 0;
		if (timeout_ms >= 0)
		{
			remaining = timeout_ms -
				TimestampDifferenceMilliseconds(start, GetCurrentTimestamp());
			if (remaining <= 0)
				return 0;
		}
	}
}

/* ------------------------------------------------------------------------
 * Clients
 * ------------------------------------------------------------------------
 */

/*
 * A client with the current settings; raises an error if out of memory or
 * if dmindex.memnode_auth_file cannot be used.
 */
static dm_client *
create_client(void)
{
	static char name[32];
	dm_client_opts opts;
	dm_client  *client;
	dm_auth_entry *creds;

	memset(&opts, 0, sizeof(opts));
	opts.backend = (dm_backend) dmindex_transport;
	opts.connect_timeout_ms = dmindex_connect_timeout;
	opts.op_timeout_ms = dmindex_op_timeout;
	opts.wait = dmindex_wait;
	opts.wait_arg = NULL;
	snprintf(name, sizeof(name), "postgres[%d]", MyProcPid);
	opts.name = name;
	dmindex_auth_apply(&opts, &creds);

	/* the client copies the credentials; ours are wiped at once */
	client = dm_client_create(&opts);
	dmindex_auth_release(creds, creds ? 1 : 0);
	if (client == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory"),
				 errdetail("Could not create a memnode client.")));
	return client;
}

static bool
config_changed(void)
{
	const char *memnodes = dmindex_memnodes_guc ? dmindex_memnodes_guc : "";

	return strcmp(backend_config.memnodes, memnodes) != 0 ||
		backend_config.transport != dmindex_transport ||
		backend_config.connect_timeout != dmindex_connect_timeout ||
		backend_config.op_timeout != dmindex_op_timeout ||
		strcmp(backend_config.auth_file,
			   dmindex_memnode_auth_file ? dmindex_memnode_auth_file : "") != 0;
}

dm_client *
dmindex_get_client(void)
{
	/* A wait error not reported by now belongs to a finished operation. */
	if (wait_error != NULL)
	{
		MemoryContextReset(wait_error_cxt);
		wait_error = NULL;
	}

	if (backend_client != NULL && !config_changed())
		return backend_client;

	if (backend_client != NULL)
	{
		dm_client_destroy(backend_client);
		backend_client = NULL;
	}
	/* also after a create_client() that raised an error (an unusable auth file) */
	if (backend_config.memnodes != NULL)
		pfree(backend_config.memnodes);
	backend_config.memnodes = NULL;
	if (backend_config.auth_file != NULL)
		pfree(backend_config.auth_file);
	backend_config.auth_file = NULL;

	backend_config.memnodes =
		MemoryContextStrdup(TopMemoryContext,
							dmindex_memnodes_guc ? dmindex_memnodes_guc : "");
	backend_config.transport = dmindex_transport;
	backend_config.connect_timeout = dmindex_connect_timeout;
	backend_config.op_timeout = dmindex_op_timeout;
	backend_config.auth_file =
		MemoryContextStrdup(TopMemoryContext,
							dmindex_memnode_auth_file ? dmindex_memnode_auth_file : "");
	backend_client = create_client();
	backend_generation++;
	return backend_client;
}

uint64
dmindex_client_generation(void)
{
	return backend_generation;
}

bool
dmindex_node_info(const dm_client *client, uint16 node_id, dm_node_info *info)
{
	int			n = dm_client_nnodes(client);

	for (int i = 0; i < n; i++)
		if (dm_client_node_info(client, i, info) == DM_OK &&
			info->node_id == node_id)
			return true;
	return false;
}

/* The connection the client made to address, if any. */
static bool
node_info_by_address(const dm_client *client, const char *address,
					 dm_node_info *info)
{
	int			n = dm_client_nnodes(client);

	for (int i = 0; i < n; i++)
		if (dm_client_node_info(client, i, info) == DM_OK &&
			strcmp(info->address, address) == 0)
			return true;
	return false;
}

int
dmindex_connect(dm_client *client, const char *address,
				bool accept_new_incarnation, uint16 *node_id)
{
	dm_node_info info;
	int			rc;

	if (node_info_by_address(client, address, &info))
	{
		*node_id = info.node_id;
		rc = info.status;
		if (rc != DM_OK && rc != DM_ERR_INCARNATION)
			rc = dm_client_reconnect(client, info.node_id);
	}
	else
		rc = dm_client_connect(client, address, node_id);

	if (rc == DM_ERR_INCARNATION && accept_new_incarnation)
		rc = dm_client_accept_incarnation(client, *node_id);
	return rc;
}

static void
temp_client_reset(void *arg)
{
	DmTempClient *tc = (DmTempClient *) arg;

	if (tc->client != NULL)
		dm_client_destroy(tc->client);
	tc->client = NULL;
}

DmTempClient *
dmindex_temp_client_create(void)
{
	DmTempClient *tc = palloc0(sizeof(DmTempClient));

	/* Nothing between creating and registering can fail. */
	tc->client = create_client();
	tc->callback.func = temp_client_reset;
	tc->callback.arg = tc;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &tc->callback);
	return tc;
}

dm_client *
dmindex_temp_client_get(DmTempClient *tc)
{
	Assert(tc->client != NULL);
	return tc->client;
}

void
dmindex_temp_client_destroy(DmTempClient *tc)
{
	temp_client_reset(tc);
}

/* ------------------------------------------------------------------------
 * Errors
 * ------------------------------------------------------------------------
 */

/*
 * The dm client's one-line error ("memnode HOST:PORT: could not connect:
 * Connection refused") without the memnode prefix, which the caller shows
 * elsewhere; NULL if the client has nothing to say.
 */
static const char *
client_error(const dm_client *client, const char *address)
{
	const char *msg = client ? dm_client_error(client) : NULL;
	size_t		plen;

	if (msg == NULL || msg[0] == '\0')
		return NULL;
	plen = strlen("memnode ") + strlen(address) + 2;
	if (strncmp(msg, "memnode ", 8) == 0 &&
		strncmp(msg + 8, address, strlen(address)) == 0 &&
		strncmp(msg + plen - 2, ": ", 2) == 0 && msg[plen] != '\0')
		msg += plen;
	return msg;
}

char *
dmindex_error_text(const dm_client *client, int status, const char *address)
{
	const char *msg = client_error(client, address);

	return pstrdup(msg ? msg : dm_strerror(status));
}

/* The same as an errdetail: upper-case start, period at the end. */
static char *
error_detail(const dm_client *client, const char *address)
{
	const char *msg = client_error(client, address);
	char	   *detail;

	if (msg == NULL)
		return NULL;
	detail = psprintf("%s%s", msg,
					  strchr(".!?", msg[strlen(msg) - 1]) ? "" : ".");
	detail[0] = pg_toupper((unsigned char) detail[0]);
	return detail;
}

const char *
dmindex_error_memnode(const dm_client *client, char *buf, size_t len)
{
	const char *msg = client ? dm_client_error(client) : NULL;
	const char *end;

	/* dm_client's messages about one memnode start "memnode ADDRESS: " */
	if (msg == NULL || strncmp(msg, "memnode ", 8) != 0 || (end = strstr(msg + 8, ": ")) == NULL ||
		end == msg + 8 || (size_t) (end - (msg + 8)) >= len)
		return NULL;
	memcpy(buf, msg + 8, end - (msg + 8));
	buf[end - (msg + 8)] = '\0';
	return buf;
}

void
dmindex_report(int elevel, int status, const dm_client *client,
			   const char *address)
{
	char	   *detail;
	bool		has_detail;
	char		named[128];

	Assert(status != DM_OK);
	Assert(elevel < ERROR || CritSectionCount == 0);

	if (address == NULL)
		address = dmindex_error_memnode(client, named, sizeof(named));
	if (address == NULL)
		address = "unknown";
	detail = error_detail(client, address);
	has_detail = detail != NULL;

	switch (status)
	{
		case DM_ERR_CONNECT:
			ereport(elevel,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("could not connect to memnode \"%s\"", address),
					 has_detail ? errdetail_internal("%s", detail) : 0));
			break;
		case DM_ERR_CLOSED:
			ereport(elevel,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("lost connection to memnode \"%s\"", address),
					 has_detail ? errdetail_internal("%s", detail) : 0));
			break;
		case DM_ERR_TIMEOUT:
			ereport(elevel,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("timed out waiting for memnode \"%s\"", address),
					 has_detail ? errdetail_internal("%s", detail) : 0,
					 errhint("The limits are set by \"dmindex.connect_timeout\" and \"dmindex.op_timeout\".")));
			break;
		case DM_ERR_NOSHM:
			ereport(elevel,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 dmindex_transport == DMINDEX_TRANSPORT_UCX ?
					 errmsg("could not reach the memory of memnode \"%s\" through UCX",
							address) :
					 errmsg("could not use the shared memory of memnode \"%s\"",
							address),
					 has_detail ? errdetail_internal("%s", detail) : 0,
					 dmindex_transport == DMINDEX_TRANSPORT_UCX ?
					 errhint("The ucx transport needs memnodes started with --ucx and a UCX transport both sides share (UCX_TLS); otherwise set \"dmindex.transport\" to \"auto\" or \"tcp\".") :
					 errhint("The shm transport needs a memnode on this host that exports its region and runs as the same user as the server; otherwise set \"dmindex.transport\" to \"auto\" or \"tcp\".")));
			break;
		case DM_ERR_INTERRUPTED:
			if (elevel >= ERROR)
			{
				/* An error the wait itself ran into comes first. */
				if (wait_error != NULL)
				{
					ErrorData  *edata = wait_error;

					wait_error = NULL;
					ReThrowError(edata);
				}
				CHECK_FOR_INTERRUPTS();
			}
			/* The interrupt did not raise an error: report the abort. */
			ereport(elevel,
					(errcode(ERRCODE_QUERY_CANCELED),
					 errmsg("canceling wait for memnode \"%s\"", address)));
			break;
		case DM_ERR_INCARNATION:
			ereport(elevel,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("memnode \"%s\" has restarted and lost the data it held",
							address),
					 has_detail ? errdetail_internal("%s", detail) : 0,
					 errhint("Indexes stored on this memnode must be rebuilt with REINDEX.")));
			break;
		case DM_ERR_CORRUPT:
			ereport(elevel,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("data on memnode \"%s\" failed validation", address),
					 has_detail ? errdetail_internal("%s", detail) : 0));
			break;
		case DM_ERR_PROTOCOL:
			ereport(elevel,
					(errcode(ERRCODE_PROTOCOL_VIOLATION),
					 errmsg("protocol violation in communication with memnode \"%s\"",
							address),
					 has_detail ? errdetail_internal("%s", detail) : 0));
			break;
		case DM_ERR_VERSION:
			ereport(elevel,
					(errcode(ERRCODE_PROTOCOL_VIOLATION),
					 errmsg("memnode \"%s\" uses an incompatible protocol or format version",
							address),
					 has_detail ? errdetail_internal("%s", detail) : 0,
					 errhint("Run a dmindex-memnode built from the same dmindex release as the extension.")));
			break;
		case DM_ERR_NOSPACE:
			ereport(elevel,
					(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
					 errmsg("memnode \"%s\" has no free memory", address),
					 has_detail ? errdetail_internal("%s", detail) : 0,
					 errhint("Drop unused dmindex indexes, or add memnodes to \"dmindex.memnodes\".")));
			break;
		case DM_ERR_CATALOG_FULL:
			ereport(elevel,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("tree catalog of memnode \"%s\" is full", address),
					 has_detail ? errdetail_internal("%s", detail) : 0,
					 errhint("Drop unused dmindex indexes, or add memnodes to \"dmindex.memnodes\".")));
			break;
		case DM_ERR_TOOBIG:
			ereport(elevel,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("request to memnode \"%s\" is too large", address),
					 has_detail ? errdetail_internal("%s", detail) : 0));
			break;
		case DM_ERR_AUTH:
			ereport(elevel,
					(errcode(ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION),
					 errmsg("authentication with memnode \"%s\" failed", address),
					 has_detail ? errdetail_internal("%s", detail) : 0,
					 errhint("The identity and secret in \"dmindex.memnode_auth_file\" must be a line of the memnode's --auth-file.")));
			break;
		case DM_ERR_PERMISSION:
			ereport(elevel,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("memnode \"%s\" refused access to memory of another identity", address),
					 has_detail ? errdetail_internal("%s", detail) : 0,
					 errhint("An index can be used only by servers that authenticate as the identity that created it.")));
			break;
		case DM_ERR_NOMEM:
			ereport(elevel,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory"),
					 has_detail ? errdetail_internal("%s", detail) : 0));
			break;
		default:
			/* RANGE, ALIGN, NOTFOUND, EXISTS, INVALID, READONLY, INTERNAL */
			ereport(elevel,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("memnode \"%s\" request failed: %s",
							address, dm_strerror(status)),
					 has_detail ? errdetail_internal("%s", detail) : 0));
			break;
	}
}

void
dmindex_raise(int status, const dm_client *client, const char *address)
{
	dmindex_report(ERROR, status, client, address);
	pg_unreachable();
}
