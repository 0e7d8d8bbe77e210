#!/usr/bin/env bash
# ringside's load generator engines against the hand-written C load client
# (benches/reference/echo_client.c), both driving the C epoll echo server
# (benches/reference/echo_epoll.c) with the same closed loop from the same CPU.
#
# Usage: benches/load_engines.sh
# Env: CONNS     connection counts, space-separated (default "50 1000")
#      RUNS      interleaved rounds (default 5)
#      D, W      measured and warm-up seconds of every run, integers (default 5 and 1)
#      ENGINES   ringside load engines, space-separated (default "epoll uring"); `none` runs
#                `ringside load` without --engine (its default engine, for builds without
#                the flag), shown as `ringside`
#      SERVER_CPU, CLIENT_CPU   where the server and every client are pinned (default 0, 1)
#      RINGSIDE  the ringside binary (default target/release/ringside of this repository)
#      REF_DIR   prebuilt reference programs (benches/reference/build.sh DIR), else built here
# Needs gcc and liburing's headers (build.sh builds every reference program), jq, taskset,
# shuf and timeout. Takes about RUNS x |CONNS| x (1 + |ENGINES|) x (D + W + 1) seconds.
#
# For each connection count: RUNS rounds, each running every client once in a shuffled order:
# `echo_client -c N -m 64 -d D -w W -p CLIENT_CPU`, and `ringside load --protocol echo
# --conns N --msg-bytes 64 --duration D --warmup W --cpus CLIENT_CPU --threads 1 --engine E`
# for each E. From each run: msgs/s = msgs x 1e9 / window_ns and the client's CPU per message,
# cpu_ns / msgs, over the measured window (each client's own figures: both count messages
# completed inside the window after the warm-up and read their threads' CPU-time clocks).
# Printed per connection count and client: the median over rounds with min and max, and its
# ratio to the C client's median; with both `epoll` and `uring` among the engines, also the
# median over rounds of the paired ratio uring/epoll (the two runs of one round). Each run's
# line also shows how busy the client was (CPU / window): well under 100%, the server set the
# pace and msgs/s says little about the client; its CPU per message still does. Nothing is
# asserted: the figures are printed. A client that fails (an echo that does not verify, a
# lost connection) stops the script with exit status 1; bad settings exit 2.
set -euo pipefail

CONNS=${CONNS:-50 1000}
RUNS=${RUNS:-5}
D=${D:-5}
W=${W:-1}
ENGINES=${ENGINES:-epoll uring}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
MSG_BYTES=64

