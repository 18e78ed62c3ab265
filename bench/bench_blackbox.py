"""Calls into a black box and what they buy: the default selection sample against the old one.

The black box is a release function called once per output, ``fn(dataset, rng)``: the sum of
the records plus Laplace noise of scale 1 on the pair ``[0.0]`` against ``[1.0]`` (exactly
1-DP), audited with the default attack. It counts its own calls (``n_jobs=1``, so every call
runs in this process). For each number of trials per dataset, two selection samples:

- ``default``: the engine's default for foreign code, ``min(trials, max(trials // 4, 10_000))``;
- ``10k floor``: ``max(trials // 4, 10_000)``, the default of every mechanism before black boxes
  got their own.

Printed per row: the calls counted, the most the audit could make
(:func:`dpaudit.audit.engine.most_outputs`, what ``dpaudit run`` states before it starts), the
median and smallest ``eps`` lower bound at ``delta = 0`` over the seeds, and the median seconds.

    python bench/bench_blackbox.py                # 300, 1000, 3000 and 10000 trials, 10 seeds
    python bench/bench_blackbox.py --trials 300 --seeds 3
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dpaudit.audit.engine import audit_mechanism, most_outputs, selection_trials_for
from dpaudit.audit.strategies import MIN_SELECTION_TRIALS, SELECTION_DIVISOR
from dpaudit.bounds.tradeoff import approx_dp
from dpaudit.mechanisms.blackbox import BlackBox


class CountingRelease:
    """The sum of the records plus Laplace noise of scale 1, one output per call, counted."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, dataset: np.ndarray, rng: np.random.Generator) -> float:
        self.calls += 1
        return float(np.sum(dataset)) + rng.laplace(0.0, 1.0)


def row(trials: int, rule: str, seeds: int) -> str:
    """One table row: ``seeds`` audits of ``trials`` trials with the selection ``rule``."""
    release = CountingRelease()
    box = BlackBox(release, approx_dp(1.0, 0.0), dataset=[0.0], neighbour=[1.0])
    if rule == "default":
        selection = selection_trials_for(box, trials)
    else:
        selection = max(trials // SELECTION_DIVISOR, MIN_SELECTION_TRIALS)
    bounds, seconds, calls = [], [], []
    for seed in range(seeds):
        before = release.calls
        started = time.perf_counter()
        result = audit_mechanism(
            box, trials=trials, selection_trials=selection, seed=seed, n_jobs=1, progress=False
        )
        seconds.append(time.perf_counter() - started)
        calls.append(release.calls - before)
        bounds.append(result.epsilon_lower_bound(0.0))
    stated = most_outputs(trials, selection)
    return (
        f"| {trials:,} | {rule} | {selection:,} | {max(calls):,} | {stated:,} | "
        f"{np.median(bounds):.3f} | {min(bounds):.3f} | {np.median(seconds):.3f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--trials", type=int, nargs="+", default=[300, 1000, 3000, 10_000], help="per dataset"
    )
    parser.add_argument("--seeds", type=int, default=10, help="audits per row (default 10)")
    args = parser.parse_args()
    print(
        "| trials | selection rule | selection trials | calls | stated at most | "
        "median eps >= | smallest eps >= | median s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for trials in args.trials:
        for rule in ("10k floor", "default"):
            print(row(trials, rule, args.seeds), flush=True)


if __name__ == "__main__":
    main()
