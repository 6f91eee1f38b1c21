/*
 * test_failure.c — what clients see when a memnode stops answering, dies,
 * or comes back as a new incarnation, over tcp and over shm:
 *   (a) SIGSTOP: an op times out after op_timeout, the connection is then
 *       broken (fails fast) until dm_client_reconnect (same incarnation);
 *   (b) kill -9: the next tcp op fails with CLOSED, also when the memnode
 *       dies while the op (or an RPC) is waiting for its reply;
 *   (c) restart on the same port (anonymous memory: nothing to reattach):
 *       DM_ERR_INCARNATION until the new incarnation is accepted, and the
 *       old data is gone;
 *   (d) shm: a dead memnode is detected by its heartbeat within
 *       op_timeout, a replaced one (restarted with --fresh-region) by the
 *       REPLACED mark, a cleanly stopped one by DEAD;
 *   (e) SIGTERM exits with status 0 (and keeps the region file, which a
 *       restart reattaches: test_reattach.c);
 *   (f) nothing listening / a peer that never answers the handshake ->
 *       DM_ERR_CONNECT within the connect timeout.
 * Only 127.0.0.1 is ever used.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dm_client.h"
#include "testutil.h"

#define OP_TIMEOUT_MS 1000

static dm_client *
new_client(int backend, int op_timeout_ms)
{
	dm_client_opts o;

	memset(&o, 0, sizeof(o));
	o.backend = backend;
	o.op_timeout_ms = op_timeout_ms;
	o.connect_timeout_ms = 2000;
	o.name = "test_failure";
	return dm_client_create(&o);
}

static uint64_t
ms_since(uint64_t t0)
{
	return (now_ns() - t0) / 1000000;
}

static int
info_of(dm_client *c, uint16_t node, dm_node_info *ni)
{
	for (int i = 0; i < dm_client_nnodes(c); i++)
		if (dm_client_node_info(c, i, ni) == DM_OK && ni->node_id == node)
			return DM_OK;
	return DM_ERR_NOTFOUND;
}

/* A port nothing listens on: bind port 0, note the port, close. */
static int
free_port(void)
{
	struct sockaddr_in sa;
	socklen_t	len = sizeof(sa);
	int			fd = socket(AF_INET, SOCK_STREAM, 0),
				port;

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 ||
		getsockname(fd, (struct sockaddr *) &sa, &len) < 0)
		return -1;
	port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

/*
 * A child that SIGKILLs pid ms later, while the caller is blocked in the
 * operation it starts next (the delay is the point).  Reap it with waitpid.
 */
static pid_t
kill_later(pid_t pid, int ms)
{
	pid_t		killer;

	fflush(stdout);
	if ((killer = fork()) == 0)
	{
		usleep((useconds_t) ms * 1000);
		kill(pid, SIGKILL);
		_exit(0);
	}
	return killer;
}

/*
 * Stop a memnode and wait until it really is stopped: kill() returns
 * before the target's threads have stopped, and a request could still be
 * served in between.  The memnode is our child, so waitpid reports it.
 */
static int
stop_memnode(memnode_proc *mp)
{
	int			st;

	kill(mp->pid, SIGSTOP);
	return waitpid(mp->pid, &st, WUNTRACED) == mp->pid && WIFSTOPPED(st);
}

/*
 * test_tcp's client: tcp, or in the ucx variant ucx (its errors must be
 * tcp's).  Over a one-sided transport a stopped memnode does not stop the
 * data path: the client notices it by its heartbeat, which must first have
 * been quiet a while (quiet_heartbeat), and then waits for it like tcp for
 * a reply.
 */
static int
failure_backend(void)
{
	return test_ucx() ? DM_BACKEND_UCX : DM_BACKEND_TCP;
}

static void
quiet_heartbeat(void)
{
	if (test_ucx())
		usleep(200 * 1000);
}

/* ---- tcp: (a) SIGSTOP, (b) kill -9, (c) restart on the same port ------------ */

