/*
 * corrupt.c — damaged trees: nodes with bad checksums, magic or levels must
 * make operations fail within a bound (each in a child with a deadline)
 * rather than loop or return wrong rows, and dm_tree_verify must detect
 * broken invariants in nodes whose checksums are valid.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dm_client.h"
#include "dm_hop.h"
#include "dm_node.h"
#include "dm_offload.h"			/* the tree's node struct and dm_node_seal: for sealed corruption */
#include "dm_region.h"
#include "dm_tree.h"
#include "entrymodel.h"
#include "testutil.h"

#include "tree_model.h"

/* ---- corruption ------------------------------------------------------------------ */

/* Node field offsets (dm_tree.h layout). */
#define NODE_OFF_CHECKSUM 16
#define NODE_OFF_MAGIC 24
#define NODE_OFF_LEVEL 26
#define NODE_OFF_COUNT 28
#define NODE_OFF_TAG 32

typedef struct node_hdr
{
	uint16_t	magic;
	uint8_t		level;
	uint16_t	count;
	uint64_t	tag;
} node_hdr;

static int
read_node(dm_client *c, dm_gaddr a, uint8_t *buf, uint32_t ns, node_hdr *h)
{
	int			rc = dm_read(c, a, buf, ns);

	if (rc != DM_OK)
		return rc;
	memcpy(&h->magic, buf + NODE_OFF_MAGIC, 2);
	h->level = buf[NODE_OFF_LEVEL];
	memcpy(&h->count, buf + NODE_OFF_COUNT, 2);
	memcpy(&h->tag, buf + NODE_OFF_TAG, 8);
	return DM_OK;
}

/* Child i's address in an inner node. */
static dm_gaddr
inner_child(const uint8_t *buf, int i)
{
	dm_gaddr	a;

	memcpy(&a, buf + DM_NODE_HEADER + 24 * i + 16, 8);
	return a;
}

/* What a bounded operation reports back through its pipe. */
typedef struct bounded_res
{
	int			stage;			/* 0 = connect/open, 1 = the operation */
	int			rc;
	int			n;
	double		secs;
	char		msg[256];
} bounded_res;

enum bop
{
	BOP_LOOKUP, BOP_CONTAINS, BOP_INSERT, BOP_DELETE, BOP_SCAN, BOP_SCAN_BACK,
	BOP_INSERT_SORTED, BOP_STATS, BOP_VERIFY
};
static const char *const bop_names[] = {"lookup", "contains", "insert", "delete", "forward scan",
"backward scan", "insert_sorted", "stats_get", "verify"};

static void
bounded_child(const tcfg *cf, const dm_tree_name *tn, enum bop op, uint64_t key, int wfd)
{
	bounded_res res;
	dm_client  *c;
	dm_tree    *t = NULL;
	uint64_t	t0,
				tids[16],
				cnt;
	int			rc,
				x = 0;

	memset(&res, 0, sizeof(res));
	c = connect_client(cf, mn.addr);
	rc = c ? dm_tree_open_existing(c, 1, tn, &t) : DM_ERR_CONNECT;
	if (rc != DM_OK)
	{
		res.rc = rc;
		snprintf(res.msg, sizeof(res.msg), "%s", t ? terr(t) : (c ? dm_client_error(c) : "no client"));
		goto out;
	}
	res.stage = 1;
	t0 = now_ns();
	switch (op)
	{
		case BOP_LOOKUP:
			rc = dm_tree_lookup(t, key, tids, 16, &res.n);
			break;
		case BOP_CONTAINS:
			rc = dm_tree_contains(t, dm_entry_make(key, 1), &x);
			break;
		case BOP_INSERT:
			rc = dm_tree_insert(t, dm_entry_make(key, 2), &x);
			break;
		case BOP_DELETE:
			rc = dm_tree_delete(t, dm_entry_make(key, 1), &x);
			break;
		case BOP_SCAN:
		case BOP_SCAN_BACK:
			{
				dm_range	r = {dm_key_lo(key, 1), 1, DM_ENTRY_INF, 1, op == BOP_SCAN_BACK};
				dm_iter    *it = NULL;
				dm_entry	e;

				if (op == BOP_SCAN_BACK)
				{
					r.lo = DM_ENTRY_MIN;
					r.hi = dm_key_hi(key, 1);
				}
				rc = dm_iter_open(t, &r, &it);
				if (rc == DM_OK)
				{
					while ((x = dm_iter_next(it, &e)) == 1)
						res.n++;
					rc = x < 0 ? -x : DM_OK;
					dm_iter_close(it);
				}
				break;
			}
		case BOP_INSERT_SORTED:
			{
				dm_entry	b[3] = {{key, 3}, {key + 1, 3}, {key + 2, 3}};

				rc = dm_tree_insert_sorted(t, b, 3, &x);
				break;
			}
		case BOP_STATS:
			{
				dm_tree_stats st;

				rc = dm_tree_stats_get(t, &st);
				break;
			}
		case BOP_VERIFY:
			rc = dm_tree_verify(t, &cnt, res.msg, sizeof(res.msg));
			break;
	}
	res.secs = (now_ns() - t0) / 1e9;
	res.rc = rc;
	if (rc != DM_OK && op != BOP_VERIFY)
		snprintf(res.msg, sizeof(res.msg), "%s", terr(t));
out:
	if (write(wfd, &res, sizeof(res)) != (ssize_t) sizeof(res))
		_exit(3);
	_exit(0);
}

