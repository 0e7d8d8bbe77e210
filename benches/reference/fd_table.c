/*
 * fd_table.c: what sharing a file-descriptor table between threads costs a pipe loop.
 *
 * Two threads pinned to one CPU take turns, ROUNDS times: each runs BATCH write(2)+read(2)
 * pairs of 64 bytes through its own pipe and records the batch's median pair time. The main
 * thread shares its table with an idle third thread (as every thread of a multi-threaded
 * program does); the other has called unshare(CLONE_FILES) and has a table of its own (as a
 * single-threaded program has). On a shared table the kernel takes and drops a reference on
 * the file for each fd syscall; on a private one it borrows it.
 *
 *   benches/reference/fd_table [-c CPU]
 *
 * prints: shared_p50_ns=... private_p50_ns=... private_faster=N/ROUNDS
 * (p50s: the median over the rounds of each batch's median). Build: benches/reference/build.sh.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { BATCH = 5000, WARM = 500, ROUNDS = 300, MSG = 64 };

static int cpu = 1;
static sem_t go, done;
static uint64_t private_p50[ROUNDS];

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void pin(void)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	if (sched_setaffinity(0, sizeof s, &s)) {
		perror("sched_setaffinity");
		exit(1);
	}
}

static void open_pipe(int fd[2])
{
	if (pipe2(fd, O_CLOEXEC)) {
		perror("pipe2");
		exit(1);
	}
}

/* One batch on pipe fd; returns the median write+read time, ns. Exits on a short transfer. */
static uint64_t batch(const int fd[2])
{
	static __thread uint64_t d[BATCH];
	char out[MSG], in[MSG];

	memset(out, 7, sizeof out);
	for (int i = 0; i < WARM + BATCH; i++) {
		uint64_t t0 = now_ns();

		if (write(fd[1], out, MSG) != MSG || read(fd[0], in, MSG) != MSG) {
			perror("pipe write/read");
			exit(1);
		}
		if (i >= WARM)
			d[i - WARM] = now_ns() - t0;
	}
	if (memcmp(out, in, MSG)) {
		fprintf(stderr, "pipe: bytes differ\n");
		exit(1);
	}
	qsort(d, BATCH, sizeof d[0], cmp_u64);
	return d[BATCH / 2];
}

static void *idle(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

static void *private_table(void *arg)
{
	int fd[2];

	(void)arg;
	pin();
	if (unshare(CLONE_FILES)) {
		perror("unshare(CLONE_FILES)");
		exit(1);
	}
	open_pipe(fd);
	for (int r = 0; r < ROUNDS; r++) {
		sem_wait(&go);
		private_p50[r] = batch(fd);
		sem_post(&done);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static uint64_t shared_p50[ROUNDS];
	pthread_t t;
	int fd[2], faster = 0, opt;

	while ((opt = getopt(argc, argv, "c:")) != -1) {
		if (opt != 'c') {
			fprintf(stderr, "usage: %s [-c CPU]\n", argv[0]);
			return 2;
		}
		cpu = atoi(optarg);
	}
	pin();
	sem_init(&go, 0, 0);
	sem_init(&done, 0, 0);
	if (pthread_create(&t, NULL, idle, NULL) || pthread_create(&t, NULL, private_table, NULL)) {
		fprintf(stderr, "pthread_create failed\n");
		return 1;
	}
	open_pipe(fd);
	for (int r = 0; r < ROUNDS; r++) {
		shared_p50[r] = batch(fd);
		sem_post(&go);
		sem_wait(&done);
		faster += private_p50[r] < shared_p50[r];
	}
	qsort(shared_p50, ROUNDS, sizeof shared_p50[0], cmp_u64);
	qsort(private_p50, ROUNDS, sizeof private_p50[0], cmp_u64);
	printf("shared_p50_ns=%llu private_p50_ns=%llu private_faster=%d/%d\n",
	       (unsigned long long)shared_p50[ROUNDS / 2], (unsigned long long)private_p50[ROUNDS / 2],
	       faster, ROUNDS);
	return 0;
}
