/*
 * testutil.h — support for the C tests and benchmarks: TAP output with
 * counted assertions, starting/stopping real dmindex-memnode processes,
 * connecting clients to them, and the clock, child-process and
 * file-descriptor helpers that tests and benchmarks would otherwise each
 * carry a copy of.
 *
 * Tests print TAP ("ok N - ...", "not ok N - ...", a "1..N" plan at the
 * end) so test/run-c-tests.sh can count passes and failures.
 */
#ifndef DM_TESTUTIL_H
#define DM_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/* ---- TAP --------------------------------------------------------------- */
extern int	tap_ok(int cond, const char *fmt,...) __attribute__((format(printf, 2, 3)));
extern void tap_diag(const char *fmt,...) __attribute__((format(printf, 1, 2)));
/*
 * A forked child's first failure, kept for its parent's report: sets
 * *failed and writes the message into msg (size len) unless a failure is
 * already recorded.  Tests wrap it for their report struct: cfail(r, ...).
 */
extern void test_child_fail(int *failed, char *msg, size_t len, const char *fmt,...)
			__attribute__((format(printf, 4, 5)));
#define TEST_CHILD_FAIL(r, ...) test_child_fail(&(r)->failed, (r)->msg, sizeof((r)->msg), __VA_ARGS__)
/* Prints the plan; returns the process exit status (0 iff all passed). */
extern int	tap_done(void);

#define CHECK(cond, ...) tap_ok(!!(cond), __VA_ARGS__)
/* Compare two status codes, printing both symbolically on failure. */
#define CHECK_STATUS(got, want, ...) tap_ok_status((got), (want), __VA_ARGS__)
extern int	tap_ok_status(int got, int want, const char *fmt,...) __attribute__((format(printf, 3, 4)));

/*
 * xorshift64*: a deterministic stream from *state (nonzero), so that a
 * failing fuzz run can be replayed from its seed.
 */
static inline uint64_t
xorshift64s(uint64_t *state)
{
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return *state * UINT64_C(0x2545F4914F6CDD1D);
}

/* ---- memnode processes --------------------------------------------------- */
typedef struct memnode_proc
{
	pid_t		pid;
	int			port;
	char		addr[64];		/* "127.0.0.1:PORT" */
	char		shm_path[128];	/* "" unless started with --shm */
	char		region_path[128];	/* its region file (--shm or --region-file), else "" */
	uint64_t	incarnation;
	int			reattached;		/* the ready line said start=reattached */
	int			keep_region;	/* set it to have memnode_stop leave the region file */
} memnode_proc;

/*
 * Start build/dmindex-memnode (path from $DM_MEMNODE, else
 * "build/dmindex-memnode" relative to the current directory) with
 * "--listen 127.0.0.1:PORT" (port 0 = ephemeral unless given) plus the
 * extra arguments (NULL-terminated list), wait up to 10 s for its ready
 * line and parse it.  Returns 0 on success, -1 on failure (diagnostic
 * printed).  The process is in its own process group.  With port 0 it also
 * gets --fresh-region (a region file left under that port's name by an
 * earlier test is not reattached); a restart on a given port reattaches.
 */
extern int	memnode_start(memnode_proc *mp, int port, const char *const *extra_args);
/*
 * Send sig (SIGTERM, SIGKILL) and reap; returns the exit status as from
 * waitpid.  The region file is removed too, unless mp->keep_region is set
 * (a test that restarts the memnode on it and removes it itself).
 */
extern int	memnode_stop(memnode_proc *mp, int sig);

/*
 * The start the forking tests share: a zeroed MAP_SHARED anonymous area of
 * size bytes that their children report into, and a memnode started with
 * args (memnode_start, port 0).  The area, or NULL after a failed
 * assertion naming the step that failed (the test then returns
 * tap_done()).
 */
extern void *test_start_shared(size_t size, memnode_proc *mp, const char *const *args);

/*
 * The ucx variant of a test (DM_TEST_TRANSPORT=ucx, set by run-c-tests.sh
 * for NAME+ucx-tcp and NAME+ucx-posix with UCX_TLS=tcp / posix): memnodes
 * are started with --ucx, and a test's list of transports runs its ucx
 * entries, which the ordinary run skips (test_backend_wanted).
 */
extern int	test_ucx(void);
extern int	test_backend_wanted(int backend);

/* ---- clients ------------------------------------------------------------- */
struct dm_client;
/*
 * A client (backend DM_BACKEND_TCP/SHM, client flags, op timeout, name for
 * the memnode's log) connected to addr1 and, unless NULL, addr2; NULL with
 * a diagnostic if it cannot connect.  One place for what every test's
 * client needs, so a new connection option reaches all tests at once.
 */