/*
 * Run one operation in a child on its own client and handle, at most
 * limit_s seconds: an operation that loops forever on a corrupt node fails
 * the test instead of hanging it.  Returns 0 if the child finished.
 */
static int
run_bounded(const tcfg *cf, const dm_tree_name *tn, enum bop op, uint64_t key, int limit_s,
			bounded_res *res)
{
	int			pfd[2],
				st;
	pid_t		pid;
	struct pollfd p;
	ssize_t		got = 0;

	memset(res, 0, sizeof(*res));
	res->rc = -1;
	if (pipe(pfd) != 0)
		return -1;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0)
	{
		close(pfd[0]);
		bounded_child(cf, tn, op, key, pfd[1]);
	}
	close(pfd[1]);
	p.fd = pfd[0];
	p.events = POLLIN;
	while (poll(&p, 1, limit_s * 1000) < 0 && errno == EINTR)
		;
	if (p.revents & (POLLIN | POLLHUP))
		got = read(pfd[0], res, sizeof(*res));
	close(pfd[0]);
	if (got != (ssize_t) sizeof(*res))
	{
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		snprintf(res->msg, sizeof(res->msg), "did not finish within %d s", limit_s);
		return -1;
	}
	waitpid(pid, &st, 0);
	return 0;
}

static void
expect_bounded(const tcfg *cf, const dm_tree_name *tn, enum bop op, uint64_t key, int want,
			   const char *what)
{
	bounded_res res;
	int			done = run_bounded(cf, tn, op, key, 60, &res) == 0;
	int			ok;

	if (want == DM_ERR_CORRUPT)
		ok = done && res.rc == DM_ERR_CORRUPT;	/* from the op, or from open if it reads the root */
	else
		ok = done && res.stage == 1 && res.rc == want;
	CHECK(ok, "corrupt %s: %s %s key %" PRIu64 " -> %s (got %s%s in %.2f s)", cf->name, what, bop_names[op],
		  key, dm_strerror(want), done ? dm_strerror(res.rc) : "no answer",
		  done && res.stage == 0 ? " from open_existing" : "", res.secs);
	if (!ok || op == BOP_VERIFY)
		tap_diag("  message: %s", res.msg);
	if (op == BOP_VERIFY && want == DM_ERR_CORRUPT)
		CHECK(done && res.msg[0] != '\0', "corrupt %s: verify describes the problem", cf->name);
}

