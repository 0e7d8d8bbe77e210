/*
 * echo_uring.c: a hand-written C liburing TCP echo server, the reference that ringside's best
 * io_uring echo server is held to ("ringside's best io_uring server >= a hand-written C
 * liburing echo server").
 *
 * Single-threaded, one ring (IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN where the
 * kernel has them, else plain; -P forces plain; the choice is printed on stderr):
 *   - one multishot ACCEPT, re-armed when a completion lacks IORING_CQE_F_MORE; after EMFILE,
 *     ENFILE, ENOBUFS or ENOMEM it is re-armed by a 50 ms TIMEOUT, never at once (no spin);
 *   - per connection one multishot RECV (IOSQE_BUFFER_SELECT) into a provided buffer ring of
 *     NBUFS buffers of BUF bytes, registered with io_uring_register_buf_ring;
 *   - each received buffer is sent back as it is (SEND from the buffer, MSG_NOSIGNAL); one SEND
 *     in flight per connection, the others queued in order, so a short send is completed by
 *     sending the rest before anything else and the byte stream is never reordered;
 *   - a buffer is recycled to the ring when its send completes;
 *   - a multishot RECV that ends (no IORING_CQE_F_MORE: ENOBUFS, a cancel, the kernel's own
 *     reasons) is re-armed; after ENOBUFS only once buffers come back, so it does not spin;
 *   - backpressure: a connection with MAX_QUEUED buffers waiting to be sent (its peer is not
 *     reading) has its RECV cancelled and re-armed only when its queue drains, so a client that
 *     never reads holds at most MAX_QUEUED buffers and cannot starve the others;
 *   - EOF after data (half-close): everything received is echoed, then the socket is closed;
 *     resets and errors close only that connection; a generation number in every user_data
 *     keeps a late completion or cancel from touching a reused descriptor;
 *   - TCP_NODELAY on every accepted connection; SIGINT/SIGTERM exit cleanly (status 0).
 *
 * Usage: echo_uring [-P] [-b BUF_BYTES] [-n NBUFS] PORT [ADDR]
 *        (PORT 0: any free port; ADDR default 127.0.0.1; NBUFS a power of two <= 32768)
 * Prints exactly one line on stdout once it accepts: `listening on ADDR:PORT`.
 * Needs liburing >= 2.3 and kernel 6.0+ (multishot recv). Build: benches/reference/build.sh.
 * Not part of ringside's test suite.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define BGID 1
#define MAX_QUEUED 8
#define ACCEPT_BACKOFF_NS (50 * 1000 * 1000)

/* user_data: kind (8 bits) | generation (24 bits) | fd or buffer id (32 bits) */
enum kind { K_ACCEPT = 1, K_RECV, K_SEND, K_CANCEL, K_TIMEOUT };

static inline uint64_t ud(enum kind k, uint32_t gen, uint32_t id)
{
	return ((uint64_t)k << 56) | ((uint64_t)(gen & 0xffffff) << 32) | id;
}
static inline enum kind ud_kind(uint64_t u) { return (enum kind)(u >> 56); }
static inline uint32_t ud_gen(uint64_t u) { return (uint32_t)(u >> 32) & 0xffffff; }
static inline uint32_t ud_id(uint64_t u) { return (uint32_t)u; }

struct conn {
	uint32_t gen;
	int open;
	int recv_armed;   /* a multishot RECV is in the kernel */
	int cancel_sent;  /* its cancel is in flight */
	int eof;          /* the peer sent FIN: echo what is queued, then close */
	int broken;       /* reset or error: drop what is queued, close once nothing is in flight */
	int starved;      /* on the starved list: re-arm when buffers come back */
	int send_inflight;
	int queued;       /* buffers received and not yet fully sent (incl. the one in flight) */
	int head, tail;   /* queue of buffer ids, linked through next_bid; -1 when empty */
};

