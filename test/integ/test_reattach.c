/*
 * test_reattach.c — a memnode whose region lives in a file comes back from
 * kill -9 and from SIGTERM with everything it held, over tcp (a
 * --region-file on an ordinary file system) and over shm (the --shm file):
 *   - writer processes insert and delete entries of one tree; the memnode
 *     is killed (SIGKILL) in the middle of their load, several times;
 *     each time it is restarted on the same file and must reattach under
 *     the same incarnation; the writers' clients see an error, reconnect
 *     and find the same memnode; the tree must pass dm_tree_verify and
 *     hold exactly what the writers were told they wrote (only the one
 *     operation each writer had in flight at the kill may have gone either
 *     way); later writes go on working (locks the dead memnode left held
 *     are taken over after lock_timeout, batches it died in were finished
 *     from its journal);
 *   - after SIGTERM the region is marked clean and reattached the same way;
 *   - a region whose superblock was damaged on disk, of another format
 *     version, or whose size no longer matches --size, is not reattached:
 *     a new incarnation, and a
 *     client that knew the old one gets DM_ERR_INCARNATION ("memnode
 *     restarted"), over shm also through its old mapping (REPLACED).
 * REATTACH_ROUNDS sets the number of kill -9 rounds (default 3).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dm_client.h"
#include "dm_region.h"
#include "dm_tree.h"
#include "testutil.h"

#define WRITERS 2
#define KEYS 3000				/* per writer */
#define LOCK_TIMEOUT_MS 300
#define OP_TIMEOUT_MS 1000

typedef struct transport
{
	const char *name;
	int			backend;
	const char *const *args;
} transport;

static memnode_proc mn;
static dm_tree_name tname;

/* per writer and key: 1 present, 0 absent; uncertain: the op in flight at a kill */
static signed char present[WRITERS][KEYS];
static int	uncertain[WRITERS];

static uint64_t
key_of(int w, int k)
{
	return (uint64_t) (k * WRITERS + w) * 4 + 1;
}

/*
 * Writers run in tear mode: the memnode (tcp) or the writer (shm) stores
 * word by word with a yield between words, so a kill is likely to land in
 * the middle of a batch (the memnode's log tells how many it finished from
 * its journal).
 */
static dm_client *
connect_client(const transport *tr, const char *who)
{
	return test_client_connect(tr->backend, strcmp(who, "writer") == 0 ? DM_CLIENT_TEAR : 0,
							   OP_TIMEOUT_MS, who, mn.addr, NULL);
}

/*
 * A writer: inserts and deletes its own keys until an operation fails (the
 * memnode died) or it has done max_ops.  Reports on fd, per operation,
 * "B op k" before and "E op k" after it was acknowledged.
 */
static void
writer(const transport *tr, int w, int fd, uint64_t seed, int max_ops)
{
	dm_client  *c = connect_client(tr, "writer");
	dm_tree    *t = NULL;
	char		line[64];

	if (c == NULL || dm_tree_open_existing(c, 1, &tname, &t) != DM_OK)
		_exit(3);
	srandom((unsigned) seed);
	for (int i = 0; i < max_ops; i++)
	{
		int			k = (int) (random() % KEYS);
		int			ins = random() % 10 < 7;
		dm_entry	e = dm_entry_make(key_of(w, k), (uint64_t) k);
		int			n,
					rc;

		n = snprintf(line, sizeof(line), "B %d %d\n", ins, k);
		if (write(fd, line, (size_t) n) != n)
			_exit(4);
		rc = ins ? dm_tree_insert(t, e, NULL) : dm_tree_delete(t, e, NULL);
		if (rc != DM_OK)
			_exit(0);			/* the memnode went away: what we were told is reported */
		n = snprintf(line, sizeof(line), "E %d %d\n", ins, k);
		if (write(fd, line, (size_t) n) != n)
			_exit(4);
	}
	_exit(0);
}

/* Read a writer's report into the model; returns operations acknowledged. */
static int
absorb(int w, int fd)
{
	static char buf[1 << 20];
	size_t		used = 0;
	ssize_t		n;
	int			acked = 0,
				open_k = -1;
	char	   *p;

	while ((n = read(fd, buf + used, sizeof(buf) - 1 - used)) > 0)
	{
		used += (size_t) n;
		if (used >= sizeof(buf) - 1)
			break;
	}
	buf[used] = '\0';
	for (p = buf; *p; p = strchr(p, '\n') + 1)
	{
		char		kind;
		int			ins,
					k;

		if (sscanf(p, "%c %d %d", &kind, &ins, &k) != 3 || strchr(p, '\n') == NULL)
			break;
		if (kind == 'B')
			open_k = k;
		else
		{
			present[w][k] = (signed char) ins;
			acked++;
			open_k = -1;
		}
	}
	uncertain[w] = open_k;
	return acked;
}

