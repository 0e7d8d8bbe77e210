#!/usr/bin/env bash
# Server CPU per echo message of two ringside builds, interleaved: issue 13's before/after
# figure for the typed server counters (string-keyed map vs plain integer fields).
#
# For each model, ROUNDS rounds; each round runs both builds, OLD first in odd rounds and NEW
# first in even ones. One run: `ringside serve --protocol echo --model M` pinned to SERVER_CPU
# (taskset), `ringside load` pinned to LOAD_CPU (--cpus) with CONNS connections of MSG-byte
# messages for WARMUP + DURATION seconds. The figure is the server's CPU over the load's whole
# life (utime + stime of the server process from /proc/PID/stat, read just before the load
# starts and just after it ends) divided by the messages it echoed (its own counters line at
# SIGTERM: bytes_out / MSG). The server serves nothing else, so both cover the same traffic.
#
# Usage: benches/counters_before_after.sh OLD_RINGSIDE NEW_RINGSIDE [ROUNDS]   (ROUNDS: 5)
# Env:   MODELS     models, space- or comma-separated (default "epoll-lt uring-tuned")
#        DURATION   measured seconds per run (default 5); WARMUP (default 1)
#        CONNS      connections (default 50); MSG bytes per message (default 64)
#        SERVER_CPU (default 1), LOAD_CPU (default 0)
#        RATE       offered messages/s over all connections (default 40000; 0: closed loop). At
#                   a fixed rate both builds serve the same traffic, so the figure is the server's
#                   CPU per message at equal offered load, not a closed loop's coupled pair.
# The load generator is always OLD's `ringside load`, so only the server differs between runs.
# Takes /tmp/ringside-bench.lock for the whole run. Prints one line per run, then per model the
# median and mean ns of server CPU per message of each build and NEW/OLD of the medians.
# Resolution: USER_HZ ticks (10 ms) over DURATION s; at 5 s that is about 0.2% of a busy CPU.
set -euo pipefail

