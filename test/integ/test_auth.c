/*
 * test_auth.c — authentication and tenant isolation on a memnode started
 * with --auth-file (memnode/auth.c, src/dm/dm_auth.c):
 *
 *  1. a bad auth file (group/world readable, malformed, short secret, an
 *     identity twice, missing) stops the memnode at start with a message;
 *  2. clients without credentials, with a wrong secret or an unknown
 *     identity, a replayed proof, a request before the proof, and an
 *     old-version HELLO are refused; no op of theirs runs; the failures
 *     are counted (STATS auth_failures); the memnode keeps serving others;
 *  3. the client refuses a memnode that cannot prove it knows the secret
 *     (a fake one) and one that asks for no authentication at all;
 *  4. tenant A cannot read, write, CAS, FAA, FETCH_OR, guard, free, drop,
 *     open, list or allocate for tenant B's trees and memory, by any op or
 *     RPC: named cases, then thousands of random ops and RPCs at random
 *     addresses, each refused with the status the model predicts; B's data
 *     is unchanged and A's refused batches applied nothing;
 *  5. memory A frees can go to B while A keeps writing where it was: B's
 *     new memory never shows A's writes (memnode/auth.c, quiesce);
 *  6. the --shm region file is mode 0600.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dm_auth.h"
#include "dm_client.h"
#include "dm_region.h"
#include "testauth.h"
#include "testutil.h"

#define FUZZ_OPS 3000
#define CHUNK (UINT64_C(1) << 20)

static memnode_proc mn;
static uint64_t rng = 0x2545F4914F6CDD1Dull;

static uint64_t
rnd(void)
{
	return xorshift64s(&rng);
}

static dm_client *
client_as_flags(const char *identity, const char *secret, int *rc, const char *addr, uint32_t flags)
{
	dm_client_opts o;
	dm_client  *c;
	uint16_t	id;

	memset(&o, 0, sizeof(o));
	o.backend = DM_BACKEND_TCP;
	o.flags = flags;
	o.op_timeout_ms = 5000;
	o.connect_timeout_ms = 5000;
	if (identity)
	{
		o.auth_identity = identity;
		o.auth_secret = (const uint8_t *) secret;
		o.auth_secret_len = (uint32_t) strlen(secret);
	}
	c = dm_client_create(&o);
	*rc = dm_client_connect(c, addr, &id);
	return c;
}

static dm_client *
client_as(const char *identity, const char *secret, int *rc, const char *addr)
{
	return client_as_flags(identity, secret, rc, addr, 0);
}

/* ---- raw sockets (the client library would not send most of this) ---------- */




typedef struct
{
	dm_frame_hdr h;
	dm_hello_req r;
} hello_frame;

typedef struct
{
	dm_frame_hdr h;
	dm_auth_req r;
} auth_frame;

/* Send a v3 HELLO as identity with nonce; the reply (header + body) into *rh / *rep. */
static int
raw_hello(int fd, const char *identity, const uint8_t *nonce, dm_frame_hdr *rh, dm_hello_rep *rep)
{
	hello_frame f;

	memset(&f, 0, sizeof(f));
	dm_hdr_init(&f.h, DM_MSG_HELLO, sizeof(f), 1);
	f.r.version = DM_PROTO_VERSION;
	snprintf(f.r.client_name, sizeof(f.r.client_name), "test_auth raw");
	if (identity)
		snprintf(f.r.identity, sizeof(f.r.identity), "%s", identity);
	if (nonce)
		memcpy(f.r.client_nonce, nonce, DM_AUTH_NONCE_LEN);
	if (test_raw_send(fd, &f, sizeof(f)) < 0 || test_raw_recv(fd, rh, sizeof(*rh)) < 0 ||
		rh->length != DM_HDR_SIZE + sizeof(*rep))
		return -1;
	return test_raw_recv(fd, rep, sizeof(*rep));
}

static void
make_auth(auth_frame *f, const char *identity, const char *secret, const uint8_t *cn, const uint8_t *sn)
{
	char		id[DM_AUTH_ID_LEN] = {0};

	snprintf(id, sizeof(id), "%s", identity);
	memset(f, 0, sizeof(*f));
	dm_hdr_init(&f->h, DM_MSG_AUTH, sizeof(*f), 2);
	dm_auth_mac((const uint8_t *) secret, (uint32_t) strlen(secret), DM_AUTH_ROLE_CLIENT, id, cn, sn, f->r.mac);
}

/* A BATCH frame with one FAA(+1) on word. */
static size_t
faa_frame(uint8_t *buf, dm_gaddr word, uint64_t seq)
{
	uint8_t		body[TEST_FAA_BODY_MAX];

	return test_raw_frame(buf, DM_MSG_BATCH, body, test_raw_faa_body(body, word), seq);
}

/* ---- 1. bad auth files ---------------------------------------------------------- */

/* Run the memnode with --auth-file path; its exit status, stderr in err. */
static int
run_memnode_with(const char *path, char *err, size_t errsz)
{
	char		cmd[1024];
	FILE	   *p;
	size_t		n;
	int			st;
	const char *bin = getenv("DM_MEMNODE") ? getenv("DM_MEMNODE") : "build/dmindex-memnode";

	snprintf(cmd, sizeof(cmd), "timeout 10 %s --listen 127.0.0.1:0 --size 16M --auth-file '%s' 2>&1 >/dev/null",
			 bin, path);
	if ((p = popen(cmd, "r")) == NULL)
		return -1;
	n = fread(err, 1, errsz - 1, p);
	err[n] = '\0';
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 100;
}

