/*
 * testutil.c — TAP output, memnode process management and clients for the
 * C tests and benchmarks (see testutil.h; child processes, descriptors and
 * raw connections are in testio.c).
 *
 * The memnode helpers take care that a test can never leave a memnode
 * behind: every started memnode is remembered, killed by an atexit handler
 * and by a handler for the signals a runner sends on timeout, and is also
 * given PR_SET_PDEATHSIG so that even a SIGKILLed test takes its memnodes
 * with it.  (PR_SET_PDEATHSIG fires when the *thread* that forked exits:
 * start memnodes from the main thread, or from one that outlives them.)
 * The first memnode_start also installs handlers for SIGTERM, SIGINT,
 * SIGHUP and crash signals (kill the memnodes, then die by the signal) and
 * ignores SIGPIPE.
 */
#define _GNU_SOURCE
#include "testutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dm_client.h"
#include "dm_offload.h"
#include "dm_tree.h"
#include "dm_types.h"

/* ---- TAP --------------------------------------------------------------- */

static int	tap_count;
static int	tap_failed;

static int
tap_vok(int cond, const char *fmt, va_list ap)
{
	tap_count++;
	if (!cond)
		tap_failed++;
	printf("%s %d - ", cond ? "ok" : "not ok", tap_count);
	vprintf(fmt, ap);
	printf("\n");
	/* Flush at once: children are forked and tests may crash. */
	fflush(stdout);
	return cond;
}

int
tap_ok(int cond, const char *fmt,...)
{
	va_list		ap;
	int			r;

	va_start(ap, fmt);
	r = tap_vok(cond, fmt, ap);
	va_end(ap);
	return r;
}

int
tap_ok_status(int got, int want, const char *fmt,...)
{
	va_list		ap;
	int			r;

	va_start(ap, fmt);
	r = tap_vok(got == want, fmt, ap);
	va_end(ap);
	if (!r)
		tap_diag("  got status %d (%s), want %d (%s)",
				 got, dm_strerror(got), want, dm_strerror(want));
	return r;
}

void
tap_diag(const char *fmt,...)
{
	char		buf[4096];
	va_list		ap;
	char	   *line,
			   *save = NULL;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* Every line of a diagnostic must start with "#" to stay valid TAP. */
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		printf("# %s\n", line);
	fflush(stdout);
}

int
tap_done(void)
{
	printf("1..%d\n", tap_count);
	if (tap_failed)
		printf("# %d of %d tests failed\n", tap_failed, tap_count);
	fflush(stdout);
	return tap_failed == 0 ? 0 : 1;
}

/* ---- memnode processes --------------------------------------------------- */

#define MAX_MEMNODES 64

/*
 * Every memnode we started and have not reaped.  out_fd is the read end of
 * its stdout pipe: it stays open so that a stray later write to stdout does
 * not kill the memnode with SIGPIPE.
 */
typedef struct started_memnode
{
	pid_t		pid;
	int			out_fd;
	char		shm_path[128];	/* its region file (--shm or --region-file): removed with it */
} started_memnode;

static started_memnode started[MAX_MEMNODES];
static pid_t owner_pid;			/* the process that started them */
static int	cleanup_installed;

static void
kill_all_memnodes(void)
{
	int			i;

	/* Forked test children inherit the table: only the owner cleans up. */
	if (owner_pid != getpid())
		return;
	for (i = 0; i < MAX_MEMNODES; i++)
	{
		if (started[i].pid <= 0)
			continue;
		kill(started[i].pid, SIGKILL);
		waitpid(started[i].pid, NULL, 0);
		/* region files outlive their memnode: the test's are removed with it */
		if (started[i].shm_path[0] == '/')
			unlink(started[i].shm_path);
		started[i].pid = 0;
	}
}