static void
test_tcp(void)
{
	const char *const args[] = {"--id", "4", "--size", "64M", "--chunk-size", "1M", NULL};
	memnode_proc mn,
				mn2;
	dm_client  *c = new_client(failure_backend(), OP_TIMEOUT_MS);
	dm_node_info ni;
	dm_gaddr	chunk = 0;
	uint64_t	v = 0,
				magic = 0x1234567890ABCDEFull,
				t0,
				ms,
				old_inc;
	uint16_t	node = 0;
	int			rc,
				port;

	if (!CHECK(memnode_start(&mn, 0, args) == 0, "tcp: memnode started"))
		return;
	port = mn.port;
	old_inc = mn.incarnation;
	CHECK_STATUS(dm_client_connect(c, mn.addr, &node), DM_OK, "tcp: connected");
	CHECK(node == 4, "tcp: node id 4");
	CHECK_STATUS(dm_chunk_alloc(c, node, 0x4444, &chunk, NULL), DM_OK, "tcp: chunk");
	CHECK_STATUS(dm_write(c, chunk, &magic, 8), DM_OK, "tcp: write a word");
	CHECK(info_of(c, node, &ni) == DM_OK && ni.incarnation == old_inc && ni.status == DM_OK &&
		  ni.backend == failure_backend(), "tcp: node info: incarnation from the ready line, usable");

	/* (a) a stopped memnode: the op waits op_timeout, then TIMEOUT */
	CHECK(stop_memnode(&mn), "SIGSTOP: memnode stopped");
	quiet_heartbeat();
	t0 = now_ns();
	rc = dm_read(c, chunk, &v, 8);
	ms = ms_since(t0);
	CHECK_STATUS(rc, DM_ERR_TIMEOUT, "SIGSTOP: read times out");
	CHECK(ms >= OP_TIMEOUT_MS - 50 && ms < 3000, "SIGSTOP: after %" PRIu64 " ms (op_timeout %d)", ms, OP_TIMEOUT_MS);
	CHECK(strlen(dm_client_error(c)) > 0, "SIGSTOP: error detail: %s", dm_client_error(c));
	kill(mn.pid, SIGCONT);
	/* the connection is broken now: fail fast, not another timeout */
	t0 = now_ns();
	rc = dm_read(c, chunk, &v, 8);
	ms = ms_since(t0);
	CHECK(rc != DM_OK && ms < 100, "broken connection: next op fails at once (%s, %" PRIu64 " ms)",
		  dm_strerror(rc), ms);
	CHECK(info_of(c, node, &ni) == DM_OK && ni.status != DM_OK, "broken connection: node info says unusable (%s)",
		  dm_strerror(ni.status));
	CHECK_STATUS(dm_ping(c, node), rc, "broken connection: RPCs fail the same way");
	CHECK_STATUS(dm_client_reconnect(c, node), DM_OK, "SIGCONT: reconnect succeeds");
	CHECK(info_of(c, node, &ni) == DM_OK && ni.incarnation == old_inc && ni.status == DM_OK,
		  "reconnect: same incarnation, usable");
	v = 0;
	CHECK(dm_read(c, chunk, &v, 8) == DM_OK && v == magic, "reconnect: data still there");

	/*
	 * (a') writes the client gave up on are not run when the memnode comes
	 * back: the client hung up at its timeout, and an abandoned write
	 * landing later could, for PostgreSQL, name a tid VACUUM has freed.
	 * Over ucx the one-sided WRITE is the client's own (no memnode CPU runs
	 * it), but the RPC is a message the memnode runs: it must not either.
	 */
	{
		uint64_t	late = 0x5555, w[2] = {1, 1};
		dm_gaddr	c2 = 0;
		dm_node_stats st0, st1;
		dm_counters k;

		CHECK(dm_node_stats_get(c, node, &st0) == DM_OK, "late writes: stats before");
		if (!test_ucx())
		{
			CHECK(stop_memnode(&mn), "late writes: memnode stopped");
			CHECK_STATUS(dm_write(c, chunk + 8, &late, 8), DM_ERR_TIMEOUT, "late writes: a WRITE times out");
			CHECK_STATUS(dm_client_reconnect(c, node), DM_ERR_CONNECT, "late writes: no reconnecting while stopped");
			kill(mn.pid, SIGCONT);
			CHECK_STATUS(dm_client_reconnect(c, node), DM_OK, "late writes: reconnected");
			CHECK_STATUS(dm_faa(c, chunk + 16, 1, NULL), DM_OK, "late writes: FAA on the new connection");
		}
		dm_client_reset_counters(c);
		CHECK(stop_memnode(&mn), "late writes: memnode stopped again");
		t0 = now_ns();
		CHECK_STATUS(dm_chunk_alloc(c, node, 0x4445, &c2, NULL), DM_ERR_TIMEOUT, "late writes: a chunk allocation times out");
		ms = ms_since(t0);
		CHECK(ms >= OP_TIMEOUT_MS - 50 && ms < 3000, "late writes: after %" PRIu64 " ms (op_timeout %d)", ms, OP_TIMEOUT_MS);
		dm_client_counters(c, node, &k);
		CHECK(test_ucx() ? k.wire_bytes_sent == 0 : k.wire_bytes_sent > 0,
			  "late writes: the allocation was sent %s (%" PRIu64 " socket bytes)", test_ucx() ? "over UCX" : "on the socket",
			  k.wire_bytes_sent);
		kill(mn.pid, SIGCONT);
		usleep(300 * 1000);		/* time to read what was sent before the hang-ups */
		CHECK_STATUS(dm_client_reconnect(c, node), DM_OK, "late writes: reconnected again");
		if (!test_ucx())
		{
			rc = dm_read(c, chunk + 8, w, 16);
			CHECK(rc == DM_OK && w[0] == 0 && w[1] == 1,
				  "late writes: the abandoned WRITE never landed (word %" PRIx64 "), the later FAA did (%" PRIu64 ")",
				  w[0], w[1]);
		}
		rc = dm_node_stats_get(c, node, &st1);
		CHECK(rc == DM_OK && st1.chunks_used == st0.chunks_used,
			  "late writes: nor did the abandoned chunk allocation (%" PRIu64 " chunks in use, %" PRIu64 " before)",
			  st1.chunks_used, st0.chunks_used);
	}

	/* (b) killed while an op waits for its reply: CLOSED as soon as it dies */
	CHECK(stop_memnode(&mn), "SIGSTOP again: memnode stopped");
	quiet_heartbeat();
	{
		pid_t		killer = kill_later(mn.pid, 300);

		t0 = now_ns();
		rc = dm_read(c, chunk, &v, 8);
		ms = ms_since(t0);
		waitpid(killer, NULL, 0);
	}
	CHECK_STATUS(rc, DM_ERR_CLOSED, "kill -9 during an op: CLOSED");
	CHECK(ms >= 250 && ms < OP_TIMEOUT_MS - 100, "kill -9 during an op: failed when the memnode died (%" PRIu64 " ms)",
		  ms);
	memnode_stop(&mn, SIGKILL);	/* reap */

	/* reconnecting to a dead memnode */
	t0 = now_ns();
	rc = dm_client_reconnect(c, node);
	CHECK_STATUS(rc, DM_ERR_CONNECT, "reconnect while dead: CONNECT");
	CHECK(ms_since(t0) < 1000, "reconnect while dead: fails quickly");

	/* (c) a new memnode on the same port is a new incarnation */
	if (!CHECK(memnode_start(&mn2, port, args) == 0, "restart on the same port %d", port))
	{
		dm_client_destroy(c);
		return;
	}
	CHECK(mn2.port == port && mn2.incarnation != old_inc, "restart: new incarnation %016" PRIx64, mn2.incarnation);
	CHECK_STATUS(dm_client_reconnect(c, node), DM_ERR_INCARNATION, "restart: reconnect -> INCARNATION");
	CHECK(info_of(c, node, &ni) == DM_OK && ni.seen_incarnation == mn2.incarnation && ni.incarnation == old_inc &&
		  ni.status == DM_ERR_INCARNATION,
		  "restart: node info: accepted %016" PRIx64 ", seen %016" PRIx64 ", status INCARNATION",
		  ni.incarnation, ni.seen_incarnation);
	CHECK_STATUS(dm_read(c, chunk, &v, 8), DM_ERR_INCARNATION, "restart: ops refused with INCARNATION");
	CHECK_STATUS(dm_ping(c, node), DM_ERR_INCARNATION, "restart: RPCs refused with INCARNATION");
	CHECK_STATUS(dm_client_reconnect(c, node), DM_ERR_INCARNATION, "restart: INCARNATION sticks across reconnects");
	CHECK_STATUS(dm_client_accept_incarnation(c, node), DM_OK, "restart: accept the new incarnation");
	CHECK(info_of(c, node, &ni) == DM_OK && ni.incarnation == mn2.incarnation && ni.status == DM_OK,
		  "restart: accepted incarnation is the new one");
	v = 1;
	CHECK(dm_read(c, chunk, &v, 8) == DM_OK && v == 0, "restart: old data is gone (word reads 0)");
	CHECK_STATUS(dm_ping(c, node), DM_OK, "restart: ping");
	{
		dm_node_stats st;

		CHECK(dm_node_stats_get(c, node, &st) == DM_OK && st.chunks_used == 0 && st.incarnation == mn2.incarnation,
			  "restart: the new region has no chunks in use");
	}
	/* connecting a second client by address gives the same node */
	{
		uint16_t	again = 0;

		CHECK(dm_client_connect(c, mn2.addr, &again) == DM_OK && again == node && dm_client_nnodes(c) == 1,
			  "connect to an already connected address returns the existing connection");
	}

	/*
	 * (b') kill -9 between ops: tcp's next op notices the closed socket at
	 * once.  Over ucx the data path may be shared memory, which outlives
	 * the memnode: an op in the liveness check's period (1 ms, on a coarse
	 * clock) may still read the region as the memnode left it -- as if it
	 * had run just before the kill, so no wrong answer -- but the first op
	 * that fails must fail as CLOSED, and soon.
	 */
	{
		int			early_ok = 0;

		memnode_stop(&mn2, SIGKILL);
		t0 = now_ns();
		while ((rc = dm_read(c, chunk, &v, 8)) == DM_OK && test_ucx() && ms_since(t0) < 100)
		{
			early_ok++;
			usleep(500);
		}
		ms = ms_since(t0);
		CHECK_STATUS(rc, DM_ERR_CLOSED, "kill -9 between ops: next op -> CLOSED (%d earlier op(s) read the frozen region)",
					 early_ok);
		CHECK(ms < OP_TIMEOUT_MS / 2, "kill -9 between ops: without waiting for the timeout (%" PRIu64 " ms)", ms);
	}
	dm_client_destroy(c);

	/* (e) SIGTERM: clean exit with status 0 */
	if (!CHECK(memnode_start(&mn2, port, args) == 0, "third start on port %d", port))
		return;
	c = new_client(failure_backend(), OP_TIMEOUT_MS);
	CHECK_STATUS(dm_client_connect(c, mn2.addr, &node), DM_OK, "third incarnation: connected");
	rc = memnode_stop(&mn2, SIGTERM);
	CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "SIGTERM: exit status 0 (status 0x%x)", rc);
	t0 = now_ns();
	rc = dm_ping(c, node);
	CHECK_STATUS(rc, DM_ERR_CLOSED, "after SIGTERM: the client sees CLOSED");
	CHECK(ms_since(t0) < OP_TIMEOUT_MS / 2, "after SIGTERM: at once");
	dm_client_destroy(c);
}

