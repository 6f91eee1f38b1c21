/*
 * test_tree_redo.c — a writer's redo slot (dm_tree_io.c, "Redo slots are
 * guarded too") against a write of that writer abandoned on a timeout and
 * executed late, over shm (dm_client_set_fault, DM_FAULT_LATE: a forked
 * process executes the abandoned batch later).
 *
 * Part 1: writer A (shm) abandons a write, gives its redo slot back
 * (dm_tree_alloc_release, as a backend does between statements), and
 * writer B (tcp, no slot of its own) splits, so that the freed memory
 * becomes one of B's nodes.  Then A's late batch runs.  Its redo stores
 * come before the node's version guard; unguarded, they overwrote B's
 * node with a copy of A's leaf (and its lock word with an address): the
 * tree then failed to verify and lost B's acknowledged entries.  Now the
 * slot was untagged before it was freed, the late batch's claim fails and
 * nothing of it lands.
 *
 * Part 2: the late batch runs while the slot is still A's, after A
 * rewrote the same leaf, so it claims the slot, stores its image and stops
 * at its failed version guard, leaving the slot claimed.  A's next write
 * must leave that slot to the tree and succeed with a new one; a slot
 * left claimed is never freed.
 *
 * Afterwards the tree verifies and holds every acknowledged entry.
 * TREE_KEY_FORMAT=var (test_tree_redo+var): the same on a VAR tree, whose
 * redo images are VAR node images (test/lib/testkeys.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dm_client.h"
#include "dm_region.h"
#include "dm_tree.h"
#include "testkeys.h"
#include "testutil.h"

#define NODE_SIZE 256			/* a redo slot is one grant unit: B's next grant can be it */
#define LOCK_TIMEOUT_MS 150
#define LATE_MS 1500			/* the abandoned batch runs this much later */
#define FILL 30					/* even keys 0, 2, ... 58 */
#define B_FROM 1000				/* B's keys, right of everything */
#define B_N 200

typedef struct shared
{
	int			failed;
	char		msg[256];
	uint8_t		present[2048];	/* acknowledged inserts, by key */
	uint64_t	slots_lost;
	uint64_t	redo_slots;
} shared;

static shared *sh;
static memnode_proc mn;

static void
afail(const char *what, int rc, dm_tree *t)
{
	if (!sh->failed)
		snprintf(sh->msg, sizeof(sh->msg), "%s: %s: %s", what, dm_strerror(rc), t ? dm_tree_error(t) : "");
	sh->failed = 1;
}

static dm_entry
key_entry(int k)
{
	return tk((uint64_t) k * 4 + 1, (uint64_t) k);
}

static int
insert_key(dm_tree *t, int k)
{
	int			rc = dm_tree_insert(t, key_entry(k), NULL);

	if (rc == DM_OK)
		sh->present[k] = 1;
	return rc;
}

static dm_client *
client(int backend, const char *who)
{
	return test_client_connect(backend, 0, 20000, who, mn.addr, NULL);
}

/* A new tree with the even keys of [0, 2 * FILL), over tcp; 0 on failure. */
static int
setup(const dm_tree_name *tn)
{
	dm_client  *c = client(DM_BACKEND_TCP, "setup");
	dm_tree_opts o;
	dm_tree    *t = NULL;
	int			rc;

	if (c == NULL)
		return 0;
	memset(&o, 0, sizeof(o));
	o.node_size = NODE_SIZE;
	test_tree_leaf_opts(&o);
	o.lock_timeout_ms = LOCK_TIMEOUT_MS;
	rc = test_tree_key_opts(&o) == 0 ? dm_tree_create_new(c, 1, tn, &o, &t) : DM_ERR_INVALID;
	for (int k = 0; k < 2 * FILL && rc == DM_OK; k += 2)
		rc = insert_key(t, k);
	/* closed without giving back: its grant's rest is nobody's, so B's next grant is A's slot */
	dm_tree_close(t);
	dm_client_destroy(c);
	return rc == DM_OK;
}

/*
 * Insert `late_key` with its write (the last step, as measured on
 * `probe_key`) abandoned and executed LATE_MS later.  1 if it timed out as
 * injected and the client is usable again.
 */