if [ $# -lt 2 ]; then
    sed -n '2,21p' "$0" >&2
    exit 2
fi
if [ -z "${RINGSIDE_BENCH_LOCKED:-}" ]; then
    exec env RINGSIDE_BENCH_LOCKED=1 flock /tmp/ringside-bench.lock "$0" "$@"
fi

OLD=$1
NEW=$2
ROUNDS=${3:-5}
MODELS=${MODELS:-epoll-lt uring-tuned}
MODELS=${MODELS//,/ }
DURATION=${DURATION:-5}
RATE=${RATE:-40000}
WARMUP=${WARMUP:-1}
CONNS=${CONNS:-50}
MSG=${MSG:-64}
SERVER_CPU=${SERVER_CPU:-1}
LOAD_CPU=${LOAD_CPU:-0}
HZ=$(getconf CLK_TCK)

for b in "$OLD" "$NEW"; do
    [ -x "$b" ] || { echo "not an executable: $b" >&2; exit 2; }
done
case "$ROUNDS" in '' | *[!0-9]* | 0) echo "ROUNDS must be a positive integer, got '$ROUNDS'" >&2; exit 2 ;; esac

tmp=$(mktemp -d /tmp/ringside-counters.XXXXXX)
server_pid=
cleanup() {
    [ -n "$server_pid" ] && kill -KILL "$server_pid" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# Copies: a rebuild during the run must not replace a binary under test.
cp "$OLD" "$tmp/old"
cp "$NEW" "$tmp/new"

# utime + stime of a process (every thread, exited ones included), in ticks. The fields are
# counted after the ')' that ends the command name.
cpu_ticks() {
    local stat
    stat=$(cat "/proc/$1/stat")
    stat=${stat##*) }
    # shellcheck disable=SC2086
    set -- $stat
    echo $((${12} + ${13}))
}

# One run: prints "NS_PER_MSG MESSAGES".
run_one() {
    local bin=$1 model=$2 out="$tmp/serve.out" err="$tmp/serve.err" addr= i c0 c1 bytes
    : >"$out"
    taskset -c "$SERVER_CPU" "$bin" serve --protocol echo --model "$model" \
        --addr 127.0.0.1:0 >"$out" 2>"$err" &
    server_pid=$!
    for i in $(seq 100); do
        addr=$(sed -n 's/^listening on //p' "$out")
        [ -n "$addr" ] && break
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.1
    done
    if [ -z "$addr" ]; then
        echo "$model: the server did not start: $(tail -n 5 "$err")" >&2
        exit 1
    fi
    c0=$(cpu_ticks "$server_pid")
    local rate=()
    [ "$RATE" != 0 ] && rate=(--rate "$RATE")
    if ! "$tmp/old" load --protocol echo --target "$addr" --conns "$CONNS" --msg-bytes "$MSG" \
        --duration "$DURATION" --warmup "$WARMUP" --cpus "$LOAD_CPU" "${rate[@]}" \
        >"$tmp/load.out" 2>&1; then
        echo "$model: ringside load failed: $(tail -n 5 "$tmp/load.out")" >&2
        exit 1
    fi
    c1=$(cpu_ticks "$server_pid")
    kill -TERM "$server_pid"
    local st=0
    wait "$server_pid" || st=$?
    if [ "$st" -ne 0 ]; then
        echo "$model: the server exited with status $st on SIGTERM" >&2
        exit 1
    fi
    server_pid=
    bytes=$(grep -o '"bytes_out":[0-9]*' "$out" | head -n 1 | cut -d: -f2)
    if [ -z "$bytes" ] || [ "$bytes" -eq 0 ]; then
        echo "$model: no bytes_out in the server's counters line: $(tail -n 1 "$out")" >&2
        exit 1
    fi
    awk -v t=$((c1 - c0)) -v hz="$HZ" -v b="$bytes" -v m="$MSG" \
        'BEGIN { n = b / m; printf "%.1f %d\n", t * 1e9 / hz / n, n }'
}

results="$tmp/results"
: >"$results"
echo "server CPU per echo message: $CONNS connections, $MSG B, ${WARMUP}+${DURATION} s per run," \
    "server on CPU $SERVER_CPU, load on CPU $LOAD_CPU, $ROUNDS rounds"
echo "OLD = $OLD"
echo "NEW = $NEW"
echo "load = OLD's ringside load, ${RATE} msgs/s offered (0: closed loop)"
printf '%-14s %5s %5s %12s %12s\n' model round build ns/msg messages
for model in $MODELS; do
    for r in $(seq "$ROUNDS"); do
        if [ $((r % 2)) -eq 1 ]; then order="old new"; else order="new old"; fi
        for build in $order; do
            run_one "$tmp/$build" "$model" >"$tmp/one"
            read -r ns n <"$tmp/one"
            printf '%-14s %5d %5s %12s %12s\n' "$model" "$r" "$build" "$ns" "$n"
            echo "$model $build $ns" >>"$results"
        done
    done
done

echo
printf '%-14s %14s %14s %14s %14s %9s\n' model old_median new_median old_mean new_mean new/old
for model in $MODELS; do
    stats() { # build -> "median mean"
        awk -v m="$model" -v b="$1" '$1 == m && $2 == b { print $3 }' "$results" | sort -g |
            awk '{ v[NR] = $1; s += $1 }
                 END { med = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
                       printf "%.1f %.1f\n", med, s / NR }'
    }
    read -r om oa < <(stats old)
    read -r nm na < <(stats new)
    printf '%-14s %14s %14s %14s %14s %9s\n' "$model" "$om" "$nm" "$oa" "$na" \
        "$(awk -v o="$om" -v n="$nm" 'BEGIN { if (o > 0) printf "%.3f", n / o; else printf "-" }')"
done
