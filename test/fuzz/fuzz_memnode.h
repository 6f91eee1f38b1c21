/*
 * fuzz_memnode.h — the memnode's request executor (memnode/exec.c, auth.c)
 * in a libFuzzer process, on a small in-memory region, for the fuzz targets
 * of test/fuzz (test/fuzz/README).
 *
 * The region holds a tree of tenant-b with a chunk filled with a known
 * pattern (created directly, as if tenant-b had done it) and a tree and
 * chunk of tenant-a.  Whatever a target feeds the executor, fz_b_intact()
 * must stay true when the connection is tenant-a's or unauthenticated on an
 * authenticating memnode: that is the isolation rule, checked on every run.
 */
#ifndef FUZZ_MEMNODE_H
#define FUZZ_MEMNODE_H

#include <stddef.h>
#include <stdint.h>

#include "memnode.h"

/* Set up once (auth: with an auth file of tenant-a and tenant-b). */
extern void fz_init(int auth);
/* Fresh region and tenants before each input. */
extern void fz_reset(void);

extern dm_gaddr fz_a_chunk, fz_b_chunk;
extern uint64_t fz_a_tree, fz_b_tree;

/*
 * Feed data to one connection as a byte stream of frames, as server.c
 * would: stop where a header is bad, a frame is incomplete, or the
 * connection would close.  With mac_oracle, an AUTH frame whose proof is
 * all 0xAA is given tenant-a's right proof (so inputs can get past
 * authentication and exercise what follows).  Returns the frames executed.
 */
extern int	fz_run_stream(mn_conn_info *ci, mn_counters *ctr, const uint8_t *data, size_t size, int mac_oracle);

/* tenant-b's chunk and catalog entry are as fz_reset() left them. */
extern int	fz_b_intact(void);

/* Abort (a finding) with a message. */
#define FZ_ASSERT(c, msg) do { if (!(c)) { fprintf(stderr, "fuzz invariant violated: %s\n", msg); __builtin_trap(); } } while (0)

#endif