/* ---- shm: (d) heartbeat, REPLACED, DEAD --------------------------------------- */

static void
test_shm(void)
{
	const char *const args[] = {"--id", "5", "--size", "64M", "--chunk-size", "1M", "--shm", NULL};
	const char *const fresh_args[] = {"--id", "5", "--size", "64M", "--chunk-size", "1M", "--shm",
	"--fresh-region", NULL};
	memnode_proc mn,
				mn2;
	dm_client  *c1 = new_client(DM_BACKEND_SHM, OP_TIMEOUT_MS),
			   *c2 = new_client(DM_BACKEND_SHM, OP_TIMEOUT_MS);
	dm_node_info ni;
	dm_gaddr	chunk = 0;
	uint64_t	v = 0,
				t0,
				ms,
				old_inc;
	uint16_t	node = 0;
	int			rc,
				port,
				n;
	char		old_path[128];

	if (!CHECK(memnode_start(&mn, 0, args) == 0, "shm: memnode started"))
		return;
	port = mn.port;
	old_inc = mn.incarnation;
	snprintf(old_path, sizeof(old_path), "%s", mn.shm_path);
	CHECK(mn.shm_path[0] == '/' && access(mn.shm_path, F_OK) == 0, "shm: region file %s exists", mn.shm_path);
	CHECK_STATUS(dm_client_connect(c1, mn.addr, &node), DM_OK, "shm: client 1 connected");
	CHECK_STATUS(dm_client_connect(c2, mn.addr, &node), DM_OK, "shm: client 2 connected");
	CHECK(info_of(c1, node, &ni) == DM_OK && ni.backend == DM_BACKEND_SHM, "shm: client 1 uses the shm backend");
	CHECK_STATUS(dm_chunk_alloc(c1, node, 0x5555, &chunk, NULL), DM_OK, "shm: chunk");
	CHECK_STATUS(dm_faa(c1, chunk, 1, NULL), DM_OK, "shm: c1 FAA");
	CHECK(dm_read(c2, chunk, &v, 8) == DM_OK && v == 1, "shm: c2 sees c1's FAA");

	/* (d) SIGKILL: no heartbeat any more; ops fail within about op_timeout */
	mn.keep_region = 1;
	memnode_stop(&mn, SIGKILL);
	t0 = now_ns();
	n = 0;
	do
	{
		rc = dm_read(c1, chunk, &v, 8);
		n++;
		if (rc == DM_OK)
			usleep(1000);		/* polling the condition under test */
	} while (rc == DM_OK && ms_since(t0) < 10000);
	ms = ms_since(t0);
	CHECK(rc == DM_ERR_TIMEOUT || rc == DM_ERR_CLOSED, "shm kill -9: ops fail with TIMEOUT or CLOSED (%s)",
		  dm_strerror(rc));
	CHECK(ms < OP_TIMEOUT_MS + 500, "shm kill -9: detected after %" PRIu64 " ms (op_timeout %d, %d ops succeeded)",
		  ms, OP_TIMEOUT_MS, n - 1);
	CHECK(ms >= OP_TIMEOUT_MS / 2, "shm kill -9: not before the heartbeat could be stale (%" PRIu64 " ms)", ms);
	CHECK(access(old_path, F_OK) == 0, "shm kill -9: the region file is left behind");
	/* c2 has done nothing since; the dead memnode's file is still mapped */

	/* restart with --fresh-region on the same port: the old file is retired (REPLACED) */
	if (!CHECK(memnode_start(&mn2, port, fresh_args) == 0, "shm: restart on the same port with --fresh-region"))
		goto out;
	CHECK(mn2.incarnation != old_inc && strcmp(mn2.shm_path, old_path) == 0,
		  "shm restart: new incarnation, same path %s", mn2.shm_path);
	t0 = now_ns();
	CHECK_STATUS(dm_read(c2, chunk, &v, 8), DM_ERR_INCARNATION, "shm restart: the old mapping reports INCARNATION");
	CHECK(ms_since(t0) < 100, "shm restart: at once");
	CHECK_STATUS(dm_read(c2, chunk, &v, 8), DM_ERR_INCARNATION, "shm restart: and keeps doing so");
	CHECK_STATUS(dm_client_reconnect(c1, node), DM_ERR_INCARNATION, "shm restart: reconnect -> INCARNATION");
	CHECK(info_of(c1, node, &ni) == DM_OK && ni.seen_incarnation == mn2.incarnation && ni.incarnation == old_inc,
		  "shm restart: node info shows the new incarnation as seen");
	CHECK_STATUS(dm_client_accept_incarnation(c1, node), DM_OK, "shm restart: accept");
	CHECK(info_of(c1, node, &ni) == DM_OK && ni.incarnation == mn2.incarnation && ni.backend == DM_BACKEND_SHM &&
		  ni.status == DM_OK, "shm restart: mapped the new region");
	v = 7;
	CHECK(dm_read(c1, chunk, &v, 8) == DM_OK && v == 0, "shm restart: old data gone");
	CHECK_STATUS(dm_faa(c1, chunk, 5, NULL), DM_OK, "shm restart: FAA on the new region");

	/* (e) SIGTERM: DEAD in the superblock, the file kept for the next start, exit status 0 */
	mn2.keep_region = 1;
	rc = memnode_stop(&mn2, SIGTERM);
	CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "shm SIGTERM: exit status 0");
	CHECK(access(old_path, F_OK) == 0, "shm SIGTERM: region file kept");
	t0 = now_ns();
	rc = dm_read(c1, chunk, &v, 8);
	CHECK_STATUS(rc, DM_ERR_CLOSED, "shm SIGTERM: next op reports CLOSED (memnode shut down)");
	CHECK(ms_since(t0) < 100, "shm SIGTERM: at once, no timeout");
