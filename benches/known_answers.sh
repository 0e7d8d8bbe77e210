#!/usr/bin/env bash
# Known answers for the claims engine (issues 27, 43): one C echo server (benches/reference/
# echo_epoll.c) joins `ringside run echo.rate` three times under three names:
#   twin-a, twin-b  the same server: never separated (no decided claim between them);
#   burn            the same server spinning BURN_NS ns of CPU per 64-byte message
#                   (ECHO_BURN_NS): decided behind twin-a at every equal-load point, by
#                   BURN_NS per message within +-40% (the median over the rounds of its CPU
#                   per message minus twin-a's in the same round).
# (epoll-lt runs beside them.) The check makes the test stats::claims makes, independently:
# the exact signed-rank test over the per-round log ratios of server CPU per message; where
# the cells' rounds were sequential (`looks`: looked at after every round, stopped once
# decided), the look's repeated p-value, from its own simulation of the smallest nominal p
# over the design's looks (stats::sequential), both pairs then corrected by Bonferroni.
#
# Usage: benches/known_answers.sh [OUT_DIR]            (default /tmp/known-answers)
#        benches/known_answers.sh --check DIR          (check a run already made)
# Env: BURN_NS (default 3000), PROFILE (default quick), RUNS (fixed rounds, one look at
#      alpha 0.05; default empty: the profile's sequential rounds, until decided), RATES
#      (echo.rate's offered rates, default the profile's), LOCK (default
#      /tmp/ringside-bench.lock). Exit 0 when every check holds, 1 otherwise.
# It measures: run it on a quiet machine, never from a test.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
BURN_NS=${BURN_NS:-3000}