void
run_corrupt(const tcfg *cf)
{
	char		name[64],
				msg[512];
	dm_client  *c = connect_client(cf, mn.addr);
	dm_tree    *t = NULL;
	dm_tree_name tn;
	dm_tree_opts opts;
	dm_tree_info ti;
	uint32_t	ns = 256;
	uint8_t		root[4096],
				leaf[4096],
				garbage[4096],
				nb[4096];
	node_hdr	h = {0};
	dm_gaddr	rootw = 0,
				rootaddr,
				leftmost,
				a;
	dm_entry	ents[2000];
	uint64_t	cnt,
				c0;
	int			rc,
				levels = 0,
				changed;

	rng_seed_label(g_seed, cf->name, 0);
	if (!CHECK(c != NULL, "corrupt %s: client connects", cf->name))
		return;
	c0 = chunks_used(c);
	snprintf(name, sizeof(name), "corrupt-%s", cf->name);
	dm_tree_name_named(&tn, name);
	memset(&opts, 0, sizeof(opts));
	opts.node_size = ns;
	test_tree_leaf_opts(&opts);
	if (!CHECK_STATUS(dm_tree_create_new(c, 1, &tn, &opts, &t), DM_OK, "corrupt %s: create", cf->name))
		goto out_client;
	/* keys 0..1999 with tid 1: key 0 is in the leftmost leaf, 1999 in the rightmost */
	for (int i = 0; i < 2000; i++)
		ents[i] = dm_entry_make((uint64_t) i, 1);
	rc = dm_tree_insert_sorted(t, ents, 2000, &changed);
	CHECK(rc == DM_OK && changed == 2000, "corrupt %s: 2000 entries inserted", cf->name);
	CHECK_STATUS(dm_tree_verify(t, &cnt, msg, sizeof(msg)), DM_OK, "corrupt %s: verify before", cf->name);

	/* root word in the catalog -> root node -> leftmost leaf */
	rc = dm_tree_open(c, 1, &tn, &ti);
	if (rc == DM_OK)
		rc = dm_read(c, ti.root_addr, &rootw, 8);
	rootaddr = rootw & ~DM_GADDR_RESERVED_BIT;
	if (rc == DM_OK)
		rc = read_node(c, rootaddr, root, ns, &h);
	if (!CHECK(rc == DM_OK && h.magic == DM_NODE_MAGIC && h.tag == dm_tree_id(t) && h.level >= 2,
			   "corrupt %s: the catalog's root word (0x%" PRIx64 ") points at an inner root node of this tree "
			   "(magic 0x%x, level %d, tag 0x%" PRIx64 " vs id 0x%" PRIx64 ")", cf->name, rootw, h.magic, h.level,
			   h.tag, dm_tree_id(t)))
		goto out_tree;
	a = rootaddr;
	memcpy(nb, root, ns);
	while (h.level > 0 && levels++ < 16)
	{
		a = inner_child(nb, 0);
		if (read_node(c, a, nb, ns, &h) != DM_OK || h.magic != DM_NODE_MAGIC)
			break;
	}
	leftmost = a;
	if (!CHECK(h.level == 0 && h.magic == DM_NODE_MAGIC && h.count > 0, "corrupt %s: found the leftmost leaf", cf->name))
		goto out_tree;
	memcpy(leaf, nb, ns);

	/*
	 * (a) garbage over the leftmost leaf (all but its lock word, left free),
	 * with an absurd count: validation must not trust the count to size
	 * the checksum.
	 */
	for (uint32_t i = 0; i < ns; i++)
		garbage[i] = (uint8_t) rnd();
	memset(garbage, 0, 8);
	garbage[NODE_OFF_COUNT] = 0xFF;
	garbage[NODE_OFF_COUNT + 1] = 0xFF;
	CHECK_STATUS(dm_write(c, leftmost + 8, garbage + 8, ns - 8), DM_OK, "corrupt %s: garbage over the leftmost leaf",
				 cf->name);
	expect_bounded(cf, &tn, BOP_LOOKUP, 0, DM_ERR_CORRUPT, "garbage leaf:");
	expect_bounded(cf, &tn, BOP_CONTAINS, 0, DM_ERR_CORRUPT, "garbage leaf:");
	expect_bounded(cf, &tn, BOP_INSERT, 0, DM_ERR_CORRUPT, "garbage leaf:");
	expect_bounded(cf, &tn, BOP_DELETE, 1, DM_ERR_CORRUPT, "garbage leaf:");
	expect_bounded(cf, &tn, BOP_SCAN, 0, DM_ERR_CORRUPT, "garbage leaf:");
	expect_bounded(cf, &tn, BOP_SCAN_BACK, 1500, DM_ERR_CORRUPT, "garbage leaf:");
	expect_bounded(cf, &tn, BOP_INSERT_SORTED, 0, DM_ERR_CORRUPT, "garbage leaf:");
	expect_bounded(cf, &tn, BOP_LOOKUP, 1999, DM_OK, "garbage leaf: a leaf elsewhere still works:");
	expect_bounded(cf, &tn, BOP_VERIFY, 0, DM_ERR_CORRUPT, "garbage leaf:");
	/* heal (lock word included: a writer may have left it taken) */
	CHECK_STATUS(dm_write(c, leftmost, leaf, ns), DM_OK, "corrupt %s: restore the leaf", cf->name);
	rc = dm_tree_verify(t, &cnt, msg, sizeof(msg));
	CHECK(rc == DM_OK && cnt == 2000, "corrupt %s: restored leaf verifies with 2000 entries (%s %s)", cf->name,
		  dm_strerror(rc), msg);

	/* (b) a wrong checksum in the root */
	if (read_node(c, rootaddr, root, ns, &h) == DM_OK)
	{
		uint8_t		bad[8];

		for (int i = 0; i < 8; i++)
			bad[i] = root[NODE_OFF_CHECKSUM + i] ^ 0x5A;
		CHECK_STATUS(dm_write(c, rootaddr + NODE_OFF_CHECKSUM, bad, 8), DM_OK,
					 "corrupt %s: overwrite the root's checksum", cf->name);
		expect_bounded(cf, &tn, BOP_LOOKUP, 1000, DM_ERR_CORRUPT, "bad root checksum:");
		expect_bounded(cf, &tn, BOP_INSERT, 1000, DM_ERR_CORRUPT, "bad root checksum:");
		expect_bounded(cf, &tn, BOP_SCAN, 0, DM_ERR_CORRUPT, "bad root checksum:");
		expect_bounded(cf, &tn, BOP_STATS, 0, DM_ERR_CORRUPT, "bad root checksum:");
		expect_bounded(cf, &tn, BOP_VERIFY, 0, DM_ERR_CORRUPT, "bad root checksum:");
		/* and from this process's handle too: the verify message is printed */
		rc = dm_tree_verify(t, &cnt, msg, sizeof(msg));
		CHECK(rc == DM_ERR_CORRUPT && msg[0], "corrupt %s: verify on the creating handle: %s: %s", cf->name,
			  dm_strerror(rc), msg);
		CHECK_STATUS(dm_write(c, rootaddr, root, ns), DM_OK, "corrupt %s: restore the root", cf->name);
		rc = dm_tree_verify(t, &cnt, msg, sizeof(msg));
		CHECK(rc == DM_OK && cnt == 2000, "corrupt %s: restored root verifies with 2000 entries (%s %s)", cf->name,
			  dm_strerror(rc), msg);
		expect_bounded(cf, &tn, BOP_INSERT, 5000, DM_OK, "healed:");
	}

	/* (c) even a corrupt tree can be destroyed (DROP INDEX must work) */
	CHECK_STATUS(dm_write(c, rootaddr + 8, garbage + 8, ns - 8), DM_OK, "corrupt %s: garbage over the root", cf->name);
	rc = dm_tree_destroy(t);
	t = NULL;
	CHECK_STATUS(rc, DM_OK, "corrupt %s: dm_tree_destroy of a tree with a garbage root", cf->name);
	CHECK(chunks_used(c) == c0, "corrupt %s: chunks_used back to %" PRIu64 " (now %" PRIu64 ")", cf->name, c0,
		  chunks_used(c));
out_tree:
	if (t)
		dm_tree_destroy(t);
out_client:
	dm_client_destroy(c);
}