out:
	dm_client_destroy(c1);
	dm_client_destroy(c2);
	/* the region file, kept by the stops above */
	if (access(old_path, F_OK) == 0 && (mn2.pid == 0))
		unlink(old_path);
}

/* ---- (f) connect failures, and refused configurations -------------------------- */

static void
test_connect(void)
{
	dm_client  *c = new_client(DM_BACKEND_TCP, OP_TIMEOUT_MS);
	char		addr[64];
	uint16_t	node;
	uint64_t	t0;
	int			port = free_port(),
				rc;

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	t0 = now_ns();
	rc = dm_client_connect(c, addr, &node);
	CHECK_STATUS(rc, DM_ERR_CONNECT, "nothing listening on %d: CONNECT", port);
	CHECK(ms_since(t0) < 500, "nothing listening: fails at once (%" PRIu64 " ms)", ms_since(t0));
	CHECK(dm_client_nnodes(c) == 0, "failed connect adds no connection");
	CHECK_STATUS(dm_client_connect(c, "127.0.0.1", &node), DM_ERR_INVALID, "address without port: INVALID");
	CHECK_STATUS(dm_client_connect(c, "127.0.0.1:99999", &node), DM_ERR_INVALID, "port out of range: INVALID");
	dm_client_destroy(c);

	/* A peer that accepts (the kernel does, via the backlog) but never answers HELLO. */
	{
		struct sockaddr_in sa;
		socklen_t	len = sizeof(sa);
		int			lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		dm_client_opts o;

		memset(&sa, 0, sizeof(sa));
		sa.sin_family = AF_INET;
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (lfd >= 0 && bind(lfd, (struct sockaddr *) &sa, sizeof(sa)) == 0 && listen(lfd, 8) == 0 &&
			getsockname(lfd, (struct sockaddr *) &sa, &len) == 0)
		{
			memset(&o, 0, sizeof(o));
			o.backend = DM_BACKEND_TCP;
			o.connect_timeout_ms = 500;
			c = dm_client_create(&o);
			snprintf(addr, sizeof(addr), "127.0.0.1:%d", ntohs(sa.sin_port));
			t0 = now_ns();
			rc = dm_client_connect(c, addr, &node);
			CHECK_STATUS(rc, DM_ERR_CONNECT, "silent peer: CONNECT");
			CHECK(ms_since(t0) >= 450 && ms_since(t0) < 1500, "silent peer: after the 500 ms connect timeout (%" PRIu64 " ms)",
				  ms_since(t0));
			dm_client_destroy(c);
		}
		else
			CHECK(0, "silent peer: listening socket");
		if (lfd >= 0)
			close(lfd);
	}

	/* shm requested from a memnode that does not export its region */
	{
		const char *const a1[] = {"--id", "6", "--size", "32M", "--chunk-size", "1M", NULL};
		const char *const a2[] = {"--id", "6", "--size", "32M", "--chunk-size", "1M", NULL};
		memnode_proc m1,
					m2;

		if (CHECK(memnode_start(&m1, 0, a1) == 0 && memnode_start(&m2, 0, a2) == 0, "two memnodes with id 6"))
		{
			c = new_client(DM_BACKEND_SHM, OP_TIMEOUT_MS);
			CHECK_STATUS(dm_client_connect(c, m1.addr, &node), DM_ERR_NOSHM, "shm backend without --shm: NOSHM");
			CHECK(dm_client_nnodes(c) == 0, "NOSHM adds no connection");
			dm_client_destroy(c);

			c = new_client(DM_BACKEND_AUTO, OP_TIMEOUT_MS);
			CHECK_STATUS(dm_client_connect(c, m1.addr, &node), DM_OK, "auto backend without --shm: connects");
			{
				dm_node_info ni;

				CHECK(info_of(c, 6, &ni) == DM_OK && ni.backend == DM_BACKEND_TCP, "auto backend falls back to tcp");
			}
			CHECK_STATUS(dm_client_connect(c, m2.addr, &node), DM_ERR_EXISTS, "second memnode with the same id: EXISTS");
			CHECK(dm_client_nnodes(c) == 1, "duplicate id adds no connection");
			dm_client_destroy(c);
			memnode_stop(&m1, SIGTERM);
			memnode_stop(&m2, SIGTERM);
		}
	}
}