static volatile sig_atomic_t stopping;
static struct io_uring ring;
static struct io_uring_buf_ring *br;
static unsigned char *bufs;
static unsigned buf_bytes = 4096, nbufs = 4096;
static int free_bufs;
static int *next_bid, *bid_fd;
static unsigned *bid_len, *bid_off;
static struct conn *conns;
static int max_fds;
static int *starved;
static int n_starved;
static int lfd;
static struct __kernel_timespec backoff = {.tv_nsec = ACCEPT_BACKOFF_NS};

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "echo_uring: %s: %s\n", what, strerror(err));
	exit(1);
}

static struct io_uring_sqe *sqe_get(void)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
	while (!sqe) {
		int r = io_uring_submit(&ring);
		if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY)
			die("io_uring_submit", -r);
		sqe = io_uring_get_sqe(&ring);
	}
	return sqe;
}

static void arm_accept(void)
{
	struct io_uring_sqe *sqe = sqe_get();
	io_uring_prep_multishot_accept(sqe, lfd, NULL, NULL, SOCK_CLOEXEC);
	io_uring_sqe_set_data64(sqe, ud(K_ACCEPT, 0, 0));
}

static void arm_recv(int fd)
{
	struct conn *c = &conns[fd];
	struct io_uring_sqe *sqe = sqe_get();
	io_uring_prep_recv_multishot(sqe, fd, NULL, 0, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = BGID;
	io_uring_sqe_set_data64(sqe, ud(K_RECV, c->gen, (uint32_t)fd));
	c->recv_armed = 1;
	c->cancel_sent = 0;
}

static void cancel_recv(int fd)
{
	struct conn *c = &conns[fd];
	if (!c->recv_armed || c->cancel_sent)
		return;
	struct io_uring_sqe *sqe = sqe_get();
	io_uring_prep_cancel64(sqe, ud(K_RECV, c->gen, (uint32_t)fd), 0);
	io_uring_sqe_set_data64(sqe, ud(K_CANCEL, 0, 0));
	c->cancel_sent = 1;
}

static void send_head(int fd)
{
	struct conn *c = &conns[fd];
	int bid = c->head;
	struct io_uring_sqe *sqe = sqe_get();
	io_uring_prep_send(sqe, fd, bufs + (size_t)bid * buf_bytes + bid_off[bid],
			   bid_len[bid] - bid_off[bid], MSG_NOSIGNAL);
	io_uring_sqe_set_data64(sqe, ud(K_SEND, 0, (uint32_t)bid));
	c->send_inflight = 1;
}

static void recycle(int bid)
{
	io_uring_buf_ring_add(br, bufs + (size_t)bid * buf_bytes, buf_bytes, (unsigned short)bid,
			      io_uring_buf_ring_mask(nbufs), 0);
	io_uring_buf_ring_advance(br, 1);
	free_bufs++;
}

/* Re-arms the RECV of a connection that has none, if it may receive now. */
static void maybe_arm(int fd)
{
	struct conn *c = &conns[fd];
	if (!c->open || c->eof || c->broken || c->recv_armed || c->queued >= MAX_QUEUED)
		return;
	if (free_bufs == 0) {
		if (!c->starved && n_starved < max_fds) {
			c->starved = 1;
			starved[n_starved++] = fd;
		}
		return;
	}
	arm_recv(fd);
}

static void wake_starved(void)
{
	while (n_starved > 0 && free_bufs > 0) {
		int fd = starved[--n_starved];
		conns[fd].starved = 0;
		maybe_arm(fd);
	}
}

static void maybe_close(int fd)
{
	struct conn *c = &conns[fd];
	if (!c->eof && !c->broken)
		return;
	if (c->recv_armed) {
		cancel_recv(fd);
		return;
	}
	if (c->send_inflight)
		return;
	if (!c->broken && c->head >= 0) {
		send_head(fd); /* half-closed: echo the rest first */
		return;
	}
	while (c->head >= 0) {
		int bid = c->head;
		c->head = next_bid[bid];
		recycle(bid);
	}
	close(fd);
	uint32_t gen = c->gen + 1;
	*c = (struct conn){.gen = gen, .head = -1, .tail = -1};
	wake_starved();
}

static void on_accept(int res, unsigned flags)
{
	if (res >= 0) {
		int fd = res;
		if (fd >= max_fds) {
			close(fd);
		} else {
			int one = 1;
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
			struct conn *c = &conns[fd];
			uint32_t gen = c->gen;
			*c = (struct conn){.gen = gen, .open = 1, .head = -1, .tail = -1};
			maybe_arm(fd);
		}
	}
	if (!(flags & IORING_CQE_F_MORE)) {
		if (res == -EMFILE || res == -ENFILE || res == -ENOBUFS || res == -ENOMEM) {
			struct io_uring_sqe *sqe = sqe_get();
			io_uring_prep_timeout(sqe, &backoff, 0, 0);
			io_uring_sqe_set_data64(sqe, ud(K_TIMEOUT, 0, 0));
		} else {
			arm_accept();
		}
	}
}

static void on_recv(uint64_t u, int res, unsigned flags)
{
	int fd = (int)ud_id(u);
	struct conn *c = &conns[fd];
	int bid = (flags & IORING_CQE_F_BUFFER) ? (int)(flags >> IORING_CQE_BUFFER_SHIFT) : -1;
	if (bid >= 0)
		free_bufs--;
	if (!c->open || ud_gen(u) != (c->gen & 0xffffff)) {
		/* Cannot happen while a RECV is armed (we close only after it ended). */
		if (bid >= 0)
			recycle(bid);
		return;
	}
	if (!(flags & IORING_CQE_F_MORE))
		c->recv_armed = 0;
	if (res > 0 && bid >= 0) {
		if (c->broken) {
			recycle(bid);
		} else {
			bid_fd[bid] = fd;
			bid_len[bid] = (unsigned)res;
			bid_off[bid] = 0;
			next_bid[bid] = -1;
			if (c->tail >= 0)
				next_bid[c->tail] = bid;
			else
				c->head = bid;
			c->tail = bid;
			c->queued++;
			if (!c->send_inflight)
				send_head(fd);
			if (c->queued >= MAX_QUEUED)
				cancel_recv(fd); /* backpressure: the peer is not reading */
		}
	} else if (res == 0) {
		c->eof = 1;
	} else if (res < 0 && res != -ENOBUFS && res != -ECANCELED) {
		c->broken = 1;
	}
	if (!c->recv_armed) {
		if (c->eof || c->broken)
			maybe_close(fd);
		else
			maybe_arm(fd); /* ENOBUFS, our cancel, or the kernel ended it */
	}
}

static void on_send(uint64_t u, int res)
{
	int bid = (int)ud_id(u);
	int fd = bid_fd[bid];
	struct conn *c = &conns[fd];
	c->send_inflight = 0;
	if (res < 0) {
		c->broken = 1;
	} else if ((unsigned)res < bid_len[bid] - bid_off[bid]) {
		bid_off[bid] += (unsigned)res; /* short send: the rest goes first */
		if (!c->broken) {
			send_head(fd);
			return;
		}
	} else {
		c->head = next_bid[bid];
		if (c->head < 0)
			c->tail = -1;
		c->queued--;
		recycle(bid);
		if (!c->broken && c->head >= 0)
			send_head(fd);
	}
	if (c->eof || c->broken) {
		maybe_close(fd);
	} else {
		maybe_arm(fd);
		wake_starved();
	}
}

static void setup_buffers(void)
{
	struct io_uring_buf_reg reg = {0};
	size_t ring_bytes = nbufs * sizeof(struct io_uring_buf);
	if (posix_memalign((void **)&br, 4096, ring_bytes))
		die("posix_memalign", ENOMEM);
	memset(br, 0, ring_bytes);
	reg.ring_addr = (unsigned long)br;
	reg.ring_entries = nbufs;
	reg.bgid = BGID;
	int r = io_uring_register_buf_ring(&ring, &reg, 0);
	if (r)
		die("io_uring_register_buf_ring", -r);
	io_uring_buf_ring_init(br);
	bufs = malloc((size_t)nbufs * buf_bytes);
	next_bid = calloc(nbufs, sizeof *next_bid);
	bid_fd = calloc(nbufs, sizeof *bid_fd);
	bid_len = calloc(nbufs, sizeof *bid_len);
	bid_off = calloc(nbufs, sizeof *bid_off);
	if (!bufs || !next_bid || !bid_fd || !bid_len || !bid_off)
		die("malloc", ENOMEM);
	for (unsigned i = 0; i < nbufs; i++)
		io_uring_buf_ring_add(br, bufs + (size_t)i * buf_bytes, buf_bytes, (unsigned short)i,
				      io_uring_buf_ring_mask(nbufs), (int)i);
	io_uring_buf_ring_advance(br, (int)nbufs);
	free_bufs = (int)nbufs;
}

static void usage(void)
{
	fprintf(stderr, "usage: echo_uring [-P] [-b BUF_BYTES] [-n NBUFS] PORT [ADDR]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int plain = 0, opt;
	while ((opt = getopt(argc, argv, "Pb:n:")) != -1) {
		if (opt == 'P')
			plain = 1;
		else if (opt == 'b')
			buf_bytes = (unsigned)atoi(optarg);
		else if (opt == 'n')
			nbufs = (unsigned)atoi(optarg);
		else
			usage();
	}
	if (argc - optind < 1 || argc - optind > 2)
		usage();
	if (buf_bytes == 0 || nbufs == 0 || nbufs > 32768 || (nbufs & (nbufs - 1))) {
		fprintf(stderr, "echo_uring: -n must be a power of two <= 32768, -b > 0\n");
		return 2;
	}
	const char *ip = argc - optind == 2 ? argv[optind + 1] : "127.0.0.1";
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)atoi(argv[optind]))};
	if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1) {
		fprintf(stderr, "echo_uring: bad IPv4 address '%s'\n", ip);
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
	starved = calloc((size_t)max_fds, sizeof *starved);
	if (!conns || !starved)
		die("calloc", ENOMEM);
	for (int i = 0; i < max_fds; i++)
		conns[i].head = conns[i].tail = -1;

	struct sigaction act = {.sa_handler = on_signal};
	sigaction(SIGINT, &act, NULL);
	sigaction(SIGTERM, &act, NULL);
	signal(SIGPIPE, SIG_IGN);

	struct io_uring_params p = {0};
	p.flags = IORING_SETUP_CQSIZE;
	p.cq_entries = 16384;
	int r = -EINVAL;
	if (!plain) {
		p.flags |= IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
		r = io_uring_queue_init_params(4096, &ring, &p);
		if (r < 0)
			p.flags = IORING_SETUP_CQSIZE;
	}
	if (r < 0) {
		p.cq_entries = 16384;
		r = io_uring_queue_init_params(4096, &ring, &p);
		plain = 1;
	}
	if (r < 0)
		die("io_uring_queue_init_params", -r);
	fprintf(stderr, "echo_uring: ring %s, %u buffers of %u bytes, max %d queued per connection\n",
		plain ? "plain" : "SINGLE_ISSUER|DEFER_TASKRUN", nbufs, buf_bytes, MAX_QUEUED);
	setup_buffers();

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		die("socket", errno);
	int one = 1;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0)
		die("bind", errno);
	if (listen(lfd, SOMAXCONN) < 0)
		die("listen", errno);
	socklen_t sl = sizeof sa;
	getsockname(lfd, (struct sockaddr *)&sa, &sl);
	arm_accept();
	printf("listening on %s:%u\n", ip, ntohs(sa.sin_port));
	fflush(stdout);

	while (!stopping) {
		r = io_uring_submit_and_wait(&ring, 1);
		if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY && r != -ETIME)
			die("io_uring_submit_and_wait", -r);
		struct io_uring_cqe *cqe;
		unsigned head, seen = 0;
		io_uring_for_each_cqe(&ring, head, cqe)
		{
			uint64_t u = cqe->user_data;
			seen++;
			switch (ud_kind(u)) {
			case K_ACCEPT:
				on_accept(cqe->res, cqe->flags);
				break;
			case K_RECV:
				on_recv(u, cqe->res, cqe->flags);
				break;
			case K_SEND:
				on_send(u, cqe->res);
				break;
			case K_TIMEOUT:
				arm_accept();
				break;
			case K_CANCEL:
				break;
			}
		}
		io_uring_cq_advance(&ring, seen);
	}
	return 0;
}
