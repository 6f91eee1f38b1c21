/*
 * main.c — dmindex-memnode: command-line flags, start-up (region, listener,
 * workers), the ready line, the heartbeat that shm clients watch, and clean
 * shutdown on SIGTERM/SIGINT (exit status 0): stop accepting, let every
 * worker finish the batches it has received, then mark a region kept in a
 * file clean so that the next start (of this binary or a newer one of the
 * same region format) reattaches to it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "memnode.h"

#define MEMNODE_VERSION "0.1"

mn_state	mn;

static void
usage(FILE *f)
{
	fprintf(f,
			"dmindex-memnode — a memory node for dmindex: serves one region of memory to\n"
			"dmindex clients (PostgreSQL backends, benchmarks) over TCP and, for clients on\n"
			"the same host, as a shared-memory file.\n"
			"\n"
			"Usage: dmindex-memnode [OPTION]...\n"
			"\n"
			"  --listen HOST:PORT       address to listen on (default 127.0.0.1:7400; port 0\n"
			"                           picks a free port, shown in the ready line)\n"
			"  --size SIZE              region size, e.g. 512M, 4G (default 1G; suffixes K M G T)\n"
			"  --id N                   memory-node id, 0..%d, unique among the memnodes an\n"
			"                           index uses (default 0)\n"
			"  --numa-node N            bind the region's memory to NUMA node N (a CPU-less\n"
			"                           node is how CXL memory appears); refused if N does\n"
			"                           not exist (default: no binding)\n"
			"  --hugepages on|off       back the region with huge pages (default off); needs\n"
			"                           vm.nr_hugepages, and with --shm a hugetlbfs mount\n"
			"  --threads N              worker threads serving connections (default 2)\n"
			"  --offload-threads N      workers that may run offloaded tree operations at once;\n"
			"                           more are declined (the client does them itself); 0 = no\n"
			"                           offloading (default: half the workers, at least 1)\n"
			"  --shm                    export the region as a shared-memory file that\n"
			"                           co-located clients map (must run as their user)\n"
			"  --shm-path PATH          the file to export (default\n"
			"                           /dev/shm/dmindex-memnode-PORT)\n"
			"  --ucx                    also export the region through UCX (one-sided get,\n"
			"                           put and atomics over RDMA verbs, UCX tcp or shared\n"
			"                           memory; UCX_TLS picks the transports) and take RPCs\n"
			"                           as UCX messages; clients get its rkey only after the\n"
			"                           handshake (and --auth-file)\n"
			"  --transports LIST        the same as flags: tcp (always), shm, ucx, e.g.\n"
			"                           --transports tcp,ucx\n"
			"  --region-file PATH       keep the region in this file (any file system, a DAX\n"
			"                           mount); with --shm it is also the exported file\n"
			"  --fresh-region           start with an empty region under a new incarnation\n"
			"                           even if the region file holds an intact one\n"
			"  --chunk-size SIZE        allocation unit handed to clients (default 8M)\n"
			"  --catalog-size N         number of trees the catalog holds (default 4096)\n"
			"  --max-connections N      refuse connections beyond N (default 4096)\n"
			"  --handshake-timeout MS   close connections that do not finish their\n"
			"                           handshake, or a frame, within MS (default 10000)\n"
			"  --poll-us N              after serving a request, poll N microseconds for\n"
			"                           the next before sleeping (default 50; 0 = never):\n"
			"                           trades a little CPU for wake-up latency\n"
			"  --auth-file FILE         require every tcp client to authenticate as one of\n"
			"                           the identities in FILE (lines \"identity secret\";\n"
			"                           mode 0600) and confine each to its own trees;\n"
			"                           without it any client that reaches the port may\n"
			"                           do anything (trusted-local use only)\n"
			"  --log-level LEVEL        error, warn, info or debug (default info)\n"
			"  --help                   show this help and exit\n"
			"  --version                show the version and exit\n"
			"\n"
			"When ready it prints one line on standard output:\n"
			"  dmindex-memnode ready id=N listen=HOST:PORT size=BYTES incarnation=HEX shm=PATH|- threads=N region=PATH|- start=fresh|reattached ucx=allocated|registered|-\n"
			"SIGTERM or SIGINT shuts it down cleanly (exit status 0).  A region in anonymous\n"
			"memory is lost then, and the next start has a new incarnation.  A region in a\n"
			"file (--shm, --region-file) stays: the next start on the same file reattaches\n"
			"to it and keeps its incarnation, after a clean shutdown and after a crash or\n"
			"kill -9 alike, unless the region is not intact (size, format version or\n"
			"superblock checksum differ, or the machine restarted while it was in use).\n",
			DM_NODE_ID_MAX);
}

static int
parse_size(const char *s, uint64_t *out)
{
	char	   *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || s[0] == '-')
		return -1;
	switch (*end)
	{
		case 'T': case 't': v <<= 10;	/* fall through */
		case 'G': case 'g': v <<= 10;	/* fall through */
		case 'M': case 'm': v <<= 10;	/* fall through */
		case 'K': case 'k': v <<= 10; end++; break;
		case '\0': break;
		default: return -1;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end != '\0')
		return -1;
	*out = v;
	return 0;
}

