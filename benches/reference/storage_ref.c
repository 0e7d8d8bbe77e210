/*
 * Plain-C reference for storage.page_cycle: for each 4 KiB page of a fresh file, write it,
 * fsync, read it back and compare. `blocking`: pwrite/fsync/pread. `uring`: write -> fsync ->
 * read linked with IOSQE_IO_LINK, DEPTH pages per batch, one io_uring_submit_and_wait per
 * batch (liburing). Prints wall time and pages/s per run, so ringside's page_cycle can be
 * held to a bare loop on the same disk.
 *
 *   gcc -O2 -Wall -o target/reference/storage_ref benches/reference/storage_ref.c -luring
 *   target/reference/storage_ref DIR [PAGES=2048] [DEPTH=256] [RUNS=3]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void fill(unsigned char *b, long page) {
    for (int i = 0; i < PAGE; i++) b[i] = (unsigned char)(page * 31 + i);
}

static int open_fresh(const char *path) {
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) { perror(path); exit(1); }
    return fd;
}

static double blocking(const char *path, long pages) {
    int fd = open_fresh(path);
    unsigned char w[PAGE], r[PAGE];
    double t0 = now_s();
    for (long p = 0; p < pages; p++) {
        fill(w, p);
        if (pwrite(fd, w, PAGE, p * PAGE) != PAGE || fsync(fd) ||
            pread(fd, r, PAGE, p * PAGE) != PAGE || memcmp(w, r, PAGE)) {
            fprintf(stderr, "blocking: page %ld failed\n", p); exit(1);
        }
    }
    double t = now_s() - t0;
    close(fd); unlink(path);
    return t;
}

static double uring(const char *path, long pages, int depth) {
    int fd = open_fresh(path);
    struct io_uring ring;
    if (io_uring_queue_init(3 * depth, &ring, 0)) { perror("io_uring_queue_init"); exit(1); }
    unsigned char *w = aligned_alloc(PAGE, (size_t)depth * PAGE);
    unsigned char *r = aligned_alloc(PAGE, (size_t)depth * PAGE);
    double t0 = now_s();
    for (long p = 0; p < pages; p += depth) {
        int k = pages - p < depth ? (int)(pages - p) : depth;
        for (int j = 0; j < k; j++) {
            fill(w + j * PAGE, p + j);
            struct io_uring_sqe *s = io_uring_get_sqe(&ring);
            io_uring_prep_write(s, fd, w + j * PAGE, PAGE, (p + j) * PAGE);
            s->flags |= IOSQE_IO_LINK;
            s = io_uring_get_sqe(&ring);
            io_uring_prep_fsync(s, fd, 0);
            s->flags |= IOSQE_IO_LINK;
            s = io_uring_get_sqe(&ring);
            io_uring_prep_read(s, fd, r + j * PAGE, PAGE, (p + j) * PAGE);
        }
        if (io_uring_submit_and_wait(&ring, 3 * k) < 0) { perror("submit"); exit(1); }
        struct io_uring_cqe *c;
        for (int i = 0; i < 3 * k; i++) {
            if (io_uring_peek_cqe(&ring, &c) || c->res < 0) {
                fprintf(stderr, "uring: batch at page %ld failed\n", p); exit(1);
            }
            io_uring_cqe_seen(&ring, c);
        }
        if (memcmp(w, r, (size_t)k * PAGE)) { fprintf(stderr, "uring: data differs\n"); exit(1); }
    }
    double t = now_s() - t0;
    io_uring_queue_exit(&ring);
    free(w); free(r); close(fd); unlink(path);
    return t;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s DIR [PAGES] [DEPTH] [RUNS]\n", argv[0]); return 2; }
    long pages = argc > 2 ? atol(argv[2]) : 2048;
    int depth = argc > 3 ? atoi(argv[3]) : 256;
    int runs = argc > 4 ? atoi(argv[4]) : 3;
    char path[4096];
    snprintf(path, sizeof path, "%s/storage_ref.%d", argv[1], getpid());
    for (int i = 0; i < runs; i++) {
        double b = blocking(path, pages), u = uring(path, pages, depth);
        printf("run %d: %ld pages  blocking %.3f s (%.0f pages/s)  uring depth %d %.3f s (%.0f pages/s)\n",
               i, pages, b, pages / b, depth, u, pages / u);
    }
    return 0;
}
