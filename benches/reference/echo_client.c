/*
 * echo_client.c: a hand-written C epoll TCP echo load client, the reference that ringside's
 * load generator (`ringside load --protocol echo`) is compared with: the messages/s and the
 * client CPU per message a bare epoll closed loop gets from the same server on the same CPU.
 *
 * Single-threaded, pinned to one CPU; N non-blocking connections (TCP_NODELAY), each
 * registered once with edge-triggered epoll (EPOLLIN | EPOLLOUT | EPOLLET, never modified):
 *   - closed loop: each connection sends an M-byte message and waits for the whole echo
 *     before sending the next;
 *   - a message is ringside's echo message: the connection id (u32 LE) and the sequence
 *     number (u64 LE) in its first 12 bytes, the rest a pattern derived from both, so every
 *     message differs by connection and sequence;
 *   - every echoed byte is compared with what was sent; a mismatch, a closed or reset
 *     connection, or a failed connect is an error (message on stderr, exit status 1);
 *   - a read asks for exactly the bytes of the message still outstanding, so a read that
 *     completes the message needs no further read, and a shorter read means the socket was
 *     drained (the next arrival raises a new edge): no read is made just to see EAGAIN;
 *   - writes loop until the message is out or EAGAIN (the next EPOLLOUT edge resumes it).
 * The window: after the warm-up (-w seconds from the start, and not before every connection
 * had one message answered; at most 10 s later it gives up with an error), -d seconds
 * measured with CLOCK_MONOTONIC, read once per epoll_wait; messages completed in the batches
 * handled inside it are counted, and the thread's CPU over it is read with
 * CLOCK_THREAD_CPUTIME_ID. With -w 0 the window opens at the start (after connect() was
 * called on every connection). No per-message latency is recorded.
 *
 * Usage: echo_client [-c CONNS] [-m MSG_BYTES] [-d SECONDS] [-w WARMUP_SECONDS] [-p CPU]
 *                    HOST:PORT
 *   defaults: -c 50 -m 64 -d 5 -w 1 -p 1; HOST an IPv4/IPv6 address or a name ([::1]:PORT).
 * Prints exactly one line on stdout: `msgs=N window_ns=W msgs_per_sec=R cpu_ns=C`.
 * Exit status: 0 done, 1 an error while running, 2 bad input (the message names the value).
 * Build: benches/reference/build.sh (gcc -O2 -Wall, libc only). Not part of ringside's tests.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HEADER_BYTES 12
#define MIN_MSG_BYTES HEADER_BYTES
#define MAX_MSG_BYTES (1 << 20)
#define MAX_CONNS 100000
#define MAX_SECONDS 3600.0
#define MAX_MSG_MEMORY (1ULL << 30) /* CONNS x MSG_BYTES of sent messages kept for checking */
#define SETTLE_GRACE_NS (10ULL * 1000000000ULL)
#define MAX_EVENTS 1024
#define SCRATCH_BYTES (64 * 1024)

struct conn {
	int fd;
	uint32_t id;
	int connected;
	uint64_t seq;       /* sequence number of the message in flight */
	size_t sent;        /* bytes of it written */
	size_t recvd;       /* bytes of its echo read and verified */
	int answered;       /* at least one message completed */
	unsigned char *msg; /* the message in flight, msg_bytes */
};

static size_t msg_bytes = 64;
static struct conn *conns;
static unsigned char scratch[SCRATCH_BYTES];
static int window_open, window_done;
static uint64_t msgs_in_window;
static uint64_t answered_conns;

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void bad(const char *opt, const char *val, const char *valid)
{
	fprintf(stderr, "echo_client: bad %s '%s': %s\n", opt, val, valid);
	exit(2);
}

static long parse_long(const char *opt, const char *s, long lo, long hi, const char *valid)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		bad(opt, s, valid);
	return v;
}

static double parse_seconds(const char *opt, const char *s, double lo, int lo_open)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= lo) || (lo_open && v == lo) || v > MAX_SECONDS)
		bad(opt, s, lo_open ? "seconds, > 0 and <= 3600" : "seconds, 0..3600");
	return v;
}

/* ringside's echo message (src/load/echo.rs): header, then bytes derived from both. */
static void fill(struct conn *c)
{
	unsigned char *m = c->msg;
	for (int i = 0; i < 4; i++)
		m[i] = (unsigned char)(c->id >> (8 * i));
	for (int i = 0; i < 8; i++)
		m[4 + i] = (unsigned char)(c->seq >> (8 * i));
	uint64_t mix = (uint64_t)c->id * 0x9e3779b97f4a7c15ULL ^ c->seq * 31;
	for (size_t i = HEADER_BYTES; i < msg_bytes; i++)
		m[i] = (unsigned char)((mix + (uint64_t)i * 7) >> 3) ^ 0x5a;
}

