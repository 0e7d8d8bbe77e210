#!/usr/bin/env bash
# Known answers for the claims engine (issue 27): one C echo server (benches/reference/
# echo_epoll.c) joins `ringside run echo.rate` three times under three names:
#   twin-a, twin-b  the same server: never separated (no decided claim between them);
#   burn            the same server spinning BURN_NS ns of CPU per 64-byte message
#                   (ECHO_BURN_NS): ranked behind the twins at every equal-load point, by
#                   BURN_NS per message within +-40% (the median over the rounds of its CPU
#                   per message minus twin-a's in the same round).
#
# Usage: benches/known_answers.sh [OUT_DIR]            (default /tmp/known-answers)
#        benches/known_answers.sh --check DIR          (check a run already made)
# Env: BURN_NS (default 3000), PROFILE (default quick), RUNS (rounds; default the profile's),
#      LOCK (default /tmp/ringside-bench.lock). Exit 0 when every check holds, 1 otherwise.
# It measures: run it on a quiet machine, never from a test.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
BURN_NS=${BURN_NS:-3000}

check() {
    python3 - "$BURN_NS" "$1" <<'PY'
import json, re, statistics, sys
burn_ns, d = float(sys.argv[1]), sys.argv[2]
run = json.load(open(f"{d}/results.json"))
md = open(f"{d}/report.md").read()
cells = {}
for c in run["cases"]:
    if c["workload"] == "echo.rate" and c["status"] == "measured":
        k = c.get("counters", {})
        if k.get("fell_behind", 0) == 0:
            cells[(c["params"]["rate_per_sec"], c["model"])] = c
ok, points = True, 0
for line in md.splitlines():
    m = re.match(r"- at equal load \((\d+) msgs/s offered[^)]*\): ranked by [^:]*: (\S+) leads", line)
    if not m:
        continue
    rate, lead = int(m.group(1)), m.group(2)
    behind = re.search(r"; behind it by: (.*?)(; equivalent|; undecided|$)", line)
    behind = re.findall(r"(?:^|, )(\S+) [0-9.]+x", behind.group(1)) if behind else []
    points += 1
    twins = {"ext:twin-a", "ext:twin-b"}
    if lead in twins and (twins - {lead}) & set(behind):
        ok = False
        print(f"FAIL {rate} msgs/s: the twins were separated: {line}")
    if lead != "ext:burn" and "ext:burn" not in behind:
        ok = False
        print(f"FAIL {rate} msgs/s: burn is not decided behind: {line}")
    a, b = cells.get((rate, "ext:twin-a")), cells.get((rate, "ext:burn"))
    if a and b:
        diffs = [y - x for x, y in zip(a["runs_cpu_ns_per_op"], b["runs_cpu_ns_per_op"])]
        extra = statistics.median(diffs)
        good = abs(extra - burn_ns) <= 0.4 * burn_ns
        ok &= good
        print(f"{rate} msgs/s: burn costs {extra:.0f} ns more per message than twin-a "
              f"(known: {burn_ns:.0f} ns, +-40%): {'ok' if good else 'FAIL'}; leader {lead}, "
              f"decided behind: {', '.join(behind) or 'none'}")
if points == 0:
    ok = False
    print("FAIL: no equal-load point was ranked")
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
runs=()
if [ -n "${RUNS:-}" ]; then runs=(--runs "$RUNS"); fi
rm -rf "$OUT"
flock "$LOCK" "$bin/ringside" run echo.rate --profile "$PROFILE" ${runs[@]+"${runs[@]}"} \
    --contender "echo:twin-a=$bin/echo_epoll {port}" \
    --contender "echo:twin-b=$bin/echo_epoll {port}" \
    --contender "echo:burn=ECHO_BURN_NS=$BURN_NS $bin/echo_epoll {port}" \
    --models ext:twin-a,ext:twin-b,ext:burn --quiet --out "$OUT" >/dev/null
check "$OUT"