static void
test_bad_files(void)
{
	static const struct
	{
		const char *content;
		int			mode;
		const char *want;
		const char *what;
	}			cases[] = {
		{"tenant-a a-secret-for-tenant-a-0123456789\n", 0644, "group or world access", "world-readable file"},
		{"tenant-a a-secret-for-tenant-a-0123456789\n", 0640, "group or world access", "group-readable file"},
		{"tenant-a\n", 0600, "line 1: expected \"identity secret\"", "line without secret"},
		{"# c\n\ntenant-a a-secret-for-tenant-a-0123456789 extra\n", 0600, "line 3: expected", "three fields"},
		{"tenant-a short\n", 0600, "the secret must be 16 to 256 characters long", "short secret"},
		{"ten/ant a-secret-for-tenant-a-0123456789\n", 0600, "invalid identity", "bad identity"},
		{"x a-secret-for-tenant-a-0123456789\nx b-secret-for-tenant-b-0123456789\n", 0600, "appears twice",
		"identity twice"},
		{"# only a comment\n", 0600, "no \"identity secret\" line", "empty file"},
	};
	char		dir[] = "/tmp/dmtest-badauth-XXXXXX";
	char		path[128],
				err[2048];

	if (mkdtemp(dir) == NULL)
	{
		CHECK(0, "bad files: mkdtemp");
		return;
	}
	snprintf(path, sizeof(path), "%s/auth", dir);
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
	{
		FILE	   *f = fopen(path, "w");
		int			st;

		fputs(cases[k].content, f);
		fclose(f);
		chmod(path, (mode_t) cases[k].mode);
		st = run_memnode_with(path, err, sizeof(err));
		CHECK(st == 1 && strstr(err, cases[k].want) != NULL,
			  "bad auth file (%s): memnode refuses to start (exit %d), says \"%s\"", cases[k].what, st,
			  cases[k].want);
		if (strstr(err, cases[k].want) == NULL)
			tap_diag("stderr: %s", err);
		unlink(path);
	}
	CHECK(run_memnode_with(path, err, sizeof(err)) == 1 && strstr(err, "could not open auth file") != NULL,
		  "missing auth file: refused");
	rmdir(dir);
}

/* ---- 2. refused clients ---------------------------------------------------------- */

