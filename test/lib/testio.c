/*
 * testio.c — the process and I/O helpers of testutil.h that tests and
 * benchmarks share: forking with flushed output, shared memory for
 * children, waiting for, killing and reaping them, exact-length transfers
 * on pipes and sockets, finding the memnode binary from outside the
 * repository root, and raw tcp connections and frames for the tests that
 * send a memnode what the client library never would.
 */
#define _GNU_SOURCE
#include "testutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dm_proto.h"

/* ---- child processes ------------------------------------------------------ */

/*
 * A child still running at its deadline is hung: its stack, as TAP
 * comments on stdout, before it is killed, so a hang seen once in CI (a
 * test_tree_concurrency+var writer stuck for 290 s over tcp) says where.
 * Needs gdb (test/install-deps.sh) and ptrace rights (root, or the same
 * user under yama scope 0); DM_TEST_NO_BACKTRACE=1 skips it.
 */
static void
print_backtrace(pid_t pid)
{
	char		cmd[256];

	if (getenv("DM_TEST_NO_BACKTRACE") || access("/usr/bin/gdb", X_OK) != 0)
		return;
	snprintf(cmd, sizeof(cmd),
			 "timeout 60 /usr/bin/gdb -p %d -batch -ex 'thread apply all bt' 2>/dev/null"
			 " | grep '^#' | head -n 60 | sed 's/^/# hung child %d: /'", (int) pid, (int) pid);
	fflush(stdout);
	fflush(stderr);
	if (system(cmd) != 0)
		printf("# hung child %d: no backtrace (gdb failed)\n", (int) pid);
	fflush(stdout);
}

int
wait_pid_deadline(pid_t pid, uint64_t deadline)
{
	int			st;

	for (;;)
	{
		pid_t		p = waitpid(pid, &st, WNOHANG);

		if (p == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
		if (p < 0 && errno != EINTR)
			return 99;
		if (now_ns() > deadline)
		{
			print_backtrace(pid);
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return 100 + SIGKILL;
		}
		/* reaping needs polling (no pidfd on every kernel); this is not synchronisation */
		usleep(2000);
	}
}

pid_t
test_fork(void)
{
	pid_t		p;

	fflush(stdout);
	fflush(stderr);
	p = fork();
	if (p < 0)
	{
		perror("fork");
		exit(2);
	}
	return p;
}

void *
test_shared_map(size_t len)
{
	void	   *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
	{
		perror("mmap");
		exit(2);
	}
	return p;
}

void
kill_pids(pid_t *pids, int n)
{
	for (int i = 0; i < n; i++)
		if (pids[i] > 0)
		{
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
			pids[i] = 0;
		}
}

void
reap_all_children(void)
{
	while (wait(NULL) > 0 || errno == EINTR)
		;
}

/* ---- exact-length transfers ------------------------------------------------ */

/*
 * Move exactly n bytes in (out = 0) or out, through read/write or, on a
 * socket, recv/send (MSG_NOSIGNAL: a peer gone is -1, not SIGPIPE),
 * retrying on EINTR and short transfers.  0, or -1 on EOF or error.
 */
static int
xfer_all(int fd, char *p, size_t n, int out, int sock)
{
	while (n > 0)
	{
		ssize_t		k;

		if (out)
			k = sock ? send(fd, p, n, MSG_NOSIGNAL) : write(fd, p, n);
		else
			k = sock ? recv(fd, p, n, 0) : read(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t) k;
	}
	return 0;
}

int
fd_write_all(int fd, const void *buf, size_t n)
{
	return xfer_all(fd, (char *) buf, n, 1, 0);
}

int
fd_read_all(int fd, void *buf, size_t n)
{
	return xfer_all(fd, buf, n, 0, 0);
}

/* ---- the memnode binary ------------------------------------------------------- */

void
memnode_find_binary(void)
{
	char		exe[PATH_MAX],
				cand[PATH_MAX + 32];
	ssize_t		n;
	char	   *slash;
	struct stat st;

	if (getenv("DM_MEMNODE") || stat("build/dmindex-memnode", &st) == 0)
		return;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return;
	*slash = '\0';
	snprintf(cand, sizeof(cand), "%s/../dmindex-memnode", exe);
	if (stat(cand, &st) == 0)
		setenv("DM_MEMNODE", cand, 1);
}

/* ---- raw connections to a memnode ------------------------------------------- */

int
test_raw_connect(int port)
{
	struct sockaddr_in sa;
	int			fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct timeval tv = {.tv_sec = 5,.tv_usec = 0};
	int			one = 1;

	if (fd < 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t) port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	/* every read is bounded: a test must not hang on a silent memnode */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
	{
		close(fd);
		return -1;
	}
	return fd;
}

int
test_raw_send(int fd, const void *buf, size_t len)
{
	return xfer_all(fd, (char *) buf, len, 1, 1);
}

int
test_raw_recv(int fd, void *buf, size_t len)
{
	return xfer_all(fd, buf, len, 0, 1);
}

int
test_raw_closed(int fd, int timeout_ms, size_t *got)
{
	uint64_t	deadline = now_ns() + (uint64_t) timeout_ms * 1000000u;
	uint8_t		buf[4096];

	if (got)
		*got = 0;
	for (;;)
	{
		struct pollfd p = {.fd = fd,.events = POLLIN};
		uint64_t	now = now_ns();
		ssize_t		n;

		if (now >= deadline)
			return 0;
		if (poll(&p, 1, (int) ((deadline - now) / 1000000) + 1) <= 0)
			continue;
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return 1;
		if (n > 0 && got)
			*got += (size_t) n;
	}
}

size_t
test_raw_frame(uint8_t *buf, uint16_t type, const void *body, uint32_t body_len, uint64_t seq)
{
	dm_hdr_init((dm_frame_hdr *) buf, type, DM_HDR_SIZE + body_len, seq);
	memcpy(buf + DM_HDR_SIZE, body, body_len);
	return DM_HDR_SIZE + body_len;
}

uint32_t
test_raw_faa_body(uint8_t *body, uint64_t word)
{
	dm_batch_hdr bh = {.nops = 1,.bad_index = 0};
	dm_wire_op	op;

	_Static_assert(sizeof(dm_batch_hdr) + sizeof(dm_wire_op) <= TEST_FAA_BODY_MAX, "TEST_FAA_BODY_MAX too small");
	memset(&op, 0, sizeof(op));
	op.kind = DM_OP_FAA;
	op.len = 8;
	op.addr = word;
	op.arg0 = 1;
	memcpy(body, &bh, sizeof(bh));
	memcpy(body + sizeof(bh), &op, sizeof(op));
	return sizeof(bh) + sizeof(op);
}
