/*
 * echo_lt_min.c: the simplest level-triggered epoll echo server, the floor that ringside's
 * epoll-lt row is held to at equal offered load (CPU per message). No backpressure, no
 * fairness quota, no idle limit: one read into a stack buffer per event, the bytes written
 * back (a short write loops until done), close on EOF or error. Not for hostile clients.
 *
 * Usage: echo_lt_min PORT [ADDR]   (PORT 0: any free port; ADDR default 127.0.0.1)
 * Prints `listening on ADDR:PORT` once listening; exits 0 on SIGINT/SIGTERM.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

static volatile sig_atomic_t stopping;
static void on_signal(int sig) { (void)sig; stopping = 1; }

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: echo_lt_min PORT [ADDR]\n");
		return 2;
	}
	const char *ip = argc == 3 ? argv[2] : "127.0.0.1";
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
	if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1)
		return 2;
	struct sigaction act = {.sa_handler = on_signal}; /* no SA_RESTART: epoll_wait sees EINTR */
	sigaction(SIGINT, &act, NULL);
	sigaction(SIGTERM, &act, NULL);
	signal(SIGPIPE, SIG_IGN);
	int one = 1, lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(lfd, SOMAXCONN) < 0)
		return perror("echo_lt_min: listen"), 1;
	socklen_t sl = sizeof sa;
	getsockname(lfd, (struct sockaddr *)&sa, &sl);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = lfd}, evs[256];
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
	printf("listening on %s:%u\n", ip, ntohs(sa.sin_port));
	fflush(stdout);
	while (!stopping) {
		int n = epoll_wait(ep, evs, 256, -1);
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			if (fd == lfd) {
				int c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
				if (c < 0)
					continue;
				setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
				ev = (struct epoll_event){.events = EPOLLIN, .data.fd = c};
				epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
				continue;
			}
			char buf[65536];
			ssize_t r = read(fd, buf, sizeof buf), off = 0;
			if (r < 0 && errno == EAGAIN)
				continue;
			while (r > 0 && off < r) {
				ssize_t w = write(fd, buf + off, (size_t)(r - off));
				if (w < 0 && errno != EAGAIN && errno != EINTR)
					break;
				off += w > 0 ? w : 0;
			}
			if (r <= 0 || off < r)
				close(fd); /* EOF, error, or a failed write: removed from the set */
		}
	}
	return 0;
}