static void
test_refused(dm_client *a, dm_gaddr a_word)
{
	dm_client  *c;
	int			rc;
	uint64_t	before = 0,
				after = 0;
	dm_node_stats st0,
				st1;
	uint8_t		buf[256];
	dm_frame_hdr rh;
	dm_hello_rep rep;
	uint8_t		cn[DM_AUTH_NONCE_LEN];
	auth_frame	af;
	int			fd;
	int			expected_failures = 0;

	CHECK_STATUS(dm_node_stats_get(a, 1, &st0), DM_OK, "stats before");
	dm_read(a, a_word, &before, 8);

	c = client_as(NULL, NULL, &rc, mn.addr);
	CHECK_STATUS(rc, DM_ERR_AUTH, "client without credentials refused");
	CHECK(strstr(dm_client_error(c), "requires authentication") != NULL, "... saying so: %s", dm_client_error(c));
	dm_client_destroy(c);
	expected_failures++;

	c = client_as("tenant-a", "not-the-secret-of-tenant-a-000000", &rc, mn.addr);
	CHECK_STATUS(rc, DM_ERR_AUTH, "tenant-a with a wrong secret refused");
	CHECK(strstr(dm_client_error(c), "refused") != NULL, "... saying so: %s", dm_client_error(c));
	CHECK(dm_faa(c, a_word, 1, NULL) != DM_OK, "... and its ops fail");
	dm_client_destroy(c);
	expected_failures++;

	c = client_as("tenant-z", "z-secret-for-tenant-z-0123456789", &rc, mn.addr);
	CHECK_STATUS(rc, DM_ERR_AUTH, "unknown identity refused");
	dm_client_destroy(c);
	expected_failures++;

	/* raw: a request after the challenge but before the proof closes the connection, unexecuted */
	fd = test_raw_connect(mn.port);
	dm_auth_random(cn, sizeof(cn));
	CHECK(fd >= 0 && raw_hello(fd, "tenant-a", cn, &rh, &rep) == 0 && rh.status == DM_OK &&
		  (rep.flags & DM_HELLO_REP_AUTH) && rep.incarnation == 0 && rep.shm_path[0] == '\0',
		  "HELLO is answered with a challenge only (nothing about the region)");
	CHECK(test_raw_send(fd, buf, faa_frame(buf, a_word, 3)) == 0 && test_raw_closed(fd, 3000, NULL), "a BATCH before the proof: closed");
	close(fd);
	expected_failures++;

	/* raw: a wrong proof with a BATCH right behind it: refused, closed, the BATCH never runs */
	fd = test_raw_connect(mn.port);
	CHECK(fd >= 0 && raw_hello(fd, "tenant-a", cn, &rh, &rep) == 0 && (rep.flags & DM_HELLO_REP_AUTH),
		  "wrong proof: challenged");
	make_auth(&af, "tenant-a", test_auth_secret("tenant-b"), cn, rep.server_nonce);
	memcpy(buf, &af, sizeof(af));
	{
		size_t		n = sizeof(af) + faa_frame(buf + sizeof(af), a_word, 3);
		dm_frame_hdr ah;

		CHECK(test_raw_send(fd, buf, n) == 0 && test_raw_recv(fd, &ah, sizeof(ah)) == 0 && ah.status == DM_ERR_AUTH &&
			  ah.type == (DM_MSG_AUTH | DM_MSG_REPLY) && ah.length == DM_HDR_SIZE,
			  "wrong proof (another identity's secret): AUTH answered with status AUTH, no body");
		CHECK(test_raw_closed(fd, 3000, NULL), "wrong proof: connection closed");
	}
	close(fd);
	expected_failures++;

	/* replay: record a good handshake, then replay its proof on a new connection */
	{
		auth_frame	good;
		dm_frame_hdr ah;
		dm_auth_rep ar;
		uint8_t		sn1[DM_AUTH_NONCE_LEN];

		fd = test_raw_connect(mn.port);
		CHECK(fd >= 0 && raw_hello(fd, "tenant-a", cn, &rh, &rep) == 0 && (rep.flags & DM_HELLO_REP_AUTH),
			  "replay: first connection challenged");
		memcpy(sn1, rep.server_nonce, sizeof(sn1));
		make_auth(&good, "tenant-a", test_auth_secret("tenant-a"), cn, rep.server_nonce);
		CHECK(test_raw_send(fd, &good, sizeof(good)) == 0 && test_raw_recv(fd, &ah, sizeof(ah)) == 0 &&
			  ah.status == DM_OK && ah.length == DM_HDR_SIZE + sizeof(ar) && test_raw_recv(fd, &ar, sizeof(ar)) == 0 &&
			  ar.hello.incarnation == mn.incarnation,
			  "replay: the right proof is accepted and the real HELLO reply follows");
		close(fd);

		fd = test_raw_connect(mn.port);
		CHECK(fd >= 0 && raw_hello(fd, "tenant-a", cn, &rh, &rep) == 0 && (rep.flags & DM_HELLO_REP_AUTH) &&
			  memcmp(rep.server_nonce, sn1, sizeof(sn1)) != 0,
			  "replay: same client nonce, a fresh server nonce");
		memcpy(buf, &good, sizeof(good));
		CHECK(test_raw_send(fd, buf, sizeof(good) + faa_frame(buf + sizeof(good), a_word, 3)) == 0 &&
			  test_raw_recv(fd, &ah, sizeof(ah)) == 0 && ah.status == DM_ERR_AUTH,
			  "replay: the recorded proof is refused");
		CHECK(test_raw_closed(fd, 3000, NULL), "replay: connection closed");
		close(fd);
		expected_failures++;
	}

	/* an AUTH frame without a challenge; a version-2 HELLO (an old client) */
	fd = test_raw_connect(mn.port);
	make_auth(&af, "tenant-a", test_auth_secret("tenant-a"), cn, cn);
	{
		dm_frame_hdr ah;

		CHECK(fd >= 0 && test_raw_send(fd, &af, sizeof(af)) == 0 && test_raw_recv(fd, &ah, sizeof(ah)) == 0 &&
			  ah.status == DM_ERR_AUTH && test_raw_closed(fd, 3000, NULL), "AUTH without HELLO: refused, closed");
	}
	close(fd);
	expected_failures++;
	fd = test_raw_connect(mn.port);
	{
		uint8_t		old[DM_HDR_SIZE + 48];
		uint32_t	v2 = 2;

		memset(old, 0, sizeof(old));
		dm_hdr_init((dm_frame_hdr *) old, DM_MSG_HELLO, sizeof(old), 1);
		memcpy(old + DM_HDR_SIZE, &v2, 4);
		CHECK(fd >= 0 && test_raw_send(fd, old, sizeof(old)) == 0 && test_raw_recv(fd, &rh, sizeof(rh)) == 0 &&
			  rh.status == DM_ERR_VERSION && test_raw_closed(fd, 3000, NULL),
			  "a version-2 HELLO (an old client) gets status VERSION, then the connection closes");
	}
	close(fd);

	dm_read(a, a_word, &after, 8);
	CHECK(after == before, "no FAA of a refused connection ran (word %" PRIu64 " -> %" PRIu64 ")", before, after);
	CHECK(dm_ping(a, 1) == DM_OK && dm_faa(a, a_word, 0, NULL) == DM_OK, "tenant-a is still served");
	CHECK_STATUS(dm_node_stats_get(a, 1, &st1), DM_OK, "stats after");
	CHECK(st1.auth_failures - st0.auth_failures == (uint64_t) expected_failures,
		  "stats: auth_failures went up by %d (%" PRIu64 ")", expected_failures,
		  st1.auth_failures - st0.auth_failures);
}

/* ---- 3. the client checks the memnode ----------------------------------------------- */