static int
parse_int(const char *s, long lo, long hi, int *out)
{
	char	   *end;
	long		v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
		return -1;
	*out = (int) v;
	return 0;
}

static void
die_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "dmindex-memnode: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry \"dmindex-memnode --help\" for more information.\n");
	exit(2);
}

static void
parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		{"listen", required_argument, NULL, 'l'},
		{"size", required_argument, NULL, 's'},
		{"id", required_argument, NULL, 'i'},
		{"numa-node", required_argument, NULL, 'n'},
		{"hugepages", required_argument, NULL, 'H'},
		{"threads", required_argument, NULL, 't'},
		{"offload-threads", required_argument, NULL, 'O'},
		{"shm", no_argument, NULL, 'S'},
		{"shm-path", required_argument, NULL, 'P'},
		{"ucx", no_argument, NULL, 'U'},
		{"transports", required_argument, NULL, 'X'},
		{"region-file", required_argument, NULL, 'R'},
		{"fresh-region", no_argument, NULL, 'F'},
		{"chunk-size", required_argument, NULL, 'c'},
		{"catalog-size", required_argument, NULL, 'C'},
		{"max-connections", required_argument, NULL, 'm'},
		{"handshake-timeout", required_argument, NULL, 'T'},
		{"log-level", required_argument, NULL, 'L'},
		{"poll-us", required_argument, NULL, 'p'},
		{"auth-file", required_argument, NULL, 'A'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0}
	};
	mn_config  *c = &mn.cfg;
	int			ch;

	snprintf(c->listen_host, sizeof(c->listen_host), "127.0.0.1");
	c->listen_port = 7400;
	c->size = UINT64_C(1) << 30;
	c->chunk_size = UINT64_C(8) << 20;
	c->catalog_capacity = 4096;
	c->numa_node = -1;
	c->threads = 2;
	c->offload_threads = -1;
	c->max_connections = 4096;
	c->handshake_timeout_ms = 10000;
	c->poll_us = 50;
	c->log_level = LOG_INFO;

	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1)
	{
		int			v;

		switch (ch)
		{
			case 'l':
				{
					const char *colon = strrchr(optarg, ':');
					size_t		hl;
					const char *h = optarg;

					if (colon == NULL || colon == optarg)
						die_usage("invalid --listen \"%s\": expected HOST:PORT", optarg);
					hl = (size_t) (colon - optarg);
					if (h[0] == '[' && hl >= 2 && h[hl - 1] == ']')
					{
						h++;
						hl -= 2;
					}
					if (hl == 0 || hl >= sizeof(c->listen_host) ||
						parse_int(colon + 1, 0, 65535, &c->listen_port) < 0)
						die_usage("invalid --listen \"%s\": expected HOST:PORT with a port 0..65535", optarg);
					memcpy(c->listen_host, h, hl);
					c->listen_host[hl] = '\0';
					break;
				}
			case 's':
				if (parse_size(optarg, &c->size) < 0 || c->size < (UINT64_C(16) << 20) ||
					c->size > DM_OFFSET_MASK)
					die_usage("invalid --size \"%s\": expected 16M up to 256T, e.g. 4G", optarg);
				break;
			case 'i':
				if (parse_int(optarg, 0, DM_NODE_ID_MAX, &c->node_id) < 0)
					die_usage("invalid --id \"%s\": expected 0..32767", optarg);
				break;
			case 'n':
				if (parse_int(optarg, 0, 1023, &c->numa_node) < 0)
					die_usage("invalid --numa-node \"%s\": expected a node number", optarg);
				break;
			case 'H':
				if (strcmp(optarg, "on") == 0)
					c->hugepages = 1;
				else if (strcmp(optarg, "off") == 0)
					c->hugepages = 0;
				else
					die_usage("invalid --hugepages \"%s\": expected on or off", optarg);
				break;
			case 't':
				if (parse_int(optarg, 1, 256, &c->threads) < 0)
					die_usage("invalid --threads \"%s\": expected 1..256", optarg);
				break;
			case 'O':
				if (parse_int(optarg, 0, 256, &c->offload_threads) < 0)
					die_usage("invalid --offload-threads \"%s\": expected 0..256", optarg);
				break;
			case 'S':
				c->shm = 1;
				break;
			case 'U':
				c->ucx = 1;
				break;
			case 'X':
				{
					char		list[64], *save = NULL;

					snprintf(list, sizeof(list), "%s", optarg);
					for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save))
					{
						if (strcmp(t, "shm") == 0)
							c->shm = 1;
						else if (strcmp(t, "ucx") == 0)
							c->ucx = 1;
						else if (strcmp(t, "tcp") != 0)
							die_usage("invalid --transports \"%s\": expected tcp, shm, ucx", optarg);
					}
					break;
				}
			case 'P':
				if (strlen(optarg) >= sizeof(c->shm_path) || optarg[0] != '/')
					die_usage("invalid --shm-path \"%s\": expected an absolute path", optarg);
				snprintf(c->shm_path, sizeof(c->shm_path), "%s", optarg);
				break;
			case 'R':
				if (strlen(optarg) >= sizeof(c->region_file) || optarg[0] != '/')
					die_usage("invalid --region-file \"%s\": expected an absolute path", optarg);
				snprintf(c->region_file, sizeof(c->region_file), "%s", optarg);
				break;
			case 'F':
				c->fresh_region = 1;
				break;
			case 'c':
				if (parse_size(optarg, &c->chunk_size) < 0 || c->chunk_size < DM_CHUNK_MIN ||
					c->chunk_size % DM_CHUNK_MIN != 0 || c->chunk_size > (UINT64_C(1) << 30))
					die_usage("invalid --chunk-size \"%s\": expected a multiple of 64K up to 1G", optarg);
				break;
			case 'C':
				if (parse_int(optarg, 1, 1 << 20, &v) < 0)
					die_usage("invalid --catalog-size \"%s\": expected 1..1048576", optarg);
				c->catalog_capacity = (uint32_t) v;
				break;
			case 'm':
				if (parse_int(optarg, 1, 1 << 20, &c->max_connections) < 0)
					die_usage("invalid --max-connections \"%s\"", optarg);
				break;
			case 'T':
				if (parse_int(optarg, 10, 3600000, &c->handshake_timeout_ms) < 0)
					die_usage("invalid --handshake-timeout \"%s\": expected 10..3600000 ms", optarg);
				break;
			case 'p':
				if (parse_int(optarg, 0, 1000000, &c->poll_us) < 0)
					die_usage("invalid --poll-us \"%s\": expected 0..1000000", optarg);
				break;
			case 'A':
				if (strlen(optarg) == 0 || strlen(optarg) >= sizeof(c->auth_file))
					die_usage("invalid --auth-file \"%s\"", optarg);
				snprintf(c->auth_file, sizeof(c->auth_file), "%s", optarg);
				break;
			case 'L':
				if (strcmp(optarg, "error") == 0)
					c->log_level = LOG_ERROR;
				else if (strcmp(optarg, "warn") == 0)
					c->log_level = LOG_WARN;
				else if (strcmp(optarg, "info") == 0)
					c->log_level = LOG_INFO;
				else if (strcmp(optarg, "debug") == 0)
					c->log_level = LOG_DEBUG;
				else
					die_usage("invalid --log-level \"%s\": expected error, warn, info or debug", optarg);
				break;
			case 'h':
				usage(stdout);
				exit(0);
			case 'V':
				printf("dmindex-memnode %s (protocol %d, region format %d)\n",
					   MEMNODE_VERSION, DM_PROTO_VERSION, DM_FORMAT_VERSION);
				exit(0);
			default:
				fprintf(stderr, "Try \"dmindex-memnode --help\" for more information.\n");
				exit(2);
		}
	}
	if (optind < argc)
		die_usage("unexpected argument \"%s\"", argv[optind]);
	if (c->region_file[0] && c->shm_path[0] && strcmp(c->region_file, c->shm_path) != 0)
		die_usage("--shm-path and --region-file name different files (\"%s\"): give one", c->shm_path);
}

