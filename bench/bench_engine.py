"""Throughput of the audit engine on the Gaussian likelihood-ratio audit.

Prints, in one run: trials per second of ``dpaudit.audit`` with 1 and 2 workers, the raw rate at
which numpy draws the same number of normals (in chunks of the engine's chunk size), the ratio of
the two (the engine's per-worker efficiency) and the 1 -> 2 worker speed-up. Each setting runs
``--repeat`` times and the fastest run is kept (other load on the machine only slows runs down);
the speed-up of raw sampling spread over 1 and 2 workers is printed beside the engine's, as the
ceiling the machine offers at the time of the run. The default audit keeps counts only; the same
audit with ``privacy_loss=True`` (the sums behind ``delta_estimate``) is timed on 1 worker too.
A trial is one output under each dataset, so an audit draws two normals per trial.

    python bench/bench_engine.py [--trials 20000000] [--repeat 3]
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
    parts = 16
    started = time.perf_counter()
    Parallel(n_jobs=n_jobs)(
        delayed(raw_normal_seconds)(count // parts, chunk) for _ in range(parts)
    )
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20_000_000, help="evaluation trials")
    parser.add_argument("--repeat", type=int, default=3, help="runs per setting (best is kept)")
    args = parser.parse_args()
    mechanism = Gaussian(sigma=1.0, sensitivity=1.0)
    dpaudit.audit_mechanism(mechanism, trials=10_000, seed=1, n_jobs=2)  # start the worker pool
    best: dict[int, float] = {}
    results = {}
    raw = float("inf")
    raw_jobs: dict[int, float] = {}
    with_loss = float("inf")
    for _ in range(args.repeat):
        for n_jobs in (1, 2):
            started = time.perf_counter()
            results[n_jobs] = dpaudit.audit_mechanism(
                mechanism, trials=args.trials, seed=0, n_jobs=n_jobs, progress=False
            )
            elapsed = time.perf_counter() - started
            best[n_jobs] = min(best.get(n_jobs, float("inf")), elapsed)
        started = time.perf_counter()
        dpaudit.audit_mechanism(
            mechanism, trials=args.trials, seed=0, n_jobs=1, progress=False, privacy_loss=True
        )
        with_loss = min(with_loss, time.perf_counter() - started)
        result = results[1]
        total = result.trials + result.selection_trials + result.pilot_trials
        normals = 2 * total
        raw = min(raw, raw_normal_seconds(normals, result.chunk_size))
        for n_jobs in (1, 2):
            raw_jobs[n_jobs] = min(
                raw_jobs.get(n_jobs, float("inf")),
                raw_parallel_seconds(normals, result.chunk_size, n_jobs),
            )
    seconds_1, seconds_2 = best[1], best[2]
    identical = np.array_equal(results[1].counts, results[2].counts)
    print(f"cores available           {os.cpu_count()}")
    print(
        f"trials per dataset        {result.trials:,} evaluation + {result.selection_trials:,} "
        f"selection + {result.pilot_trials:,} pilot"
    )
    print(f"normals drawn             {normals:,}")
    print(f"audit, 1 worker           {seconds_1:8.2f} s  {total / seconds_1:14,.0f} trials/s")
    print(f"audit, 2 workers          {seconds_2:8.2f} s  {total / seconds_2:14,.0f} trials/s")
    print(f"raw numpy normals         {raw:8.2f} s  {normals / raw:14,.0f} normals/s")
    print(f"engine / raw (1 worker)   {raw / seconds_1:8.1%}")
    print(f"audit, privacy_loss=True  {with_loss:8.2f} s  {total / with_loss:14,.0f} trials/s")
    print(f"  with sums / raw         {raw / with_loss:8.1%}")
    print(f"speed-up 1 -> 2 workers   {seconds_1 / seconds_2:8.2f}x")
    ceiling = raw_jobs[1] / raw_jobs[2]
    print(f"raw numpy speed-up 1 -> 2 {ceiling:8.2f}x  (what the machine allows now)")
    print(f"identical counts 1 vs 2   {identical}")
    print(f"mu lower bound            {result.mu_lower_bound():.4f}")


if __name__ == "__main__":
    main()