/* A fake memnode: challenges, accepts any proof, and answers with a made-up one. */
static void
fake_memnode(int lfd)
{
	int			fd = accept(lfd, NULL, NULL);
	uint8_t		in[DM_HDR_SIZE + sizeof(dm_hello_req)];
	struct
	{
		dm_frame_hdr h;
		dm_hello_rep r;
	}			hello;
	struct
	{
		dm_frame_hdr h;
		dm_auth_rep r;
	}			auth;

	if (fd < 0 || test_raw_recv(fd, in, sizeof(in)) < 0)
		_exit(1);
	memset(&hello, 0, sizeof(hello));
	dm_hdr_init(&hello.h, DM_MSG_HELLO | DM_MSG_REPLY, sizeof(hello), ((dm_frame_hdr *) in)->seq);
	hello.r.version = DM_PROTO_VERSION;
	hello.r.flags = DM_HELLO_REP_AUTH;
	memset(hello.r.server_nonce, 0x5A, sizeof(hello.r.server_nonce));
	if (test_raw_send(fd, &hello, sizeof(hello)) < 0 || test_raw_recv(fd, in, DM_HDR_SIZE + sizeof(dm_auth_req)) < 0)
		_exit(1);
	memset(&auth, 0, sizeof(auth));
	dm_hdr_init(&auth.h, DM_MSG_AUTH | DM_MSG_REPLY, sizeof(auth), ((dm_frame_hdr *) in)->seq);
	auth.r.hello.version = DM_PROTO_VERSION;
	auth.r.hello.node_id = 1;
	auth.r.hello.incarnation = 42;
	auth.r.hello.region_size = 16 << 20;
	auth.r.hello.chunk_size = 1 << 20;
	memset(auth.r.mac, 0xA5, sizeof(auth.r.mac));
	test_raw_send(fd, &auth, sizeof(auth));
	sleep(2);
	_exit(0);
}

static void
test_client_checks_memnode(void)
{
	struct sockaddr_in sa;
	socklen_t	len = sizeof(sa);
	int			lfd = socket(AF_INET, SOCK_STREAM, 0);
	char		addr[64];
	pid_t		pid;
	dm_client  *c;
	int			rc;
	memnode_proc open_mn;
	const char *const args[] = {"--id", "2", "--size", "16M", "--chunk-size", "1M", "--log-level", "error", NULL};

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (lfd < 0 || bind(lfd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || listen(lfd, 1) < 0 ||
		getsockname(lfd, (struct sockaddr *) &sa, &len) < 0)
	{
		CHECK(0, "fake memnode: listen");
		return;
	}
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", ntohs(sa.sin_port));
	if ((pid = fork()) == 0)
		fake_memnode(lfd);
	close(lfd);
	c = client_as("tenant-a", test_auth_secret("tenant-a"), &rc, addr);
	CHECK_STATUS(rc, DM_ERR_AUTH, "a memnode that cannot prove it knows the secret is refused");
	CHECK(strstr(dm_client_error(c), "could not prove") != NULL, "... saying so: %s", dm_client_error(c));
	dm_client_destroy(c);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);

	if (memnode_start(&open_mn, 0, args) != 0)
	{
		CHECK(0, "memnode without auth started");
		return;
	}
	c = client_as("tenant-a", test_auth_secret("tenant-a"), &rc, open_mn.addr);
	CHECK_STATUS(rc, DM_ERR_AUTH, "a client with credentials refuses a memnode without --auth-file");
	dm_client_destroy(c);
	c = client_as(NULL, NULL, &rc, open_mn.addr);
	CHECK_STATUS(rc, DM_OK, "a client without credentials still uses it (trusted-local mode)");
	dm_client_destroy(c);
	memnode_stop(&open_mn, SIGTERM);
}

/* ---- 4. isolation ----------------------------------------------------------------------- */

typedef struct tenant
{
	const char *name;
	dm_client  *c;
	dm_tree_info tree;
	dm_tree_name tname;
	dm_gaddr	chunks[2];		/* whole chunks of its tree */
	dm_gaddr	slab;			/* a 4 KiB slab of its tree */
} tenant;

static void
pattern(uint8_t *buf, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = (uint8_t) (seed + i * 7);
}

static int
tenant_setup(tenant *t, const char *name, uint8_t seed)
{
	int			rc;
	static uint8_t buf[CHUNK];

	t->name = name;
	t->c = client_as(name, test_auth_secret(name), &rc, mn.addr);
	if (!CHECK(rc == DM_OK, "%s connects (%s)", name, dm_strerror(rc)))
		return -1;
	dm_tree_name_named(&t->tname, name);
	if (!CHECK(dm_tree_create(t->c, 1, &t->tname, &t->tree) == DM_OK, "%s creates its tree", name))
		return -1;
	for (int i = 0; i < 2; i++)
		if (!CHECK(dm_chunk_alloc(t->c, 1, t->tree.tree_id, &t->chunks[i], NULL) == DM_OK, "%s: chunk %d", name, i))
			return -1;
	if (!CHECK(dm_slab_alloc(t->c, 1, t->tree.tree_id, 4096, &t->slab) == DM_OK, "%s: slab", name))
		return -1;
	pattern(buf, CHUNK, seed);
	for (int i = 0; i < 2; i++)
		for (uint64_t off = 0; off < CHUNK; off += 65536)
			if (dm_write(t->c, t->chunks[i] + off, buf + off, 65536) != DM_OK)
				return -1;
	if (dm_write(t->c, t->slab, buf, 4096) != DM_OK)
		return -1;
	{
		uint64_t	meta[8];

		for (int k = 0; k < 8; k++)
			meta[k] = 0x1000 * (uint64_t) seed + (uint64_t) k;
		if (dm_write(t->c, t->tree.root_addr, meta, sizeof(meta)) != DM_OK)
			return -1;
	}
	return 0;
}

