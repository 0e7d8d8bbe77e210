#!/usr/bin/env bash
# ringside's load generator against rust_echo_bench, side by side, against the same echo server.
#
# Usage: benches/load_vs_rust_echo_bench.sh ECHO_BENCH_BINARY HOST:PORT [SECONDS]
#   ECHO_BENCH_BINARY: rust_echo_bench (github.com/haraldh/rust_echo_bench) built outside this
#                      repository (it is not vendored).
#   HOST:PORT:         a running echo server, pinned by you to the server CPU (e.g. `taskset -c 0
#                      ringside serve --protocol echo --model epoll-et`).
# Env: CLIENT_CPU (default 1), RT (e.g. "chrt -f 10": run the clients SCHED_FIFO so that other
#      load on a shared machine does not decide the result; run the server the same way).
# Each client runs pinned to CLIENT_CPU at 50 and 1000 connections, 64-byte messages, closed
# loop, no warm-up; both are timed whole by /usr/bin/time (process CPU, user + sys) so the CPU
# comparison is like with like. Nothing is asserted: the figures are printed.
set -euo pipefail
REB=${1:?rust_echo_bench binary}
ADDR=${2:?HOST:PORT of the echo server}
D=${3:-10}
CPU=${CLIENT_CPU:-1}
RT=${RT:-}
RS=$(dirname "$0")/../target/release/ringside
[ -x "$RS" ] || RS=${CARGO_TARGET_DIR:-target}/release/ringside
for c in 50 1000; do
    echo "== $c connections, 64 B, $D s, client on CPU $CPU"
    # shellcheck disable=SC2086
    /usr/bin/time -f "ringside load: process CPU user %U s, sys %S s, wall %e s" \
        $RT taskset -c "$CPU" "$RS" load --protocol echo --target "$ADDR" --conns "$c" \
        --msg-bytes 64 --duration "$D" --warmup 0 --cpus "$CPU"
    # shellcheck disable=SC2086
    /usr/bin/time -f "rust_echo_bench: process CPU user %U s, sys %S s, wall %e s" \
        $RT taskset -c "$CPU" "$REB" -a "$ADDR" -c "$c" -l 64 -t "$D"
done
