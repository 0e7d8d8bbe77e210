/*
 * micro_ref.c: a plain-C reference for ringside's micro suite.
 *
 * It runs the same syscall loops as ringside's micro.syscall, micro.pipe and micro.batching
 * workloads, single-threaded and pinned to one CPU, so that ringside's per-op medians can be
 * checked against what a bare C loop making the same syscalls measures on the same machine.
 *
 * For every loop: warm up (1000 ops by default), then RUNS runs (default 10) of OPS ops
 * (default 5000). Each run is measured in two ways, back to back:
 *   avg    the whole run is timed once; the run's figure is total_ns / OPS. avg_ns is the
 *          median of that figure over the runs (avg_min_ns / avg_max_ns give its spread).
 *   timed  each op (each batch, for uring_batch) is timed by itself with clock_gettime around
 *          it; timed_median_ns is the median over all runs of those intervals, minus the
 *          median of an empty t0/t1 pair measured at start (timer_overhead_ns), per op.
 *          timed_mean_ns is the median over runs of the mean of those intervals (each minus
 *          the timer overhead): ringside's 1e9 / ops_per_sec.median is the same figure.
 * avg_op / timed_op name what each figure covers: they differ only for epoll_read, whose
 * write is outside the timed interval but inside the run total.
 *
 * One line per loop on stdout, key=value, e.g.
 *   loop=pipe_rw msg_bytes=64 avg_ns=512.3 ... timed_median_ns=505.0 timer_overhead_ns=21
 * A loop this machine cannot run prints `loop=... unavailable: <reason>` and the rest go on.
 *
 * Build: benches/reference/build.sh (gcc -O2 -Wall ... -luring). See README.md beside it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NSEC_PER_SEC 1000000000ull
/* A SQPOLL completion that has not arrived in this long is a failure, not a hang. */
#define SPIN_TIMEOUT_NS (5 * NSEC_PER_SEC)
#define MAX_BATCH 64

static const size_t PIPE_SIZES[] = { 64, 256, 1024, 4096, 16384 };
static const int BATCH_SIZES[] = { 1, 4, 16, 64 };
#define BATCH_MSG_BYTES 64
#define SQPOLL_MSG_BYTES 64
#define SQPOLL_IDLE_MS 50

static struct {
	int cpu;          /* -c: the CPU this thread is pinned to */
	int sq_cpu;       /* -s: the SQPOLL poller's CPU; -1 = first other allowed CPU */
	long runs;        /* -r */
	long ops;         /* -n */
	long warm;        /* -w */
	const char *only; /* -l: comma-separated loop names, NULL = all */
} opt = { 1, -1, 10, 5000, 1000, NULL };

static uint64_t timer_overhead_ns;

/* The clock every figure is read from. Checked once in calibrate_timer(); on Linux
 * CLOCK_MONOTONIC cannot fail after that, so the hot path does not check it. */
static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median of n values, sorted in place; the mean of the middle two when n is even. */
static double median_u64(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof *v, cmp_u64);
	return n % 2 ? (double)v[n / 2] : ((double)v[n / 2 - 1] + (double)v[n / 2]) / 2;
}