/* B's chunks, slab and catalog words are exactly what B wrote. */
static int
tenant_intact(tenant *t, uint8_t seed)
{
	static uint8_t want[CHUNK],
				got[CHUNK];
	uint64_t	meta[8];

	pattern(want, CHUNK, seed);
	for (int i = 0; i < 2; i++)
	{
		for (uint64_t off = 0; off < CHUNK; off += 65536)
			if (dm_read(t->c, t->chunks[i] + off, got + off, 65536) != DM_OK)
				return 0;
		if (memcmp(want, got, CHUNK) != 0)
			return 0;
	}
	if (dm_read(t->c, t->slab, got, 4096) != DM_OK || memcmp(want, got, 4096) != 0)
		return 0;
	if (dm_read(t->c, t->tree.root_addr, meta, sizeof(meta)) != DM_OK)
		return 0;
	for (int k = 0; k < 8; k++)
		if (meta[k] != 0x1000 * (uint64_t) seed + (uint64_t) k)
			return 0;
	return 1;
}

static void
test_named_cases(tenant *a, tenant *b, const dm_superblock *sb)
{
	uint64_t	v = 0;
	uint8_t		buf[512];
	dm_op		ops[3];
	int			bad = -1;
	uint64_t	n;
	dm_tree_info ti;
	dm_gaddr	g;
	dm_gaddr	bw = b->chunks[0] + 64;
	uint64_t	a_before = 0,
				a_after = 0;

	CHECK_STATUS(dm_read(a->c, bw, &v, 8), DM_ERR_PERMISSION, "A READs B's chunk -> PERMISSION");
	CHECK_STATUS(dm_write(a->c, bw, &v, 8), DM_ERR_PERMISSION, "A WRITEs B's chunk -> PERMISSION");
	CHECK_STATUS(dm_cas(a->c, bw, 0, 1, NULL), DM_ERR_PERMISSION, "A CASes B's word -> PERMISSION");
	CHECK_STATUS(dm_faa(a->c, bw, 1, NULL), DM_ERR_PERMISSION, "A FAAs B's word -> PERMISSION");
	CHECK_STATUS(dm_fetch_or(a->c, bw, 1, NULL), DM_ERR_PERMISSION, "A FETCH_ORs B's word -> PERMISSION");
	CHECK_STATUS(dm_read(a->c, b->slab, buf, 256), DM_ERR_PERMISSION, "A READs B's slab -> PERMISSION");
	CHECK_STATUS(dm_read(a->c, b->tree.root_addr, &v, 8), DM_ERR_PERMISSION, "A READs B's root word -> PERMISSION");
	CHECK_STATUS(dm_cas(a->c, b->tree.root_addr, 0, 1, NULL), DM_ERR_PERMISSION, "A CASes B's root word -> PERMISSION");
	CHECK_STATUS(dm_write(a->c, b->tree.meta_addr, &v, 8), DM_ERR_PERMISSION, "A WRITEs B's meta word -> PERMISSION");
	CHECK_STATUS(dm_read(a->c, dm_gaddr_make(1, sb->chunk_table_off), buf, 64), DM_ERR_PERMISSION,
				 "A READs the chunk table -> PERMISSION");
	/* chunks went out in order: A's two, A's slab chunk, then B's */
	CHECK(dm_gaddr_offset(b->chunks[0]) - CHUNK == dm_gaddr_offset(a->slab), "A's slab chunk is just before B's chunk");
	CHECK_STATUS(dm_read(a->c, b->chunks[0] - 64, buf, 128), DM_ERR_PERMISSION,
				 "A READs from its chunk across into B's -> PERMISSION");
	CHECK_STATUS(dm_read(a->c, b->chunks[0] - 64, buf, 64), DM_OK, "A READs the same up to its chunk's end: allowed");
	CHECK_STATUS(dm_read(a->c, dm_gaddr_make(1, 0), buf, 256), DM_OK, "A READs the superblock: allowed");
	CHECK_STATUS(dm_read(a->c, a->tree.root_addr, buf, 64), DM_OK, "A READs its own root and meta words");

	/* a batch: A's FAA, then a guard CAS on B's word: rejected whole, A's FAA not applied */
	dm_read(a->c, a->chunks[0], &a_before, 8);
	dm_op_atomic(&ops[0], DM_OP_FAA, a->chunks[0], 1, 0);
	dm_op_guard(&ops[1], bw, 0, 1);
	dm_op_read(&ops[2], a->chunks[0] + 8, buf, 8);
	CHECK_STATUS(dm_post(a->c, ops, 3, &bad), DM_ERR_PERMISSION, "A's batch with a guard on B's word -> PERMISSION");
	CHECK(bad == 1, "... bad_index 1 (%d)", bad);
	dm_read(a->c, a->chunks[0], &a_after, 8);
	CHECK(a_after == a_before, "... and A's own FAA in it was not applied");

	/* RPCs */
	CHECK_STATUS(dm_tree_open(a->c, 1, &b->tname, &ti), DM_ERR_PERMISSION, "A opens B's tree -> PERMISSION");
	CHECK_STATUS(dm_tree_drop(a->c, 1, &b->tname, &n), DM_ERR_PERMISSION, "A drops B's tree -> PERMISSION");
	CHECK_STATUS(dm_tree_create(a->c, 1, &b->tname, &ti), DM_ERR_EXISTS, "A creates a tree named as B's -> EXISTS");
	CHECK_STATUS(dm_chunk_alloc(a->c, 1, b->tree.tree_id, &g, NULL), DM_ERR_PERMISSION,
				 "A allocates a chunk for B's tree -> PERMISSION");
	CHECK_STATUS(dm_chunk_alloc(a->c, 1, 0xABCD, &g, NULL), DM_ERR_PERMISSION,
				 "A allocates a chunk for an owner that is no tree -> PERMISSION");
	CHECK_STATUS(dm_slab_alloc(a->c, 1, b->tree.tree_id, 4096, &g), DM_ERR_PERMISSION,
				 "A allocates a slab for B's tree -> PERMISSION");
	CHECK_STATUS(dm_slab_free(a->c, b->tree.tree_id, b->slab, 4096), DM_ERR_PERMISSION,
				 "A frees B's slab -> PERMISSION");
	CHECK_STATUS(dm_slab_free(a->c, a->tree.tree_id, b->slab, 4096), DM_ERR_INVALID,
				 "A frees B's slab as its own -> INVALID (not A's chunk)");
	CHECK_STATUS(dm_chunk_free(a->c, b->chunks[1]), DM_ERR_PERMISSION, "A frees B's chunk -> PERMISSION");
	CHECK_STATUS(dm_chunk_free_owner(a->c, 1, b->tree.tree_id, &n), DM_ERR_PERMISSION,
				 "A frees all of B's chunks -> PERMISSION");
	{
		dm_rpc_list_req lr = {.max = DM_LIST_MAX};
		dm_tree_info page[DM_LIST_MAX];
		uint32_t	count = 0,
					next = 0;
		int			only_a = 1;

		CHECK_STATUS(dm_tree_list(a->c, 1, &lr, page, &count, &next), DM_OK, "A lists the catalog");
		for (uint32_t i = 0; i < count; i++)
			only_a &= page[i].tree_id == a->tree.tree_id;
		CHECK(count == 1 && only_a, "... and sees only its own tree (%u entries)", count);
	}
	CHECK_STATUS(dm_tree_open(b->c, 1, &b->tname, &ti), DM_OK, "B still opens its tree");
}

