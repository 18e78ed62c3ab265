"""Wall-clock time of ``dpaudit.testing.assert_private`` on a library's Laplace release.

The release function is what a library's CI would check: the sum of the records plus Laplace
noise, called as ``release(dataset, size, rng)``, claimed ``(1, 0)``-DP on the pair ``[0.0]``
against ``[1.0]`` (a black box, so the default attack is the learned score). ``correct`` has
scale 1 (exactly 1-DP); ``half scale`` has scale 0.5 (2-DP) and must fail. Each check runs with
``false_alarm = 1e-6``, the default 10 s budget and seeds 0, 1, ... Printed per case and seed:
the outcome, the outputs per dataset the check drew, its looks and phases, and the seconds.

    python bench/bench_testing.py              # 3 seeds
    python bench/bench_testing.py --seeds 10
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dpaudit.bounds.tradeoff import approx_dp
from dpaudit.testing import PrivacyViolation, assert_private

CASES = {"correct": 1.0, "half scale": 0.5}


def laplace_release(scale: float):
    """The sum of the records plus Laplace noise with ``scale``, ``size`` draws at once."""

    def release(dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        return float(np.sum(dataset)) + rng.laplace(0.0, scale, size)

    return release


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3, help="checks per case (default 3)")
    parser.add_argument("--max-seconds", type=float, default=10.0, help="budget of each check")
    args = parser.parse_args()
    print("| case | seed | outcome | outputs per dataset | looks | phases | seconds |")
    print("|---|---|---|---|---|---|---|")
    worst = {}
    for case, scale in CASES.items():
        for seed in range(args.seeds):
            started = time.perf_counter()
            try:
                check = assert_private(
                    laplace_release(scale),
                    approx_dp(1.0, 0.0),
                    pairs=[([0.0], [1.0])],
                    max_seconds=args.max_seconds,
                    seed=seed,
                )
                outcome, audit = "passed", check.audit
            except PrivacyViolation as error:
                outcome, audit = "failed", error.audit
            seconds = time.perf_counter() - started
            worst[case] = max(worst.get(case, 0.0), seconds)
            outputs = max(audit.outputs_per_dataset)
            print(
                f"| {case} | {seed} | {outcome} | {outputs:,} | {audit.looks} | {audit.phases} "
                f"| {seconds:.2f} |"
            )
    for case, seconds in worst.items():
        print(f"slowest check, {case}: {seconds:.2f} s")


if __name__ == "__main__":
    main()
