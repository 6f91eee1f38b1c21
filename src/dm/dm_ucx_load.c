/*
 * dm_ucx_load.c — UCX as this process loads it (dm_ucx.h): dlopen at first
 * use, after the environment settings a PostgreSQL backend needs, and the
 * table of UCX functions the client (dm_ucx.c, dm_ucx_rpc.c) and the
 * memnode (memnode/ucx.c, memnode/ucx_rpc.c) call through; and whether
 * UCX_TLS leaves only transports that cannot report a peer's failure.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dm_types.h"
#include "dm_ucx.h"

dm_ucx_api	U;

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static void *ucx_lib;
static char ucx_load_err[256];

/* Load UCX once per process (the caller holds load_lock). */
static int
load_locked(void)
{
	if (ucx_lib != NULL)
		return DM_OK;
	/* read by UCX's constructors: before dlopen, and only if not set by the user */
	setenv("UCX_ERROR_SIGNALS", "", 0);
	setenv("UCX_MEM_MALLOC_HOOKS", "n", 0);
	setenv("UCX_MEM_MMAP_HOOK_MODE", "none", 0);
	setenv("UCX_WARN_UNUSED_ENV_VARS", "n", 0);
	/* stdout may be a protocol (the memnode's ready line) */
	setenv("UCX_LOG_FILE", "stderr", 0);
	ucx_lib = dlopen("libucp.so.0", RTLD_NOW | RTLD_GLOBAL);
	if (ucx_lib == NULL)
	{
		snprintf(ucx_load_err, sizeof(ucx_load_err), "cannot load UCX (libucp.so.0): %s", dlerror());
		return DM_ERR_NOSHM;
	}
#define UCX_SYM(f) \
	if (ucx_lib != NULL && (U.f = (__typeof__(f) *) dlsym(ucx_lib, #f)) == NULL) \
	{ \
		snprintf(ucx_load_err, sizeof(ucx_load_err), "UCX lacks %s", #f); \
		ucx_lib = NULL; \
	}
	DM_UCX_FUNCS(UCX_SYM)
	return ucx_lib != NULL ? DM_OK : DM_ERR_NOSHM;
}

const char *
dm_ucx_load(void)
{
	int			rc;

	pthread_mutex_lock(&load_lock);
	rc = load_locked();
	pthread_mutex_unlock(&load_lock);
	return rc == DM_OK ? NULL : ucx_load_err;
}

/*
 * UCX 1.13's shared-memory transports cannot report a peer's failure, and
 * asking for it logs an error per process: with UCX_TLS naming only those,
 * don't ask (the liveness check covers them).  Otherwise ask, and fall back.
 */
static int
tls_only_shared_memory(void)
{
	const char *tls = getenv("UCX_TLS");
	char		buf[256], *save = NULL;

	if (tls == NULL || tls[0] == '\0' || tls[0] == '^' || strlen(tls) >= sizeof(buf))
		return 0;
	snprintf(buf, sizeof(buf), "%s", tls);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
		if (strcmp(t, "sm") != 0 && strcmp(t, "shm") != 0 && strcmp(t, "posix") != 0 &&
			strcmp(t, "sysv") != 0 && strcmp(t, "cma") != 0 && strcmp(t, "knem") != 0 &&
			strcmp(t, "xpmem") != 0 && strcmp(t, "self") != 0)
			return 0;
	return 1;
}

int
dm_ucx_no_peer_errors(void)
{
	return tls_only_shared_memory();
}