/* What the memnode must answer to A's op (A's own memory is never chosen). */
static int
expect_op(const dm_region *view, int kind, dm_gaddr addr, uint32_t len)
{
	int			rc;

	if ((addr & DM_GADDR_RESERVED_BIT) || dm_gaddr_node(addr) != 1)
		return DM_ERR_RANGE;
	rc = dm_region_check_op(view, kind, dm_gaddr_offset(addr), len);
	return rc != DM_OK ? rc : DM_ERR_PERMISSION;
}

/* Is [off, off+len) entirely A's memory or the superblock (i.e. allowed)? */
static int
allowed_for_a(const tenant *a, const dm_superblock *sb, uint64_t off, uint64_t len)
{
	uint64_t	entry = dm_gaddr_offset(a->tree.root_addr);

	if (off + len <= sb->chunk_table_off)
		return 1;
	if (off >= entry && off + len <= entry + DM_CAT_ENTRY_SIZE)
		return 1;
	for (int i = 0; i < 2; i++)
		if (off >= dm_gaddr_offset(a->chunks[i]) && off + len <= dm_gaddr_offset(a->chunks[i]) + CHUNK)
			return 1;
	/* the slab's chunk is A's too: a whole chunk of A */
	{
		uint64_t	c = dm_gaddr_offset(a->slab) - (dm_gaddr_offset(a->slab) - sb->data_off) % sb->chunk_size;

		if (off >= c && off + len <= c + sb->chunk_size)
			return 1;
	}
	return 0;
}

