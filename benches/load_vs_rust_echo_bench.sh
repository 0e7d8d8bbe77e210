#!/usr/bin/env bash
# ringside's load generator against rust_echo_bench, side by side, against the same echo server.
#
# Usage: benches/load_vs_rust_echo_bench.sh ECHO_BENCH_BINARY HOST:PORT [SECONDS]
#   ECHO_BENCH_BINARY: rust_echo_bench (github.com/haraldh/rust_echo_bench) built outside this
#                      repository (it is not vendored).
#   HOST:PORT:         a running echo server, pinned by you to the server CPU (e.g. `taskset -c 0
#                      ringside serve --protocol echo --model epoll-lt`).
# Env: CLIENT_CPU (default 1), SETTLE (seconds before the window, default 12).
#
# Each client runs pinned to CLIENT_CPU at 50 and 1000 connections, 64-byte messages, closed
# loop. Neither client's own count is used: rust_echo_bench counts the messages made while its
# 1000 threads are still being spawned (seconds on one CPU) but divides by its timer only, so
# its own figure overstates. Both are measured the same way from outside instead: after SETTLE
# seconds, the bytes the clients' sockets received (`ss -ti`, bytes_received) and the client
# process's CPU (/proc/PID/stat, user + sys) over a SECONDS window. Nothing is asserted: the
# figures are printed.
set -euo pipefail
REB=${1:?rust_echo_bench binary}
ADDR=${2:?HOST:PORT of the echo server}
D=${3:-4}
CPU=${CLIENT_CPU:-1}
SETTLE=${SETTLE:-12}
RS=$(dirname "$0")/../target/release/ringside
[ -x "$RS" ] || RS=${CARGO_TARGET_DIR:-target}/release/ringside
HZ=$(getconf CLK_TCK)

rx_bytes() {
    ss -tin dst "$ADDR" | grep -o 'bytes_received:[0-9]*' | awk -F: '{s += $2} END {print s + 0}'
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# measure NAME PID: msgs/s and client CPU over the window.
measure() {
    sleep "$SETTLE"
    local r0 c0 t0 r1 c1 t1
    r0=$(rx_bytes); c0=$(cpu_ticks "$2"); t0=$(date +%s.%N)
    sleep "$D"
    r1=$(rx_bytes); c1=$(cpu_ticks "$2"); t1=$(date +%s.%N)
    awk -v n="$1" -v c="$CONNS" -v r="$((r1 - r0))" -v k="$((c1 - c0))" -v hz="$HZ" \
        -v t0="$t0" -v t1="$t1" 'BEGIN {
            dt = t1 - t0; m = r / 64 / dt; cpu = k / hz / dt;
            printf "%-16s conns=%-5d msgs/s %8.0f   client CPU %3.0f%%   CPU/msg %5.1f us\n",
                n, c, m, cpu * 100, (m > 0 ? cpu / m * 1e6 : 0) }'
}

for CONNS in 50 1000; do
    echo "== $CONNS connections, 64 B, window $D s after $SETTLE s, client on CPU $CPU"
    taskset -c "$CPU" "$RS" load --protocol echo --target "$ADDR" --conns "$CONNS" \
        --msg-bytes 64 --duration $((SETTLE + D + 5)) --warmup 0 --cpus "$CPU" >/dev/null &
    pid=$!
    measure "ringside load" "$pid"
    kill "$pid"; wait "$pid" 2>/dev/null || true
    taskset -c "$CPU" "$REB" -a "$ADDR" -c "$CONNS" -l 64 -t $((SETTLE + D + 5)) >/dev/null &
    pid=$!
    measure "rust_echo_bench" "$pid"
    kill "$pid"; wait "$pid" 2>/dev/null || true
done