static void
cleanup_signal(int sig)
{
	/* kill/waitpid/unlink are async-signal-safe. */
	kill_all_memnodes();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void
install_cleanup(void)
{
	if (cleanup_installed)
	{
		/*
		 * A forked child starting memnodes of its own: the inherited table
		 * lists the parent's memnodes, which are not ours to kill.  The
		 * atexit handler is inherited too.
		 */
		if (owner_pid != getpid())
		{
			memset(started, 0, sizeof(started));
			owner_pid = getpid();
		}
		return;
	}
	cleanup_installed = 1;
	owner_pid = getpid();
	atexit(kill_all_memnodes);
	/* timeout(1) sends SIGTERM; a user hits ^C; a test may crash. */
	signal(SIGTERM, cleanup_signal);
	signal(SIGINT, cleanup_signal);
	signal(SIGHUP, cleanup_signal);
	signal(SIGSEGV, cleanup_signal);
	signal(SIGBUS, cleanup_signal);
	signal(SIGABRT, cleanup_signal);
	signal(SIGFPE, cleanup_signal);
	/* Tests write to sockets the memnode may close. */
	signal(SIGPIPE, SIG_IGN);
}

static started_memnode *
find_started(pid_t pid)
{
	int			i;

	for (i = 0; i < MAX_MEMNODES; i++)
		if (started[i].pid == pid)
			return &started[i];
	return NULL;
}

/*
 * Parse "key=value" out of the ready line into out (value ends at a space
 * or the end of line).  Returns 0 if found.
 */
static int
ready_field(const char *line, const char *key, char *out, size_t outsz)
{
	char		pat[64];
	const char *p,
			   *e;
	size_t		n;

	snprintf(pat, sizeof(pat), " %s=", key);
	p = strstr(line, pat);
	if (!p)
		return -1;
	p += strlen(pat);
	e = p + strcspn(p, " \r\n");
	n = (size_t) (e - p);
	if (n >= outsz)
		return -1;
	memcpy(out, p, n);
	out[n] = '\0';
	return 0;
}

int
memnode_start(memnode_proc *mp, int port, const char *const *extra_args)
{
	const char *bin = getenv("DM_MEMNODE");
	const char *argv[64];
	char		listen[64];
	char		line[1024];
	size_t		used = 0;
	int			argc = 0;
	int			pfd[2];
	pid_t		pid,
				parent;
	started_memnode *slot;
	uint64_t	deadline;
	char		val[256];
	char	   *colon;

	memset(mp, 0, sizeof(*mp));
	if (!bin || !*bin)
		bin = "build/dmindex-memnode";
	install_cleanup();

	slot = find_started(0);
	if (!slot)
	{
		tap_diag("memnode_start: too many memnodes started");
		return -1;
	}

	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	argv[argc++] = bin;
	argv[argc++] = "--listen";
	argv[argc++] = listen;
	while (extra_args && *extra_args && argc < 61)
		argv[argc++] = *extra_args++;
	/*
	 * A first start on a new port never wants a region file some earlier,
	 * killed test left under that port's name; a restart (port given) may.
	 */
	if (port == 0)
		argv[argc++] = "--fresh-region";
	/* the ucx variant of a test: every memnode exports its region through UCX too */
	if (test_ucx())
		argv[argc++] = "--ucx";
	argv[argc] = NULL;

	/* CLOEXEC so that other memnodes and exec'd children don't hold it. */
	if (pipe2(pfd, O_CLOEXEC) != 0)
	{
		tap_diag("memnode_start: pipe: %s", strerror(errno));
		return -1;
	}
	fflush(stdout);
	fflush(stderr);
	parent = getpid();
	pid = fork();
	if (pid < 0)
	{
		tap_diag("memnode_start: fork: %s", strerror(errno));
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (pid == 0)
	{
		setpgid(0, 0);
		/* Die with the test, whatever kills it. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);			/* the parent died before prctl */
		/* ignored signals stay ignored across exec: undo ours */
		signal(SIGPIPE, SIG_DFL);
		dup2(pfd[1], STDOUT_FILENO);	/* dup2 clears CLOEXEC on fd 1 */
		execv(bin, (char *const *) argv);
		fprintf(stderr, "memnode_start: exec %s: %s\n", bin, strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	/* Also from the parent: no race with the child's own setpgid. */
	setpgid(pid, pid);
	slot->pid = pid;
	slot->out_fd = pfd[0];
	slot->shm_path[0] = '\0';

	/* Read stdout until the ready line (or EOF / 10 s). */
	deadline = now_ns() + UINT64_C(10000000000);
	for (;;)
	{
		struct pollfd p = {.fd = pfd[0],.events = POLLIN};
		uint64_t	now = now_ns();
		ssize_t		n;
		int			pr;

		if (memchr(line, '\n', used))
			break;
		if (now >= deadline)
		{
			tap_diag("memnode_start: no ready line within 10 s");
			goto fail;
		}
		pr = poll(&p, 1, (int) ((deadline - now) / 1000000) + 1);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			continue;
		if (used >= sizeof(line) - 1)
		{
			tap_diag("memnode_start: ready line too long");
			goto fail;
		}
		n = read(pfd[0], line + used, sizeof(line) - 1 - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
		{
			tap_diag("memnode_start: memnode exited before its ready line");
			goto fail;
		}
		used += (size_t) n;
	}
	line[used] = '\0';
	*strchr(line, '\n') = '\0';

	if (strncmp(line, "dmindex-memnode ready ", 22) != 0)
	{
		tap_diag("memnode_start: unexpected first line: %s", line);
		goto fail;
	}
	if (ready_field(line, "listen", val, sizeof(val)) != 0 ||
		(colon = strrchr(val, ':')) == NULL ||
		(mp->port = atoi(colon + 1)) <= 0)
	{
		tap_diag("memnode_start: no port in ready line: %s", line);
		goto fail;
	}
	if (ready_field(line, "incarnation", val, sizeof(val)) != 0 || strlen(val) != 16)
	{
		tap_diag("memnode_start: no incarnation in ready line: %s", line);
		goto fail;
	}
	mp->incarnation = strtoull(val, NULL, 16);
	if (ready_field(line, "shm", val, sizeof(val)) == 0 && strcmp(val, "-") != 0)
	{
		snprintf(mp->shm_path, sizeof(mp->shm_path), "%s", val);
		snprintf(slot->shm_path, sizeof(slot->shm_path), "%s", val);
	}
	if (ready_field(line, "region", val, sizeof(val)) == 0 && strcmp(val, "-") != 0)
	{
		snprintf(mp->region_path, sizeof(mp->region_path), "%s", val);
		snprintf(slot->shm_path, sizeof(slot->shm_path), "%s", val);
	}
	mp->reattached = ready_field(line, "start", val, sizeof(val)) == 0 && strcmp(val, "reattached") == 0;
	snprintf(mp->addr, sizeof(mp->addr), "127.0.0.1:%d", mp->port);
	mp->pid = pid;
	return 0;

fail:
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(slot->out_fd);
	slot->pid = 0;
	memset(mp, 0, sizeof(*mp));
	return -1;
}

int
memnode_stop(memnode_proc *mp, int sig)
{
	started_memnode *slot;
	int			status = -1;
	uint64_t	deadline;
	pid_t		r;

	if (mp->pid <= 0)
		return -1;
	kill(mp->pid, sig);
	/* A stopped (SIGSTOP) memnode would not act on SIGTERM otherwise. */
	if (sig != SIGKILL && sig != SIGSTOP)
		kill(mp->pid, SIGCONT);

	/*
	 * Reap, but never hang a test on a memnode that ignores the signal:
	 * after 10 s it is killed and the status reports SIGKILL.
	 */
	deadline = now_ns() + UINT64_C(10000000000);
	for (;;)
	{
		r = waitpid(mp->pid, &status, WNOHANG);
		if (r == mp->pid)
			break;
		if (r < 0 && errno != EINTR)
		{
			status = -1;
			break;
		}
		if (now_ns() > deadline)
		{
			tap_diag("memnode_stop: pid %d did not exit within 10 s of signal %d; killing",
					 (int) mp->pid, sig);
			kill(mp->pid, SIGKILL);
			waitpid(mp->pid, &status, 0);
			break;
		}
		usleep(2000);
	}

	slot = find_started(mp->pid);
	if (slot)
	{
		close(slot->out_fd);
		/* the region file outlives the memnode: gone with it unless a restart wants it */
		if (!mp->keep_region && slot->shm_path[0] == '/')
			unlink(slot->shm_path);
		slot->pid = 0;
	}
	mp->pid = 0;
	return status;
}

void *
test_start_shared(size_t size, memnode_proc *mp, const char *const *args)
{
	void	   *area = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	char		argstr[256] = "";
	size_t		n = 0;

	if (area == MAP_FAILED)
	{
		CHECK(0, "mmap a shared area of %zu bytes for the children's reports", size);
		return NULL;
	}
	for (int i = 0; args[i] && n < sizeof(argstr); i++)
		n += (size_t) snprintf(argstr + n, sizeof(argstr) - n, "%s%s", i ? " " : "", args[i]);
	if (memnode_start(mp, 0, args) != 0)
	{
		CHECK(0, "start a memnode (%s)", argstr);
		munmap(area, size);
		return NULL;
	}
	return area;
}

int
test_ucx(void)
{
	const char *t = getenv("DM_TEST_TRANSPORT");

	return t != NULL && strcmp(t, "ucx") == 0;
}

int
test_backend_wanted(int backend)
{
	return test_ucx() ? backend == DM_BACKEND_UCX : backend != DM_BACKEND_UCX;
}

struct dm_client *
test_client_connect(int backend, uint32_t flags, int op_timeout_ms, const char *name,
					const char *addr1, const char *addr2)
{
	dm_client_opts o;
	dm_client  *c;
	uint16_t	id;
	int			rc;

	memset(&o, 0, sizeof(o));
	o.backend = backend;
	o.flags = flags;
	o.op_timeout_ms = op_timeout_ms;
	o.name = name;
	if ((c = dm_client_create(&o)) == NULL)
	{
		tap_diag("%s: cannot create a client", name);
		return NULL;
	}
	if ((rc = dm_client_connect(c, addr1, &id)) != DM_OK ||
		(addr2 != NULL && (rc = dm_client_connect(c, addr2, &id)) != DM_OK))
	{
		tap_diag("[%d] %s: connect %s%s%s: %s: %s", (int) getpid(), name, addr1,
				 addr2 ? " + " : "", addr2 ? addr2 : "", dm_strerror(rc), dm_client_error(c));
		dm_client_destroy(c);
		return NULL;
	}
	return c;
}

int
test_client_recover(struct dm_client *c)
{
	for (int k = 0; k < 50; k++)
	{
		if (dm_client_reconnect(c, 1) == DM_OK)
			return 1;
		usleep(20000);
	}
	return 0;
}

uint64_t
memnode_bytes_in_use(struct dm_client *c, uint16_t node)
{
	dm_node_stats st;

	if (dm_node_stats_get(c, node, &st) != DM_OK)
		return UINT64_MAX;
	return st.bytes_in_use;
}

int
test_offload_mode(void)
{
	const char *m = getenv("TREE_OFFLOAD");
	int			mode = m ? dm_offload_mode_parse(m) : DM_OFFLOAD_OFF;

	return mode < 0 ? DM_OFFLOAD_OFF : mode;
}

int
test_tree_leaf_opts(dm_tree_opts *opts)
{
	const char *f = getenv("TREE_LEAF_FORMAT");
	const char *h = getenv("TREE_NEIGHBORHOOD");

	if (f == NULL || *f == '\0' || strcmp(f, "sorted") == 0)
		return 0;
	if (strcmp(f, "hopscotch") != 0)
		return -1;
	opts->leaf_format = DM_LEAF_HOPSCOTCH;
	if (h && *h)
		opts->neighborhood = atoi(h);
	return 0;
}

const char *
test_leaf_format_name(void)
{
	const char *f = getenv("TREE_LEAF_FORMAT");

	return f && strcmp(f, "hopscotch") == 0 ? "hopscotch" : "sorted";
}

int
test_tree_offload(struct dm_tree *t, int idx)
{
	int			mode = test_offload_mode();

	if (mode == DM_OFFLOAD_ALWAYS && idx >= 0 && (idx & 1))
		mode = DM_OFFLOAD_OFF;
	if (dm_tree_set_offload(t, mode) != DM_OK)
		return -1;
	return mode;
}

void
test_child_fail(int *failed, char *msg, size_t len, const char *fmt,...)
{
	va_list		ap;

	if (*failed)
		return;
	*failed = 1;
	va_start(ap, fmt);
	vsnprintf(msg, len, fmt, ap);
	va_end(ap);
}