/*
 * The tree verifies and holds exactly the model (keys in flight at a kill
 * excepted, then taken as what the tree says).
 */
static int
check_tree(const transport *tr, dm_client *c, const char *when)
{
	dm_tree    *t = NULL;
	dm_iter    *it = NULL;
	dm_range	all = {DM_ENTRY_MIN, 1, DM_ENTRY_INF, 1, 0};
	static signed char seen[WRITERS][KEYS];
	uint64_t	entries = 0;
	char		msg[256] = "";
	dm_entry	e;
	int			rc,
				bad = 0,
				n = 0;

	if (!CHECK(dm_tree_open_existing(c, 1, &tname, &t) == DM_OK, "%s, %s: the tree is still in the catalog", tr->name, when))
		return 0;
	rc = dm_tree_verify(t, &entries, msg, sizeof(msg));
	CHECK(rc == DM_OK, "%s, %s: dm_tree_verify passes (%llu entries)%s%s", tr->name, when,
		  (unsigned long long) entries, rc ? ": " : "", rc ? msg : "");
	memset(seen, 0, sizeof(seen));
	rc = -1;
	if (dm_iter_open(t, &all, &it) == DM_OK)
	{
		while ((rc = dm_iter_next(it, &e)) == 1)
		{
			int			w = (int) (((e.key - 1) / 4) % WRITERS),
						k = (int) (((e.key - 1) / 4) / WRITERS);

			if (k < KEYS && e.tid == (uint64_t) k)
				seen[w][k] = 1;
			else
				bad++;
			n++;
		}
		dm_iter_close(it);
	}
	for (int w = 0; w < WRITERS; w++)
		for (int k = 0; k < KEYS; k++)
			if (k == uncertain[w])
				present[w][k] = seen[w][k];
			else if (seen[w][k] != present[w][k])
			{
				if (bad < 5)
					tap_diag("%s, %s: writer %d key %d: tree %s it, acknowledged %s", tr->name, when, w, k,
							 seen[w][k] ? "has" : "lacks", present[w][k] ? "present" : "absent");
				bad++;
			}
	CHECK(rc == 0 && bad == 0, "%s, %s: the tree holds exactly the acknowledged writes (%d entries, %d wrong)",
		  tr->name, when, n, bad);
	for (int w = 0; w < WRITERS; w++)
		uncertain[w] = -1;
	dm_tree_close(t);
	return bad == 0;
}

/* Run the writers; kill the memnode after ms (0: let them finish). */
static int
load(const transport *tr, int round, int kill_after_ms, int max_ops)
{
	pid_t		pids[WRITERS];
	int			fds[WRITERS];
	int			acked = 0;

	for (int w = 0; w < WRITERS; w++)
	{
		int			p[2];

		if (pipe(p) != 0)
			return -1;
		if ((pids[w] = fork()) == 0)
		{
			close(p[0]);
			writer(tr, w, p[1], (uint64_t) round * 7919 + (uint64_t) w, max_ops);
		}
		close(p[1]);
		fds[w] = p[0];
	}
	if (kill_after_ms > 0)
	{
		usleep((useconds_t) kill_after_ms * 1000);
		mn.keep_region = 1;
		memnode_stop(&mn, SIGKILL);
	}
	for (int w = 0; w < WRITERS; w++)
	{
		int			rc;

		acked += absorb(w, fds[w]);
		close(fds[w]);
		rc = wait_pid_deadline(pids[w], now_ns() + UINT64_C(30000000000));
		CHECK(rc == 0, "%s, round %d: writer %d exits cleanly (%d)", tr->name, round, w, rc);
	}
	return acked;
}

static int
restart(const transport *tr, const char *const *args, uint64_t inc, const char *when)
{
	if (!CHECK(memnode_start(&mn, mn.port, args) == 0, "%s, %s: memnode restarted on port %d", tr->name, when, mn.port))
		return 0;
	CHECK(mn.reattached && mn.incarnation == inc,
		  "%s, %s: it reattached its region file under the same incarnation %016" PRIx64 " (got %016" PRIx64 ", %s)",
		  tr->name, when, inc, mn.incarnation, mn.reattached ? "reattached" : "fresh");
	return mn.reattached && mn.incarnation == inc;
}

