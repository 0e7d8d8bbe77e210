#!/usr/bin/env python3
"""Holds ringside's micro suite to a plain C loop doing the same syscalls on the same machine.

Runs `ringside run micro` (JSON) and `benches/reference/micro_ref` pinned to the same CPU, pairs
each ringside cell with the C loop that does the same work, and prints both per-op medians and
their ratio. The requirement: every ringside median within 10% of the C loop's.

Like with like: ringside's latency_ns.p50 is a per-op time with the timer's overhead
subtracted, so it is compared with the C program's `timed_median_ns` (each op timed the same
way), not with its whole-run average.

Usage: benches/micro_vs_reference.py [--profile quick|full] [--cpu 1] [--helper-cpu 0]
Needs: a release build of ringside (cargo build --release) and benches/reference/build.sh run.
Exit status 1 when a cell is more than 10% away.
"""
import argparse
import json
import os
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


def run_reference(cpu, helper):
    exe = os.path.join(ROOT, "target", "reference", "micro_ref")
    if not os.path.exists(exe):
        subprocess.run([os.path.join(ROOT, "benches", "reference", "build.sh")], check=True)
    out = subprocess.run([exe, "-c", str(cpu), "-s", str(helper)], check=True,
                         capture_output=True, text=True).stdout
    rows = {}
    for line in out.splitlines():
        if not line.startswith("loop="):
            continue
        kv = dict(p.split("=", 1) for p in line.split() if "=" in p)
        key = kv.get("batch") or kv.get("msg_bytes")
        rows[(kv["loop"], int(key) if key else None)] = float(kv.get("timed_median_ns", "nan"))
    return rows


def run_ringside(profile, cpu, helper):
    exe = os.path.join(ROOT, "target", "release", "ringside")
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([exe, "run", "micro", "--profile", profile, "--quiet", "--format", "json",
                        "--cpus", f"{cpu},{helper}", "--out", d],
                       check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(d, "results.json")) as f:
            return json.load(f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", default="quick")
    ap.add_argument("--cpu", type=int, default=1)
    ap.add_argument("--helper-cpu", type=int, default=0)
    a = ap.parse_args()
    ref = run_reference(a.cpu, a.helper_cpu)
    res = run_ringside(a.profile, a.cpu, a.helper_cpu)
    failed = checked = 0
    print(f"{'cell':46} {'C ns':>8} {'ringside ns':>12} {'ratio':>7}")
    for (loop, key), (w, m, params) in PAIRS:
        c = ref.get((loop, key))
        cell = next((x for x in res["cases"] if x["workload"] == w and x["model"] == m
                     and x["params"] == params), None)
        name = f"{w} {m} {' '.join(f'{k}={v}' for k, v in params.items())}"
        if c is None or cell is None or cell["status"] != "measured":
            why = "no C figure" if c is None else (cell or {}).get("reason", "no ringside cell")
            print(f"{name:46} skipped: {why}")
            continue
        r = cell["latency_ns"]["p50"]
        ratio = r / c
        ok = abs(ratio - 1) <= TOLERANCE
        checked += 1
        failed += not ok
        print(f"{name:46} {c:8.0f} {r:12.0f} {ratio:7.3f} {'ok' if ok else 'OUTSIDE 10%'}")
    print(f"\n{checked - failed} of {checked} compared cells within {TOLERANCE:.0%} "
          f"({len(PAIRS) - checked} skipped); "
          f"ringside {res['ringside']['version']} ({res['ringside']['git']}), profile {a.profile}")
    sys.exit(1 if failed or not checked else 0)


if __name__ == "__main__":
    main()
