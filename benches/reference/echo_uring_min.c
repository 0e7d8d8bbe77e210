/*
 * echo_uring_min.c: the simplest io_uring echo loop (liburing), the floor that ringside's
 * io_uring rows are held to at equal offered load (CPU per message). A plain ring (no setup
 * flags), one ACCEPT SQE at a time, per connection one RECV into its own buffer; on a RECV
 * completion one SEND of those bytes, on a full SEND completion the next RECV (a short send
 * sends the rest first). io_uring_submit_and_wait(ring, 1), then every CQE drained. No
 * backpressure, no multishot, no provided buffers, no idle limit. Not for hostile clients.
 * Built with -DRING_FLAGS='IORING_SETUP_SINGLE_ISSUER|IORING_SETUP_DEFER_TASKRUN' it is the same
 * loop on the ring uring-defer uses (OUT_DIR/echo_uring_min_defer from build.sh).
 *
 * Usage: echo_uring_min PORT [ADDR]   (PORT 0: any free port; ADDR default 127.0.0.1)
 * Prints `listening on ADDR:PORT` once listening; exits 0 on SIGINT/SIGTERM.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#define BUF 4096
#ifndef RING_FLAGS
#define RING_FLAGS 0
#endif
enum { ACCEPT, RECV, SEND };
struct conn {
	int fd, op;
	unsigned len, off; /* bytes received, bytes of them sent */
	char buf[BUF];
};

static volatile sig_atomic_t stopping;
static void on_signal(int sig) { (void)sig; stopping = 1; }
static struct conn acceptor = {.op = ACCEPT};

static struct io_uring_sqe *sqe_of(struct io_uring *ring)
{
	struct io_uring_sqe *s = io_uring_get_sqe(ring);
	if (!s) { /* SQ full: submit what is there, then there is room */
		io_uring_submit(ring);
		s = io_uring_get_sqe(ring);
	}
	return s;
}

static void push(struct io_uring *ring, struct conn *c, int op)
{
	struct io_uring_sqe *s = sqe_of(ring);
	c->op = op;
	if (op == ACCEPT)
		io_uring_prep_accept(s, c->fd, NULL, NULL, SOCK_CLOEXEC);
	else if (op == RECV)
		io_uring_prep_recv(s, c->fd, c->buf, BUF, 0);
	else
		io_uring_prep_send(s, c->fd, c->buf + c->off, c->len - c->off, MSG_NOSIGNAL);
	io_uring_sqe_set_data(s, c);
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: echo_uring_min PORT [ADDR]\n");
		return 2;
	}
	const char *ip = argc == 3 ? argv[2] : "127.0.0.1";
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
	if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1)
		return 2;
	struct sigaction act = {.sa_handler = on_signal}; /* no SA_RESTART: the wait sees EINTR */
	sigaction(SIGINT, &act, NULL);
	sigaction(SIGTERM, &act, NULL);
	signal(SIGPIPE, SIG_IGN);
	int one = 1, lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(lfd, SOMAXCONN) < 0)
		return perror("echo_uring_min: listen"), 1;
	socklen_t sl = sizeof sa;
	getsockname(lfd, (struct sockaddr *)&sa, &sl);
	struct io_uring ring;
	int e = io_uring_queue_init(256, &ring, RING_FLAGS);
	if (e < 0)
		return fprintf(stderr, "echo_uring_min: io_uring_queue_init: %d\n", e), 1;
	acceptor.fd = lfd;
	push(&ring, &acceptor, ACCEPT);
	printf("listening on %s:%u\n", ip, ntohs(sa.sin_port));
	fflush(stdout);
	while (!stopping) {
		io_uring_submit_and_wait(&ring, 1);
		struct io_uring_cqe *cqe;
		unsigned head, n = 0;
		io_uring_for_each_cqe(&ring, head, cqe) {
			struct conn *c = io_uring_cqe_get_data(cqe);
			int res = cqe->res;
			n++;
			if (c->op == ACCEPT) {
				push(&ring, c, ACCEPT);
				struct conn *nc = res >= 0 ? malloc(sizeof *nc) : NULL;
				if (!nc) {
					if (res >= 0)
						close(res);
					continue;
				}
				setsockopt(res, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
				nc->fd = res;
				push(&ring, nc, RECV);
			} else if (res <= 0) { /* EOF or error: nothing else of this connection is in flight */
				close(c->fd);
				free(c);
			} else if (c->op == RECV) {
				c->len = (unsigned)res;
				c->off = 0;
				push(&ring, c, SEND);
			} else {
				c->off += (unsigned)res;
				push(&ring, c, c->off < c->len ? SEND : RECV);
			}
		}
		io_uring_cq_advance(&ring, n);
	}
	return 0;
}
