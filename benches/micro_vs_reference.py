#!/usr/bin/env python3
"""Holds ringside's micro suite to a plain C loop doing the same syscalls on the same machine.

Runs `ringside run micro` (JSON) and `benches/reference/micro_ref` pinned to the same CPU, pairs
each ringside cell with the C loop that does the same work, and prints both per-op medians and
their ratio. The requirement: every ringside median within 10% of the C loop's.

With `--rounds N` the two programs run N times, interleaved in a shuffled order each round, so
a busy minute on the machine lands on both; each cell's ratio is then the median of its N
per-round ratios (the spread is printed beside it, and the ratio of each side's lowest figure
over the rounds, which a burst of other work cannot raise). `--loops` keeps some pairs only, by the C
loop's name as `micro_ref -l` takes it: `--loops pipe_rw=64,getpid --rounds 9` is the pipe
loop's check against a 40-line C loop.

Like with like: ringside's latency_ns.p50 is a per-op time with the timer's overhead
subtracted, so it is compared with the C program's `timed_median_ns` (each op timed the same
way), not with its whole-run average.

Usage: benches/micro_vs_reference.py [--profile quick|full] [--cpu 1] [--helper-cpu 0]
                                     [--rounds N] [--loops LOOP[=V][,...]] [--ringside BIN]
Needs: a release build of ringside (cargo build --release) and benches/reference/build.sh run.
Exit status 1 when a cell is more than 10% away.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOLERANCE = 0.10

# (C loop, its key) -> (ringside workload, model, params)
PAIRS = [
    (("getpid", None), ("micro.syscall", "blocking", {})),
    *[(("pipe_rw", m), ("micro.pipe", "blocking", {"msg_bytes": m})) for m in (64, 256, 1024, 4096, 16384)],
    *[(("epoll_read", m), ("micro.pipe", "epoll-lt", {"msg_bytes": m})) for m in (64, 256, 1024, 4096, 16384)],
    *[(("uring_pair", m), ("micro.pipe", "uring", {"msg_bytes": m})) for m in (64, 256, 1024, 4096, 16384)],
    *[(("uring_batch", n), ("micro.batching", "uring", {"batch": n, "msg_bytes": 64})) for n in (1, 4, 16, 64)],
    (("uring_sqpoll_pair", 64), ("micro.pipe", "uring-sqpoll", {"msg_bytes": 64})),
]


def c_key(loop, key):
    return loop if key is None else f"{loop}={key}"


def selected(loops):
    if not loops:
        return PAIRS
    want = set(loops.split(","))
    pairs = [p for p in PAIRS if c_key(*p[0]) in want or p[0][0] in want]
    unknown = want - {c_key(*p[0]) for p in pairs} - {p[0][0] for p in pairs}
    if unknown:
        valid = ", ".join(c_key(*p[0]) for p in PAIRS)
        sys.exit(f"--loops: no pair named {', '.join(sorted(unknown))}; valid: {valid}")
    return pairs


def run_reference(cpu, helper, pairs):
    exe = os.path.join(ROOT, "target", "reference", "micro_ref")
    if not os.path.exists(exe):
        subprocess.run([os.path.join(ROOT, "benches", "reference", "build.sh")], check=True)
    only = ",".join(c_key(*p[0]) for p in pairs)
    out = subprocess.run([exe, "-c", str(cpu), "-s", str(helper), "-l", only], check=True,
                         capture_output=True, text=True).stdout
    rows = {}
    for line in out.splitlines():
        if not line.startswith("loop="):
            continue
        kv = dict(p.split("=", 1) for p in line.split() if "=" in p)
        key = kv.get("batch") or kv.get("msg_bytes")
        rows[(kv["loop"], int(key) if key else None)] = float(kv.get("timed_median_ns", "nan"))
    return rows


def run_ringside(exe, profile, cpu, helper, pairs):
    """One `ringside run` per workload of `pairs`, with only their models (and, for
    micro.pipe, only their message sizes); returns every cell."""
    cases, meta = [], None
    for w in sorted({p[1][0] for p in pairs}):
        mine = [p[1] for p in pairs if p[1][0] == w]
        models = ",".join(sorted({m for _, m, _ in mine}))
        extra = []
        if w == "micro.pipe":
            extra = ["--msg-bytes", ",".join(str(b) for b in sorted({a["msg_bytes"] for _, _, a in mine}))]
        with tempfile.TemporaryDirectory() as d:
            done = subprocess.run([exe, "run", w, "--models", models, *extra, "--profile", profile,
                                   "--quiet", "--format", "json", "--cpus", f"{cpu},{helper}",
                                   "--out", d], capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f"{exe} run {w} failed (exit {done.returncode}):\n{done.stderr}")
            with open(os.path.join(d, "results.json")) as f:
                res = json.load(f)
        cases += res["cases"]
        meta = res["ringside"]
    return cases, meta


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", default="quick")
    ap.add_argument("--cpu", type=int, default=1)
    ap.add_argument("--helper-cpu", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--loops", default="")
    ap.add_argument("--ringside", default=os.path.join(ROOT, "target", "release", "ringside"),
                    help="the ringside binary (default: target/release/ringside)")
    a = ap.parse_args()
    if a.rounds < 1:
        sys.exit(f"--rounds {a.rounds}: at least 1")
    pairs = selected(a.loops)
    # ratios[i]: pair i's ratio in each round where both programs measured it
    ratios = [[] for _ in pairs]
    firsts = [None] * len(pairs)
    # each side's lowest figure over the rounds: the lower envelope, which a burst of other
    # work on the machine cannot raise
    bests = [(float("inf"), float("inf"))] * len(pairs)
    why = [None] * len(pairs)
    meta = None
    for rnd in range(a.rounds):
        order = ["c", "ringside"]
        random.shuffle(order)
        for who in order:
            if who == "c":
                ref = run_reference(a.cpu, a.helper_cpu, pairs)
            else:
                cases, meta = run_ringside(a.ringside, a.profile, a.cpu, a.helper_cpu, pairs)
        line = []
        for i, ((loop, key), (w, m, params)) in enumerate(pairs):
            c = ref.get((loop, key))
            cell = next((x for x in cases if x["workload"] == w and x["model"] == m
                         and x["params"] == params), None)
            if c is None or cell is None or cell["status"] != "measured":
                why[i] = "no C figure" if c is None else (cell or {}).get("reason", "no ringside cell")
                continue
            r = cell["latency_ns"]["p50"]
            ratios[i].append(r / c)
            bests[i] = (min(bests[i][0], c), min(bests[i][1], r))
            firsts[i] = firsts[i] or (c, r)
            line.append(f"{c_key(loop, key)} {r / c:.3f}")
        if a.rounds > 1:
            print(f"round {rnd + 1} ({' then '.join(order)}): {', '.join(line)}", flush=True)
    failed = checked = 0
    head = "ratio" if a.rounds == 1 else f"median of {a.rounds}"
    print(f"\n{'cell':46} {'C ns':>8} {'ringside ns':>12} {head:>12}")
    for i, ((loop, key), (w, m, params)) in enumerate(pairs):
        name = f"{w} {m} {' '.join(f'{k}={v}' for k, v in params.items())}"
        if not ratios[i]:
            print(f"{name:46} skipped: {why[i]}")
            continue
        ratio = statistics.median(ratios[i])
        ok = abs(ratio - 1) <= TOLERANCE
        checked += 1
        failed += not ok
        c, r = firsts[i]
        spread = ""
        if len(ratios[i]) > 1:
            spread = (f" (rounds {min(ratios[i]):.3f}..{max(ratios[i]):.3f}; best of rounds: "
                      f"ringside {bests[i][1]:.0f} ns, C {bests[i][0]:.0f} ns, "
                      f"{bests[i][1] / bests[i][0]:.3f})")
        print(f"{name:46} {c:8.0f} {r:12.0f} {ratio:12.3f} {'ok' if ok else 'OUTSIDE 10%'}{spread}")
    if a.rounds > 1:
        print("(C ns and ringside ns: the first round's; the ratio: the median of the rounds')")
    print(f"\n{checked - failed} of {checked} compared cells within {TOLERANCE:.0%} "
          f"({len(pairs) - checked} skipped); "
          f"ringside {meta['version']} ({meta['git']}), profile {a.profile}")
    sys.exit(1 if failed or not checked else 0)


if __name__ == "__main__":
    main()
