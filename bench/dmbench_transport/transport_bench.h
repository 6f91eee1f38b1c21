/*
 * transport_bench.h — what the files of the transport benchmark share
 * (bench/dmbench_transport/, built into build/bench/dmbench_transport;
 * main.c says what it measures): the operations and backends measured, the
 * shared area the forked clients report into, the cell record of one
 * (operation, backend, clients) measurement, the settings, and the inline
 * clock and random helpers of the measured loop.
 */
#ifndef DM_TRANSPORT_BENCH_H
#define DM_TRANSPORT_BENCH_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include "dm_client.h"
#include "dm_region.h"

#define MAX_CLIENTS		2
/*
 * Samples kept per client process.  A tcp cell makes at most a few hundred
 * thousand ops per client in 3 s, so every sample is kept; a shm op takes
 * ~0.1 µs, i.e. tens of millions of ops, and there a uniform random sample
 * of this size (reservoir sampling) is kept instead: 2^21 samples give
 * percentiles far more precise than run-to-run noise, in 8 MiB per client.
 */
#define SAMPLE_CAP		(1u << 21)
#define BATCH_OPS		16
#define BATCH_LEN		64
#define BATCH_STRIDE	1024	/* the 16 reads hit 16 distinct spots */
/*
 * Each client works in its own 32 KiB of the chunk: READ 8 B at +0, the CAS
 * word at +64 (so two clients' CAS words never share a cache line and the
 * CAS always succeeds), the WRITE word at +128, READ 1 KiB at +1024, the
 * batch at +i*1024.
 */
#define CLIENT_AREA		(32u << 10)

typedef enum bench_op
{
	OP_PINGPONG = 0,
	OP_READ8,
	OP_READ1K,
	OP_WRITE8,
	OP_CAS8,
	OP_BATCH16,
	OP_RPC_PING,
	OP_COUNT
} bench_op;

/* Backend column; BK_SOCKET is the ping-pong baseline. */
enum
{
	BK_SOCKET = 0, BK_TCP = 1, BK_SHM = 2, BK_UCX = 3
};

/* What one client process reports back (lives in the shared mapping). */
typedef struct child_result
{
	int			status;			/* 0 = ok, else a dm_status or -1 */
	char		err[240];
	uint64_t	ops;			/* measured operations */
	uint64_t	elapsed_ns;		/* measured window */
	uint64_t	kept;			/* samples stored in samples[] */
	dm_counters ctr;			/* dm_client counters over the window */
} child_result;

/*
 * One MAP_SHARED|MAP_ANONYMOUS mapping created before any fork: children
 * write their samples straight into it, so there is no pipe protocol and no
 * copy of up to 16 MiB per cell.
 */
typedef struct shared_area
{
	child_result res[MAX_CLIENTS];
	uint32_t	samples[MAX_CLIENTS][SAMPLE_CAP];	/* ns, clamped to 2^32-1 */
} shared_area;

typedef struct cell
{
	int			op;
	int			backend;
	int			nclients;
	int			done;			/* measured successfully */
	char		note[256];		/* why not, if not */
	double		median_ns;
	double		p99_ns;
	double		ops_per_s;
	uint64_t	ops;
	uint64_t	samples;
	double		rt_per_op;
	double		sent_per_op;
	double		recv_per_op;
} cell;

/* ---- small helpers of the measured loop ------------------------------------- */

static inline uint64_t
xorshift64(uint64_t *s)
{
	uint64_t	x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* ---- shared state (each explained where it is defined, in this folder's .c files) ---- */

extern double duration_s;
extern uint32_t clock_every;	/* one clock read per this many ops (--clock-every) */
extern double warmup_s;
extern const char *memnode_addr;
extern shared_area *shm_area;
extern int echo_port;
extern pid_t echo_pid;
extern dm_gaddr chunk_base;
extern uint64_t chunk_size;
extern uint64_t owner_id;
extern int with_auth;
extern dm_tree_name auth_tree;

/* ---- functions shared between the files of this folder ---- */

extern void apply_auth(dm_client_opts *opts);
extern int readn_poll(int fd, void *buf, size_t n);
extern void set_nodelay(int fd);
extern int start_echo_server(void);
extern void stop_echo_server(void);
extern void child_main(int op, int backend, int idx, int ready_fd, int go_fd);
extern void run_cell(cell *ce);
extern int setup_chunk(char *err, size_t errsz);
extern void free_chunk(void);
extern int probe_shm(char *err, size_t errsz);
extern double clock_overhead_ns(void);

/* The byte setup_chunk() wrote at offset off of a client's area. */
static inline uint8_t
pattern_byte(uint64_t off)
{
	return (uint8_t) ((off % 4096) * 31 + 7);
}

#endif
