/*
 * echo_epoll.c: a hand-written C epoll TCP echo server, the reference that ringside's epoll
 * echo servers are held to ("ringside's epoll server >= a hand-written C epoll echo server").
 *
 * Single-threaded, non-blocking sockets, edge-triggered epoll (EPOLLIN | EPOLLOUT | EPOLLET,
 * registered once per connection, never modified):
 *   - one shared receive buffer (BUF_BYTES); a connection owns memory only while the peer is
 *     not reading: the unsent rest of a partial write is copied to a per-connection pending
 *     buffer, and the connection is not read again until that is flushed (backpressure: a
 *     client that never reads stops being read, nothing is buffered without bound);
 *   - a read shorter than the buffer means the socket was drained: a new arrival raises a new
 *     edge, so no extra read is made just to see EAGAIN (once the peer's FIN has been seen,
 *     EPOLLRDHUP, it reads on until EOF: a FIN queued with the data raises no later edge);
 *   - at most READS_PER_EVENT reads per connection per wakeup; a connection that still has
 *     data goes on a ready list served after the next zero-timeout epoll_wait, so one busy
 *     connection cannot starve the others;
 *   - accept4 until EAGAIN; on EMFILE/ENFILE/ENOBUFS/ENOMEM the server keeps serving the open
 *     connections and retries accepting after ACCEPT_BACKOFF_MS (no spin);
 *   - TCP_NODELAY on every accepted connection; EINTR retried; resets and errors close only
 *     that connection; SIGINT/SIGTERM exit cleanly (status 0).
 *
 * Usage: echo_epoll PORT [ADDR]   (PORT 0: any free port; ADDR default 127.0.0.1)
 * Prints exactly one line on stdout once it accepts: `listening on ADDR:PORT`.
 * Build: benches/reference/build.sh. Not part of ringside's test suite.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BUF_BYTES (64 * 1024)
#define MAX_EVENTS 512
#define READS_PER_EVENT 16
#define ACCEPT_BACKOFF_MS 50

struct conn {
	char *pending;      /* unsent bytes of a partial write, or NULL */
	size_t pending_off; /* first unsent byte */
	size_t pending_len; /* end of the unsent bytes */
	int open;
	int on_ready_list;
	int peer_closed;    /* EPOLLRDHUP/EPOLLHUP seen: read until EOF, no short-read shortcut */
};