static int
abandon_insert(dm_client *c, dm_tree *t, int probe_key, int late_key, int late_ms)
{
	uint64_t	s0 = dm_client_steps(c);
	dm_fault	f;
	int			rc;

	if ((rc = insert_key(t, probe_key)) != DM_OK)
	{
		afail("A: probe insert", rc, t);
		return 0;
	}
	memset(&f, 0, sizeof(f));
	f.action = DM_FAULT_LATE;
	f.at = dm_client_steps(c) - s0;
	f.ms = late_ms;
	dm_client_set_fault(c, &f);
	rc = dm_tree_insert(t, key_entry(late_key), NULL);
	if (rc != DM_ERR_TIMEOUT)
	{
		afail("A: the abandoned insert did not time out", rc, t);
		return 0;
	}
	if (!test_client_recover(c))
	{
		afail("A: reconnect", DM_ERR_CONNECT, NULL);
		return 0;
	}
	return 1;
}

/* Part 1, writer A: abandon a write, give the slot back, tell the parent. */
static void
freed_a(const dm_tree_name *tn, int done_fd)
{
	dm_client  *c = client(DM_BACKEND_SHM, "A");
	dm_tree    *t = NULL;
	dm_tree_counters ctr;
	int			rc;

	if (c == NULL || (rc = dm_tree_open_existing(c, 1, tn, &t)) != DM_OK)
	{
		afail("A: open", DM_ERR_CONNECT, NULL);
		_exit(1);
	}
	/* the first write over shm takes the redo slot */
	if ((rc = insert_key(t, 1)) != DM_OK)
		afail("A: insert", rc, t);
	else if (abandon_insert(c, t, 3, 5, LATE_MS) && (rc = dm_tree_alloc_release(t)) != DM_OK)
		afail("A: give back", rc, t);
	dm_tree_get_counters(t, &ctr);
	sh->slots_lost = ctr.redo_slots_lost;
	if (write(done_fd, "x", 1) != 1)
		_exit(1);
	reap_all_children();			/* the late batch has run */
	_exit(0);
}

/* The tree verifies and holds every acknowledged insert. */
static void
check_tree(const dm_tree_name *tn, const char *label)
{
	dm_client  *c = client(DM_BACKEND_TCP, "checker");
	dm_tree    *t = NULL;
	char		msg[256] = "";
	uint64_t	n = 0;
	int			rc, missing = 0;

	if (!CHECK(c != NULL && dm_tree_open_existing(c, 1, tn, &t) == DM_OK, "%s: open the tree", label))
	{
		dm_client_destroy(c);
		return;
	}
	rc = dm_tree_verify(t, &n, msg, sizeof(msg));
	CHECK_STATUS(rc, DM_OK, "%s: the tree verifies%s%s", label, rc ? ": " : "", msg);
	for (int k = 0; k < (int) sizeof(sh->present) && rc == DM_OK; k++)
	{
		int			found = 0;

		if (!sh->present[k])
			continue;
		if ((rc = dm_tree_contains(t, key_entry(k), &found)) == DM_OK && !found && missing++ == 0)
			tap_diag("%s: acknowledged key %d is missing", label, k);
	}
	CHECK(rc == DM_OK && missing == 0, "%s: every acknowledged insert is there (%d missing of %" PRIu64
		  " entries)", label, missing, n);
	/* and a later writer still writes (no lock word left damaged) */
	rc = DM_OK;
	for (int k = 1500; k < 1540 && rc == DM_OK; k++)
		rc = insert_key(t, k);
	CHECK_STATUS(rc, DM_OK, "%s: 40 later inserts%s%s", label, rc ? ": " : "", rc ? dm_tree_error(t) : "");
	dm_tree_destroy(t);
	dm_client_destroy(c);
}

static void
part_freed(void)
{
	dm_tree_name tn;
	dm_client  *c;
	dm_tree    *t = NULL;
	int			pp[2], rc = DM_OK, st;
	pid_t		a;
	char		ch;

	memset(sh, 0, sizeof(*sh));
	dm_tree_name_named(&tn, "redo-freed");
	if (!CHECK(setup(&tn) && pipe(pp) == 0, "freed: set up"))
		return;
	if ((a = fork()) == 0)
	{
		close(pp[0]);
		freed_a(&tn, pp[1]);
	}
	close(pp[1]);
	if (read(pp[0], &ch, 1) != 1)
		ch = 0;
	close(pp[0]);
	CHECK(ch == 'x' && !sh->failed, "freed: A abandoned a write and gave its redo slot back%s%s",
		  sh->failed ? ": " : "", sh->msg);
	CHECK(sh->slots_lost == 0, "freed: the slot was free to give back (%" PRIu64 " left to the tree)",
		  sh->slots_lost);

	/* B splits now (over tcp: no slot of its own), its first new node where A's slot was */
	c = client(DM_BACKEND_TCP, "B");
	if (c == NULL || dm_tree_open_existing(c, 1, &tn, &t) != DM_OK)
		rc = DM_ERR_CONNECT;
	{
		uint64_t	t0 = now_ns();

		for (int k = B_FROM; k < B_FROM + B_N && rc == DM_OK; k++)
			rc = insert_key(t, k);
		CHECK_STATUS(rc, DM_OK, "freed: B's %d inserts (splits) before A's late batch (%.0f ms)", B_N,
					 (now_ns() - t0) / 1e6);
		if ((now_ns() - t0) / 1000000 > LATE_MS / 2)
			tap_diag("freed: B took long; the late batch may have run before B reused the slot");
	}
	dm_tree_close(t);
	dm_client_destroy(c);

	st = wait_pid_deadline(a, now_ns() + 30 * 1000000000ull);
	CHECK(st == 0 && !sh->failed, "freed: A's late batch ran (A %d)%s%s", st, sh->failed ? ": " : "", sh->msg);
	check_tree(&tn, "freed");
}

