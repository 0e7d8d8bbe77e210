#!/bin/sh
# Counts the syscalls each micro_ref loop makes per op, from outside the process, with
# `perf stat` on the raw_syscalls:sys_enter tracepoint (also io_uring_enter and clock_gettime
# separately: the latter should be 0, i.e. the clock is read through the vDSO).
#
#   benches/reference/count_syscalls.sh [MICRO_REF] [CPU]
#       MICRO_REF  default target/reference/micro_ref; CPU default 1
#
# Each loop runs twice, with N1 and N2 ops per run; everything but the measured ops (start-up,
# calibration, pipe and ring set-up, warm-up) is the same in both runs and cancels out:
#   syscalls per op = (count(N2) - count(N1)) / (2 variants * RUNS * (N2 - N1))
# N1 and N2 are multiples of 64 so uring_batch runs whole batches. Needs perf and permission
# to use tracepoints (root, or kernel.perf_event_paranoid <= 1 with tracefs readable).
# The times these runs print are not meaningful: an enabled syscall tracepoint slows every
# syscall on the machine.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
bin=${1:-"$repo/target/reference/micro_ref"}
cpu=${2:-1}
runs=4
n1=1024
n2=3072

if ! command -v perf >/dev/null 2>&1; then
    echo "count_syscalls.sh: perf not found (Debian: apt-get install linux-perf)" >&2
    exit 1
fi
[ -x "$bin" ] || { echo "count_syscalls.sh: $bin not built (run build.sh)" >&2; exit 1; }

events=raw_syscalls:sys_enter,syscalls:sys_enter_io_uring_enter,syscalls:sys_enter_clock_gettime

# count N LOOP -> "all io_uring_enter clock_gettime"
count() {
    perf stat -x, -e "$events" "$bin" -c "$cpu" -r "$runs" -n "$1" -w 1000 -l "$2" \
        2>&1 >/dev/null | awk -F, '
        $3 == "raw_syscalls:sys_enter" { a = $1 }
        $3 == "syscalls:sys_enter_io_uring_enter" { u = $1 }
        $3 == "syscalls:sys_enter_clock_gettime" { c = $1 }
        END { if (a == "" || a ~ /not/) exit 1; print a, u, c }'
}

for loop in getpid \
    pipe_rw=64 pipe_rw=256 pipe_rw=1024 pipe_rw=4096 pipe_rw=16384 \
    epoll_read=64 epoll_read=256 epoll_read=1024 epoll_read=4096 epoll_read=16384 \
    uring_pair=64 uring_pair=256 uring_pair=1024 uring_pair=4096 uring_pair=16384 \
    uring_batch=1 uring_batch=4 uring_batch=16 uring_batch=64 \
    uring_sqpoll_pair=64; do
    if ! c1=$(count "$n1" "$loop") || ! c2=$(count "$n2" "$loop"); then
        echo "loop=$loop syscalls_per_op=unavailable: perf stat on tracepoints failed"
        continue
    fi
    # shellcheck disable=SC2086
    set -- $c1 $c2
    awk -v a1="$1" -v u1="$2" -v c1="$3" -v a2="$4" -v u2="$5" -v c2="$6" \
        -v loop="$loop" -v ops=$((2 * runs * (n2 - n1))) 'BEGIN {
        printf "loop=%s syscalls_per_op=%.3f io_uring_enter_per_op=%.3f clock_gettime_syscalls=%d\n",
            loop, (a2 - a1) / ops, (u2 - u1) / ops, c1 + c2 }'
done
