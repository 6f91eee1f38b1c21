/*
 * dm_auth.h — authentication of tcp connections between clients and a
 * memnode: the auth file (lines "identity secret"), the challenge-response
 * proofs of the handshake (HMAC-SHA-256 from OpenSSL's libcrypto) and the
 * tag under which a memnode records which identity owns a tree.
 *
 * The handshake (protocol version 3, dm_proto.h) is mutual:
 *
 *   client -> HELLO  {identity, client nonce Nc}
 *   memnode -> HELLO reply {server nonce Ns, DM_HELLO_REP_AUTH}
 *   client -> AUTH   {HMAC(secret, "client" | identity | Nc | Ns)}
 *   memnode -> AUTH reply {the real HELLO reply, HMAC(secret, "server" | ...)}
 *
 * Both nonces are fresh random bytes, so a recorded proof is worthless on
 * another connection (replay), and the two directions use different labels
 * so a memnode's proof cannot be reflected back as a client's.  The proofs
 * authenticate the peers at connection time only: the ops that follow are
 * neither encrypted nor integrity-protected (see README "Security").
 *
 * Used by the memnode (memnode/auth.c), the transport client (dm_client.c)
 * and the PostgreSQL side (src/pg/dmconn.c reads the cluster's file).
 */
#ifndef DM_AUTH_H
#define DM_AUTH_H

#include <stddef.h>
#include <stdint.h>

#define DM_AUTH_ID_LEN		64	/* identity, NUL-terminated on the wire */
#define DM_AUTH_NONCE_LEN	32
#define DM_AUTH_MAC_LEN		32	/* HMAC-SHA-256 */
#define DM_AUTH_SECRET_MIN	16	/* shortest secret accepted, in bytes */
#define DM_AUTH_SECRET_MAX	256

typedef struct dm_auth_entry
{
	char		identity[DM_AUTH_ID_LEN];
	uint8_t		secret[DM_AUTH_SECRET_MAX];
	uint32_t	secret_len;
	uint64_t	tag;			/* dm_auth_ident_tag(identity) */
} dm_auth_entry;

/* Which side's proof a MAC is. */
#define DM_AUTH_ROLE_CLIENT 1
#define DM_AUTH_ROLE_SERVER 2

/*
 * Read an auth file: one "identity secret" per line, blank lines and lines
 * starting with '#' ignored.  Refused (DM_ERR_INVALID, a one-line reason in
 * err) if the file is not a regular file, is readable or writable by group
 * or others, or has a malformed line, an invalid identity, a secret shorter
 * than DM_AUTH_SECRET_MIN, or an identity twice.  On success *entries is a
 * malloc'ed array (free with dm_auth_free, which wipes the secrets).
 */
extern int	dm_auth_file_load(const char *path, dm_auth_entry **entries, int *nentries,
							  char *err, size_t errlen);
extern void dm_auth_free(dm_auth_entry *entries, int nentries);

/* An identity is 1..63 characters of [A-Za-z0-9._@-]. */
extern int	dm_auth_identity_valid(const char *identity);

/* Fill buf with cryptographically random bytes; DM_OK or DM_ERR_INTERNAL. */
extern int	dm_auth_random(uint8_t *buf, size_t n);

/*
 * The proof of role for this handshake (identity as sent: DM_AUTH_ID_LEN
 * bytes).  DM_OK, or DM_ERR_INTERNAL if libcrypto failed (never a proof then).
 */
extern int	dm_auth_mac(const uint8_t *secret, uint32_t secret_len, int role,
						const char identity[DM_AUTH_ID_LEN],
						const uint8_t client_nonce[DM_AUTH_NONCE_LEN],
						const uint8_t server_nonce[DM_AUTH_NONCE_LEN],
						uint8_t mac[DM_AUTH_MAC_LEN]);

/* Constant-time comparison of two proofs: 1 if equal. */
extern int	dm_auth_mac_equal(const uint8_t a[DM_AUTH_MAC_LEN], const uint8_t b[DM_AUTH_MAC_LEN]);

/*
 * The 32-bit tag a memnode stores in the catalog entry of each tree an
 * identity creates (the high half of dm_cat_entry.owner_pid,
 * dm_cat_owner_ident): the first 4 bytes of SHA-256(identity), never 0 (0 =
 * created without authentication).  Stable across restarts and edits of the
 * auth file; dm_auth_file_load refuses a file in which two identities share
 * a tag.
 */
extern uint64_t dm_auth_ident_tag(const char *identity);

/* Overwrite a secret in memory (not optimised away). */
extern void dm_auth_wipe(void *p, size_t n);

#endif							/* DM_AUTH_H */
