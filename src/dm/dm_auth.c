/*
 * dm_auth.c — the auth file, the handshake's HMAC-SHA-256 proofs and
 * identity tags (interface and protocol in dm_auth.h).  All cryptography
 * is OpenSSL's libcrypto: HMAC(), SHA256(), RAND_bytes(), CRYPTO_memcmp().
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include "dm_auth.h"
#include "dm_types.h"

#define AUTH_FILE_MAX (64 * 1024)

static int	fail(char *err, size_t errlen, const char *fmt,...) __attribute__((format(printf, 3, 4)));

static int
fail(char *err, size_t errlen, const char *fmt,...)
{
	va_list		ap;

	if (err != NULL && errlen > 0)
	{
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return DM_ERR_INVALID;
}

int
dm_auth_identity_valid(const char *id)
{
	size_t		n = strnlen(id, DM_AUTH_ID_LEN);

	if (n == 0 || n >= DM_AUTH_ID_LEN)
		return 0;
	for (size_t i = 0; i < n; i++)
	{
		char		ch = id[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
			  ch == '.' || ch == '_' || ch == '-' || ch == '@'))
			return 0;
	}
	return 1;
}

void
dm_auth_wipe(void *p, size_t n)
{
	OPENSSL_cleanse(p, n);
}

void
dm_auth_free(dm_auth_entry *entries, int nentries)
{
	if (entries == NULL)
		return;
	dm_auth_wipe(entries, sizeof(*entries) * (size_t) nentries);
	free(entries);
}

/* Split buf (NUL-terminated, modified) into lines and parse them. */
static int
parse(char *buf, const char *path, dm_auth_entry **out, int *nout, char *err, size_t errlen)
{
	dm_auth_entry *ents = NULL;
	int			n = 0;
	int			lineno = 0;
	char	   *line = buf;

	while (line != NULL && *line != '\0')
	{
		char	   *nl = strchr(line, '\n');
		char	   *tok[3];
		int			ntok = 0;
		char	   *save = NULL;
		dm_auth_entry *grown;

		if (nl != NULL)
			*nl = '\0';
		lineno++;
		for (char *t = strtok_r(line, " \t\r", &save); t != NULL; t = strtok_r(NULL, " \t\r", &save))
		{
			if (ntok == 0 && t[0] == '#')
				break;
			if (ntok == 3)
				break;
			tok[ntok++] = t;
		}
		line = nl ? nl + 1 : NULL;
		if (ntok == 0)
			continue;
		if (ntok != 2)
		{
			dm_auth_free(ents, n);
			return fail(err, errlen, "auth file \"%s\" line %d: expected \"identity secret\"", path, lineno);
		}
		if (!dm_auth_identity_valid(tok[0]))
		{
			dm_auth_free(ents, n);
			return fail(err, errlen, "auth file \"%s\" line %d: invalid identity: use 1 to %d of the characters A-Z a-z 0-9 . _ - @",
						path, lineno, DM_AUTH_ID_LEN - 1);
		}
		if (strlen(tok[1]) < DM_AUTH_SECRET_MIN || strlen(tok[1]) > DM_AUTH_SECRET_MAX)
		{
			dm_auth_free(ents, n);
			return fail(err, errlen, "auth file \"%s\" line %d: the secret must be %d to %d characters long",
						path, lineno, DM_AUTH_SECRET_MIN, DM_AUTH_SECRET_MAX);
		}
		for (int i = 0; i < n; i++)
		{
			if (strcmp(ents[i].identity, tok[0]) == 0)
			{
				dm_auth_free(ents, n);
				return fail(err, errlen, "auth file \"%s\" line %d: identity \"%s\" appears twice",
							path, lineno, tok[0]);
			}
			/* tags are 32 bits (dm_region.h): two identities must never share one */
			if (ents[i].tag == dm_auth_ident_tag(tok[0]))
			{
				char		other[DM_AUTH_ID_LEN];

				snprintf(other, sizeof(other), "%s", ents[i].identity);
				dm_auth_free(ents, n);
				return fail(err, errlen, "auth file \"%s\" line %d: identities \"%s\" and \"%s\" have the same tag; rename one",
							path, lineno, other, tok[0]);
			}
		}
		if ((grown = malloc(sizeof(*grown) * (size_t) (n + 1))) == NULL)
		{
			dm_auth_free(ents, n);
			return fail(err, errlen, "out of memory");
		}
		if (n > 0)
			memcpy(grown, ents, sizeof(*grown) * (size_t) n);
		dm_auth_free(ents, n);
		ents = grown;
		memset(&ents[n], 0, sizeof(ents[n]));
		strcpy(ents[n].identity, tok[0]);
		ents[n].secret_len = (uint32_t) strlen(tok[1]);
		memcpy(ents[n].secret, tok[1], ents[n].secret_len);
		ents[n].tag = dm_auth_ident_tag(tok[0]);
		n++;
	}
	if (n == 0)
		return fail(err, errlen, "auth file \"%s\" contains no \"identity secret\" line", path);
	*out = ents;
	*nout = n;
	return DM_OK;
}

