/*
 * fuzz_memnode.c — see fuzz_memnode.h.  Stands in for memnode/main.c (the
 * global state, the clocks) so that exec.c, auth.c and log.c run unchanged.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dm_auth.h"
#include "fuzz_memnode.h"

#define FZ_REGION (UINT64_C(4) << 20)
#define FZ_CHUNK (UINT64_C(64) << 10)

mn_state	mn;
__thread int mn_worker_id;		/* server.c's: picks a journal slot (none here) */
dm_gaddr	fz_a_chunk,
			fz_b_chunk;
uint64_t	fz_a_tree,
			fz_b_tree;
static uint8_t *region;
static mn_counters counters[1];
static uint8_t b_pattern[FZ_CHUNK];
static dm_cat_entry b_entry;
static uint32_t b_slot;

static const char *const secret_a = "a-secret-for-tenant-a-0123456789";

uint64_t
mn_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

uint64_t
mn_unix_ns(void)
{
	return 1;
}

void
fz_init(int auth)
{
	mn.cfg.log_level = LOG_ERROR;
	mn_log_init(&mn.cfg);
	mn.cfg.threads = 1;
	mn.worker_counters = counters;
	pthread_mutex_init(&mn.region_lock, NULL);
	region = aligned_alloc(4096, FZ_REGION);
	if (auth)
	{
		char		path[] = "/tmp/dmfuzz-auth-XXXXXX";
		int			fd = mkstemp(path);
		FILE	   *f = fdopen(fd, "w");

		fchmod(fd, 0600);
		fprintf(f, "tenant-a %s\ntenant-b b-secret-for-tenant-b-9876543210\n", secret_a);
		fclose(f);
		if (mn_auth_load(path) < 0)
			abort();
		unlink(path);
		mn_auth_start_workers(1);
	}
	for (size_t i = 0; i < sizeof(b_pattern); i++)
		b_pattern[i] = (uint8_t) (i * 13 + 5);
}

static uint64_t
make_tenant(const char *name, const char *identity, dm_gaddr *chunk)
{
	dm_tree_name n;
	dm_tree_info ti;
	uint64_t	off;

	dm_tree_name_named(&n, name);
	if (dm_region_cat_create_owned(&mn.region, &n, 1, identity ? dm_auth_ident_tag(identity) : 0, 1, &ti) != DM_OK ||
		dm_region_chunk_alloc(&mn.region, ti.tree_id, 1, &off) != DM_OK)
		abort();
	*chunk = dm_gaddr_make(mn.region.node_id, off);
	return ti.tree_id;
}

void
fz_reset(void)
{
	uint64_t	off;

	if (dm_region_format(&mn.region, region, FZ_REGION, 1, FZ_CHUNK, 8, 0, 0x1234, 1) != DM_OK)
		abort();
	mn.base = region;
	/* tenants are identities only with authentication; else plain trees */
	fz_b_tree = make_tenant("b", mn_auth_enabled() ? "tenant-b" : NULL, &fz_b_chunk);
	fz_a_tree = make_tenant("a", mn_auth_enabled() ? "tenant-a" : NULL, &fz_a_chunk);
	off = dm_gaddr_offset(fz_b_chunk);
	memcpy(region + off, b_pattern, FZ_CHUNK);
	b_slot = (uint32_t) (fz_b_tree & 0xFFFFF);
	b_entry = mn.region.catalog[b_slot];
	memset(counters, 0, sizeof(counters));
}

int
fz_b_intact(void)
{
	return memcmp(region + dm_gaddr_offset(fz_b_chunk), b_pattern, FZ_CHUNK) == 0 &&
		memcmp(&mn.region.catalog[b_slot], &b_entry, sizeof(b_entry)) == 0;
}

int
fz_run_stream(mn_conn_info *ci, mn_counters *ctr, const uint8_t *data, size_t size, int mac_oracle)
{
	static uint64_t frame[(DM_FRAME_MAX + 7) / 8];
	uint8_t    *out = NULL;
	uint32_t	out_len = 0,
				out_cap = 0;
	int			nframes = 0;

	while (size >= DM_HDR_SIZE)
	{
		dm_frame_hdr h;

		memcpy(&h, data, sizeof(h));
		if (dm_hdr_check(&h, DM_FRAME_MAX) != DM_OK || h.length > size)
			break;
		/* server.c hands exec an 8-aligned copy of one whole frame */
		memcpy(frame, data, h.length);
		if (mac_oracle && h.type == DM_MSG_AUTH && h.length == DM_HDR_SIZE + sizeof(dm_auth_req) &&
			ci->auth_pending && strcmp(ci->identity, "tenant-a") == 0)
		{
			dm_auth_req *r = (dm_auth_req *) ((uint8_t *) frame + DM_HDR_SIZE);
			int			all_aa = 1;

			for (int i = 0; i < DM_AUTH_MAC_LEN; i++)
				all_aa &= r->mac[i] == 0xAA;
			if (all_aa)
				dm_auth_mac((const uint8_t *) secret_a, (uint32_t) strlen(secret_a), DM_AUTH_ROLE_CLIENT,
							ci->identity, ci->client_nonce, ci->server_nonce, r->mac);
		}
		data += h.length;
		size -= h.length;
		out_len = 0;
		if (mn_exec_frame(ci, ctr, (const uint8_t *) frame, &out, &out_len, &out_cap) < 0)
			break;
		nframes++;
		/* every reply is a well-formed frame answering the request */
		{
			dm_frame_hdr rh;

			FZ_ASSERT(out_len >= DM_HDR_SIZE, "reply shorter than a header");
			memcpy(&rh, out, sizeof(rh));
			FZ_ASSERT(dm_hdr_check(&rh, DM_FRAME_MAX) == DM_OK && rh.length == out_len &&
					  rh.seq == h.seq && rh.type == (h.type | DM_MSG_REPLY) && rh.status <= DM_STATUS_MAX,
					  "malformed reply");
		}
		if (ci->close_after_reply)
			break;
	}
	free(out);
	return nframes;
}
