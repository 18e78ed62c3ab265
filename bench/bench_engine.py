"""Throughput of the audit engine on the Gaussian likelihood-ratio audit, and how it scales.

Prints, in one run: trials per second of ``dpaudit.audit`` with each worker count of
``--workers`` (default 1 and 2), the raw rate at which numpy draws the same number of normals
(in chunks of the engine's chunk size), the ratio of the two (the engine's per-worker
efficiency) and, for every worker count, the speed-up over the first count and the efficiency
(speed-up / workers). Each setting runs ``--repeat`` times and the fastest run is kept (other
load on the machine only slows runs down); the worker pool is sized, and warm, before a worker
count is timed. The speed-up of raw sampling spread over the same worker counts is printed
beside the engine's, as the ceiling the machine offers at the time of the run. The default
audit keeps counts only; the same audit with ``privacy_loss=True`` (the sums behind
``delta_estimate``) is timed on 1 worker too. A trial is one output under each dataset, so an
audit draws two normals per trial.

    python bench/bench_engine.py [--trials 20000000] [--repeat 3] [--workers 1 2 4 8 16]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from joblib import Parallel, delayed

import dpaudit
from dpaudit.mechanisms import Gaussian


def raw_normal_seconds(count: int, chunk: int) -> float:
    """Seconds numpy needs to draw ``count`` standard normals, ``chunk`` at a time."""
    rng = np.random.default_rng(0)
    started = time.perf_counter()
    left = count
    while left > 0:
        n = min(chunk, left)
        rng.normal(0.0, 1.0, n)
        left -= n
    return time.perf_counter() - started


def raw_parallel_seconds(count: int, chunk: int, n_jobs: int) -> float:
    """Seconds ``n_jobs`` joblib workers need to draw ``count`` normals between them: the
    speed-up this machine can give right now, whatever else runs on it."""
    parts = 4 * max(16, n_jobs)
    started = time.perf_counter()
    Parallel(n_jobs=n_jobs)(
        delayed(raw_normal_seconds)(count // parts, chunk) for _ in range(parts)
    )
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20_000_000, help="evaluation trials")
    parser.add_argument("--repeat", type=int, default=3, help="runs per setting (best is kept)")
    parser.add_argument(
        "--workers", type=int, nargs="+", default=[1, 2], help="worker counts to time, e.g. 1 16"
    )
    args = parser.parse_args()
    workers = list(dict.fromkeys(args.workers))
    mechanism = Gaussian(sigma=1.0, sensitivity=1.0)
    best: dict[int, float] = {}
    results = {}
    raw_jobs: dict[int, float] = {}
    for n_jobs in workers:
        # Size the pool (joblib keeps its workers between audits) before timing this count.
        dpaudit.audit_mechanism(mechanism, trials=10_000, seed=1, n_jobs=n_jobs, progress=False)
        for _ in range(args.repeat):
            started = time.perf_counter()
            results[n_jobs] = dpaudit.audit_mechanism(
                mechanism, trials=args.trials, seed=0, n_jobs=n_jobs, progress=False
            )
            best[n_jobs] = min(best.get(n_jobs, float("inf")), time.perf_counter() - started)
        result = results[n_jobs]
        total = result.trials + result.selection_trials + result.pilot_trials
        normals = 2 * total
        raw_jobs[n_jobs] = min(
            raw_parallel_seconds(normals, result.chunk_size, n_jobs) for _ in range(args.repeat)
        )
    raw = min(raw_normal_seconds(normals, result.chunk_size) for _ in range(args.repeat))
    with_loss = float("inf")
    for _ in range(args.repeat):
        started = time.perf_counter()
        dpaudit.audit_mechanism(
            mechanism, trials=args.trials, seed=0, n_jobs=1, progress=False, privacy_loss=True
        )
        with_loss = min(with_loss, time.perf_counter() - started)
    first = workers[0]
    identical = all(np.array_equal(results[first].counts, results[k].counts) for k in workers)
    print(f"cores available           {os.cpu_count()}")
    print(
        f"trials per dataset        {result.trials:,} evaluation + {result.selection_trials:,} "
        f"selection + {result.pilot_trials:,} pilot"
    )
    print(f"normals drawn             {normals:,}")
    for n_jobs in workers:
        label = f"audit, {n_jobs} worker{'s' if n_jobs > 1 else ''}"
        print(f"{label:<25} {best[n_jobs]:8.2f} s  {total / best[n_jobs]:14,.0f} trials/s")
    print(f"raw numpy normals         {raw:8.2f} s  {normals / raw:14,.0f} normals/s")
    if 1 in best:
        print(f"engine / raw (1 worker)   {raw / best[1]:8.1%}")
    print(f"audit, privacy_loss=True  {with_loss:8.2f} s  {total / with_loss:14,.0f} trials/s")
    print(f"  with sums / raw         {raw / with_loss:8.1%}")
    for n_jobs in workers[1:]:
        speed_up = best[first] / best[n_jobs]
        ceiling = raw_jobs[first] / raw_jobs[n_jobs]
        label = f"speed-up {first} -> {n_jobs} workers"
        print(
            f"{label:<25} {speed_up:8.2f}x  efficiency {speed_up * first / n_jobs:6.1%}  "
            f"(raw numpy {ceiling:.2f}x: what the machine allows now)"
        )
    print(f"identical counts {' vs '.join(map(str, workers))}   {identical}")
    print(f"mu lower bound            {result.mu_lower_bound():.4f}")


if __name__ == "__main__":
    main()