static double median_double(double *v, size_t n)
{
	qsort(v, n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Median of an empty t0/t1 interval, the same way ringside calibrates its clock. */
static int calibrate_timer(void)
{
	enum { N = 20001 };
	static uint64_t d[N];
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts)) {
		perror("clock_gettime(CLOCK_MONOTONIC)");
		return -1;
	}
	for (int i = 0; i < 1000; i++)
		(void)now_ns();
	for (int i = 0; i < N; i++) {
		uint64_t a = now_ns();
		d[i] = now_ns() - a;
	}
	timer_overhead_ns = (uint64_t)median_u64(d, N);
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* The measuring loop, shared by every benchmark.                                           */

struct result {
	double avg_ns, avg_min_ns, avg_max_ns; /* per op: median, min and max over runs */
	double timed_ns;      /* per op: median of the individually timed ops, minus timer */
	double timed_mean_ns; /* per op: median over runs of the mean timed op, minus timer */
};

typedef int (*step_fn)(void *ctx);

/*
 * Runs `op` (one unit of `per_unit` ops, e.g. one batch) OPS / per_unit times per run.
 * `prep`, if not NULL, runs before each `op`: inside the run total of the avg variant, outside
 * the timed interval of the timed variant. Always inlined, and only ever called with constant
 * function pointers, so the compiler turns `prep` and `op` into direct (mostly inlined) calls:
 * the loop costs what a hand-written one would.
 */
static inline __attribute__((always_inline)) int
measure(step_fn prep, step_fn op, void *ctx, long per_unit, struct result *res)
{
	long units = opt.ops / per_unit > 0 ? opt.ops / per_unit : 1;
	long warm = (opt.warm + per_unit - 1) / per_unit;
	double *avg = calloc((size_t)opt.runs, sizeof *avg);
	double *tmean = calloc((size_t)opt.runs, sizeof *tmean);
	uint64_t *lat = calloc((size_t)(opt.runs * units), sizeof *lat);
	int ret = -1;

	if (!avg || !tmean || !lat) {
		perror("calloc");
		goto out;
	}
	for (long i = 0; i < warm; i++)
		if ((prep && prep(ctx)) || op(ctx))
			goto out;
	for (long r = 0; r < opt.runs; r++) {
		/* avg: one interval around the whole run */
		uint64_t t0 = now_ns();
		for (long u = 0; u < units; u++)
			if ((prep && prep(ctx)) || op(ctx))
				goto out;
		avg[r] = (double)(now_ns() - t0) / (double)(units * per_unit);

		/* timed: one interval around each op */
		uint64_t sum = 0;
		for (long u = 0; u < units; u++) {
			if (prep && prep(ctx))
				goto out;
			uint64_t a = now_ns();
			if (op(ctx))
				goto out;
			uint64_t d = now_ns() - a;
			lat[r * units + u] = d;
			sum += d > timer_overhead_ns ? d - timer_overhead_ns : 0;
		}
		tmean[r] = (double)sum / (double)(units * per_unit);
	}
	res->avg_ns = median_double(avg, (size_t)opt.runs); /* sorts avg */
	res->avg_min_ns = avg[0];
	res->avg_max_ns = avg[opt.runs - 1];
	res->timed_mean_ns = median_double(tmean, (size_t)opt.runs);
	double med = median_u64(lat, (size_t)(opt.runs * units));
	res->timed_ns = (med > (double)timer_overhead_ns ? med - (double)timer_overhead_ns : 0) /
			(double)per_unit;
	ret = 0;
out:
	free(avg);
	free(tmean);
	free(lat);
	return ret;
}

static void print_result(const char *head, const char *avg_op, const char *timed_op,
			 const struct result *r)
{
	printf("%s avg_ns=%.1f avg_min_ns=%.1f avg_max_ns=%.1f timed_median_ns=%.1f "
	       "timed_mean_ns=%.1f timer_overhead_ns=%llu avg_op=%s timed_op=%s\n",
	       head, r->avg_ns, r->avg_min_ns, r->avg_max_ns, r->timed_ns, r->timed_mean_ns,
	       (unsigned long long)timer_overhead_ns, avg_op, timed_op);
	fflush(stdout);
}

static void print_unavailable(const char *head, const char *reason)
{
	printf("%s unavailable: %s\n", head, reason);
	fflush(stdout);
}

/* ---------------------------------------------------------------------------------------- */
/* Pipes.                                                                                   */

struct pipe_ctx {
	int rd, wr;
	size_t msg;
	unsigned char *send, *recv;
};

static void pipe_close(struct pipe_ctx *p)
{
	if (p->rd >= 0)
		close(p->rd);
	if (p->wr >= 0)
		close(p->wr);
	free(p->send);
	free(p->recv);
	p->rd = p->wr = -1;
	p->send = p->recv = NULL;
}

/* A pipe and one message's send and receive buffers; the send buffer holds a pattern the
 * receive buffer is checked against after the loop. */
static int pipe_open(struct pipe_ctx *p, size_t msg, unsigned seed)
{
	int fds[2];

	*p = (struct pipe_ctx){ .rd = -1, .wr = -1, .msg = msg };
	if (pipe2(fds, O_CLOEXEC)) {
		perror("pipe2");
		return -1;
	}
	p->rd = fds[0];
	p->wr = fds[1];
	p->send = malloc(msg);
	p->recv = calloc(1, msg);
	if (!p->send || !p->recv) {
		perror("malloc");
		pipe_close(p);
		return -1;
	}
	for (size_t i = 0; i < msg; i++)
		p->send[i] = (unsigned char)(i * 31 + seed * 7 + 1);
	return 0;
}

static int pipe_verify(const struct pipe_ctx *p)
{
	if (memcmp(p->send, p->recv, p->msg)) {
		fprintf(stderr, "pipe: received bytes differ from the bytes sent\n");
		return -1;
	}
	return 0;
}

static inline int write_full(int fd, const unsigned char *buf, size_t n)
{
	size_t done = 0;

	while (done < n) {
		ssize_t w = write(fd, buf + done, n - done);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			perror("write");
			return -1;
		}
		done += (size_t)w;
	}
	return 0;
}