/* Part 2, writer A: the late batch claims A's own slot and stops at its guard. */
static void
claimed_a(const dm_tree_name *tn)
{
	dm_client  *c = client(DM_BACKEND_SHM, "A");
	dm_tree    *t = NULL;
	dm_tree_counters ctr;
	int			rc;

	if (c == NULL || (rc = dm_tree_open_existing(c, 1, tn, &t)) != DM_OK)
	{
		afail("A: open", DM_ERR_CONNECT, NULL);
		_exit(1);
	}
	if ((rc = insert_key(t, 7)) != DM_OK)
	{
		afail("A: insert", rc, t);
		_exit(1);
	}
	/* abandoned; A retries at once, as a backend would (taking its own stale lock over) */
	if (!abandon_insert(c, t, 9, 11, 600))
		_exit(1);
	if ((rc = insert_key(t, 11)) != DM_OK)
		afail("A: retry", rc, t);
	reap_all_children();			/* the late batch: slot claimed, version guard failed */
	dm_tree_get_counters(t, &ctr);
	if (ctr.redo_slots_lost != 0)
		afail("A: a slot was lost before the late batch ran", DM_ERR_INTERNAL, NULL);
	/* the next write finds its slot claimed: leaves it, and succeeds with a new one */
	if ((rc = insert_key(t, 13)) != DM_OK)
		afail("A: insert after the late batch", rc, t);
	dm_tree_get_counters(t, &ctr);
	sh->slots_lost = ctr.redo_slots_lost;
	sh->redo_slots = ctr.redo_slots;
	if ((rc = dm_tree_alloc_release(t)) != DM_OK)
		afail("A: give back", rc, t);
	dm_tree_get_counters(t, &ctr);
	if (ctr.redo_slots != 0 || ctr.redo_slots_lost != sh->slots_lost)
		afail("A: the new slot was not given back", DM_ERR_INTERNAL, NULL);
	dm_tree_close(t);
	dm_client_destroy(c);
	_exit(0);
}

static void
part_claimed(void)
{
	dm_tree_name tn;
	pid_t		a;
	int			st;

	memset(sh, 0, sizeof(*sh));
	dm_tree_name_named(&tn, "redo-claimed");
	if (!CHECK(setup(&tn), "claimed: set up"))
		return;
	if ((a = fork()) == 0)
		claimed_a(&tn);
	st = wait_pid_deadline(a, now_ns() + 30 * 1000000000ull);
	CHECK(st == 0 && !sh->failed, "claimed: A ran (%d)%s%s", st, sh->failed ? ": " : "", sh->msg);
	CHECK(sh->slots_lost == 1 && sh->redo_slots == 1,
		  "claimed: the slot the late batch left claimed went to the tree, a new one took its place "
		  "(%" PRIu64 " lost, %" PRIu64 " held)", sh->slots_lost, sh->redo_slots);
	check_tree(&tn, "claimed");
}

int
main(void)
{
	const char *const args[] = {"--id", "1", "--shm", "--size", "64M", "--chunk-size", "1M", NULL};

	{
		/* the longest test key follows the node size; every key interned before the forks */
		dm_tree_opts o = {.node_size = NODE_SIZE};

		if (!CHECK(test_tree_key_opts(&o) == 0, "TREE_KEY_FORMAT is fixed8 or var"))
			return tap_done();
		tk_intern(0, 4 * 2048 + 2);
	}
	sh = test_start_shared(sizeof(shared), &mn, args);
	if (sh == NULL)
		return tap_done();
	part_freed();
	part_claimed();
	CHECK(WIFEXITED(memnode_stop(&mn, SIGTERM)), "memnode exits on SIGTERM");
	return tap_done();
}
