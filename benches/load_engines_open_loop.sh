#!/usr/bin/env bash
# Open-loop latency of ringside's two load engines, paired: `ringside load --rate R --engine E`
# for E in epoll and uring against the C epoll echo server (benches/reference/echo_epoll.c),
# in rounds that run both engines once each in a shuffled order.
#
# Usage: benches/load_engines_open_loop.sh
# Env: RATES     messages/s over all connections, space-separated (default "10000 30000")
#      CONNS     connections (default 50)
#      RUNS      rounds (default 5)
#      D, W      measured and warm-up seconds of every run, integers (default 3 and 1)
#      SERVER_CPU, CLIENT_CPU   where the server and the load generator are pinned (default 0, 1)
#      RINGSIDE  the ringside binary (default target/release/ringside of this repository)
#      REF_DIR   prebuilt reference programs (benches/reference/build.sh DIR), else built here
# Needs gcc and liburing's headers (build.sh builds every reference program), jq, taskset and
# shuf. Takes about |RATES| x RUNS x 2 x (D + W + 1) seconds.
#
# Each run's latency runs from every message's intended send time (a late send is still timed
# from when it was due). Printed per rate: each engine's median over rounds of p50, p99 and
# p99.9 (with min and max), the achieved rate, and the median over rounds of the paired ratio
# uring/epoll of p50 and p99 (below 1: the io_uring engine's latency was lower). Nothing is
# asserted: the figures are printed. A run with errors or unverified responses stops the
# script with exit status 1; bad settings exit 2.
set -euo pipefail

RATES=${RATES:-10000 30000}
CONNS=${CONNS:-50}
RUNS=${RUNS:-5}
D=${D:-3}
W=${W:-1}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}

bad() { echo "load_engines_open_loop.sh: bad $1='$2': $3" >&2; exit 2; }
is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }
is_uint "$RUNS" && [ "$RUNS" -ge 1 ] || bad RUNS "$RUNS" "a number of rounds, >= 1"
is_uint "$CONNS" && [ "$CONNS" -ge 1 ] || bad CONNS "$CONNS" "connections, >= 1"
is_uint "$D" && [ "$D" -ge 1 ] || bad D "$D" "whole seconds, >= 1"
is_uint "$W" || bad W "$W" "whole seconds, >= 0"
is_uint "$SERVER_CPU" || bad SERVER_CPU "$SERVER_CPU" "a CPU number"
is_uint "$CLIENT_CPU" || bad CLIENT_CPU "$CLIENT_CPU" "a CPU number"
read -ra rates <<<"$RATES"
[ ${#rates[@]} -ge 1 ] || bad RATES "$RATES" "messages/s, e.g. \"10000 30000\""
for r in "${rates[@]}"; do
    is_uint "$r" && [ "$r" -ge 1 ] || bad RATES "$RATES" "each a whole number of messages/s"
done
for tool in jq taskset shuf; do
    command -v "$tool" >/dev/null || { echo "load_engines_open_loop.sh: needs $tool" >&2; exit 1; }
done

here=$(cd "$(dirname "$0")" && pwd)
bench=load_engines_open_loop.sh
# shellcheck source=benches/lib/reference_server.sh
. "$here/lib/reference_server.sh"
repo=$(cd "$here/.." && pwd)
RS=${RINGSIDE:-$repo/target/release/ringside}
[ -x "$RS" ] || { echo "load_engines_open_loop.sh: no ringside at $RS: cargo build --release, or set RINGSIDE" >&2; exit 1; }

tmp=$(mktemp -d /tmp/ringside-load-open.XXXXXX)
server_pid=
cleanup() {
    trap - EXIT INT TERM
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

reference_programs "$tmp"
# A copy: a rebuild during the run must not replace the binary being measured.
cp "$RS" "$tmp/ringside"
start_reference_server echo_epoll "$SERVER_CPU" "$tmp"
echo "server echo_epoll on $addr (CPU $SERVER_CPU), load on CPU $CLIENT_CPU, $CONNS connections," \
    "64 B, open loop, $D s after $W s warm-up"

# Rows: RATE ENGINE ROUND P50_US P99_US P999_US ACHIEVED
results=$tmp/results
: >"$results"
for rate in "${rates[@]}"; do
    for round in $(seq "$RUNS"); do
        for e in $(shuf -e epoll uring); do
            rc=0
            timeout -k 5 $((D + W + 30)) "$tmp/ringside" load --protocol echo --target "$addr" \
                --conns "$CONNS" --rate "$rate" --duration "$D" --warmup "$W" --cpus "$CLIENT_CPU" \
                --threads 1 --engine "$e" --json "$tmp/run.json" >"$tmp/run.out" 2>&1 || rc=$?
            errors=$(jq -r '.errors // 1' "$tmp/run.json" 2>/dev/null || echo 1)
            if [ "$rc" -ne 0 ] || [ "$errors" != 0 ]; then
                echo "load_engines_open_loop.sh: rate $rate $e failed (exit $rc, $errors errors):" >&2
                tail -n 20 "$tmp/run.out" >&2
                exit 1
            fi
            jq -r --arg r "$rate" --arg e "$e" --arg n "$round" \
                '"\($r) \($e) \($n) \(.latency_ns.p50 / 1000) \(.latency_ns.p99 / 1000) \(.latency_ns.p999 / 1000) \(.msgs_per_sec)"' \
                "$tmp/run.json" >>"$results"
            tail -n 1 "$results" |
                awk '{ printf "  rate %s round %s %-5s p50 %7.1f us  p99 %8.1f us  p99.9 %8.1f us  achieved %.0f/s\n", $1, $3, $2, $4, $5, $6, $7 }'
        done
    done
done

stats() {
    sort -g | awk '{ v[NR] = $1 } END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; print m, v[1], v[NR] }'
}
echo
for rate in "${rates[@]}"; do
    for e in epoll uring; do
        line="rate $rate $e:"
        for col in 4 5 6; do
            read -r m lo hi < <(awk -v r="$rate" -v e="$e" -v c="$col" '$1 == r && $2 == e { print $c }' "$results" | stats)
            name=$([ "$col" = 4 ] && echo p50 || { [ "$col" = 5 ] && echo p99 || echo p99.9; })
            line+=$(printf '  %s %.1f us (%.1f .. %.1f)' "$name" "$m" "$lo" "$hi")
        done
        read -r a _ _ < <(awk -v r="$rate" -v e="$e" '$1 == r && $2 == e { print $7 }' "$results" | stats)
        echo "$line  achieved $(printf '%.0f' "$a")/s"
    done
    for col in 4 5; do
        read -r m lo hi < <(awk -v r="$rate" -v c="$col" '$1 == r && $2 == "epoll" { ep[$3] = $c }
            $1 == r && $2 == "uring" { ur[$3] = $c }
            END { for (k in ur) if (k in ep && ep[k] > 0) print ur[k] / ep[k] }' "$results" | stats)
        printf 'rate %s uring/epoll %s paired per round: median %.3f (%.3f .. %.3f)\n' "$rate" \
            "$([ "$col" = 4 ] && echo p50 || echo p99)" "$m" "$lo" "$hi"
    done
done