/* Reads exactly n bytes; the whole message is in the pipe, so the first read returns it all. */
static inline int read_full(int fd, unsigned char *buf, size_t n)
{
	size_t done = 0;

	while (done < n) {
		ssize_t r = read(fd, buf + done, n - done);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			perror("read");
			return -1;
		}
		if (r == 0) {
			fprintf(stderr, "read: unexpected end of file\n");
			return -1;
		}
		done += (size_t)r;
	}
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* getpid -> ringside micro.syscall / blocking                                              */
/* One op: one getpid through the raw syscall instruction (syscall(SYS_getpid)), never      */
/* glibc's getpid() wrapper, which some glibc versions cached.                              */

static int op_getpid(void *ctx)
{
	(void)ctx;
	return syscall(SYS_getpid) > 0 ? 0 : -1;
}

static int bench_getpid(void)
{
	struct result r;

	if (measure(NULL, op_getpid, NULL, 1, &r)) {
		fprintf(stderr, "getpid: syscall failed: %s\n", strerror(errno));
		return -1;
	}
	print_result("loop=getpid", "getpid", "getpid", &r);
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* pipe_rw MSG -> ringside micro.pipe / blocking                                            */
/* One op: a blocking write(2) of MSG bytes into a pipe, then a read(2) of MSG bytes back.  */

static int op_pipe_rw(void *ctx)
{
	struct pipe_ctx *p = ctx;

	if (write_full(p->wr, p->send, p->msg))
		return -1;
	return read_full(p->rd, p->recv, p->msg);
}

static int bench_pipe_rw(size_t msg)
{
	struct pipe_ctx p;
	struct result r;
	char head[64];
	int ret = -1;

	snprintf(head, sizeof head, "loop=pipe_rw msg_bytes=%zu", msg);
	if (pipe_open(&p, msg, 1))
		return -1;
	if (measure(NULL, op_pipe_rw, &p, 1, &r) || pipe_verify(&p))
		goto out;
	print_result(head, "write+read", "write+read", &r);
	ret = 0;
out:
	pipe_close(&p);
	return ret;
}

/* ---------------------------------------------------------------------------------------- */
/* epoll_read MSG -> ringside micro.pipe / epoll-lt                                         */
/* One op: write(2) MSG bytes into a pipe (the prep: outside the timed interval, inside the */
/* run total), then epoll_wait(ep, ev, 8, -1) on the pipe's read end, registered            */
/* level-triggered, and a read(2) of the MSG bytes.                                         */

struct epoll_ctx {
	struct pipe_ctx p;
	int ep;
	struct epoll_event ev[8];
};

static int prep_epoll_write(void *ctx)
{
	struct epoll_ctx *e = ctx;

	return write_full(e->p.wr, e->p.send, e->p.msg);
}

static int op_epoll_read(void *ctx)
{
	struct epoll_ctx *e = ctx;
	int n;

	do
		n = epoll_wait(e->ep, e->ev, 8, -1);
	while (n < 0 && errno == EINTR);
	if (n != 1 || !(e->ev[0].events & EPOLLIN)) {
		if (n < 0)
			perror("epoll_wait");
		else
			fprintf(stderr, "epoll_wait: %d events (0x%x), expected 1 EPOLLIN\n", n,
				n > 0 ? e->ev[0].events : 0);
		return -1;
	}
	return read_full(e->p.rd, e->p.recv, e->p.msg);
}

static int bench_epoll_read(size_t msg)
{
	struct epoll_ctx e = { .ep = -1 };
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 0 }; /* level-triggered */
	struct result r;
	char head[64];
	int ret = -1;

	snprintf(head, sizeof head, "loop=epoll_read msg_bytes=%zu", msg);
	if (pipe_open(&e.p, msg, 2))
		return -1;
	e.ep = epoll_create1(EPOLL_CLOEXEC);
	if (e.ep < 0) {
		perror("epoll_create1");
		goto out;
	}
	if (epoll_ctl(e.ep, EPOLL_CTL_ADD, e.p.rd, &ev)) {
		perror("epoll_ctl");
		goto out;
	}
	if (measure(prep_epoll_write, op_epoll_read, &e, 1, &r) || pipe_verify(&e.p))
		goto out;
	print_result(head, "write+epoll_wait+read", "epoll_wait+read", &r);
	ret = 0;
out:
	if (e.ep >= 0)
		close(e.ep);
	pipe_close(&e.p);
	return ret;
}