/* ---- verify detects broken invariants (nodes with valid checksums) ------------- */

/*
 * Corruption that passes validation: a node edited locally, resealed with
 * dm_node_seal (dm_node.h, the tree's own checksum) and written back, so
 * readers accept it and only dm_tree_verify can notice.  Each case breaks
 * one invariant the header promises verify checks, then the original bytes
 * are restored and verify must pass again.
 */
static dm_client *vd_c;
static dm_tree *vd_t;
static const char *vd_name;

static void
vd_case(dm_gaddr addr, const uint8_t *orig, uint8_t *mod, uint32_t ns, const char *what)
{
	char		msg[512] = "";
	uint64_t	cnt = 0;
	int			rc;

	NODE_HDR(mod)->lock = 0;
	dm_node_seal(mod);
	if (!CHECK_STATUS(dm_write(vd_c, addr, mod, ns), DM_OK, "verify %s: write a node with %s", vd_name, what))
		return;
	rc = dm_tree_verify(vd_t, &cnt, msg, sizeof(msg));
	CHECK(rc == DM_ERR_CORRUPT && msg[0], "verify %s: detects %s (%s: %s)", vd_name, what, dm_strerror(rc), msg);
	/* restore (the version goes back too: nobody else writes this tree) */
	dm_write(vd_c, addr, orig, ns);
	rc = dm_tree_verify(vd_t, &cnt, msg, sizeof(msg));
	CHECK(rc == DM_OK && cnt == 2000, "verify %s: passes again once the node is restored (%s %s)", vd_name,
		  dm_strerror(rc), msg);
}

