/*
 * testauth.c — test identities and their auth file, and the handshake on a
 * raw socket with them (see testauth.h).
 */
#define _GNU_SOURCE
#include "testauth.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct
{
	const char *identity;
	const char *secret;
}			idents[] = {
	{"tenant-a", "a-secret-for-tenant-a-0123456789"},
	{"tenant-b", "b-secret-for-tenant-b-9876543210"},
	{"tenant-c", "c-secret-for-tenant-c-5555555555"},
};

static char dir[64];
static char path[128];

static void
remove_file(void)
{
	if (path[0])
		unlink(path);
	if (dir[0])
		rmdir(dir);
}

int
test_auth_on(void)
{
	const char *e = getenv("DM_TEST_AUTH");

	return e != NULL && e[0] != '\0' && strcmp(e, "0") != 0;
}

const char *
test_auth_file(void)
{
	FILE	   *f;

	if (path[0])
		return path;
	snprintf(dir, sizeof(dir), "/tmp/dmtest-auth-XXXXXX");
	if (mkdtemp(dir) == NULL)
	{
		perror("mkdtemp");
		exit(99);
	}
	snprintf(path, sizeof(path), "%s/auth", dir);
	if ((f = fopen(path, "w")) == NULL)
	{
		perror(path);
		exit(99);
	}
	fchmod(fileno(f), 0600);
	fprintf(f, "# test identities (test/lib/testauth.c)\n");
	for (size_t i = 0; i < sizeof(idents) / sizeof(idents[0]); i++)
		fprintf(f, "%s %s\n", idents[i].identity, idents[i].secret);
	fclose(f);
	atexit(remove_file);
	return path;
}

const char *
test_auth_secret(const char *identity)
{
	for (size_t i = 0; i < sizeof(idents) / sizeof(idents[0]); i++)
		if (strcmp(idents[i].identity, identity) == 0)
			return idents[i].secret;
	return NULL;
}

void
test_auth_opts(dm_client_opts *o, const char *identity)
{
	const char *secret = test_auth_secret(identity);

	if (secret == NULL)
	{
		fprintf(stderr, "test_auth_opts: unknown test identity \"%s\"\n", identity);
		exit(99);
	}
	o->auth_identity = identity;
	o->auth_secret = (const uint8_t *) secret;
	o->auth_secret_len = (uint32_t) strlen(secret);
}

int
test_raw_hello(int fd, uint32_t version, dm_frame_hdr *rep_hdr, dm_hello_rep *rep)
{
	struct
	{
		dm_frame_hdr h;
		dm_hello_req r;
	}			req;

	memset(&req, 0, sizeof(req));
	dm_hdr_init(&req.h, DM_MSG_HELLO, sizeof(req), 77);
	req.r.version = version;
	req.r.client_pid = (uint64_t) getpid();
	snprintf(req.r.client_name, sizeof(req.r.client_name), "raw test client");
	if (test_auth_on())
	{
		snprintf(req.r.identity, sizeof(req.r.identity), "tenant-a");
		dm_auth_random(req.r.client_nonce, sizeof(req.r.client_nonce));
	}
	if (test_raw_send(fd, &req, sizeof(req)) < 0)
		return -1;
	if (test_raw_recv(fd, rep_hdr, sizeof(*rep_hdr)) < 0)
		return -1;
	if (rep_hdr->length != DM_HDR_SIZE + sizeof(*rep))
		return -1;
	if (test_raw_recv(fd, rep, sizeof(*rep)) < 0)
		return -1;
	if (rep_hdr->status == DM_OK && (rep->flags & DM_HELLO_REP_AUTH))
	{
		/* the second half of the handshake (dm_auth.h): our proof; its reply is the real HELLO reply */
		struct
		{
			dm_frame_hdr h;
			dm_auth_req r;
		}			areq;
		dm_auth_rep arep;
		const char *secret = test_auth_secret("tenant-a");

		memset(&areq, 0, sizeof(areq));
		dm_hdr_init(&areq.h, DM_MSG_AUTH, sizeof(areq), 78);
		dm_auth_mac((const uint8_t *) secret, (uint32_t) strlen(secret), DM_AUTH_ROLE_CLIENT, req.r.identity,
					req.r.client_nonce, rep->server_nonce, areq.r.mac);
		if (test_raw_send(fd, &areq, sizeof(areq)) < 0 || test_raw_recv(fd, rep_hdr, sizeof(*rep_hdr)) < 0 ||
			rep_hdr->length != DM_HDR_SIZE + sizeof(arep) || test_raw_recv(fd, &arep, sizeof(arep)) < 0)
			return -1;
		*rep = arep.hello;
	}
	return 0;
}