/* ---------------------------------------------------------------------------------------- */
/* io_uring: uring_pair, uring_batch, uring_sqpoll_pair                                     */

struct uring_ctx {
	struct io_uring ring;
	struct pipe_ctx p[MAX_BATCH];
	int n;      /* pipes, and write->read pairs per op */
	int sqpoll; /* submit without entering; spin on the CQ */
};

static void uring_close(struct uring_ctx *u)
{
	for (int i = 0; i < u->n; i++)
		pipe_close(&u->p[i]);
	u->n = 0;
}

/* Opens n pipes with msg-byte buffers. The ring is set up by the caller. */
static int uring_pipes(struct uring_ctx *u, int n, size_t msg)
{
	u->n = 0;
	for (int i = 0; i < n; i++) {
		if (pipe_open(&u->p[i], msg, 3 + (unsigned)i)) {
			uring_close(u);
			return -1;
		}
		u->n++;
	}
	return 0;
}

/* Ring size as ringside picks it: 2n SQEs rounded up to a power of two, at least 8. */
static unsigned uring_entries(int n)
{
	unsigned e = 8;

	while (e < 2u * (unsigned)n)
		e *= 2;
	return e;
}

/* Reaps `want` CQEs, each of which must have moved exactly its pipe's message size. Without
 * SQPOLL the submit already waited for them all; with it, spin on io_uring_peek_cqe. */
static inline int uring_reap(struct uring_ctx *u, int want)
{
	struct io_uring_cqe *cqe;
	unsigned spins = 0;
	uint64_t deadline = 0;

	for (int got = 0; got < want;) {
		int ret = io_uring_peek_cqe(&u->ring, &cqe);
		if (ret == -EAGAIN) {
			if (!u->sqpoll) {
				ret = io_uring_wait_cqe(&u->ring, &cqe);
			} else {
#if defined(__x86_64__) || defined(__i386__)
				__builtin_ia32_pause();
#endif
				if (++spins % 4096 == 0) {
					if (!deadline)
						deadline = now_ns() + SPIN_TIMEOUT_NS;
					else if (now_ns() > deadline) {
						fprintf(stderr, "io_uring: no CQE in 5 s\n");
						return -1;
					}
				}
				continue;
			}
		}
		if (ret < 0) {
			fprintf(stderr, "io_uring CQE wait: %s\n", strerror(-ret));
			return -1;
		}
		uint64_t ud = cqe->user_data;
		int res = cqe->res;
		io_uring_cqe_seen(&u->ring, cqe);
		got++;
		if (ud / 2 >= (uint64_t)u->n || res != (int)u->p[ud / 2].msg) {
			fprintf(stderr, "io_uring: %s on pipe %llu returned %d (%s), expected %zu\n",
				ud % 2 ? "read" : "write", (unsigned long long)(ud / 2), res,
				res < 0 ? strerror(-res) : "short", u->p[0].msg);
			return -1;
		}
	}
	return 0;
}