static void
test_fuzz(tenant *a, tenant *b, const dm_superblock *sb)
{
	static uint8_t buf[8192];
	dm_region	view;
	int			wrong = 0,
				tried = 0,
				rpcs = 0;
	dm_node_stats st0,
				st1;
	uint64_t	region = sb->region_size;
	uint64_t	b_targets[5] = {dm_gaddr_offset(b->chunks[0]), dm_gaddr_offset(b->chunks[1]),
		dm_gaddr_offset(b->slab), dm_gaddr_offset(b->tree.root_addr), sb->chunk_table_off};

	memset(&view, 0, sizeof(view));
	view.size = region;
	view.sb = (dm_superblock *) sb;
	view.node_id = 1;
	dm_node_stats_get(a->c, 1, &st0);

	for (int i = 0; i < FUZZ_OPS; i++)
	{
		int			kind = 1 + (int) (rnd() % DM_OP_KIND_MAX);
		uint32_t	len = (kind == DM_OP_READ || kind == DM_OP_WRITE) ? 1 + (uint32_t) (rnd() % 4096) : 8;
		uint64_t	off;
		dm_gaddr	addr;
		int			want,
					got;
		uint64_t	old;

		switch (rnd() % 4)
		{
			case 0:				/* anywhere in the region */
				off = rnd() % region;
				break;
			case 1:				/* near B's memory */
				off = b_targets[rnd() % 5] + rnd() % 8192;
				break;
			case 2:				/* anywhere in the data area */
				off = sb->data_off + rnd() % (region - sb->data_off);
				break;
			default:			/* the catalog */
				off = sb->catalog_off + rnd() % (sb->catalog_capacity * DM_CAT_ENTRY_SIZE);
				break;
		}
		if (kind != DM_OP_READ && kind != DM_OP_WRITE && rnd() % 4 != 0)
			off &= ~UINT64_C(7);
		addr = dm_gaddr_make(1, off);
		if (rnd() % 50 == 0)
			addr = dm_gaddr_make(2, off);	/* a memnode A is not connected to */
		if (dm_gaddr_node(addr) == 1 && off < region && len <= region - off && allowed_for_a(a, sb, off, len))
			continue;			/* A's own: not a refusal test */
		tried++;
		want = dm_gaddr_node(addr) == 1 ? expect_op(&view, kind, addr, len) : DM_ERR_NOTFOUND;
		if (kind == DM_OP_READ)
			got = dm_read(a->c, addr, buf, len);
		else if (kind == DM_OP_WRITE)
		{
			memset(buf, 0xEE, len);
			got = dm_write(a->c, addr, buf, len);
		}
		else if (kind == DM_OP_CAS)
			got = (rnd() % 2) ? dm_cas(a->c, addr, 0, 0xEEEE, &old) : ({
				dm_op		g;

				dm_op_guard(&g, addr, 0, 0xEEEE);
				dm_post(a->c, &g, 1, NULL);
			});
		else if (kind == DM_OP_FAA)
			got = dm_faa(a->c, addr, 0xEE, &old);
		else
			got = dm_fetch_or(a->c, addr, 0xEE, &old);
		if (got != want)
		{
			if (wrong++ < 10)
				tap_diag("fuzz op %d: kind %d at %016" PRIx64 " len %u: got %s, want %s", i, kind, addr, len,
						 dm_strerror(got), dm_strerror(want));
		}
		/* now and then an RPC naming B's things or random ones */
		if (i % 10 == 0)
		{
			dm_gaddr	ra = dm_gaddr_make(1, sb->data_off + (rnd() % sb->nchunks) * sb->chunk_size);
			uint64_t	n;
			dm_gaddr	g;
			int			r1,
						w1;

			switch (rnd() % 5)
			{
				case 0:
					if (ra == a->chunks[0] || ra == a->chunks[1] || allowed_for_a(a, sb, dm_gaddr_offset(ra), 1) ||
						rnd() % 2)
						ra = b->chunks[rnd() % 2];	/* never A's own */
					r1 = dm_chunk_free(a->c, ra);
					w1 = DM_ERR_PERMISSION;
					break;
				case 1:
					r1 = dm_slab_free(a->c, b->tree.tree_id, b->slab + 256 * (rnd() % 16), 256);
					w1 = DM_ERR_PERMISSION;
					break;
				case 2:
					r1 = dm_chunk_free_owner(a->c, 1, (rnd() % 2) ? b->tree.tree_id : rnd(), &n);
					w1 = DM_ERR_PERMISSION;
					break;
				case 3:
					r1 = dm_slab_alloc(a->c, 1, b->tree.tree_id, 256, &g);
					w1 = DM_ERR_PERMISSION;
					break;
				default:
					r1 = dm_tree_drop(a->c, 1, &b->tname, &n);
					w1 = DM_ERR_PERMISSION;
					break;
			}
			rpcs++;
			if (r1 != w1 && wrong++ < 10)
				tap_diag("fuzz rpc after op %d: got %s, want %s", i, dm_strerror(r1), dm_strerror(w1));
		}
	}
	CHECK(wrong == 0, "fuzz: %d random ops and %d RPCs of A on memory not its own, each refused with the expected status (%d wrong)",
		  tried, rpcs, wrong);
	CHECK(tried > FUZZ_OPS / 2, "fuzz: %d of %d ops were refusal tests", tried, FUZZ_OPS);
	dm_node_stats_get(a->c, 1, &st1);
	CHECK(st1.access_denied > st0.access_denied, "stats: access_denied counted (%" PRIu64 " -> %" PRIu64 ")",
		  st0.access_denied, st1.access_denied);
}

/*
 * A keeps writing into its chunk while, on another connection, A drops the
 * tree and B allocates at once: a chunk B gets must be all zero apart from
 * what B writes, i.e. no write of A checked against the old owner lands
 * after B got the chunk.  Short: 1.5 s of rounds.  The memnode has three
 * workers and each round opens three connections, so the writer, the
 * dropper and B are served by different threads (round robin).  Without
 * the quiesce (memnode/auth.c) every round of this fails.
 */