/* Many clients (every PostgreSQL backend keeps one connection): lift the fd limit. */
static void
raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max)
	{
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int
main(int argc, char **argv)
{
	sigset_t	sigs;
	int			sig = 0;

	mn_log_init(&mn.cfg);
	parse_args(argc, argv);
	mn.start_mono_ns = mn_mono_ns();
	pthread_mutex_init(&mn.region_lock, NULL);
	raise_fd_limit();

	/*
	 * Block the shutdown signals in every thread; the main thread collects
	 * them synchronously between heartbeats, so no handler ever runs in the
	 * middle of a worker's operation.
	 */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	/* before anything listens: a bad auth file must not leave an open memnode */
	if (mn.cfg.auth_file[0] && mn_auth_load(mn.cfg.auth_file) < 0)
		return 1;
	if (mn_server_listen(&mn) < 0)
		return 1;
	if (mn.cfg.ucx && mn_ucx_init(&mn, mn_server_post_ucx) < 0)
		return 1;
	/* at most this many workers run offloaded operations at once (offload.c) */
	mn_offload_init(mn.cfg.offload_threads >= 0 ? mn.cfg.offload_threads : (mn.cfg.threads + 1) / 2,
					mn_exec_frame);
	if (mn_region_create(&mn) < 0)
	{
		mn_region_close(&mn, 0);
		return 1;
	}
	if (mn.cfg.ucx && mn_ucx_export(&mn, mn.base, mn.region.size) < 0)
	{
		mn_region_close(&mn, 0);
		return 1;
	}
	if (mn_server_start(&mn) < 0)
	{
		mn_log(LOG_ERROR, "cannot start worker threads");
		mn_region_close(&mn, 0);
		return 1;
	}
	mn_log(LOG_INFO, "serving %llu bytes (%llu chunks of %llu bytes) on %s:%d with %d threads%s%s",
		   (unsigned long long) mn.region.size, (unsigned long long) mn.region.sb->nchunks,
		   (unsigned long long) mn.region.sb->chunk_size, mn.cfg.listen_host, mn.cfg.listen_port,
		   mn.cfg.threads, mn.shm_path[0] ? ", exported at " : "", mn.shm_path);
	printf("dmindex-memnode ready id=%d listen=%s:%d size=%llu incarnation=%016llx shm=%s threads=%d region=%s start=%s ucx=%s\n",
		   mn.cfg.node_id, mn.cfg.listen_host, mn.cfg.listen_port,
		   (unsigned long long) mn.region.size, (unsigned long long) mn.region.sb->incarnation,
		   mn.shm_path[0] ? mn.shm_path : "-", mn.cfg.threads,
		   mn.region_path[0] ? mn.region_path : "-", mn.reattached ? "reattached" : "fresh",
		   !mn.ucx_blob ? "-" : mn.ucx_allocated ? "allocated" : "registered");
	fflush(stdout);

	for (;;)
	{
		struct timespec tick = {.tv_sec = 0, .tv_nsec = 50 * 1000 * 1000};

		__atomic_store_n(&mn.region.sb->heartbeat_ns, mn_mono_ns(), __ATOMIC_RELEASE);
		sig = sigtimedwait(&sigs, NULL, &tick);
		if (sig == SIGTERM || sig == SIGINT)
			break;
	}
	mn_log(LOG_INFO, "received %s, shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
	/* returns once no worker is inside a batch any more */
	mn_server_stop(&mn);
	mn_ucx_stop();
	mn_region_close(&mn, 1);
	mn_log(LOG_INFO, "stopped");
	return 0;
}
