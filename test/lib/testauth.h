/*
 * testauth.h — authentication for the C tests: an auth file with three
 * test identities (tenant-a, tenant-b, tenant-c) and client options that
 * carry their credentials.  A test that can run with or without
 * authentication asks test_auth_on(): set DM_TEST_AUTH=1 in the environment
 * to run it against a memnode started with --auth-file (test/run-c-tests.sh
 * runs test_robust both ways).
 */
#ifndef DM_TESTAUTH_H
#define DM_TESTAUTH_H

#include "dm_client.h"

/* 1 if DM_TEST_AUTH is set to a non-empty value other than "0". */
extern int	test_auth_on(void);

/*
 * Path of a mode-0600 auth file holding the three identities, written once
 * per process into a fresh temporary directory (removed at exit).
 */
extern const char *test_auth_file(void);

/* The secret of a test identity (NULL if unknown). */
extern const char *test_auth_secret(const char *identity);

/* Put identity's credentials into o (identity must be a test identity). */
extern void test_auth_opts(dm_client_opts *o, const char *identity);

/*
 * The handshake on a raw socket (test_raw_connect) with protocol version
 * version; with test_auth_on() as tenant-a, the AUTH step included (the
 * real HELLO reply then lands in *rep).  0, or -1 on a transport error.
 */
extern int	test_raw_hello(int fd, uint32_t version, dm_frame_hdr *rep_hdr, dm_hello_rep *rep);

#endif