/* The bucket of the k-th used bucket of a hopscotch leaf (-1: fewer). */
static int
hop_used_bucket(const uint8_t *buf, uint32_t ns, int k)
{
	for (int i = 0; i < dm_hop_nb(ns); i++)
		if (dm_hop_used(&HOP_BUCKETS(buf)[i]) && k-- == 0)
			return i;
	return -1;
}

/*
 * A bucket of a hopscotch leaf outside the neighbourhood at home, a free
 * one if there is one (-1: none); *used tells which it is.
 */
static int
hop_far_bucket(const uint8_t *buf, uint32_t ns, int home, int *used)
{
	int			H = NODE_HDR(buf)->hop_h;
	int			any = -1;

	for (int i = 0; i < dm_hop_nb(ns); i++)
		if (i < home || i >= home + H)
		{
			if (!dm_hop_used(&HOP_BUCKETS(buf)[i]))
			{
				*used = 0;
				return i;
			}
			any = i;
		}
	*used = any >= 0;
	return any;
}

/* The leaf cases for a tree of hopscotch leaves (dm_hop.h): the table's own invariants too. */
static void
vd_hop_cases(dm_gaddr a1, const uint8_t *l1, uint8_t *mod, uint32_t ns)
{
	int			b0 = hop_used_bucket(l1, ns, 0),
				b1 = hop_used_bucket(l1, ns, 1);
	dm_rawent  *B = HOP_BUCKETS(mod);

	if (!CHECK(b0 >= 0 && b1 >= 0, "verify %s: the hopscotch leaf has two entries", vd_name))
		return;

	memcpy(mod, l1, ns);
	B[b0].key = NODE_HDR(mod)->high.key;
	B[b0].tid = NODE_HDR(mod)->high.tid | (B[b0].tid & DM_HOP_OVF);
	vd_case(a1, l1, mod, ns, "a leaf entry equal to its high fence");

	memcpy(mod, l1, ns);
	B[b0].key = NODE_HDR(mod)->low.key - 1;
	vd_case(a1, l1, mod, ns, "a leaf entry below its low fence");

	memcpy(mod, l1, ns);
	B[b0].tid |= DM_TID_NULL;
	vd_case(a1, l1, mod, ns, "a NULL-flagged tid on a non-NULL key (a bucket neither empty nor used)");

	memcpy(mod, l1, ns);
	NODE_HDR(mod)->count--;
	vd_case(a1, l1, mod, ns, "a hopscotch leaf whose count is not its used buckets");

	/*
	 * The same entry twice, the copy outside its neighbourhood with the
	 * home flagged; then moved there with the home not flagged (a lookup
	 * would miss it).  The bucket it goes to may hold an entry (a full
	 * leaf): that one is lost, which verify cannot see, and counted out.
	 */
	memcpy(mod, l1, ns);
	{
		int			home = dm_hop_home(B[b0].key, dm_hop_nb(ns), NODE_HDR(mod)->hop_h);
		int			used = 0;
		int			f = hop_far_bucket(mod, ns, home, &used);

		if (CHECK(f >= 0, "verify %s: a bucket outside a neighbourhood", vd_name))
		{
			B[f].key = B[b0].key;
			B[f].tid = (B[b0].tid & ~DM_HOP_OVF) | (B[f].tid & DM_HOP_OVF);
			B[home].tid |= DM_HOP_OVF;
			NODE_HDR(mod)->count += used ? 0 : 1;
			vd_case(a1, l1, mod, ns, "one entry in two buckets");

			memcpy(mod, l1, ns);
			B[f].key = B[b0].key;
			B[f].tid = (B[b0].tid & ~DM_HOP_OVF) | (B[f].tid & DM_HOP_OVF);
			B[b0].key = 0;
			B[b0].tid = DM_TID_NULL | (B[b0].tid & DM_HOP_OVF);
			B[home].tid &= ~DM_HOP_OVF;
			NODE_HDR(mod)->count -= used ? 1 : 0;
			vd_case(a1, l1, mod, ns, "an entry outside its neighbourhood with its home not flagged");
		}
	}

	memcpy(mod, l1, ns);
	NODE_HDR(mod)->hop_h = (uint8_t) (NODE_HDR(mod)->hop_h == 4 ? 5 : 4);
	vd_case(a1, l1, mod, ns, "a hopscotch leaf with another neighbourhood than the tree's");

	memcpy(mod, l1, ns);
	dm_hop_sorted_view(mod);
	vd_case(a1, l1, mod, ns, "a sorted leaf in a tree of hopscotch leaves");
}