/*
 * (b'') killed while an RPC waits for its reply: CLOSED as soon as it
 * dies, as for an op (over ucx the RPC is a UCX message; its wait watches
 * the control socket).
 */
static void
test_rpc_killed(void)
{
	const char *const args[] = {"--id", "5", "--size", "64M", "--chunk-size", "1M", NULL};
	memnode_proc mn;
	dm_client  *c = new_client(failure_backend(), OP_TIMEOUT_MS);
	dm_counters k;
	dm_gaddr	ch = 0;
	uint64_t	t0,
				ms;
	uint16_t	node = 0;
	pid_t		killer;
	int			rc;

	if (!CHECK(memnode_start(&mn, 0, args) == 0, "rpc kill: memnode started"))
	{
		dm_client_destroy(c);
		return;
	}
	CHECK_STATUS(dm_client_connect(c, mn.addr, &node), DM_OK, "rpc kill: connected");
	dm_client_reset_counters(c);
	CHECK(stop_memnode(&mn), "rpc kill: memnode stopped");
	killer = kill_later(mn.pid, 300);
	t0 = now_ns();
	rc = dm_chunk_alloc(c, node, 0x4446, &ch, NULL);
	ms = ms_since(t0);
	waitpid(killer, NULL, 0);
	dm_client_counters(c, node, &k);
	CHECK_STATUS(rc, DM_ERR_CLOSED, "kill -9 during an RPC: CLOSED");
	CHECK(ms >= 250 && ms < OP_TIMEOUT_MS - 100, "kill -9 during an RPC: failed when the memnode died (%" PRIu64 " ms)",
		  ms);
	CHECK(test_ucx() ? k.wire_bytes_sent == 0 : k.wire_bytes_sent > 0,
		  "kill -9 during an RPC: it was sent %s (%" PRIu64 " socket bytes)", test_ucx() ? "over UCX" : "on the socket",
		  k.wire_bytes_sent);
	memnode_stop(&mn, SIGKILL);	/* reap */
	dm_client_destroy(c);
}

int
main(void)
{
	test_tcp();
	test_rpc_killed();
	if (!test_ucx())
	{
		/* shm-specific, and tcp's connect failures: nothing of ucx */
		test_shm();
		test_connect();
	}
	return tap_done();
}
