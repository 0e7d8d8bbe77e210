#!/usr/bin/env bash
# ringside's HTTP load generator and wrk against the same server, where the server is the
# bottleneck: the server runs in a CPU cgroup capped at CAP% of one CPU, so neither load
# generator is saturated and both must measure the server's capacity. (Uncapped on two CPUs,
# each client saturates its CPU and the faster client wins: that compares the clients.)
#
# Usage: benches/loadgen_vs_wrk.sh [MODEL] [CONNS...]    (default: epoll-lt 50 1000)
# Env: CAP (percent of one CPU, default 40), ROUNDS (default 3), D (seconds, default 3),
#      SERVER_CPU (default 1), CLIENT_CPU (default 0).
# Needs root (a cgroup is made and removed), wrk, and ringside built (cargo build --release).
# Each round runs ringside's load and then wrk on the same warmed server; prints both
# requests/s, their difference, and each client's CPU. Nothing is asserted.
set -euo pipefail
MODEL=${1:-epoll-lt}
shift || true
CONNS=("$@")
[ "${#CONNS[@]}" -gt 0 ] || CONNS=(50 1000)
CAP=${CAP:-40}
ROUNDS=${ROUNDS:-3}
D=${D:-3}
SCPU=${SERVER_CPU:-1}
CCPU=${CLIENT_CPU:-0}
RS=$(cd "$(dirname "$0")/.." && pwd)/target/release/ringside
[ -x "$RS" ] || { echo "build ringside first: cargo build --release" >&2; exit 1; }
command -v wrk >/dev/null || { echo "wrk not installed (apt-get install wrk)" >&2; exit 1; }

# A cgroup with a CPU quota: v2 (cpu.max) or v1 (cpu.cfs_quota_us).
period=10000
quota=$((period * CAP / 100))
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    cg=/sys/fs/cgroup/ringside-cap.$$
    grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control ||
        echo +cpu >/sys/fs/cgroup/cgroup.subtree_control
    mkdir "$cg"
    echo "$quota $period" >"$cg/cpu.max"
else
    cg=/sys/fs/cgroup/cpu/ringside-cap.$$
    mkdir "$cg"
    echo "$period" >"$cg/cpu.cfs_period_us"
    echo "$quota" >"$cg/cpu.cfs_quota_us"
fi
pid=
cleanup() {
    [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rmdir "$cg" 2>/dev/null || true
}
trap cleanup EXIT

port=$((20000 + RANDOM % 20000))
(
    echo "$BASHPID" >"$cg/cgroup.procs"
    exec taskset -c "$SCPU" "$RS" serve --protocol http --model "$MODEL" --addr "127.0.0.1:$port"
) >/dev/null &
pid=$!
for _ in $(seq 50); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
done
json=$(mktemp)
echo "== $MODEL capped at $CAP% of CPU $SCPU; clients on CPU $CCPU, $D s per run"
for c in "${CONNS[@]}"; do
    for _ in $(seq "$ROUNDS"); do
        "$RS" load --protocol http --target "127.0.0.1:$port" --conns "$c" --duration "$D" \
            --warmup 0.5 --cpus "$CCPU" --json "$json" >/dev/null
        ours=$(sed -n 's/.*"requests_per_sec": *\([0-9.]*\).*/\1/p' "$json" | head -1)
        ours_cpu=$(sed -n 's/.*"cpu_fraction": *\([0-9.]*\).*/\1/p' "$json" | head -1)
        out=$({ /usr/bin/time -f "cpu %U %S %e" taskset -c "$CCPU" wrk -t1 -c"$c" -d"${D}s" \
            "http://127.0.0.1:$port/"; } 2>&1)
        theirs=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
        wrk_cpu=$(awk '/^cpu / {printf "%.2f", ($2 + $3) / $4}' <<<"$out")
        awk -v c="$c" -v a="$ours" -v b="$theirs" -v ca="$ours_cpu" -v cb="$wrk_cpu" 'BEGIN {
            printf "conns=%-5d ringside %8.0f req/s (CPU %3.0f%%)   wrk %8.0f req/s (CPU %3.0f%%)   ringside/wrk %+5.1f%%\n",
                c, a, ca * 100, b, cb * 100, (a / b - 1) * 100 }'
    done
done
rm -f "$json"