/* One op: for each of the n pipes a WRITE SQE of MSG bytes linked (IOSQE_IO_LINK) to a READ
 * SQE of MSG bytes on the same pipe; all 2n submitted together. Without SQPOLL:
 * io_uring_submit_and_wait(ring, 2n), one io_uring_enter. With SQPOLL: io_uring_submit, which
 * enters only to wake a sleeping poller, then spin until the 2n CQEs arrive. */
static int op_uring(void *ctx)
{
	struct uring_ctx *u = ctx;
	int want = 2 * u->n, ret;

	for (int i = 0; i < u->n; i++) {
		struct pipe_ctx *p = &u->p[i];
		struct io_uring_sqe *w = io_uring_get_sqe(&u->ring);
		struct io_uring_sqe *r = io_uring_get_sqe(&u->ring);

		if (!w || !r) {
			fprintf(stderr, "io_uring: submission queue full\n");
			return -1;
		}
		io_uring_prep_write(w, p->wr, p->send, (unsigned)p->msg, 0);
		io_uring_sqe_set_flags(w, IOSQE_IO_LINK);
		io_uring_sqe_set_data64(w, 2 * (uint64_t)i);
		io_uring_prep_read(r, p->rd, p->recv, (unsigned)p->msg, 0);
		io_uring_sqe_set_data64(r, 2 * (uint64_t)i + 1);
	}
	ret = u->sqpoll ? io_uring_submit(&u->ring) : io_uring_submit_and_wait(&u->ring, (unsigned)want);
	if (ret != want) {
		fprintf(stderr, "io_uring submit: %s\n",
			ret < 0 ? strerror(-ret) : "fewer SQEs submitted than queued");
		return -1;
	}
	return uring_reap(u, want);
}

static int uring_verify(const struct uring_ctx *u)
{
	for (int i = 0; i < u->n; i++)
		if (pipe_verify(&u->p[i]))
			return -1;
	return 0;
}

/* uring_pair MSG -> ringside micro.pipe / uring
 * uring_batch N -> ringside micro.batching / uring (64-byte messages; op = one batch of N
 *                  pairs, reported per pair: batch time / N)
 * Both: a plain ring (no setup flags), one linked write->read pair per pipe. */
static int bench_uring(const char *name, int n, size_t msg)
{
	static struct uring_ctx u; /* large (MAX_BATCH pipes); one in use at a time */
	struct result r;
	char head[96];
	int ret;

	if (!strcmp(name, "uring_pair"))
		snprintf(head, sizeof head, "loop=%s msg_bytes=%zu", name, msg);
	else
		snprintf(head, sizeof head, "loop=%s batch=%d msg_bytes=%zu", name, n, msg);
	memset(&u, 0, sizeof u);
	ret = io_uring_queue_init(uring_entries(n), &u.ring, 0);
	if (ret < 0) {
		print_unavailable(head, strerror(-ret));
		return 0;
	}
	ret = -1;
	if (uring_pipes(&u, n, msg))
		goto out_ring;
	if (measure(NULL, op_uring, &u, n, &r) || uring_verify(&u))
		goto out;
	print_result(head, "write->read", "write->read", &r);
	ret = 0;
out:
	uring_close(&u);
out_ring:
	io_uring_queue_exit(&u.ring);
	return ret;
}

/* uring_sqpoll_pair MSG -> ringside micro.pipe / uring-sqpoll
 * One op: as uring_pair, on a ring set up with IORING_SETUP_SQPOLL | IORING_SETUP_SQ_AFF,
 * the poller pinned to sq_cpu (a CPU other than ours: on our own CPU each op waits for a
 * scheduler slice, milliseconds), sq_thread_idle 50 ms. No io_uring_enter unless the poller
 * went to sleep; completions awaited by spinning on the CQ. */
