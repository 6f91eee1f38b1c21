/*
 * testauth.c — test identities and their auth file (see testauth.h).
 */
#define _GNU_SOURCE
#include "testauth.h"

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