extern struct dm_client *test_client_connect(int backend, uint32_t flags, int op_timeout_ms,
											 const char *name, const char *addr1,
											 const char *addr2);

/*
 * After a transport error (an injected fault, a killed memnode): reconnect
 * c to memnode 1, as a backend would, trying for about a second.  1 once
 * it is connected again, else 0.
 */
extern int	test_client_recover(struct dm_client *c);

/* dm_node_stats.bytes_in_use of a memnode as c sees it; UINT64_MAX if the call fails. */
extern uint64_t memnode_bytes_in_use(struct dm_client *c, uint16_t node);

/*
 * Raw tcp to a memnode on 127.0.0.1:port (5 s send/receive timeouts,
 * TCP_NODELAY), for tests that send what the client library never would;
 * -1 on failure.  send/recv move exactly len bytes: 0, or -1 on
 * EOF/error/timeout.
 */
extern int	test_raw_connect(int port);
extern int	test_raw_send(int fd, const void *buf, size_t len);
extern int	test_raw_recv(int fd, void *buf, size_t len);
/*
 * Did the memnode close the raw connection (EOF or reset) within
 * timeout_ms?  Whatever it sends first is drained, and counted in *got
 * unless got is NULL.
 */
extern int	test_raw_closed(int fd, int timeout_ms, size_t *got);
/* A frame into buf: header (type, seq) + body_len bytes of body; its length. */
extern size_t test_raw_frame(uint8_t *buf, uint16_t type, const void *body, uint32_t body_len, uint64_t seq);
/*
 * The body of a BATCH with one FAA(+1) on the 8-byte word at global
 * address word (a write whose effect a test can look for); its length.
 * body needs TEST_FAA_BODY_MAX bytes.
 */
#define TEST_FAA_BODY_MAX 64
extern uint32_t test_raw_faa_body(uint8_t *body, uint64_t word);

/*
 * Monotonic clock in nanoseconds.  Inline, and CLOCK_MONOTONIC goes through
 * the vDSO (~20 ns, no system call): the benchmarks read it around every
 * operation they time.
 */
static inline uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/*
 * Wait for child pid until deadline (now_ns() scale); kill it (SIGKILL)
 * then.  Its exit code, 100 + the signal that ended it, or 99 on error.
 */
extern int	wait_pid_deadline(pid_t pid, uint64_t deadline);

/*
 * fork() with stdout and stderr flushed first (so no buffered TAP line is
 * printed twice); exits with status 2 if it fails.
 */
extern pid_t test_fork(void);
/* len bytes of zeroed MAP_SHARED memory for forked children; exits with status 2 if it fails. */
extern void *test_shared_map(size_t len);

/* SIGKILL and reap each of pids[0..n-1] that is > 0, and zero it. */
extern void kill_pids(pid_t *pids, int n);
/* Reap every child that has exited or will (waits for all of them). */
extern void reap_all_children(void);

/*
 * Move exactly n bytes through a pipe or socket (read/write, retried on
 * EINTR): 0, or -1 on EOF or error.  For results children send their
 * parent and the benchmarks' own sockets.
 */
extern int	fd_write_all(int fd, const void *buf, size_t n);
extern int	fd_read_all(int fd, void *buf, size_t n);

/*
 * For a program run from outside the repository root (a benchmark started
 * as /path/to/build/bench/NAME): unless $DM_MEMNODE is set or
 * build/dmindex-memnode exists here, point $DM_MEMNODE at the memnode
 * binary next to the program's build directory, if there is one, so that
 * memnode_start finds it.
 */
extern void memnode_find_binary(void);

/*
 * Offloading as a parameter of the tree tests: TREE_OFFLOAD=off|always|auto
 * (default off) sets that mode on a tree handle (dm_offload.h).  idx picks
 * who offloads: with "always", handles with an odd idx stay one-sided, so
 * one-sided writers and the memnode's executor run at once (idx < 0: this
 * handle follows the setting).  Returns the mode applied.
 */
struct dm_tree;
extern int	test_tree_offload(struct dm_tree *t, int idx);
/* The mode TREE_OFFLOAD asks for (0 = off). */
extern int	test_offload_mode(void);

/*
 * The leaf format as a parameter of the tree tests:
 * TREE_LEAF_FORMAT=sorted|hopscotch (default sorted) and, for hopscotch,
 * TREE_NEIGHBORHOOD=H (default: the tree's).  test_tree_leaf_opts sets
 * them in opts (before dm_tree_create_new); -1 if the variables are
 * malformed.  test_leaf_format_name: "sorted" or "hopscotch", for labels.
 */
struct dm_tree_opts;
extern int	test_tree_leaf_opts(struct dm_tree_opts *opts);
extern const char *test_leaf_format_name(void);

#endif