static int bench_uring_sqpoll(size_t msg, int sq_cpu)
{
	static struct uring_ctx u;
	struct io_uring_params p = { 0 };
	struct result r;
	char head[96], reason[128];
	int ret;

	snprintf(head, sizeof head, "loop=uring_sqpoll_pair msg_bytes=%zu sq_cpu=%d", msg, sq_cpu);
	if (sq_cpu < 0) {
		print_unavailable(head, "no CPU apart from the measured one for the SQPOLL poller");
		return 0;
	}
	memset(&u, 0, sizeof u);
	p.flags = IORING_SETUP_SQPOLL | IORING_SETUP_SQ_AFF;
	p.sq_thread_cpu = (unsigned)sq_cpu;
	p.sq_thread_idle = SQPOLL_IDLE_MS;
	ret = io_uring_queue_init_params(uring_entries(1), &u.ring, &p);
	if (ret < 0) {
		snprintf(reason, sizeof reason, "%s", strerror(-ret));
		print_unavailable(head, reason);
		return 0;
	}
	u.sqpoll = 1;
	ret = -1;
	if (uring_pipes(&u, 1, msg))
		goto out_ring;
	if (measure(NULL, op_uring, &u, 1, &r) || uring_verify(&u))
		goto out;
	print_result(head, "write->read", "write->read", &r);
	ret = 0;
out:
	uring_close(&u);
out_ring:
	io_uring_queue_exit(&u.ring);
	return ret;
}

/* ---------------------------------------------------------------------------------------- */
/* Command line, pinning, main.                                                             */

static void usage(FILE *f, const char *argv0)
{
	fprintf(f,
		"usage: %s [-c CPU] [-s SQPOLL_CPU] [-r RUNS] [-n OPS] [-w WARMUP] [-l LOOP[,LOOP...]]\n"
		"  -c CPU      CPU to pin this thread to (default 1)\n"
		"  -s CPU      CPU for the SQPOLL poller (default: first other allowed CPU)\n"
		"  -r RUNS     runs per loop (default 10)\n"
		"  -n OPS      ops per run (default 5000)\n"
		"  -w WARMUP   warm-up ops per loop (default 1000)\n"
		"  -l LOOPS    only these loops: getpid pipe_rw epoll_read uring_pair uring_batch\n"
		"              uring_sqpoll_pair (default: all); LOOP=V keeps only msg_bytes V\n"
		"              (batch V for uring_batch), e.g. -l pipe_rw=64,uring_batch=16\n",
		argv0);
}

static long parse_long(const char *s, const char *what, long min)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > INT_MAX) {
		fprintf(stderr, "bad %s '%s': want an integer >= %ld\n", what, s, min);
		exit(2);
	}
	return v;
}

/* Whether -l selects loop `name` at parameter `param` (its msg_bytes, or batch for
 * uring_batch; -1 for getpid). A token NAME selects every parameter, NAME=V only V. */
static int wanted(const char *name, long param)
{
	size_t len = strlen(name);

	if (!opt.only)
		return 1;
	for (const char *s = opt.only; *s;) {
		size_t tok = strcspn(s, ",");
		if (tok >= len && !strncmp(s, name, len)) {
			if (tok == len)
				return 1;
			if (s[len] == '=' && strtol(s + len + 1, NULL, 10) == param)
				return 1;
		}
		s += tok + (s[tok] == ',');
	}
	return 0;
}

static int check_loop_names(void)
{
	static const char *const names[] = { "getpid",     "pipe_rw",     "epoll_read",
					     "uring_pair", "uring_batch", "uring_sqpoll_pair" };

	if (!opt.only)
		return 0;
	for (const char *s = opt.only; *s;) {
		size_t tok = strcspn(s, ",");
		size_t name = strcspn(s, ",=");
		int ok = 0;
		for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
			ok |= strlen(names[i]) == name && !strncmp(s, names[i], name);
		if (ok && name < tok) { /* NAME=V: V must be a number */
			char *end;
			strtol(s + name + 1, &end, 10);
			ok = end != s + name + 1 && end == s + tok;
		}
		if (!ok) {
			fprintf(stderr, "unknown loop '%.*s'\n", (int)tok, s);
			return -1;
		}
		s += tok + (s[tok] == ',');
	}
	return 0;
}

