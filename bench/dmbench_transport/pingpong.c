/*
 * pingpong.c — the baseline every transport row is compared with: the
 * loopback TCP echo server (8 bytes each way, TCP_NODELAY) the ping-pong
 * clients bounce against, and the polling read both sides use so that the
 * baseline pays the same wake-up costs as the protocol.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dm_client.h"
#include "dm_region.h"
#include "testauth.h"
#include "testutil.h"

#include "transport_bench.h"

/*
 * fd_read_all, but first poll (non-blocking reads with a yield in between) for up
 * to 50 us before sleeping: the same policy the dm client and the memnode
 * use (dm_client_opts.spin_us, --poll-us), so the baseline and the protocol
 * pay the same wake-up costs and their ratio is the protocol's own overhead.
 */
int
readn_poll(int fd, void *buf, size_t n)
{
	char	   *p = buf;
	uint64_t	until = now_ns() + 50000;

	while (n > 0)
	{
		ssize_t		r = recv(fd, p, n, MSG_DONTWAIT);

		if (r > 0)
		{
			p += r;
			n -= (size_t) r;
			continue;
		}
		if (r == 0)
			return -1;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -1;
		if (now_ns() < until)
			sched_yield();
		else
			return fd_read_all(fd, p, n);
	}
	return 0;
}

/* ---- ping-pong baseline: the echo server ------------------------------------ */

void
set_nodelay(int fd)
{
	int			one = 1;

	/* Without it Nagle + delayed ACK would add ~40 ms to some round trips. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void *
echo_conn(void *arg)
{
	int			fd = (int) (intptr_t) arg;
	char		buf[8];

	while (readn_poll(fd, buf, sizeof(buf)) == 0 && fd_write_all(fd, buf, sizeof(buf)) == 0)
		;
	close(fd);
	return NULL;
}

/*
 * Fork the echo server: blocking sockets, one thread per connection — the
 * simplest server that can answer two clients at once, so it is the floor
 * any request/response protocol over loopback TCP can reach.  Its port comes
 * back through a pipe.
 */
int
start_echo_server(void)
{
	int			pfd[2];
	int			lfd;
	struct sockaddr_in sa;
	socklen_t	slen = sizeof(sa);

	if (pipe(pfd) != 0)
		return -1;
	fflush(stdout);
	fflush(stderr);
	echo_pid = fork();
	if (echo_pid < 0)
		return -1;
	if (echo_pid == 0)
	{
		int			port = -1;

		/* Never outlive the benchmark, however it ends. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		close(pfd[0]);
		lfd = socket(AF_INET, SOCK_STREAM, 0);
		memset(&sa, 0, sizeof(sa));
		sa.sin_family = AF_INET;
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sa.sin_port = 0;
		if (lfd >= 0 && bind(lfd, (struct sockaddr *) &sa, sizeof(sa)) == 0 &&
			listen(lfd, 16) == 0 &&
			getsockname(lfd, (struct sockaddr *) &sa, &slen) == 0)
			port = ntohs(sa.sin_port);
		fd_write_all(pfd[1], &port, sizeof(port));
		close(pfd[1]);
		if (port < 0)
			_exit(1);
		for (;;)
		{
			int			cfd = accept(lfd, NULL, NULL);
			pthread_t	th;

			if (cfd < 0)
			{
				if (errno == EINTR)
					continue;
				_exit(1);
			}
			set_nodelay(cfd);
			if (pthread_create(&th, NULL, echo_conn, (void *) (intptr_t) cfd) != 0)
				close(cfd);
			else
				pthread_detach(th);
		}
	}
	close(pfd[1]);
	if (fd_read_all(pfd[0], &echo_port, sizeof(echo_port)) != 0 || echo_port <= 0)
	{
		close(pfd[0]);
		return -1;
	}
	close(pfd[0]);
	return 0;
}

void
stop_echo_server(void)
{
	if (echo_pid > 0)
	{
		kill(echo_pid, SIGKILL);
		waitpid(echo_pid, NULL, 0);
		echo_pid = 0;
	}
}