bad() { echo "load_engines.sh: bad $1='$2': $3" >&2; exit 2; }
is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }
# uint_in V LO [HI]: V is a whole number, LO <= V (<= HI).
uint_in() { is_uint "$1" && [ "$1" -ge "$2" ] && [ "$1" -le "${3:-$1}" ]; }
uint_in "$RUNS" 1 || bad RUNS "$RUNS" "a number of rounds, >= 1"
uint_in "$D" 1 || bad D "$D" "whole seconds, >= 1"
is_uint "$W" || bad W "$W" "whole seconds, >= 0"
is_uint "$SERVER_CPU" || bad SERVER_CPU "$SERVER_CPU" "a CPU number"
is_uint "$CLIENT_CPU" || bad CLIENT_CPU "$CLIENT_CPU" "a CPU number"
read -ra conns_list <<<"$CONNS"
read -ra engines <<<"$ENGINES"
[ ${#conns_list[@]} -ge 1 ] || bad CONNS "$CONNS" "connection counts, e.g. \"50 1000\""
for n in "${conns_list[@]}"; do
    uint_in "$n" 1 100000 || bad CONNS "$CONNS" "each 1..100000"
done
[ ${#engines[@]} -ge 1 ] || bad ENGINES "$ENGINES" "engine names, e.g. \"epoll uring\", or none"
for e in "${engines[@]}"; do
    [[ $e =~ ^[a-z0-9-]+$ ]] || bad ENGINES "$ENGINES" "engine names, e.g. \"epoll uring\", or none"
done
for tool in jq taskset shuf timeout; do
    command -v "$tool" >/dev/null || { echo "load_engines.sh: needs $tool" >&2; exit 1; }
done

here=$(cd "$(dirname "$0")" && pwd)
bench=load_engines.sh
# shellcheck source=benches/lib/reference_server.sh
. "$here/lib/reference_server.sh"
repo=$(cd "$here/.." && pwd)
RS=${RINGSIDE:-$repo/target/release/ringside}
[ -x "$RS" ] || { echo "load_engines.sh: no ringside at $RS: cargo build --release, or set RINGSIDE" >&2; exit 1; }

tmp=$(mktemp -d /tmp/ringside-load-engines.XXXXXX)
server_pid=
client_pid=
cleanup() {
    trap - EXIT INT TERM
    # timeout(1) runs its command in a process group of its own, out of reach of the
    # terminal's Ctrl-C: stop the client in flight here (timeout passes the signal on).
    if [ -n "$client_pid" ]; then kill "$client_pid" 2>/dev/null || true; wait "$client_pid" 2>/dev/null || true; fi
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

labels=(C)
for e in "${engines[@]}"; do
    if [ "$e" = none ]; then labels+=(ringside); else labels+=("$e"); fi
done
limit=$((D + W + 30)) # per run: the clients' own warm-up grace (10 s) and start-up, with margin
runs_total=$((RUNS * ${#conns_list[@]} * ${#labels[@]}))
echo "server echo_epoll on $addr (CPU $SERVER_CPU), clients on CPU $CLIENT_CPU, $MSG_BYTES B closed loop," \
    "$D s after $W s warm-up; $runs_total runs, about $((runs_total * (D + W + 1))) s"
echo "ringside: $RS"

# run_client CONNS LABEL: one run; appends "msgs window_ns cpu_ns" to $tmp/out.
run_client() {
    local n=$1 label=$2 rc=0
    kill -0 "$server_pid" 2>/dev/null || { echo "load_engines.sh: the server exited:" >&2; cat "$tmp/server.err" >&2; exit 1; }
    if [ "$label" = C ]; then
        timeout -k 5 "$limit" "$tmp/echo_client" -c "$n" -m "$MSG_BYTES" -d "$D" -w "$W" \
            -p "$CLIENT_CPU" "$addr" >"$tmp/run.out" 2>"$tmp/run.err" &
    else
        local engine_args=()
        [ "$label" = ringside ] || engine_args=(--engine "$label")
        rm -f "$tmp/run.json"
        timeout -k 5 "$limit" "$tmp/ringside" load --protocol echo --target "$addr" --conns "$n" \
            --msg-bytes "$MSG_BYTES" --duration "$D" --warmup "$W" --cpus "$CLIENT_CPU" --threads 1 \
            "${engine_args[@]}" --json "$tmp/run.json" >"$tmp/run.out" 2>"$tmp/run.err" &
    fi
    client_pid=$!
    wait "$client_pid" || rc=$?
    client_pid=
    if [ "$rc" -ne 0 ]; then
        echo "load_engines.sh: conns=$n $label failed (exit status $rc):" >&2
        tail -n 20 "$tmp/run.err" "$tmp/run.out" >&2
        exit 1
    fi
    if [ "$label" != C ]; then
        # ringside load exits 0 when connections were lost (it counts them, as wrk does); the C
        # client fails on the first, so a run with errors fails here too.
        local errors
        errors=$(jq -r '.errors // 0' "$tmp/run.json")
        if [ "$errors" != 0 ]; then
            echo "load_engines.sh: conns=$n $label: $errors errors in the window, the first:" \
                "$(jq -r '(.report.first_error // .first_error) // "none recorded"' "$tmp/run.json")" >&2
            exit 1
        fi
    fi
    if [ "$label" = C ]; then
        sed -n 's/^msgs=\([0-9]*\) window_ns=\([0-9]*\) msgs_per_sec=[0-9.]* cpu_ns=\([0-9]*\)$/\1 \2 \3/p' \
            "$tmp/run.out"
    else
        # The report's counts: top-level, or under "report" (ringside load --json of this tree).
        jq -r '(if has("report") then .report else . end) as $r | "\($r.msgs) \($r.window_ns) \($r.cpu_ns)"' \
            "$tmp/run.json"
    fi >"$tmp/out"
    read -r msgs window_ns cpu_ns <"$tmp/out" || true
    if ! { uint_in "${msgs:-}" 1 && uint_in "${window_ns:-}" 1 && is_uint "${cpu_ns:-}"; }; then
        echo "load_engines.sh: conns=$n $label: no figures in its output:" >&2
        cat "$tmp/run.out" >&2
        exit 1
    fi
}

# Rows: CONNS LABEL ROUND MSGS_PER_SEC CPU_US_PER_MSG CLIENT_BUSY_FRACTION
results=$tmp/results
: >"$results"
for n in "${conns_list[@]}"; do
    for round in $(seq "$RUNS"); do
        mapfile -t order < <(shuf -e "${labels[@]}")
        for label in "${order[@]}"; do
            run_client "$n" "$label"
            awk -v n="$n" -v l="$label" -v r="$round" -v m="$msgs" -v w="$window_ns" -v c="$cpu_ns" \
                'BEGIN { printf "%s %s %s %.1f %.4f %.4f\n", n, l, r, m * 1e9 / w, c / m / 1000, c / w }' >>"$results"
            tail -n 1 "$results" |
                awk '{ printf "  conns=%s round %s %-8s %9.0f msgs/s %7.3f us/msg  client busy %3.0f%%\n", $1, $3, $2, $4, $5, $6 * 100 }'
        done
    done
done

# stats COLUMN: "median min max" of the numbers on stdin's COLUMN.
stats() {
    sort -g -k "$1,$1" | awk -v k="$1" '{ v[NR] = $k }
        END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; print m, v[1], v[NR] }'
}

echo
for n in "${conns_list[@]}"; do
    read -r c_mps _ _ < <(awk -v n="$n" '$1 == n && $2 == "C"' "$results" | stats 4)
    read -r c_cpu _ _ < <(awk -v n="$n" '$1 == n && $2 == "C"' "$results" | stats 5)
    for label in "${labels[@]}"; do
        read -r mps mps_lo mps_hi < <(awk -v n="$n" -v l="$label" '$1 == n && $2 == l' "$results" | stats 4)
        read -r cpu cpu_lo cpu_hi < <(awk -v n="$n" -v l="$label" '$1 == n && $2 == l' "$results" | stats 5)
        awk -v n="$n" -v l="$label" -v m="$mps" -v lo="$mps_lo" -v hi="$mps_hi" -v cm="$c_mps" \
            -v u="$cpu" -v ulo="$cpu_lo" -v uhi="$cpu_hi" -v cu="$c_cpu" 'BEGIN {
            printf "conns=%-5s %-8s median %8.0f msgs/s (%.0f .. %.0f) %5.2fx C   cpu %6.3f us/msg (%.3f .. %.3f) %5.2fx C\n",
                n, l, m, lo, hi, m / cm, u, ulo, uhi, u / cu }'
    done
    if [[ " ${labels[*]} " == *" epoll "* && " ${labels[*]} " == *" uring "* ]]; then
        read -r ratio ratio_lo ratio_hi < <(awk -v n="$n" '$1 == n && $2 == "epoll" { e[$3] = $4 }
            $1 == n && $2 == "uring" { u[$3] = $4 }
            END { for (r in u) if (r in e) print u[r] / e[r] }' "$results" | stats 1)
        printf 'conns=%-5s uring/epoll paired per round: median %.3f (%.3f .. %.3f)\n' "$n" "$ratio" "$ratio_lo" "$ratio_hi"
    fi
done