/* Pins this thread to opt.cpu; picks the SQPOLL CPU from the CPUs allowed before pinning. */
static int pin(void)
{
	cpu_set_t allowed, set;

	if (sched_getaffinity(0, sizeof allowed, &allowed)) {
		perror("sched_getaffinity");
		return -1;
	}
	if (opt.cpu >= CPU_SETSIZE || !CPU_ISSET(opt.cpu, &allowed)) {
		fprintf(stderr, "CPU %d is not in this process's allowed set\n", opt.cpu);
		return -1;
	}
	if (opt.sq_cpu < 0)
		for (int c = 0; c < CPU_SETSIZE && opt.sq_cpu < 0; c++)
			if (c != opt.cpu && CPU_ISSET(c, &allowed))
				opt.sq_cpu = c;
	CPU_ZERO(&set);
	CPU_SET(opt.cpu, &set);
	if (sched_setaffinity(0, sizeof set, &set)) {
		fprintf(stderr, "sched_setaffinity(CPU %d): %s\n", opt.cpu, strerror(errno));
		return -1;
	}
	if (sched_getcpu() != opt.cpu) {
		fprintf(stderr, "pinned to CPU %d but running on %d\n", opt.cpu, sched_getcpu());
		return -1;
	}
	return 0;
}

static void clocksource(char *buf, size_t len)
{
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");

	snprintf(buf, len, "unknown");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = 0;
	else
		snprintf(buf, len, "unknown");
	fclose(f);
}

int main(int argc, char **argv)
{
	char cs[64];
	int c, fail = 0;

	while ((c = getopt(argc, argv, "c:s:r:n:w:l:h")) != -1) {
		switch (c) {
		case 'c': opt.cpu = (int)parse_long(optarg, "CPU", 0); break;
		case 's': opt.sq_cpu = (int)parse_long(optarg, "SQPOLL CPU", 0); break;
		case 'r': opt.runs = parse_long(optarg, "runs", 1); break;
		case 'n': opt.ops = parse_long(optarg, "ops", 1); break;
		case 'w': opt.warm = parse_long(optarg, "warm-up ops", 0); break;
		case 'l': opt.only = optarg; break;
		case 'h': usage(stdout, argv[0]); return 0;
		default: usage(stderr, argv[0]); return 2;
		}
	}
	if (optind != argc) {
		usage(stderr, argv[0]);
		return 2;
	}
	if (check_loop_names() || pin() || calibrate_timer())
		return 1;
	clocksource(cs, sizeof cs);
	printf("# micro_ref cpu=%d sq_cpu=%d runs=%ld ops=%ld warmup=%ld clocksource=%s "
	       "timer_overhead_ns=%llu\n",
	       opt.cpu, opt.sq_cpu, opt.runs, opt.ops, opt.warm, cs,
	       (unsigned long long)timer_overhead_ns);
	fflush(stdout);

	if (wanted("getpid", -1))
		fail |= bench_getpid();
	for (size_t i = 0; i < sizeof PIPE_SIZES / sizeof PIPE_SIZES[0]; i++)
		if (wanted("pipe_rw", (long)PIPE_SIZES[i]))
			fail |= bench_pipe_rw(PIPE_SIZES[i]);
	for (size_t i = 0; i < sizeof PIPE_SIZES / sizeof PIPE_SIZES[0]; i++)
		if (wanted("epoll_read", (long)PIPE_SIZES[i]))
			fail |= bench_epoll_read(PIPE_SIZES[i]);
	for (size_t i = 0; i < sizeof PIPE_SIZES / sizeof PIPE_SIZES[0]; i++)
		if (wanted("uring_pair", (long)PIPE_SIZES[i]))
			fail |= bench_uring("uring_pair", 1, PIPE_SIZES[i]);
	for (size_t i = 0; i < sizeof BATCH_SIZES / sizeof BATCH_SIZES[0]; i++)
		if (wanted("uring_batch", BATCH_SIZES[i]))
			fail |= bench_uring("uring_batch", BATCH_SIZES[i], BATCH_MSG_BYTES);
	if (wanted("uring_sqpoll_pair", SQPOLL_MSG_BYTES))
		fail |= bench_uring_sqpoll(SQPOLL_MSG_BYTES, opt.sq_cpu);
	return fail ? 1 : 0;
}