int
dm_auth_file_load(const char *path, dm_auth_entry **entries, int *nentries, char *err, size_t errlen)
{
	int			fd;
	struct stat st;
	char	   *buf;
	ssize_t		got;
	size_t		len = 0;
	int			rc;

	*entries = NULL;
	*nentries = 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return fail(err, errlen, "could not open auth file \"%s\": %s", path, strerror(errno));
	if (fstat(fd, &st) < 0)
	{
		rc = errno;
		close(fd);
		return fail(err, errlen, "could not stat auth file \"%s\": %s", path, strerror(rc));
	}
	if (!S_ISREG(st.st_mode))
	{
		close(fd);
		return fail(err, errlen, "auth file \"%s\" is not a regular file", path);
	}
	if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0)
	{
		close(fd);
		return fail(err, errlen, "auth file \"%s\" has group or world access; it must be accessible by its owner only (chmod 600)",
					path);
	}
	if (st.st_size > AUTH_FILE_MAX)
	{
		close(fd);
		return fail(err, errlen, "auth file \"%s\" is larger than %d bytes", path, AUTH_FILE_MAX);
	}
	if ((buf = malloc(AUTH_FILE_MAX + 1)) == NULL)
	{
		close(fd);
		return fail(err, errlen, "out of memory");
	}
	while (len < AUTH_FILE_MAX && (got = read(fd, buf + len, AUTH_FILE_MAX - len)) != 0)
	{
		if (got < 0)
		{
			if (errno == EINTR)
				continue;
			rc = errno;
			close(fd);
			free(buf);
			return fail(err, errlen, "could not read auth file \"%s\": %s", path, strerror(rc));
		}
		len += (size_t) got;
	}
	close(fd);
	buf[len] = '\0';
	if (memchr(buf, '\0', len) != NULL)
		rc = fail(err, errlen, "auth file \"%s\" contains a NUL byte", path);
	else
		rc = parse(buf, path, entries, nentries, err, errlen);
	dm_auth_wipe(buf, len);
	free(buf);
	return rc;
}

int
dm_auth_random(uint8_t *buf, size_t n)
{
	return RAND_bytes(buf, (int) n) == 1 ? DM_OK : DM_ERR_INTERNAL;
}

int
dm_auth_mac(const uint8_t *secret, uint32_t secret_len, int role,
			const char identity[DM_AUTH_ID_LEN],
			const uint8_t client_nonce[DM_AUTH_NONCE_LEN],
			const uint8_t server_nonce[DM_AUTH_NONCE_LEN],
			uint8_t mac[DM_AUTH_MAC_LEN])
{
	/* label (fixed 16 bytes) | identity (64) | Nc (32) | Ns (32) */
	uint8_t		msg[16 + DM_AUTH_ID_LEN + 2 * DM_AUTH_NONCE_LEN];
	unsigned int maclen = DM_AUTH_MAC_LEN;

	memset(msg, 0, sizeof(msg));
	memcpy(msg, role == DM_AUTH_ROLE_CLIENT ? "dmindex3 client" : "dmindex3 server", 15);
	memcpy(msg + 16, identity, DM_AUTH_ID_LEN);
	memcpy(msg + 16 + DM_AUTH_ID_LEN, client_nonce, DM_AUTH_NONCE_LEN);
	memcpy(msg + 16 + DM_AUTH_ID_LEN + DM_AUTH_NONCE_LEN, server_nonce, DM_AUTH_NONCE_LEN);
	if (HMAC(EVP_sha256(), secret, (int) secret_len, msg, sizeof(msg), mac, &maclen) == NULL ||
		maclen != DM_AUTH_MAC_LEN)
		return DM_ERR_INTERNAL;
	return DM_OK;
}

int
dm_auth_mac_equal(const uint8_t a[DM_AUTH_MAC_LEN], const uint8_t b[DM_AUTH_MAC_LEN])
{
	return CRYPTO_memcmp(a, b, DM_AUTH_MAC_LEN) == 0;
}

uint64_t
dm_auth_ident_tag(const char *identity)
{
	uint8_t		h[SHA256_DIGEST_LENGTH];
	uint64_t	tag;

	SHA256((const unsigned char *) identity, strnlen(identity, DM_AUTH_ID_LEN), h);
	tag = (uint64_t) h[0] | (uint64_t) h[1] << 8 | (uint64_t) h[2] << 16 | (uint64_t) h[3] << 24;
	return tag != 0 ? tag : 1;
}