static void fail(struct conn *c, const char *what, int err)
{
	fprintf(stderr, "echo_client: connection %u, message %llu: %s%s%s\n", c->id,
		(unsigned long long)c->seq, what, err ? ": " : "", err ? strerror(err) : "");
	exit(1);
}

/* Writes the rest of the message in flight, until it is out or EAGAIN. */
static void send_rest(struct conn *c)
{
	while (c->sent < msg_bytes) {
		ssize_t n = send(c->fd, c->msg + c->sent, msg_bytes - c->sent, MSG_NOSIGNAL);
		if (n > 0)
			c->sent += (size_t)n;
		else if (n < 0 && errno == EINTR)
			continue;
		else if (n < 0 && errno == EAGAIN)
			return; /* the next EPOLLOUT edge resumes it */
		else
			fail(c, "send", n < 0 ? errno : 0);
	}
}

static void complete(struct conn *c)
{
	if (window_open && !window_done)
		msgs_in_window++;
	if (!c->answered) {
		c->answered = 1;
		answered_conns++;
	}
	c->seq++;
	c->sent = c->recvd = 0;
	fill(c);
	send_rest(c);
}

/* Reads what is still outstanding of the message's echo, verifying it as it comes. */
static void recv_rest(struct conn *c)
{
	for (;;) {
		size_t need = msg_bytes - c->recvd;
		if (need > SCRATCH_BYTES)
			need = SCRATCH_BYTES;
		ssize_t n = recv(c->fd, scratch, need, 0);
		if (n == 0)
			fail(c, "the server closed the connection", 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			fail(c, "recv", errno);
		}
		if ((size_t)n > msg_bytes - c->recvd || c->recvd + (size_t)n > c->sent)
			fail(c, "more bytes came back than were sent", 0);
		if (memcmp(scratch, c->msg + c->recvd, (size_t)n) != 0) {
			size_t at = 0;
			while (scratch[at] == c->msg[c->recvd + at])
				at++;
			char what[128];
			snprintf(what, sizeof what, "echo differs at byte %zu (sent 0x%02x, got 0x%02x)",
				 c->recvd + at, c->msg[c->recvd + at], scratch[at]);
			fail(c, what, 0);
		}
		c->recvd += (size_t)n;
		if (c->recvd == msg_bytes) {
			complete(c); /* nothing of the next echo can be here before it is sent */
			return;
		}
		if ((size_t)n < need)
			return; /* drained: the next arrival raises a new edge */
	}
}

static void on_event(struct conn *c, uint32_t ev)
{
	if (!c->connected) {
		int err = 0;
		socklen_t len = sizeof err;
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			err = errno;
		if (err)
			fail(c, "connect", err);
		if (!(ev & EPOLLOUT))
			return;
		c->connected = 1;
		send_rest(c);
		return;
	}
	if (ev & EPOLLIN)
		recv_rest(c);
	else if (ev & (EPOLLERR | EPOLLHUP))
		recv_rest(c); /* reports the error or the EOF */
	if ((ev & EPOLLOUT) && c->sent < msg_bytes)
		send_rest(c);
}

static void resolve(const char *target, struct sockaddr_storage *sa, socklen_t *sl)
{
	char host[256];
	const char *colon = strrchr(target, ':');
	if (!colon || colon == target || !colon[1] || (size_t)(colon - target) >= sizeof host)
		bad("HOST:PORT", target, "expected HOST:PORT, e.g. 127.0.0.1:7000");
	memcpy(host, target, (size_t)(colon - target));
	host[colon - target] = 0;
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = 0;
	}
	parse_long("port in HOST:PORT", colon + 1, 1, 65535, "a port, 1..65535");
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
	int rc = getaddrinfo(host, colon + 1, &hints, &res);
	if (rc)
		bad("host in HOST:PORT", host, gai_strerror(rc));
	memcpy(sa, res->ai_addr, res->ai_addrlen);
	*sl = res->ai_addrlen;
	freeaddrinfo(res);
}

static void usage(void)
{
	fprintf(stderr, "usage: echo_client [-c CONNS] [-m MSG_BYTES] [-d SECONDS] "
			"[-w WARMUP_SECONDS] [-p CPU] HOST:PORT\n");
	exit(2);
}

