"""The automatic worker count against one worker, at audit sizes from ``10^4`` to ``10^6``.

``dpaudit.audit_mechanism(..., n_jobs=None)`` (the default) times the pilot sample and runs the
audit in this process when it is predicted to be short, on every core when it is long. Printed per
size:
the best wall-clock times with the default and with ``n_jobs=1``, their ratio (acceptance: the
default is never slower by more than 10%) and whether the counts are identical. The two settings
run in turns, at least ``--repeat`` times each and until each has had about half a second, so
that audits of a millisecond are timed as reliably as audits of a second. The worker pool's
start-up is paid once per process (joblib keeps its workers), so one audit with 2 workers runs
first.

    python bench/bench_parallel.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import dpaudit
from dpaudit.audit.engine import AUTO_PARALLEL_SECONDS
from dpaudit.mechanisms import Gaussian, Laplace


def best_seconds(mechanism: object, trials: int, repeat: int) -> tuple[dict, dict]:
    """Fastest wall-clock time of the default ``n_jobs`` and of ``n_jobs=1``, run in turns, and
    the last result of each."""
    best = {None: float("inf"), 1: float("inf")}
    spent = {None: 0.0, 1: 0.0}
    results: dict = {}
    runs = 0
    while runs < repeat or min(spent.values()) < 0.5:
        for n_jobs in (None, 1):
            started = time.perf_counter()
            results[n_jobs] = dpaudit.audit_mechanism(
                mechanism, trials=trials, seed=0, n_jobs=n_jobs, progress=False
            )
            elapsed = time.perf_counter() - started
            best[n_jobs] = min(best[n_jobs], elapsed)
            spent[n_jobs] += elapsed
        runs += 1
    return best, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per setting (best is kept)")
    args = parser.parse_args()
    print(f"cores available {os.cpu_count()}; parallel from {AUTO_PARALLEL_SECONDS} s predicted")
    dpaudit.audit_mechanism(Gaussian(1.0), trials=10_000, seed=1, n_jobs=2)  # start the worker pool
    print(
        f"{'mechanism':38s} {'trials':>8s} {'default ms':>10s} {'1 worker ms':>11s} {'ratio':>6s}"
    )
    worst = 0.0
    for mechanism in (Gaussian(1.0), Laplace(1.0)):
        for trials in (10**4, 10**5, 10**6):
            best, results = best_seconds(mechanism, trials, args.repeat)
            auto, one = best[None], best[1]
            same = np.array_equal(results[None].counts, results[1].counts)
            worst = max(worst, auto / one)
            print(
                f"{mechanism.name:38s} {trials:8.0e} {auto * 1e3:10.2f} {one * 1e3:11.2f} "
                f"{auto / one:6.2f}  identical counts: {same}"
            )
    print(f"largest ratio default / 1 worker   {worst:.2f}")


if __name__ == "__main__":
    main()
