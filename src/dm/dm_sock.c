/*
 * dm_sock.c — the client's socket I/O: connect, send and receive frames,
 * every wait bounded by a deadline and done through the client's wait
 * callback (so PostgreSQL can wait on its latch and honour interrupts).
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dm_client_int.h"

uint64_t
dm_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

uint64_t
dm_deadline(int timeout_ms)
{
	return dm_mono_ns() + (uint64_t) timeout_ms * 1000000u;
}

int
dm_buf_reserve(uint8_t **buf, uint32_t *cap, uint32_t need)
{
	uint32_t	ncap;
	uint8_t    *nb;

	if (need <= *cap)
		return DM_OK;
	if (need > DM_FRAME_MAX)
		return DM_ERR_TOOBIG;
	ncap = *cap ? *cap : 4096;
	while (ncap < need)
		ncap *= 2;
	/* 8-aligned: frames are parsed in place as structs */
	nb = aligned_alloc(8, ncap);
	if (nb == NULL)
		return DM_ERR_NOMEM;
	/* keep what is there: a frame's header is read before the buffer grows for its body */
	if (*cap)
		memcpy(nb, *buf, *cap);
	free(*buf);
	*buf = nb;
	*cap = ncap;
	return DM_OK;
}

/* Wait for fd until the deadline: 1 ready, or a dm_status. */
static int
wait_fd(dm_client *c, int fd, int want_write, uint64_t deadline)
{
	for (;;)
	{
		uint64_t	now = dm_mono_ns();
		int			ms;
		int			rc;

		if (now >= deadline)
			return DM_ERR_TIMEOUT;
		ms = (int) ((deadline - now + 999999) / 1000000);
		if (c->opts.wait)
		{
			rc = c->opts.wait(c->opts.wait_arg, fd, want_write, ms);
			if (rc < 0)
				return DM_ERR_INTERRUPTED;
		}
		else
		{
			struct pollfd pfd = {.fd = fd, .events = want_write ? POLLOUT : POLLIN};

			rc = poll(&pfd, 1, ms);
			if (rc < 0 && errno != EINTR)
				return DM_ERR_CLOSED;
			/* POLLERR/POLLHUP count as ready: the next call reports the error */
		}
		if (rc > 0)
			return 1;
	}
}

static int
split_hostport(const char *hp, char *host, size_t hostlen, char *port, size_t portlen)
{
	const char *colon = strrchr(hp, ':');
	size_t		hl;
	const char *h = hp;
	char	   *end;
	long		p;

	if (colon == NULL || colon == hp || colon[1] == '\0')
		return DM_ERR_INVALID;
	hl = (size_t) (colon - hp);
	if (h[0] == '[' && hl >= 2 && h[hl - 1] == ']')
	{
		h++;
		hl -= 2;
	}
	if (hl == 0 || hl >= hostlen)
		return DM_ERR_INVALID;
	errno = 0;
	p = strtol(colon + 1, &end, 10);
	if (errno != 0 || *end != '\0' || p <= 0 || p > 65535 || strlen(colon + 1) >= portlen)
		return DM_ERR_INVALID;
	memcpy(host, h, hl);
	host[hl] = '\0';
	snprintf(port, portlen, "%ld", p);
	return DM_OK;
}

int
dm_sock_connect(dm_client *c, dm_conn *cn)
{
	char		host[128], port[16];
	struct addrinfo hints, *res = NULL, *ai;
	uint64_t	deadline = dm_deadline(c->opts.connect_timeout_ms);
	int			rc, last = DM_ERR_CONNECT;
	char		why[160] = "no address";

	if (split_hostport(cn->address, host, sizeof(host), port, sizeof(port)) != DM_OK)
		return dm_fail(c, cn, DM_ERR_INVALID, "invalid memnode address (expected host:port)");
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if ((rc = getaddrinfo(host, port, &hints, &res)) != 0)
		return dm_fail(c, cn, DM_ERR_CONNECT, "could not resolve \"%s\": %s", host, gai_strerror(rc));

	for (ai = res; ai != NULL; ai = ai->ai_next)
	{
		int			fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
								ai->ai_protocol);
		int			one = 1, err = 0;
		socklen_t	elen = sizeof(err);

		if (fd < 0)
		{
			snprintf(why, sizeof(why), "socket: %s", strerror(errno));
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0)
		{
			if (errno != EINPROGRESS)
				err = errno;
			else if ((rc = wait_fd(c, fd, 1, deadline)) != 1)
			{
				close(fd);
				freeaddrinfo(res);
				if (rc == DM_ERR_INTERRUPTED)
					return dm_fail(c, cn, rc, "connect interrupted");
				return dm_fail(c, cn, DM_ERR_CONNECT, "connect timed out after %d ms",
							   c->opts.connect_timeout_ms);
			}
			else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0)
				err = errno;
		}
		if (err == 0)
		{
			freeaddrinfo(res);
			cn->fd = fd;
			return DM_OK;
		}
		snprintf(why, sizeof(why), "%s", strerror(err));
		close(fd);
	}
	freeaddrinfo(res);
	return dm_fail(c, cn, last, "could not connect: %s", why);
}

