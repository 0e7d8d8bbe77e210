#!/usr/bin/env bash
# Stability of the equal-load figure (issues 18, 27): three consecutive `ringside run
# echo.rate` runs of the same models, then, per offered rate, each model's server CPU per
# message relative to the reference model (REFERENCE, default the first model) in the same
# rounds, in each run against its median over the three (target: within 7%; the absolute
# figure's spread is printed beside it), and the decided claims of each run's equal-load
# verdicts (target: none reversed in another run).
#
# Usage: benches/echo_rate_stability.sh [OUT_DIR]          (default /tmp/echo-rate-stability)
#        benches/echo_rate_stability.sh --summarize DIR...  (summarize runs already made)
# Env: MODELS (default epoll-lt,uring-tuned,tokio,monoio), PROFILE (default quick),
#      RUNS (repetitions per cell; default: the profile's), TOLERANCE (default 0.07),
#      REFERENCE (default: the first model),
#      LOCK (default /tmp/ringside-bench.lock: every run holds it, so no two timing runs overlap).
# Exit 0 when every model is within TOLERANCE of its median relative figure in every run and
# no decided claim reversed, 1 otherwise, 2 on
# bad use. It measures: run it on a quiet machine, never from a test.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
TOL=${TOLERANCE:-0.07}

summarize() {
    python3 - "$TOL" "${REFERENCE:-}" "$@" <<'PY'
import json, re, statistics, sys
tol = float(sys.argv[1])
ref_model = sys.argv[2]
dirs = sys.argv[3:]
if len(dirs) < 2:
    sys.exit("need at least two runs to compare")
# cpu[rate][model] = [cpu per op of run 1, run 2, ...]; rel[rate][model] = the same relative
# to the reference model in the same rounds (median over the rounds of cpu_k / ref_k): drift
# that a round shares cancels there. None where the cell was not measured or fell behind.
cpu, rel, models, behind, decided = {}, {}, [], [], []
for i, d in enumerate(dirs):
    with open(f"{d}/results.json") as f:
        run = json.load(f)
    cells = [c for c in run["cases"] if c["workload"] == "echo.rate"]
    for c in cells:
        if c["model"] not in models:
            models.append(c["model"])
    ref = ref_model or models[0]
    by = {}
    for c in cells:
        rate, m = c["params"]["rate_per_sec"], c["model"]
        v = None
        if c["status"] == "measured":
            k, n = c.get("counters", {}), max(c.get("repetitions", 1), 1)
            if k.get("fell_behind", 0) > 0:
                behind.append(f"run {i + 1}: {m} fell behind at {rate} msgs/s "
                              f"(achieved {k.get('achieved_per_sec', 0) / n:.0f})")
            else:
                v = c["cpu_ns_per_op"]["total"]
                by[(rate, m)] = c.get("runs_cpu_ns_per_op", [])
        else:
            behind.append(f"run {i + 1}: {m} at {rate} msgs/s: {c['status']}: {c.get('reason', '')}")
        cpu.setdefault(rate, {}).setdefault(m, [None] * len(dirs))[i] = v
    for (rate, m), runs in by.items():
        base = by.get((rate, ref))
        if base and runs:
            ratios = [a / b for a, b in zip(runs, base) if b > 0]
            if ratios:
                rel.setdefault(rate, {}).setdefault(m, [None] * len(dirs))[i] = statistics.median(ratios)
    # Decided claims of this run: "X leads ...; behind it by: Y 1.3x (...), Z ..." per rate.
    md = open(f"{d}.md").read() if __import__("os").path.exists(f"{d}.md") else ""
    for line in md.splitlines():
        m = re.match(r"- at equal load \((\d+) msgs/s offered[^)]*\): ranked by [^:]*: (\S+) leads", line)
        if not m:
            continue
        rate, lead = int(m.group(1)), m.group(2)
        b = re.search(r"; behind it by: (.*?)(; equivalent|; undecided|$)", line)
        if b:
            for name in re.findall(r"(?:^|, )(\S+) [0-9.]+x", b.group(1)):
                decided.append((i, rate, lead, name))
ok = True
for rate in sorted(cpu):
    print(f"\n== {rate} msgs/s offered: server CPU per message (ns) per run; relative to "
          f"{ref_model or models[0]} in the same rounds ==")
    print(f"{'model':<16}" + "".join(f"{'run ' + str(i + 1):>10}" for i in range(len(dirs)))
          + f"{'abs worst':>10}" + "".join(f"{'rel ' + str(i + 1):>8}" for i in range(len(dirs)))
          + f"{'rel worst':>10}  within {tol:.0%}")
    for m in models:
        vs = cpu[rate].get(m, [None] * len(dirs))
        got = [v for v in vs if v is not None]
        med = statistics.median(got) if got else float("nan")
        worst = max((abs(v - med) / med for v in got), default=float("nan"))
        rs = rel.get(rate, {}).get(m, [None] * len(dirs))
        rgot = [v for v in rs if v is not None]
        rmed = statistics.median(rgot) if rgot else float("nan")
        rworst = max((abs(v - rmed) / rmed for v in rgot), default=float("nan"))
        good = len(rgot) == len(dirs) and rworst <= tol
        ok &= good
        cells = "".join(f"{v:>10.0f}" if v is not None else f"{'-':>10}" for v in vs)
        rcells = "".join(f"{v:>8.3f}" if v is not None else f"{'-':>8}" for v in rs)
        print(f"{m:<16}{cells}{worst:>9.1%} {rcells}{rworst:>9.1%}  {'yes' if good else 'NO'}")
reversed_ = [(i, r, a, b, j) for (i, r, a, b) in decided for (j, r2, a2, b2) in decided
             if r2 == r and a2 == b and b2 == a]
for i, r, a, b, j in reversed_:
    ok = False
    print(f"REVERSED at {r} msgs/s: run {i + 1} decided {a} ahead of {b}, run {j + 1} the opposite")
print(f"\n{len(decided)} decided claims over the runs; {len(reversed_)} reversed between runs")
for b in behind:
    print("not ranked:", b)
print("\nresult:", "every model within" if ok else "NOT every model within",
      f"{tol:.0%} of its median relative to the reference, and no decided claim reversed"
      if ok else f"{tol:.0%} relative to the reference, or a decided claim reversed")
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
