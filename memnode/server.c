/*
 * server.c — the memnode's connections: a listener thread hands accepted
 * sockets to worker threads, each running an epoll loop over its own
 * connections.  A request is executed only once its whole frame has
 * arrived (a client that vanishes mid-request leaves nothing applied);
 * buffers grow only as bytes actually arrive (a header claiming 16 MiB
 * costs nothing until the bytes come); connections that stall before the
 * handshake or mid-frame are closed after --handshake-timeout, and beyond
 * --max-connections new ones are refused, so garbage traffic cannot starve
 * well-behaved clients.  RPC frames a client sends over UCX (ucx_rpc.c)
 * are queued to the worker serving its control connection and run there
 * as that connection's frames.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "memnode.h"

#define INBUF_INITIAL 4096
#define BUF_KEEP (1u << 20)		/* shrink idle buffers larger than this */

typedef struct mn_conn
{
	int			fd;
	mn_conn_info info;
	uint8_t    *in;
	uint32_t	in_len;
	uint32_t	in_cap;
	uint8_t    *out;
	uint32_t	out_len;
	uint32_t	out_off;		/* bytes of out already sent */
	uint32_t	out_cap;
	uint64_t	since_ns;		/* start of the handshake wait or of a partial frame */
	struct mn_conn *prev, *next;
} mn_conn;

typedef struct mn_worker
{
	int			id;
	int			epfd;
	int			evfd;			/* wakes the worker when new connections are queued */
	pthread_t	thread;
	pthread_mutex_t lock;		/* protects incoming and ucx_in */
	mn_conn    *incoming;
	mn_ucx_req *ucx_in;			/* RPC frames over UCX for our connections, in arrival order */
	mn_ucx_req **ucx_tail;
	uint8_t    *ucx_out;		/* their replies */
	uint32_t	ucx_out_len;
	uint32_t	ucx_out_cap;
	mn_conn    *conns;			/* this worker's connections (worker-private) */
	mn_counters *ctr;
	mn_state   *mns;			/* the memnode it serves */
} mn_worker;

static int	listen_fd = -1;
__thread int mn_worker_id;		/* picks the worker's journal slot (exec.c) */
static pthread_t listener;
static mn_worker *workers;