int
dm_sock_send(dm_client *c, dm_conn *cn, const void *buf, uint32_t len, uint64_t deadline)
{
	const uint8_t *p = buf;
	uint32_t	done = 0;

	if (cn->local_exec)
	{
		uint32_t	rlen = 0;

		/* in-process (dm_client_local.c): executed now, the reply kept for the receive */
		if (cn->local_exec(cn->local_arg, buf, &cn->rbuf, &rlen, &cn->rcap) != 0)
			return dm_fail(c, cn, DM_ERR_PROTOCOL, "in-process request was refused as malformed");
		cn->local_ready = 1;
		cn->ctr.wire_bytes_sent += len;
		cn->ctr.wire_bytes_recv += rlen;
		return DM_OK;
	}
	while (done < len)
	{
		ssize_t		n = send(cn->fd, p + done, len - done, MSG_NOSIGNAL);

		if (n > 0)
		{
			done += (uint32_t) n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		{
			int			rc = wait_fd(c, cn->fd, 1, deadline);

			if (rc == 1)
				continue;
			return dm_fail(c, cn, rc, rc == DM_ERR_TIMEOUT ?
						   "no progress sending a request for %d ms" : "send interrupted",
						   c->opts.op_timeout_ms);
		}
		return dm_fail(c, cn, DM_ERR_CLOSED, "send failed: %s", strerror(errno));
	}
	cn->ctr.wire_bytes_sent += len;
	return DM_OK;
}

/* Read exactly len bytes into dst. */
static int
recv_exact(dm_client *c, dm_conn *cn, uint8_t *dst, uint32_t len, uint64_t deadline)
{
	uint32_t	got = 0;
	/* poll before the first sleep only: a reply mostly comes in one piece */
	uint64_t	spin_until = c->opts.spin_us > 0 ? dm_mono_ns() + (uint64_t) c->opts.spin_us * 1000u : 0;

	while (got < len)
	{
		ssize_t		n = recv(cn->fd, dst + got, len - got, 0);

		if (n > 0)
		{
			got += (uint32_t) n;
			continue;
		}
		if (n == 0)
			return dm_fail(c, cn, DM_ERR_CLOSED, "memnode closed the connection");
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
		{
			int			rc;

			if (spin_until != 0)
			{
				if (dm_mono_ns() < spin_until)
				{
					/* yield, not spin: the memnode may need this very core */
					sched_yield();
					continue;
				}
				spin_until = 0;
			}
			rc = wait_fd(c, cn->fd, 0, deadline);

			if (rc == 1)
				continue;
			if (rc == DM_ERR_TIMEOUT)
				return dm_fail(c, cn, rc, "no reply within %d ms", c->opts.op_timeout_ms);
			return dm_fail(c, cn, rc, "wait for reply interrupted");
		}
		return dm_fail(c, cn, DM_ERR_CLOSED, "receive failed: %s", strerror(errno));
	}
	cn->ctr.wire_bytes_recv += len;
	return DM_OK;
}

int
dm_sock_recv_frame(dm_client *c, dm_conn *cn, uint16_t type, uint64_t seq,
				   uint64_t deadline, dm_frame_hdr **hdr_out)
{
	dm_frame_hdr *h;
	int			rc;

	if (cn->local_exec)
	{
		h = (dm_frame_hdr *) cn->rbuf;
		if (!cn->local_ready || dm_hdr_check(h, DM_FRAME_MAX) != DM_OK ||
			h->type != (type | DM_MSG_REPLY) || h->seq != seq || h->status > DM_STATUS_MAX)
			return dm_fail(c, cn, DM_ERR_PROTOCOL, "malformed in-process reply");
		cn->local_ready = 0;
		*hdr_out = h;
		return DM_OK;
	}
	if ((rc = dm_buf_reserve(&cn->rbuf, &cn->rcap, DM_HDR_SIZE)) != DM_OK)
		return dm_fail(c, cn, rc, "cannot allocate receive buffer");
	if ((rc = recv_exact(c, cn, cn->rbuf, DM_HDR_SIZE, deadline)) != DM_OK)
		return rc;
	h = (dm_frame_hdr *) cn->rbuf;
	if (dm_hdr_check(h, DM_FRAME_MAX) != DM_OK || h->type != (type | DM_MSG_REPLY) ||
		h->seq != seq || h->status > DM_STATUS_MAX)
		return dm_fail(c, cn, DM_ERR_PROTOCOL,
					   "malformed reply header (type %u, length %u, seq %llu, expected seq %llu)",
					   h->type, h->length, (unsigned long long) h->seq, (unsigned long long) seq);
	if ((rc = dm_buf_reserve(&cn->rbuf, &cn->rcap, h->length)) != DM_OK)
		return dm_fail(c, cn, rc, "cannot allocate receive buffer");
	h = (dm_frame_hdr *) cn->rbuf;
	if ((rc = recv_exact(c, cn, cn->rbuf + DM_HDR_SIZE, h->length - DM_HDR_SIZE, deadline)) != DM_OK)
		return rc;
	*hdr_out = h;
	return DM_OK;
}