/* Damage one byte of the superblock in the region file. */
static int
damage_superblock(const char *path, size_t at)
{
	int			fd = open(path, O_RDWR);
	uint8_t		b;
	int			ok;

	if (fd < 0)
		return 0;
	ok = pread(fd, &b, 1, (off_t) at) == 1;
	b ^= 0x5A;
	ok = ok && pwrite(fd, &b, 1, (off_t) at) == 1;
	close(fd);
	return ok;
}

static void
run(const transport *tr, int rounds)
{
	dm_client  *c;
	dm_tree    *t = NULL;
	dm_tree_opts o;
	uint64_t	inc;
	char		path[128];
	int			acked,
				total = 0;

	memset(present, 0, sizeof(present));
	for (int w = 0; w < WRITERS; w++)
		uncertain[w] = -1;
	if (!CHECK(memnode_start(&mn, 0, tr->args) == 0 && !mn.reattached, "%s: memnode started on a fresh region", tr->name))
		return;
	inc = mn.incarnation;
	snprintf(path, sizeof(path), "%s", mn.region_path);
	CHECK(path[0] == '/' && access(path, F_OK) == 0, "%s: region file %s", tr->name, path);
	c = connect_client(tr, "checker");
	memset(&o, 0, sizeof(o));
	o.node_size = 512;			/* small nodes: splits at every level during the load */
	o.lock_timeout_ms = LOCK_TIMEOUT_MS;
	if (!CHECK(c && dm_tree_create_new(c, 1, &tname, &o, &t) == DM_OK, "%s: tree created", tr->name))
		goto out;
	dm_tree_close(t);
	acked = load(tr, 0, 0, 2000);
	total += acked;
	check_tree(tr, c, "before any restart");

	for (int round = 1; round <= rounds; round++)
	{
		char		when[64];

		snprintf(when, sizeof(when), "kill -9 round %d", round);
		acked = load(tr, round, 150 + 100 * round, 1000000);
		total += acked;
		CHECK(acked > 0, "%s, %s: the writers were busy when the memnode died (%d acknowledged)", tr->name, when, acked);
		if (!restart(tr, tr->args, inc, when))
			goto out;
		/* the checker's connection died with the memnode: reconnecting finds the same one */
		CHECK_STATUS(dm_client_check(c, 1) == DM_OK ? DM_OK : dm_client_reconnect(c, 1), DM_OK,
					 "%s, %s: the checker reconnects, no DM_ERR_INCARNATION", tr->name, when);
		check_tree(tr, c, when);
	}
	/* writes after the last kill: locks the dead memnode left held are taken over */
	total += load(tr, 100, 0, 1500);
	check_tree(tr, c, "writes after the kills");

	/* SIGTERM: clean, then reattached the same way */
	mn.keep_region = 1;
	{
		int			st = memnode_stop(&mn, SIGTERM);

		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: SIGTERM exits 0", tr->name);
	}
	CHECK(access(path, F_OK) == 0, "%s: the region file is kept after SIGTERM", tr->name);
	if (!restart(tr, tr->args, inc, "after SIGTERM"))
		goto out;
	CHECK_STATUS(dm_client_check(c, 1) == DM_OK ? DM_OK : dm_client_reconnect(c, 1), DM_OK,
				 "%s, after SIGTERM: the checker reconnects", tr->name);
	check_tree(tr, c, "after SIGTERM");
	total += load(tr, 200, 0, 500);
	check_tree(tr, c, "writes after SIGTERM");
	tap_diag("%s: %d writes acknowledged in all", tr->name, total);

	/*
	 * Over shm the access method's per-statement check polls the socket at
	 * most every second; a restart in between must show anyway, in the
	 * superblock's attach count (otherwise the statement's first RPC would
	 * fail on the dead socket instead of a reconnect before it).
	 */
	if (tr->backend == DM_BACKEND_SHM)
	{
		uint64_t	t0;
		int			rc;

		CHECK_STATUS(dm_client_check(c, 1), DM_OK, "%s: the checker's connection is sound", tr->name);
		CHECK_STATUS(dm_client_check(c, 1), DM_OK, "%s: and again (no poll due now)", tr->name);
		t0 = now_ns();
		mn.keep_region = 1;
		memnode_stop(&mn, SIGKILL);
		if (!restart(tr, tr->args, inc, "kill -9 between two checks"))
			goto out;
		rc = dm_client_check(c, 1);
		CHECK_STATUS(rc, DM_ERR_CLOSED, "%s: the next check notices the restart %llu ms later (%s)", tr->name,
					 (unsigned long long) ((now_ns() - t0) / 1000000), dm_client_error(c));
		CHECK_STATUS(dm_client_reconnect(c, 1), DM_OK, "%s: and the checker reconnects", tr->name);
		check_tree(tr, c, "after a restart between two checks");
	}

	/* a damaged superblock: not intact, so a new incarnation */
	{
		dm_client  *old = connect_client(tr, "old");

		mn.keep_region = 1;
		memnode_stop(&mn, SIGTERM);
		CHECK(damage_superblock(path, offsetof(dm_superblock, chunk_size) + 2),
			  "%s: one byte of the superblock's chunk size damaged", tr->name);
		if (!CHECK(memnode_start(&mn, mn.port, tr->args) == 0, "%s: memnode started on the damaged file", tr->name))
			goto out;
		CHECK(!mn.reattached && mn.incarnation != inc,
			  "%s: a damaged superblock gets a fresh region and a new incarnation", tr->name);
		CHECK_STATUS(dm_client_reconnect(c, 1), DM_ERR_INCARNATION,
					 "%s: a client of the old incarnation gets DM_ERR_INCARNATION (memnode restarted)", tr->name);
		CHECK(strstr(dm_client_error(c), "restarted") != NULL, "%s: its message says so: %s", tr->name, dm_client_error(c));
		if (tr->backend == DM_BACKEND_SHM && old)
		{
			uint64_t	v;

			/* the old mapping: REPLACED by the new memnode (it was DEAD after SIGTERM) */
			CHECK_STATUS(dm_read(old, dm_gaddr_make(1, 4096 * 2), &v, 8), DM_ERR_INCARNATION,
						 "%s: a client still mapping the old file sees it REPLACED", tr->name);
		}
		dm_client_destroy(old);
		CHECK_STATUS(dm_client_accept_incarnation(c, 1), DM_OK, "%s: accepting the new incarnation", tr->name);
		CHECK_STATUS(dm_tree_open_existing(c, 1, &tname, &t), DM_ERR_NOTFOUND,
					 "%s: the new region has no trees", tr->name);
	}
	/* a region of another format version (an older release's): also a fresh region */
	{
		uint64_t	inc2 = mn.incarnation;
		uint32_t	old_version = DM_FORMAT_VERSION - 1;
		int			fd;

		mn.keep_region = 1;
		memnode_stop(&mn, SIGTERM);
		fd = open(path, O_RDWR);
		CHECK(fd >= 0 && pwrite(fd, &old_version, 4, offsetof(dm_superblock, format_version)) == 4,
			  "%s: the region file now says format version %u", tr->name, old_version);
		if (fd >= 0)
			close(fd);
		if (CHECK(memnode_start(&mn, mn.port, tr->args) == 0, "%s: started on the old-format file", tr->name))
			CHECK(!mn.reattached && mn.incarnation != inc2, "%s: another format version gets a fresh region", tr->name);
	}
	/* a size that no longer matches --size: also a fresh region */
	{
		const char *args2[24];
		int			n = 0;
		uint64_t	inc2 = mn.incarnation;

		for (const char *const *a = tr->args; *a; a++)
			args2[n++] = strcmp(*a, "48M") == 0 ? "64M" : *a;
		args2[n] = NULL;
		mn.keep_region = 1;
		memnode_stop(&mn, SIGTERM);
		if (CHECK(memnode_start(&mn, mn.port, args2) == 0, "%s: started with another --size", tr->name))
			CHECK(!mn.reattached && mn.incarnation != inc2, "%s: another --size gets a fresh region", tr->name);
	}
out:
	if (c)
		dm_client_destroy(c);
	mn.keep_region = 0;
	if (mn.pid > 0)
		memnode_stop(&mn, SIGTERM);
	unlink(path);
}

int
main(void)
{
	const char *env = getenv("REATTACH_ROUNDS");
	int			rounds = env ? atoi(env) : 3;
	char		file[128];
	char		idarg[8] = "1";
	const char *tcp_args[] = {"--id", idarg, "--size", "48M", "--chunk-size", "256K",
	"--region-file", file, "--threads", "2", NULL};
	const char *shm_args[] = {"--id", idarg, "--size", "48M", "--chunk-size", "256K", "--shm", NULL};
	transport	tcp = {"tcp, --region-file", DM_BACKEND_TCP, tcp_args};
	transport	shm = {"shm", DM_BACKEND_SHM, shm_args};

	snprintf(file, sizeof(file), "/tmp/dmindex-test-reattach-%d.region", (int) getpid());
	dm_tree_name_named(&tname, "reattach");
	tap_diag("%d kill -9 rounds (REATTACH_ROUNDS)", rounds);
	run(&tcp, rounds);
	run(&shm, rounds);
	unlink(file);
	return tap_done();
}