int main(int argc, char **argv)
{
	long n_conns = 50, cpu = 1;
	double duration = 5, warmup = 1;
	int opt;
	while ((opt = getopt(argc, argv, ":c:m:d:w:p:")) != -1) {
		switch (opt) {
		case 'c':
			n_conns = parse_long("-c", optarg, 1, MAX_CONNS, "connections, 1..100000");
			break;
		case 'm':
			msg_bytes = (size_t)parse_long("-m", optarg, MIN_MSG_BYTES, MAX_MSG_BYTES,
						       "message bytes, 12..1048576");
			break;
		case 'd':
			duration = parse_seconds("-d", optarg, 0, 1);
			break;
		case 'w':
			warmup = parse_seconds("-w", optarg, 0, 0);
			break;
		case 'p':
			cpu = parse_long("-p", optarg, 0, CPU_SETSIZE - 1, "a CPU number");
			break;
		case ':':
			fprintf(stderr, "echo_client: option -%c needs a value\n", optopt);
			usage();
			break;
		default:
			fprintf(stderr, "echo_client: unknown option -%c\n", optopt);
			usage();
		}
	}
	if (optind != argc - 1)
		usage();
	if ((unsigned long long)n_conns * msg_bytes > MAX_MSG_MEMORY) {
		char v[64];
		snprintf(v, sizeof v, "%ld x %zu", n_conns, msg_bytes);
		bad("-c x -m", v, "at most 1 GiB of messages in flight");
	}
	struct sockaddr_storage sa;
	socklen_t sl;
	resolve(argv[optind], &sa, &sl);

	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET((int)cpu, &set);
	if (sched_setaffinity(0, sizeof set, &set) < 0) {
		char v[32];
		snprintf(v, sizeof v, "%ld", cpu);
		bad("-p", v, "not a CPU this process may run on");
	}

	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	signal(SIGPIPE, SIG_IGN);

	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0) {
		perror("echo_client: epoll_create1");
		return 1;
	}
	conns = calloc((size_t)n_conns, sizeof *conns);
	unsigned char *msgs = malloc((size_t)n_conns * msg_bytes);
	if (!conns || !msgs) {
		fprintf(stderr, "echo_client: out of memory\n");
		return 1;
	}
	for (long i = 0; i < n_conns; i++) {
		struct conn *c = &conns[i];
		c->id = (uint32_t)i;
		c->msg = msgs + (size_t)i * msg_bytes;
		fill(c);
		c->fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (c->fd < 0)
			fail(c, "socket", errno);
		int one = 1;
		if (setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0)
			fail(c, "TCP_NODELAY", errno);
		struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLET, .data.ptr = c};
		if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) < 0)
			fail(c, "epoll_ctl", errno);
		if (connect(c->fd, (struct sockaddr *)&sa, sl) < 0 && errno != EINPROGRESS)
			fail(c, "connect", errno);
	}

	uint64_t t_start = clock_ns(CLOCK_MONOTONIC);
	uint64_t warmup_ns = (uint64_t)(warmup * 1e9), duration_ns = (uint64_t)(duration * 1e9);
	uint64_t open_due = t_start + warmup_ns, t_open = 0, t_close = 0, cpu_open = 0, cpu_close;
	struct epoll_event events[MAX_EVENTS];
	for (;;) {
		uint64_t now = clock_ns(CLOCK_MONOTONIC);
		if (!window_open && now >= open_due &&
		    (warmup_ns == 0 || answered_conns == (uint64_t)n_conns)) {
			window_open = 1;
			t_open = now;
			cpu_open = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		} else if (!window_open && now >= open_due + SETTLE_GRACE_NS) {
			fprintf(stderr, "echo_client: %llu of %ld connections still unanswered %.1f s "
					"after the start\n",
				(unsigned long long)(n_conns - (long)answered_conns), n_conns,
				(now - t_start) / 1e9);
			return 1;
		}
		if (window_open && now >= t_open + duration_ns) {
			cpu_close = clock_ns(CLOCK_THREAD_CPUTIME_ID);
			t_close = now;
			break;
		}
		uint64_t due = window_open ? t_open + duration_ns : open_due;
		int timeout = due > now ? (int)((due - now) / 1000000) + 1 : 1;
		if (timeout > 100)
			timeout = 100;
		int n = epoll_wait(ep, events, MAX_EVENTS, timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			perror("echo_client: epoll_wait");
			return 1;
		}
		for (int i = 0; i < n; i++)
			on_event(events[i].data.ptr, events[i].events);
	}
	window_done = 1;
	uint64_t window_ns = t_close - t_open;
	printf("msgs=%llu window_ns=%llu msgs_per_sec=%.1f cpu_ns=%llu\n",
	       (unsigned long long)msgs_in_window, (unsigned long long)window_ns,
	       window_ns ? (double)msgs_in_window * 1e9 / (double)window_ns : 0.0,
	       (unsigned long long)(cpu_close - cpu_open));
	return 0;
}