check() {
    python3 - "$BURN_NS" "$1" <<'PY'
import itertools, json, math, statistics, sys
burn_ns, d = float(sys.argv[1]), sys.argv[2]
run = json.load(open(f"{d}/results.json"))

def signed_rank_w(x):
    """W+ of the nonzero values of x, with midranks, and their ranks."""
    x = [v for v in x if v != 0]
    n = len(x)
    order = sorted(range(n), key=lambda i: abs(x[i]))
    ranks = [0.0] * n
    i = 0
    while i < n:
        j = i
        while j + 1 < n and abs(x[order[j + 1]]) == abs(x[order[i]]):
            j += 1
        for k in order[i:j + 1]:
            ranks[k] = (i + j) / 2 + 1
        i = j + 1
    return sum(r for v, r in zip(x, ranks) if v > 0), ranks

def signed_rank_p(diffs):
    """Exact two-sided Wilcoxon signed-rank p (midranks), as stats::claims computes it."""
    w, ranks = signed_rank_w(diffs)
    n = len(ranks)
    if n == 0:
        return 1.0
    twice = [int(round(2 * r)) for r in ranks]
    top = sum(twice)
    c = [0] * (top + 1)
    c[0] = 1
    for r in twice:
        for s in range(top, r - 1, -1):
            c[s] += c[s - r]
    k = int(round(2 * min(w, sum(ranks) - w)))
    return min(1.0, 2 * sum(c[:k + 1]) / 2 ** n)

def null_min_p(first, last, paths=20000, seed=7):
    """Sorted smallest nominal two-sided p over looks first..last of null paths (no ties)."""
    import random
    rnd = random.Random(seed)
    tables = {}
    for n in range(1, last + 1):
        top = n * (n + 1) // 2
        c = [0] * (top + 1)
        c[0] = 1
        for r in range(1, n + 1):
            for s in range(top, r - 1, -1):
                c[s] += c[s - r]
        low, acc = [], 0
        for v in c:
            acc += v
            low.append(acc / 2 ** n)
        tables[n] = [min(1.0, 2 * min(low[w], 1 - (low[w - 1] if w else 0))) for w in range(top + 1)]
    out = []
    for _ in range(paths):
        mags, w, best = [], 0, 1.0
        for n in range(1, last + 1):
            x = rnd.uniform(-1, 1)
            m = abs(x)
            pos = sum(1 for i in range(len(mags)) if mags[i][0] > m and mags[i][1])
            r = sum(1 for v in mags if v[0] < m)
            w += pos + (r + 1 if x > 0 else 0)
            mags.append((m, x > 0))
            if n >= first:
                best = min(best, tables[n][w])
        out.append(best)
    return sorted(out)

DESIGNS = {}
def repeated_p(p, looks):
    """The look's repeated p under the cells' sequential design (the p itself for one look)."""
    if not looks:
        return p
    key = (looks["first"], looks["last"])
    if key not in DESIGNS:
        DESIGNS[key] = null_min_p(*key)
    d = DESIGNS[key]
    k = sum(1 for v in d if v <= p * (1 + 1e-12))
    return max(p, (k + 1) / (len(d) + 1))

cells = {}
for c in run["cases"]:
    if c["workload"] == "echo.rate" and c["status"] == "measured":
        if c.get("counters", {}).get("fell_behind", 0) == 0:
            cells[(c["params"]["rate_per_sec"], c["model"])] = c
ok, points = True, 0
for rate in sorted({r for r, _ in cells}):
    a, b, burn = (cells.get((rate, m)) for m in ("ext:twin-a", "ext:twin-b", "ext:burn"))
    if not (a and b and burn):
        print(f"{rate} msgs/s: a contender fell behind or was not measured: not checked")
        continue
    points += 1
    alpha = a.get("claim_alpha", 0.05)
    looks = a.get("looks")
    ra, rb, rc = (x["runs_cpu_ns_per_op"] for x in (a, b, burn))
    twins = [math.log(y / x) for x, y in zip(ra, rb) if x > 0 and y > 0]
    # Two tests: Bonferroni (stricter than ringside's Holm over the point's pairs).
    p_twins = min(1.0, 2 * repeated_p(signed_rank_p(twins), looks))
    sep = p_twins < alpha
    extra = statistics.median(y - x for x, y in zip(ra, rc))
    p_burn = min(1.0, 2 * repeated_p(
        signed_rank_p([math.log(y / x) for x, y in zip(ra, rc) if x > 0 and y > 0]), looks))
    near = abs(extra - burn_ns) <= 0.4 * burn_ns
    good = not sep and p_burn < alpha and near
    ok &= good
    print(f"{rate} msgs/s, {len(ra)} rounds, alpha {alpha}: twin-b/twin-a p={p_twins:.3f} "
          f"({'SEPARATED' if sep else 'not separated'}); burn costs {extra:.0f} ns more per "
          f"message than twin-a (known {burn_ns:.0f} +-40%: {'ok' if near else 'FAIL'}), "
          f"p={p_burn:.3f} ({'decided' if p_burn < alpha else 'NOT decided'})")
if points == 0:
    ok = False
    print("FAIL: no rate where all three kept up")
print("result:", "every known answer holds" if ok else "a known answer failed")
sys.exit(0 if ok else 1)
PY
}

if [ "${1:-}" = "--check" ]; then
    [ $# -eq 2 ] || { echo "usage: $0 --check DIR" >&2; exit 2; }
    check "$2"
    exit $?
fi

OUT=${1:-/tmp/known-answers}
PROFILE=${PROFILE:-quick}
LOCK=${LOCK:-/tmp/ringside-bench.lock}
RS=${RINGSIDE:-$repo/target/release/ringside}
[ -x "$RS" ] || { echo "build ringside first: cargo build --release" >&2; exit 1; }
bin=$(mktemp -d /tmp/ringside-known.XXXXXX)
trap 'rm -rf "$bin"' EXIT
cp "$RS" "$bin/ringside"
${CC:-gcc} -O2 -Wall -o "$bin/echo_epoll" "$here/reference/echo_epoll.c"
RUNS=${RUNS-}
runs=()
if [ -n "$RUNS" ]; then runs=(--runs "$RUNS"); fi
if [ -n "${RATES:-}" ]; then runs+=(--rate "$RATES"); fi
rm -rf "$OUT"
flock "$LOCK" "$bin/ringside" run echo.rate --profile "$PROFILE" ${runs[@]+"${runs[@]}"} \
    --contender "echo:twin-a=$bin/echo_epoll {port}" \
    --contender "echo:twin-b=$bin/echo_epoll {port}" \
    --contender "echo:burn=ECHO_BURN_NS=$BURN_NS $bin/echo_epoll {port}" \
    --models epoll-lt --quiet --out "$OUT" >/dev/null
check "$OUT"
