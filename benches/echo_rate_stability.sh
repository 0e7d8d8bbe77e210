#!/usr/bin/env bash
# Stability of the equal-load figure (issue 18): three consecutive `ringside run echo.rate`
# runs of the same models, then, per offered rate, each model's server CPU per message in each
# run against its median over the three (target: within 10%), and the ranking by CPU per
# message in each run (target: the same in all three, or differences within noise).
#
# Usage: benches/echo_rate_stability.sh [OUT_DIR]          (default /tmp/echo-rate-stability)
#        benches/echo_rate_stability.sh --summarize DIR...  (summarize runs already made)
# Env: MODELS (default epoll-lt,uring-tuned,tokio,monoio), PROFILE (default quick),
#      RUNS (repetitions per cell; default: the profile's), TOLERANCE (default 0.10),
#      LOCK (default /tmp/ringside-bench.lock: every run holds it, so no two timing runs overlap).
# Exit 0 when every model is within TOLERANCE of its median in every run, 1 otherwise, 2 on
# bad use. It measures: run it on a quiet machine, never from a test.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
TOL=${TOLERANCE:-0.10}

summarize() {
    python3 - "$TOL" "$@" <<'PY'
import json, statistics, sys
tol = float(sys.argv[1])
dirs = sys.argv[2:]
if len(dirs) < 2:
    sys.exit("need at least two runs to compare")
# cpu[rate][model] = [cpu per op of run 1, run 2, ...] (None where the cell was not measured
# or fell behind the offered rate: not a figure at equal load)
cpu, models, behind = {}, [], []
for i, d in enumerate(dirs):
    with open(f"{d}/results.json") as f:
        run = json.load(f)
    for c in run["cases"]:
        if c["workload"] != "echo.rate":
            continue
        rate = c["params"]["rate_per_sec"]
        m = c["model"]
        if m not in models:
            models.append(m)
        v = None
        if c["status"] == "measured":
            k, n = c.get("counters", {}), max(c.get("repetitions", 1), 1)
            if k.get("fell_behind", 0) > 0:
                behind.append(f"run {i + 1}: {m} fell behind at {rate} msgs/s "
                              f"(achieved {k.get('achieved_per_sec', 0) / n:.0f})")
            else:
                v = c["cpu_ns_per_op"]["total"]
        else:
            behind.append(f"run {i + 1}: {m} at {rate} msgs/s: {c['status']}: {c.get('reason', '')}")
        cpu.setdefault(rate, {}).setdefault(m, [None] * len(dirs))[i] = v
ok = True
for rate in sorted(cpu):
    print(f"\n== {rate} msgs/s offered: server CPU per message (ns), per run, against the median ==")
    print(f"{'model':<16}" + "".join(f"{'run ' + str(i + 1):>10}" for i in range(len(dirs)))
          + f"{'median':>10}{'worst':>9}  within {tol:.0%}")
    for m in models:
        vs = cpu[rate].get(m, [None] * len(dirs))
        got = [v for v in vs if v is not None]
        if len(got) < len(dirs):
            ok = False
        med = statistics.median(got) if got else float("nan")
        worst = max((abs(v - med) / med for v in got), default=float("nan"))
        good = len(got) == len(dirs) and worst <= tol
        ok &= good
        cells = "".join(f"{v:>10.0f}" if v is not None else f"{'-':>10}" for v in vs)
        print(f"{m:<16}{cells}{med:>10.0f}{worst:>8.1%}  {'yes' if good else 'NO'}")
    ranks = []
    for i in range(len(dirs)):
        order = sorted((v[i], m) for m, v in cpu[rate].items() if v[i] is not None)
        ranks.append([m for _, m in order])
        print(f"ranking, run {i + 1} (least CPU first): " + " < ".join(ranks[-1]))
    print("same ranking in every run" if all(r == ranks[0] for r in ranks)
          else "rankings differ: see each run's equal-load verdicts for which gaps are within noise")
for b in behind:
    print("not ranked:", b)
print("\nresult:", "every model within" if ok else "NOT every model within", f"{tol:.0%} of its median")
sys.exit(0 if ok else 1)
PY
}

if [ "${1:-}" = "--summarize" ]; then
    shift
    [ $# -ge 2 ] || { echo "usage: $0 --summarize DIR DIR [DIR...]" >&2; exit 2; }
    summarize "$@"
    exit $?
fi

OUT=${1:-/tmp/echo-rate-stability}
MODELS=${MODELS:-epoll-lt,uring-tuned,tokio,monoio}
PROFILE=${PROFILE:-quick}
LOCK=${LOCK:-/tmp/ringside-bench.lock}
RS=${RINGSIDE:-$repo/target/release/ringside}
[ -x "$RS" ] || { echo "build ringside first: cargo build --release" >&2; exit 1; }
bin=$(mktemp -d /tmp/ringside-bin.XXXXXX)
trap 'rm -rf "$bin"' EXIT
# A copy: a rebuild during the runs must not replace the binary its server children exec.
cp "$RS" "$bin/ringside"
runs=()
if [ -n "${RUNS:-}" ]; then runs=(--runs "$RUNS"); fi
mkdir -p "$OUT"
dirs=()
for i in 1 2 3; do
    d="$OUT/run$i"
    rm -rf "$d"
    echo "run $i of 3: ringside run echo.rate --profile $PROFILE --models $MODELS -> $d" >&2
    flock "$LOCK" "$bin/ringside" run echo.rate --profile "$PROFILE" ${runs[@]+"${runs[@]}"} \
        --models "$MODELS" --quiet --format markdown --out "$d" >"$d.md"
    dirs+=("$d")
done
for d in "${dirs[@]}"; do
    echo "--- equal-load verdicts of $d:"
    grep '^- at equal load' "$d.md" || true
done
summarize "${dirs[@]}"