void
run_verify_detects(const tcfg *cf)
{
	char		name[64];
	uint32_t	ns = 256;
	dm_tree_name tn;
	dm_tree_opts opts;
	dm_tree_info ti;
	dm_entry	ents[2000];
	uint8_t		root[4096],
				p1[4096],
				l0[4096],
				l1[4096],
				mod[4096];
	dm_gaddr	rootw = 0,
				ra,
				pa,
				a0,
				a1;
	int			rc,
				changed = 0;

	vd_name = cf->name;
	vd_c = connect_client(cf, mn.addr);
	if (!CHECK(vd_c != NULL, "verify %s: client connects", cf->name))
		return;
	snprintf(name, sizeof(name), "vd-%s", cf->name);
	dm_tree_name_named(&tn, name);
	memset(&opts, 0, sizeof(opts));
	opts.node_size = ns;
	test_tree_leaf_opts(&opts);
	/* 256-byte leaves have 10 buckets: a neighbourhood of 4 leaves room outside it (vd_hop_cases) */
	if (opts.leaf_format == DM_LEAF_HOPSCOTCH)
		opts.neighborhood = 4;
	vd_t = NULL;
	if (!CHECK_STATUS(dm_tree_create_new(vd_c, 1, &tn, &opts, &vd_t), DM_OK, "verify %s: create", cf->name))
	{
		dm_client_destroy(vd_c);
		return;
	}
	for (int i = 0; i < 2000; i++)
		ents[i] = dm_entry_make((uint64_t) i * 10, 1);
	rc = dm_tree_insert_sorted(vd_t, ents, 2000, &changed);
	CHECK(rc == DM_OK && changed == 2000, "verify %s: 2000 entries (keys 0, 10, .., 19990; tid 1)", cf->name);

	/* root -> a level-1 node (second child all the way down) -> its first two leaves */
	rc = dm_tree_open(vd_c, 1, &tn, &ti);
	if (rc == DM_OK)
		rc = dm_read(vd_c, ti.root_addr, &rootw, 8);
	ra = rootw & ~DM_GADDR_RESERVED_BIT;
	if (rc == DM_OK)
		rc = dm_read(vd_c, ra, root, ns);
	if (!CHECK(rc == DM_OK && NODE_HDR(root)->magic == DM_NODE_MAGIC && NODE_HDR(root)->level >= 2 &&
			   NODE_HDR(root)->count >= 2, "verify %s: root of height >= 3 found", cf->name))
		goto out;
	pa = ra;
	memcpy(p1, root, ns);
	while (NODE_HDR(p1)->level > 1)
	{
		pa = INNER_ENTS(p1)[NODE_HDR(p1)->count > 1 ? 1 : 0].child;
		if (dm_read(vd_c, pa, p1, ns) != DM_OK || NODE_HDR(p1)->magic != DM_NODE_MAGIC)
			break;
	}
	a0 = INNER_ENTS(p1)[0].child;
	a1 = INNER_ENTS(p1)[1].child;
	if (!CHECK(NODE_HDR(p1)->level == 1 && NODE_HDR(p1)->count >= 3 && dm_read(vd_c, a0, l0, ns) == DM_OK &&
			   dm_read(vd_c, a1, l1, ns) == DM_OK && NODE_HDR(l0)->level == 0 && NODE_HDR(l1)->count >= 2,
			   "verify %s: a level-1 node with >= 3 children and its first two leaves found", cf->name))
		goto out;

	if (dm_hop_is(l1))
		vd_hop_cases(a1, l1, mod, ns);
	else
	{
		memcpy(mod, l1, ns);
		{
			dm_rawent	x = LEAF_ENTS(mod)[0];

			LEAF_ENTS(mod)[0] = LEAF_ENTS(mod)[1];
			LEAF_ENTS(mod)[1] = x;
		}
		vd_case(a1, l1, mod, ns, "two leaf entries out of order");

		memcpy(mod, l1, ns);
		LEAF_ENTS(mod)[NODE_HDR(mod)->count - 1] = NODE_HDR(mod)->high;
		vd_case(a1, l1, mod, ns, "a leaf entry equal to its high fence");

		memcpy(mod, l1, ns);
		LEAF_ENTS(mod)[0] = dm_raw_of(dm_entry_make(NODE_HDR(mod)->low.key - 1, 1));
		vd_case(a1, l1, mod, ns, "a leaf entry below its low fence");

		memcpy(mod, l1, ns);
		LEAF_ENTS(mod)[0].tid |= DM_TID_NULL;
		vd_case(a1, l1, mod, ns, "a NULL-flagged tid on a non-NULL key");

		/* a sorted leaf in a tree of sorted leaves must not look like a hopscotch one */
		memcpy(mod, l1, ns);
		NODE_HDR(mod)->flags |= DM_NODE_HOP;
		NODE_HDR(mod)->hop_h = 4;
		vd_case(a1, l1, mod, ns, "a hopscotch leaf in a tree of sorted leaves");
	}
	CHECK((dm_hop_is(l1) != 0) == (strcmp(test_leaf_format_name(), "hopscotch") == 0),
		  "verify %s: the leaves have the format asked for (%s)", cf->name, test_leaf_format_name());

	memcpy(mod, l1, ns);
	NODE_HDR(mod)->left = 0;
	vd_case(a1, l1, mod, ns, "no left pointer on a leaf that has a left neighbour");

	memcpy(mod, l1, ns);
	NODE_HDR(mod)->flags |= DM_NODE_DEAD;
	vd_case(a1, l1, mod, ns, "a linked leaf marked dead");

	memcpy(mod, l0, ns);
	NODE_HDR(mod)->right = NODE_HDR(l1)->right;
	vd_case(a0, l0, mod, ns, "a sibling pointer that skips a leaf");

	/*
	 * Separators must equal their child's low fence.  One a little below
	 * it sends a search for an entry in between to a child whose low fence
	 * is above that entry (the search restarts forever); one a little above
	 * it is harmless to searches but still wrong.
	 */
	memcpy(mod, p1, ns);
	/* leaf fences are (key, 0) where a key starts (dm_tree_leaf_bound): then go below the key */
	if (INNER_ENTS(mod)[1].sep.tid > 0)
		INNER_ENTS(mod)[1].sep.tid = 0;
	else
		INNER_ENTS(mod)[1].sep = dm_raw_of(dm_entry_make(INNER_ENTS(mod)[1].sep.key - 1, DM_TID_MAX));
	vd_case(pa, p1, mod, ns, "a separator below its child's low fence");

	memcpy(mod, p1, ns);
	INNER_ENTS(mod)[1].sep.tid = 2;
	vd_case(pa, p1, mod, ns, "a separator above its child's low fence");

	memcpy(mod, p1, ns);
	INNER_ENTS(mod)[1].child = INNER_ENTS(mod)[0].child;
	vd_case(pa, p1, mod, ns, "the same child listed twice");

	memcpy(mod, p1, ns);
	{
		dm_rawinner x = INNER_ENTS(mod)[1];

		INNER_ENTS(mod)[1] = INNER_ENTS(mod)[2];
		INNER_ENTS(mod)[2] = x;
	}
	vd_case(pa, p1, mod, ns, "two separators out of order");

	memcpy(mod, root, ns);
	INNER_ENTS(mod)[0].child = a0;
	vd_case(ra, root, mod, ns, "a child pointer that skips a level");

	memcpy(mod, root, ns);
	NODE_HDR(mod)->high = dm_raw_of(dm_entry_make(1000000, 0));
	vd_case(ra, root, mod, ns, "a root that does not span the key space");

out:
	CHECK_STATUS(dm_tree_destroy(vd_t), DM_OK, "verify %s: destroy", cf->name);
	dm_client_destroy(vd_c);
}