static volatile sig_atomic_t stopping;
static struct conn *conns; /* indexed by fd */
static int max_fds;
static int *ready;         /* fds with data left after READS_PER_EVENT reads */
static int n_ready;
static char buf[BUF_BYTES];

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void die(const char *what)
{
	fprintf(stderr, "echo_epoll: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void close_conn(int fd)
{
	free(conns[fd].pending);
	conns[fd] = (struct conn){0};
	close(fd); /* also removes it from the epoll set */
}

/* Writes buf[0..len) (or the rest of it): 0 when all was written, 1 when the rest is pending
 * (stop reading until EPOLLOUT), -1 on error (close). */
static int send_all(int fd, const char *data, size_t len)
{
	size_t off = 0;
	while (off < len) {
		ssize_t n = write(fd, data + off, len - off);
		if (n > 0) {
			off += (size_t)n;
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else if (n < 0 && errno == EAGAIN) {
			struct conn *c = &conns[fd];
			c->pending = malloc(len - off);
			if (!c->pending)
				return -1;
			memcpy(c->pending, data + off, len - off);
			c->pending_off = 0;
			c->pending_len = len - off;
			return 1;
		} else {
			return -1;
		}
	}
	return 0;
}

/* Flushes the pending bytes: 0 when none are left, 1 when some still are, -1 on error. */
static int flush(int fd)
{
	struct conn *c = &conns[fd];
	while (c->pending && c->pending_off < c->pending_len) {
		ssize_t n = write(fd, c->pending + c->pending_off, c->pending_len - c->pending_off);
		if (n > 0)
			c->pending_off += (size_t)n;
		else if (n < 0 && errno == EINTR)
			continue;
		else if (n < 0 && errno == EAGAIN)
			return 1;
		else
			return -1;
	}
	free(c->pending);
	c->pending = NULL;
	return 0;
}

/* A known extra cost for benches/known_answers.sh: ECHO_BURN_NS=N spins N ns of this thread's
 * CPU time per ECHO_BURN_MSG bytes read (default 64: one echo.rate message), so a ranking of
 * this server against itself must put the burning copy behind by N ns per message.
 *
 * The spin is a user-space loop of a count calibrated at start (the fastest of five 2 ms
 * tries, on the CPU the server is pinned to), not a loop on CLOCK_THREAD_CPUTIME_ID: that
 * clock is a syscall here (about 8 reads per 3 us spin, and the last overshoots), and such a
 * loop measured 3,677 ns of thread CPU per "3,000 ns" burn; the calibrated loop 3,028. */
static long burn_ns;
static long burn_msg = 64;
static double iters_per_ns;
static volatile unsigned long burn_sink;

static long thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void spin(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		burn_sink += i;
}

static void calibrate(void)
{
	for (int k = 0; k < 5; k++) {
		unsigned long n = 1000000;
		long t0 = thread_cpu_ns();
		spin(n);
		long t1 = thread_cpu_ns();
		if (t1 > t0 && (double)n / (double)(t1 - t0) > iters_per_ns)
			iters_per_ns = (double)n / (double)(t1 - t0);
	}
}

static void burn(size_t bytes)
{
	if (burn_ns <= 0)
		return;
	long msgs = ((long)bytes + burn_msg - 1) / burn_msg;
	spin((unsigned long)((double)(msgs * burn_ns) * iters_per_ns));
}

/* Serves one connection after an edge: flush, then read/echo until drained, blocked by the
 * peer, or READS_PER_EVENT reads (then it goes on the ready list). */
static void serve(int fd)
{
	int r = flush(fd);
	if (r < 0) {
		close_conn(fd);
		return;
	}
	if (r > 0)
		return; /* EPOLLOUT will bring us back */
	for (int i = 0; i < READS_PER_EVENT; i++) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n == 0) {
			close_conn(fd); /* EOF: everything read was already echoed */
			return;
		}
		if (n < 0) {
			if (errno == EINTR) {
				i--;
				continue;
			}
			if (errno == EAGAIN)
				return;
			close_conn(fd);
			return;
		}
		burn((size_t)n);
		r = send_all(fd, buf, (size_t)n);
		if (r < 0) {
			close_conn(fd);
			return;
		}
		if (r > 0)
			return;
		if ((size_t)n < sizeof buf && !conns[fd].peer_closed)
			return; /* drained: the next arrival raises a new edge (a FIN already
				 * queued raised EPOLLRDHUP, handled above) */
	}
	if (!conns[fd].on_ready_list && n_ready < max_fds) {
		conns[fd].on_ready_list = 1;
		ready[n_ready++] = fd;
	}
}

/* 0: accepted until EAGAIN; 1: out of a resource, retry later. */
static int accept_all(int lfd, int ep)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO || errno == EPERM)
				continue;
			if (errno == EAGAIN)
				return 0;
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
				return 1;
			die("accept4");
		}
		if (fd >= max_fds) {
			close(fd);
			continue;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET,
					 .data.fd = fd};
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
			close(fd);
			continue;
		}
		conns[fd] = (struct conn){.open = 1};
	}
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: echo_epoll PORT [ADDR]\n");
		return 2;
	}
	const char *ip = argc == 3 ? argv[2] : "127.0.0.1";
	if (getenv("ECHO_BURN_NS"))
		burn_ns = atol(getenv("ECHO_BURN_NS"));
	if (getenv("ECHO_BURN_MSG") && atol(getenv("ECHO_BURN_MSG")) > 0)
		burn_msg = atol(getenv("ECHO_BURN_MSG"));
	if (burn_ns > 0)
		calibrate();
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
	if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1) {
		fprintf(stderr, "echo_epoll: bad IPv4 address '%s'\n", ip);
		return 2;
	}

	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	max_fds = rl.rlim_cur > (1 << 20) ? (1 << 20) : (int)rl.rlim_cur;
	conns = calloc((size_t)max_fds, sizeof *conns);
	ready = calloc((size_t)max_fds, sizeof *ready);
	if (!conns || !ready)
		die("calloc");

	struct sigaction act = {.sa_handler = on_signal};
	sigaction(SIGINT, &act, NULL);
	sigaction(SIGTERM, &act, NULL);
	signal(SIGPIPE, SIG_IGN);

	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		die("socket");
	int one = 1;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0)
		die("bind");
	if (listen(lfd, SOMAXCONN) < 0)
		die("listen");
	socklen_t sl = sizeof sa;
	getsockname(lfd, (struct sockaddr *)&sa, &sl);

	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		die("epoll_create1");
	struct epoll_event lev = {.events = EPOLLIN | EPOLLET, .data.fd = lfd};
	if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev) < 0)
		die("epoll_ctl");

	printf("listening on %s:%u\n", ip, ntohs(sa.sin_port));
	fflush(stdout);

	struct epoll_event events[MAX_EVENTS];
	int accept_paused = 0;
	long long accept_retry_ms = 0;
	int *batch = calloc((size_t)max_fds, sizeof *batch);
	if (!batch)
		die("calloc");
	while (!stopping) {
		int timeout = n_ready ? 0 : accept_paused ? ACCEPT_BACKOFF_MS : -1;
		int n = epoll_wait(ep, events, MAX_EVENTS, timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("epoll_wait");
		}
		if (accept_paused && now_ms() >= accept_retry_ms) {
			accept_paused = accept_all(lfd, ep);
			accept_retry_ms = now_ms() + ACCEPT_BACKOFF_MS;
		}
		for (int i = 0; i < n; i++) {
			int fd = events[i].data.fd;
			if (fd == lfd) {
				accept_paused = accept_all(lfd, ep);
				if (accept_paused)
					accept_retry_ms = now_ms() + ACCEPT_BACKOFF_MS;
				continue;
			}
			if (!conns[fd].open)
				continue;
			if (events[i].events & EPOLLERR) {
				close_conn(fd);
				continue;
			}
			/* EPOLLHUP/EPOLLRDHUP: read what is left; read() returns 0 or an error. */
			if (events[i].events & (EPOLLRDHUP | EPOLLHUP))
				conns[fd].peer_closed = 1;
			serve(fd);
		}
		/* Connections that still had data after their quota, in arrival order. */
		int m = n_ready;
		memcpy(batch, ready, (size_t)m * sizeof *ready);
		n_ready = 0;
		for (int i = 0; i < m; i++) {
			int fd = batch[i];
			if (!conns[fd].open || !conns[fd].on_ready_list)
				continue;
			conns[fd].on_ready_list = 0;
			serve(fd);
		}
	}
	return 0;
}