static void
conn_close(mn_worker *w, mn_conn *c, const char *why)
{
	if (why)
		mn_log(LOG_DEBUG, "closing connection from %s: %s", c->info.peer, why);
	epoll_ctl(w->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	/* RPC frames over UCX of this connection, queued or late, are no longer run */
	mn_ucx_unbind(&c->info);
	if (c->prev)
		c->prev->next = c->next;
	else
		w->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	free(c->in);
	free(c->out);
	free(c);
	__atomic_fetch_sub(&w->mns->connections, 1, __ATOMIC_RELAXED);
}

static void
bad_frame(mn_worker *w, mn_conn *c, const char *why)
{
	w->ctr->frames_bad++;
	mn_log_limited("closing connection from %s: %s", c->info.peer, why);
	conn_close(w, c, NULL);
}

/* Send what is pending; 1 = all sent, 0 = would block, -1 = error. */
static int
flush_out(mn_worker *w, mn_conn *c)
{
	while (c->out_off < c->out_len)
	{
		ssize_t		n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);

		if (n > 0)
		{
			c->out_off += (uint32_t) n;
			w->ctr->bytes_out += (uint64_t) n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		return -1;
	}
	c->out_len = c->out_off = 0;
	if (c->out_cap > BUF_KEEP)
	{
		free(c->out);
		c->out = NULL;
		c->out_cap = 0;
	}
	return 1;
}

static void
set_events(mn_worker *w, mn_conn *c, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.ptr = c};

	epoll_ctl(w->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

/*
 * Could the frame change memory?  A batch with any op but READ, and every
 * RPC (allocation, frees, the catalog, offloaded writes); reads, HELLO and
 * AUTH cannot.  (The batch was not validated yet: a malformed one is
 * treated as a writer, which only means the check below runs.)
 */
static int
frame_may_write(const uint8_t *frame, const dm_frame_hdr *h)
{
	const dm_batch_hdr *bh = (const dm_batch_hdr *) (frame + DM_HDR_SIZE);
	const dm_wire_op *ops = (const dm_wire_op *) (bh + 1);

	if (h->type == DM_MSG_RPC)
		return 1;
	if (h->type != DM_MSG_BATCH)
		return 0;
	if (h->length < DM_HDR_SIZE + sizeof(*bh) ||
		(h->length - DM_HDR_SIZE - sizeof(*bh)) / sizeof(dm_wire_op) < bh->nops)
		return 1;
	for (uint32_t i = 0; i < bh->nops; i++)
		if (ops[i].kind != DM_OP_READ)
			return 1;
	return 0;
}

/*
 * Has the client hung up?  A client closes its connection when it gives up
 * on a request (a timeout, a cancel): it will never learn what became of
 * it and goes on as if it had failed -- a PostgreSQL transaction then
 * aborts, VACUUM may free the tid its entry names, and an insert landing
 * afterwards (a memnode that was stopped or far behind) would make the
 * index name a row that is not that key's.  So a request that could write
 * is not run once its sender has hung up.  (One already running when the
 * client gives up lands, as it would have a moment earlier.)
 */
static int
peer_hung_up(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLRDHUP};

	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

/*
 * Execute every complete frame in the input buffer.  Stops early when a
 * reply could not be sent completely (we stop reading until it drains, so
 * a client that never reads cannot make us queue unbounded replies).
 * Returns -1 if the connection was closed.
 */
static int
process_input(mn_worker *w, mn_conn *c)
{
	uint32_t	pos = 0;

	while (c->out_len == 0 && c->in_len - pos >= DM_HDR_SIZE)
	{
		dm_frame_hdr h;
		int			rc;

		memcpy(&h, c->in + pos, sizeof(h));
		if ((rc = dm_hdr_check(&h, DM_FRAME_MAX)) != DM_OK)
		{
			bad_frame(w, c, rc == DM_ERR_TOOBIG ? "frame exceeds the size limit" : "malformed frame header");
			return -1;
		}
		if (c->in_len - pos < h.length)
			break;
		if (frame_may_write(c->in + pos, &h) && peer_hung_up(c->fd))
		{
			conn_close(w, c, "client hung up: its pending requests are not run");
			return -1;
		}
		/* frame lengths are multiples of 8, so c->in + pos stays 8-aligned */
		if (mn_exec_frame(&c->info, w->ctr, c->in + pos, &c->out, &c->out_len, &c->out_cap) < 0)
		{
			bad_frame(w, c, "malformed request");
			return -1;
		}
		pos += h.length;
		c->out_off = 0;
		rc = flush_out(w, c);
		if (rc < 0)
		{
			conn_close(w, c, "send failed");
			return -1;
		}
		if (rc == 1 && c->info.close_after_reply)
		{
			conn_close(w, c, "refused at handshake");
			return -1;
		}
		if (rc == 0)
			set_events(w, c, EPOLLOUT);
	}
	if (pos > 0)
	{
		memmove(c->in, c->in + pos, c->in_len - pos);
		c->in_len -= pos;
		c->since_ns = mn_mono_ns();
	}
	if (c->in_len == 0 && c->in_cap > BUF_KEEP)
	{
		free(c->in);
		c->in = NULL;
		c->in_cap = 0;
	}
	return 0;
}

static void
handle_readable(mn_worker *w, mn_conn *c)
{
	for (;;)
	{
		ssize_t		n;

		if (c->out_len != 0)
			return;				/* waiting for the client to read our reply */
		/* grow only when full: memory follows the bytes actually received */
		if (c->in_len == c->in_cap)
		{
			uint32_t	want = c->in_cap ? c->in_cap * 2 : INBUF_INITIAL;
			uint8_t    *nb;

			if (want > DM_FRAME_MAX + DM_HDR_SIZE)
				want = DM_FRAME_MAX + DM_HDR_SIZE;
			if (want <= c->in_cap)
			{
				bad_frame(w, c, "input buffer overflow");
				return;
			}
			if ((nb = aligned_alloc(8, want)) == NULL)
			{
				conn_close(w, c, "out of memory");
				return;
			}
			if (c->in_len)
				memcpy(nb, c->in, c->in_len);
			free(c->in);
			c->in = nb;
			c->in_cap = want;
		}
		n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
		if (n == 0)
		{
			if (c->in_len != 0)
				mn_log(LOG_DEBUG, "client %s vanished mid-request: %u bytes discarded",
					   c->info.peer, c->in_len);
			conn_close(w, c, "client closed the connection");
			return;
		}
		if (n < 0)
		{
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				conn_close(w, c, "receive failed");
			return;
		}
		if (c->in_len == 0)
			c->since_ns = mn_mono_ns();
		c->in_len += (uint32_t) n;
		w->ctr->bytes_in += (uint64_t) n;
		if (process_input(w, c) < 0)
			return;
	}
}

static void
handle_writable(mn_worker *w, mn_conn *c)
{
	int			rc = flush_out(w, c);

	if (rc < 0)
	{
		conn_close(w, c, "send failed");
		return;
	}
	if (rc == 0)
		return;
	if (c->info.close_after_reply)
	{
		conn_close(w, c, "refused at handshake");
		return;
	}
	set_events(w, c, EPOLLIN);
	/* frames that arrived while we were blocked on output */
	if (process_input(w, c) == 0)
		handle_readable(w, c);
}

/* Close connections stalled before their handshake or in the middle of a frame. */
static void
sweep(mn_worker *w)
{
	uint64_t	now = mn_mono_ns();
	uint64_t	limit = (uint64_t) w->mns->cfg.handshake_timeout_ms * 1000000u;
	mn_conn    *c = w->conns;

	while (c)
	{
		mn_conn    *next = c->next;

		if ((!c->info.handshaken || c->in_len != 0 || c->out_len != 0) && now - c->since_ns > limit)
		{
			mn_log_limited("closing connection from %s: %s for %d ms", c->info.peer,
						   !c->info.handshaken ? "no handshake" : "stalled mid-frame",
						   w->mns->cfg.handshake_timeout_ms);
			conn_close(w, c, NULL);
		}
		c = next;
	}
}

void
mn_server_post_ucx(int worker, mn_ucx_req *r)
{
	mn_worker  *w = &workers[worker];
	uint64_t	v = 1;

	r->next = NULL;
	pthread_mutex_lock(&w->lock);
	*w->ucx_tail = r;
	w->ucx_tail = &r->next;
	pthread_mutex_unlock(&w->lock);
	if (write(w->evfd, &v, sizeof(v)) < 0)
		mn_log(LOG_WARN, "cannot wake worker %d: %s", w->id, strerror(errno));
}

/*
 * An RPC frame that came over UCX, run as a frame of the connection its
 * token names, with the checks a frame on the socket gets (process_input):
 * a malformed one closes the connection, none runs once its sender hung
 * up.  The reply goes back over UCX.
 */
static void
run_ucx(mn_worker *w, mn_ucx_req *r)
{
	mn_conn_info *ci = mn_ucx_conn_of(r, w->id);
	mn_conn    *c;
	dm_frame_hdr h;

	if (ci == NULL)
	{
		/* its connection closed after the frame was queued: its client gave up */
		mn_ucx_req_free(r);
		return;
	}
	c = (mn_conn *) ((char *) ci - offsetof(mn_conn, info));
	memcpy(&h, r->frame, sizeof(h));
	w->ctr->bytes_in += r->len;
	if (dm_hdr_check(&h, DM_FRAME_MAX) != DM_OK || h.length != r->len || h.type != DM_MSG_RPC)
		bad_frame(w, c, "malformed request over UCX");
	else if (peer_hung_up(c->fd))
		conn_close(w, c, "client hung up: its pending requests are not run");
	else if (mn_exec_frame(&c->info, w->ctr, r->frame, &w->ucx_out, &w->ucx_out_len, &w->ucx_out_cap) < 0)
		bad_frame(w, c, "malformed request over UCX");
	else
	{
		w->ctr->rpcs_ucx++;
		w->ctr->bytes_out += w->ucx_out_len;
		mn_ucx_reply(&c->info, w->ucx_out, w->ucx_out_len);
	}
	mn_ucx_req_free(r);
}

static void
adopt_incoming(mn_worker *w)
{
	mn_conn    *list;
	mn_ucx_req *rpcs;
	uint64_t	v;

	if (read(w->evfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return;
	pthread_mutex_lock(&w->lock);
	list = w->incoming;
	w->incoming = NULL;
	rpcs = w->ucx_in;
	w->ucx_in = NULL;
	w->ucx_tail = &w->ucx_in;
	pthread_mutex_unlock(&w->lock);
	while (list)
	{
		mn_conn    *c = list;
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};

		list = c->next;
		c->prev = NULL;
		c->next = w->conns;
		if (w->conns)
			w->conns->prev = c;
		w->conns = c;
		c->since_ns = mn_mono_ns();
		if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, c->fd, &ev) < 0)
			conn_close(w, c, "epoll_ctl failed");
	}
	while (rpcs)
	{
		mn_ucx_req *r = rpcs;

		rpcs = r->next;
		run_ucx(w, r);
	}
}

static void *
worker_main(void *arg)
{
	mn_worker  *w = arg;
	struct epoll_event evs[64];
	uint64_t	last_sweep = mn_mono_ns();

	uint64_t	poll_until = 0;

	mn_worker_id = w->id;
	while (!w->mns->stop)
	{
		/*
		 * Right after serving a request, poll (timeout 0) for --poll-us
		 * instead of sleeping: the client's next request usually follows
		 * within microseconds, and waking a sleeping thread can cost more
		 * than the whole round trip.  Then sleep until something arrives.
		 */
		int			n = epoll_wait(w->epfd, evs, 64, mn_mono_ns() < poll_until ? 0 : 100);

		if (n > 0 && w->mns->cfg.poll_us > 0)
			poll_until = mn_mono_ns() + (uint64_t) w->mns->cfg.poll_us * 1000u;
		else if (n == 0 && mn_mono_ns() < poll_until)
			sched_yield();		/* polling must not starve a client on this core */

		for (int i = 0; i < n; i++)
		{
			mn_conn    *c = evs[i].data.ptr;

			if (c == NULL)
			{
				adopt_incoming(w);
				continue;
			}
			/* with a reply pending, any event means "try to send": a hung-up
			 * peer then fails the send and is closed (no busy loop on HUP) */
			if (c->out_len != 0)
				handle_writable(w, c);
			else
				handle_readable(w, c);
		}
		if (mn_mono_ns() - last_sweep > 100000000u)
		{
			sweep(w);
			last_sweep = mn_mono_ns();
		}
	}
	while (w->conns)
		conn_close(w, w->conns, NULL);
	pthread_mutex_lock(&w->lock);
	while (w->ucx_in)
	{
		mn_ucx_req *r = w->ucx_in;

		w->ucx_in = r->next;
		mn_ucx_req_free(r);
	}
	w->ucx_tail = &w->ucx_in;
	pthread_mutex_unlock(&w->lock);
	free(w->ucx_out);
	return NULL;
}

static void *
listener_main(void *arg)
{
	mn_state   *mns = arg;
	unsigned	next = 0;

	while (!mns->stop)
	{
		struct sockaddr_storage sa;
		socklen_t	salen = sizeof(sa);
		int			fd;
		int			one = 1;
		mn_conn    *c;
		mn_worker  *w;
		uint64_t	v = 1;
		fd = accept4(listen_fd, (struct sockaddr *) &sa, &salen, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
		{
			if (errno == EMFILE || errno == ENFILE)
			{
				mn_log_limited("cannot accept: %s", strerror(errno));
				usleep(10000);
			}
			continue;			/* EAGAIN (the 100 ms accept timeout), EINTR, ... */
		}
		if (__atomic_load_n(&mns->connections, __ATOMIC_RELAXED) >= mns->cfg.max_connections)
		{
			mn_log_limited("refusing connection: %d connections open (--max-connections)",
						   mns->cfg.max_connections);
			close(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if ((c = calloc(1, sizeof(*c))) == NULL)
		{
			close(fd);
			continue;
		}
		c->fd = fd;
		if (getnameinfo((struct sockaddr *) &sa, salen, c->info.peer, sizeof(c->info.peer) - 8,
						NULL, 0, NI_NUMERICHOST) == 0)
		{
			char		port[8];

			getnameinfo((struct sockaddr *) &sa, salen, NULL, 0, port, sizeof(port), NI_NUMERICSERV);
			strcat(c->info.peer, ":");
			strcat(c->info.peer, port);
		}
		__atomic_fetch_add(&mns->connections, 1, __ATOMIC_RELAXED);
		w = &workers[next++ % (unsigned) mns->cfg.threads];
		c->info.worker = w->id;
		c->info.mns = mns;
		w->ctr->connections_total++;
		pthread_mutex_lock(&w->lock);
		c->next = w->incoming;
		w->incoming = c;
		pthread_mutex_unlock(&w->lock);
		if (write(w->evfd, &v, sizeof(v)) < 0)
			mn_log(LOG_WARN, "cannot wake worker %d: %s", w->id, strerror(errno));
	}
	return NULL;
}

int
mn_server_listen(mn_state *mns)
{
	struct addrinfo hints, *res, *ai;
	char		port[16];
	int			rc, one = 1;
	struct timeval tv = {.tv_sec = 0, .tv_usec = 100000};

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	snprintf(port, sizeof(port), "%d", mns->cfg.listen_port);
	if ((rc = getaddrinfo(mns->cfg.listen_host, port, &hints, &res)) != 0)
	{
		mn_log(LOG_ERROR, "cannot resolve listen address \"%s\": %s", mns->cfg.listen_host, gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next)
	{
		listen_fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (listen_fd < 0)
			continue;
		/* a restarted memnode must get its port back at once */
		setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(listen_fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(listen_fd, 1024) == 0)
			break;
		rc = errno;
		close(listen_fd);
		listen_fd = -1;
		errno = rc;
	}
	freeaddrinfo(res);
	if (listen_fd < 0)
	{
		mn_log(LOG_ERROR, "cannot listen on %s:%d: %s", mns->cfg.listen_host, mns->cfg.listen_port, strerror(errno));
		return -1;
	}
	/* accept() wakes up every 100 ms so the listener notices shutdown */
	setsockopt(listen_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (mns->cfg.listen_port == 0)
	{
		struct sockaddr_storage sa;
		socklen_t	salen = sizeof(sa);
		char		p[16];

		getsockname(listen_fd, (struct sockaddr *) &sa, &salen);
		getnameinfo((struct sockaddr *) &sa, salen, NULL, 0, p, sizeof(p), NI_NUMERICSERV);
		mns->cfg.listen_port = atoi(p);
	}
	return 0;
}

int
mn_server_start(mn_state *mns)
{
	workers = calloc((size_t) mns->cfg.threads, sizeof(*workers));
	mns->worker_counters = calloc((size_t) mns->cfg.threads, sizeof(mn_counters));
	if (!workers || !mns->worker_counters || mn_auth_start_workers(mns->cfg.threads) < 0)
		return -1;
	for (int i = 0; i < mns->cfg.threads; i++)
	{
		mn_worker  *w = &workers[i];
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};

		w->id = i;
		w->ctr = &mns->worker_counters[i];
		w->mns = mns;
		pthread_mutex_init(&w->lock, NULL);
		w->ucx_tail = &w->ucx_in;
		w->epfd = epoll_create1(EPOLL_CLOEXEC);
		w->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (w->epfd < 0 || w->evfd < 0 || epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->evfd, &ev) < 0)
		{
			mn_log(LOG_ERROR, "cannot set up worker %d: %s", i, strerror(errno));
			return -1;
		}
		if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
			return -1;
	}
	if (pthread_create(&listener, NULL, listener_main, mns) != 0)
		return -1;
	return 0;
}

void
mn_server_stop(mn_state *mns)
{
	mns->stop = 1;
	pthread_join(listener, NULL);
	for (int i = 0; i < mns->cfg.threads; i++)
		pthread_join(workers[i].thread, NULL);
	close(listen_fd);
	/* connections queued but never adopted */
	for (int i = 0; i < mns->cfg.threads; i++)
		while (workers[i].incoming)
		{
			mn_conn    *c = workers[i].incoming;

			workers[i].incoming = c->next;
			close(c->fd);
			free(c);
		}
}