static void
test_free_reuse_race(void)
{
	int			bad_rounds = 0,
				rounds = 0,
				meaningful = 0;
	uint64_t	end = now_ns() + UINT64_C(1500000000);

	while (now_ns() < end)
	{
		int			rc;
		dm_client  *a2 = client_as("tenant-c", test_auth_secret("tenant-c"), &rc, mn.addr);
		dm_client  *b = client_as("tenant-b", test_auth_secret("tenant-b"), &rc, mn.addr);
		dm_tree_name tn,
					bn;
		dm_tree_info ti,
					bi;
		dm_gaddr	ch,
					bch[4];
		pid_t		pid;
		static uint8_t blk[65536];
		int			got = 0;

		dm_tree_name_named(&tn, "race-c");
		dm_tree_name_named(&bn, "race-b");
		if (dm_tree_create(a2, 1, &tn, &ti) != DM_OK || dm_chunk_alloc(a2, 1, ti.tree_id, &ch, NULL) != DM_OK ||
			dm_tree_create(b, 1, &bn, &bi) != DM_OK)
		{
			CHECK(0, "race: setup (%s)", dm_client_error(a2));
			return;
		}
		int			go[2];
		char		one = 1;

		if (pipe(go) < 0)
			return;
		if ((pid = fork()) == 0)
		{
			/*
			 * The writer (its own client: never share one across fork), in
			 * tear mode: the memnode copies each write a word at a time with
			 * a yield between words, so one write lasts long enough for the
			 * drop and B's allocation to happen in the middle of it.
			 */
			dm_client  *a1 = client_as_flags("tenant-c", test_auth_secret("tenant-c"), &rc, mn.addr, DM_CLIENT_TEAR);

			/* 64 KiB writes over the chunk until they are refused */
			memset(blk, 0xC3, sizeof(blk));
			for (uint64_t k = 0;; k++)
			{
				if (dm_write(a1, ch + (k % (CHUNK / sizeof(blk))) * sizeof(blk), blk, sizeof(blk)) != DM_OK)
					_exit(k > 250 ? 250 : (int) k);
				if (k == 0 && write(go[1], &one, 1) != 1)
					_exit(255);
			}
		}
		/* drop while the writer is busy: after its first write, in the middle of the next ones */
		close(go[1]);
		if (read(go[0], &one, 1) != 1)
			CHECK(0, "race: the writer started");
		close(go[0]);
		usleep(1000);
		dm_tree_drop(a2, 1, &tn, NULL);
		for (int i = 0; i < 4; i++)
			if (dm_chunk_alloc(b, 1, bi.tree_id, &bch[i], NULL) == DM_OK)
				got++;
		{
			int			wst = 0;

			waitpid(pid, &wst, 0);
			/* a round counts if A wrote there and B then got A's chunk */
			for (int i = 0; i < got; i++)
				if (bch[i] == ch && WIFEXITED(wst) && WEXITSTATUS(wst) >= 1 && WEXITSTATUS(wst) != 255)
					meaningful++;
		}
		for (int i = 0; i < got; i++)
			for (uint64_t off = 0; off < CHUNK; off += sizeof(blk))
			{
				uint8_t		zero[sizeof(blk)];

				memset(zero, 0, sizeof(zero));
				if (dm_read(b, bch[i] + off, blk, sizeof(blk)) != DM_OK || memcmp(blk, zero, sizeof(blk)) != 0)
				{
					bad_rounds++;
					i = got;
					break;
				}
			}
		dm_tree_drop(b, 1, &bn, NULL);
		dm_client_destroy(a2);
		dm_client_destroy(b);
		rounds++;
	}
	CHECK(meaningful > 0, "free and reuse: %d of %d rounds had B get the chunk A was writing", meaningful, rounds);
	CHECK(bad_rounds == 0,
		  "free and reuse: in %d rounds no write of the old owner landed in memory handed to another (%d bad)",
		  rounds, bad_rounds);
}

int
main(void)
{
	const char *args[] = {"--id", "1", "--size", "32M", "--chunk-size", "1M", "--threads", "3", "--shm",
	"--log-level", "error", "--auth-file", NULL, NULL};
	tenant		a,
				b;
	dm_superblock sb;
	struct stat st;

	test_bad_files();

	args[12] = test_auth_file();
	if (memnode_start(&mn, 0, args) != 0)
	{
		CHECK(0, "memnode with --auth-file started");
		return tap_done();
	}
	CHECK(stat(mn.shm_path, &st) == 0 && (st.st_mode & 0777) == 0600,
		  "the --shm region file is mode 0600 (%o)", (unsigned) (st.st_mode & 0777));

	if (tenant_setup(&a, "tenant-a", 11) < 0 || tenant_setup(&b, "tenant-b", 22) < 0)
	{
		memnode_stop(&mn, SIGKILL);
		return tap_done();
	}
	CHECK(dm_read(a.c, dm_gaddr_make(1, 0), &sb, sizeof(sb)) == DM_OK && sb.magic == DM_SB_MAGIC,
		  "A reads the superblock (the layout for the model)");

	test_refused(a.c, a.chunks[0] + 8);
	test_client_checks_memnode();
	test_named_cases(&a, &b, &sb);
	test_fuzz(&a, &b, &sb);
	CHECK(tenant_intact(&b, 22), "B's chunks, slab, root and meta words are exactly what B wrote");
	/* every op of A above on its own memory added 0 or was refused with its batch */
	CHECK(tenant_intact(&a, 11), "A's own data is unchanged too (its refused batches applied nothing)");
	test_free_reuse_race();
	CHECK(tenant_intact(&b, 22), "B's data intact after the race rounds");

	dm_client_destroy(a.c);
	dm_client_destroy(b.c);
	CHECK(WEXITSTATUS(memnode_stop(&mn, SIGTERM)) == 0, "memnode exits cleanly");
	return tap_done();
}
