"""Wall-clock time of ``dpaudit.testing.assert_private``, and what each time budget catches.

Checks (``false_alarm = 1e-6``, seeds 0, 1, ...), each printed with its outcome, the outputs per
dataset it drew, its looks and phases (or the candidates its search screened) and the seconds:

- ``correct`` / ``half scale``: a library's Laplace release (the sum of the records plus Laplace
  noise, ``release(dataset, size, rng)``, a black box, so the default attack is the learned
  score) claimed ``(1, 0)``-DP on the pair ``[0.0]`` against ``[1.0]``, with scale 1 (exactly
  1-DP, must pass) and 0.5 (2-DP, must fail), at the default 10 s budget;
- ``float sum`` / ``exact sum``: ``assert_private(fn, approx_dp(1, 0))`` without pairs, searching
  the input space declared beside a bounded sum (bounds at offsets 2^20 to 2^60, as narrow as
  one ulp, 10 or 1,000 records) within 60 s: the sum as libraries write it (``numpy.sum``, noise
  scaled to the width of the bounds) must fail, the same sum computed exactly (``math.fsum``,
  noise scaled to the width plus the final rounding's ulp) must pass.

``--budgets 10 60 600`` measures instead what each budget catches with the pair given: the
smallest delta-leak (the Laplace release of scale 1 that, with probability ``p``, releases the
exact sum instead: ``(1, 0)``-DP fails by ``delta = p``) and the smallest scale error (Laplace
noise of scale ``c`` < 1 claimed as scale 1: true ``eps = 1 / c``) that a check of that budget
refutes, trying ``p`` = 1e-2, 1e-3, ... and ``c`` = 0.5, 0.8, 0.9, 0.95, 0.98 in turn (easiest
first, stopping at the first that passes) on seed 0.

    python bench/bench_testing.py                       # the four cases, 3 seeds
    python bench/bench_testing.py --budgets 10 60 600   # about 45 minutes on 2 cores
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from dpaudit.bounds.tradeoff import approx_dp
from dpaudit.mechanisms.inputs import InputSpace, Setting, powers_of_two
from dpaudit.testing import PrivacyViolation, assert_private, input_space

CLAIM = approx_dp(1.0, 0.0)
PAIR = [([0.0], [1.0])]
LEAKS = (1e-2, 1e-3, 1e-4, 1e-5, 1e-6)
SCALES = (0.5, 0.8, 0.9, 0.95, 0.98)

SPACE = InputSpace(
    default=Setting(bounds=(0.0, 1.0), size=10),
    offsets=powers_of_two(range(20, 61, 8)),
    widths=(1.0,),
    width_ulps=(1, 16),
    sizes=(10, 1000),
    relations=("replace_one",),
    generators=("boundary", "rounding"),
    accumulate=np.sum,
)


def laplace_release(scale: float, leak: float = 0.0):
    """The sum of the records plus Laplace noise with ``scale``, ``size`` draws at once; with
    probability ``leak`` each output is the exact sum."""

    def release(dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        total = float(np.sum(dataset))
        out = total + rng.laplace(0.0, scale, size)
        if leak:
            out[rng.random(size) < leak] = total
        return out

    return release


@input_space(SPACE)
def float_sum(dataset, size, rng, *, setting):
    """Clip, ``numpy.sum``, Laplace noise scaled to the width of the bounds."""
    lo, hi = setting.bounds
    total = float(np.sum(np.clip(np.asarray(dataset, dtype=float), lo, hi)))
    return total + rng.laplace(0.0, (hi - lo) / setting.epsilon, size)


@input_space(SPACE)
def exact_sum(dataset, size, rng, *, setting):
    """Clip, ``math.fsum``, Laplace noise scaled to the width plus the final rounding's ulp."""
    lo, hi = setting.bounds
    x = np.clip(np.asarray(dataset, dtype=float), lo, hi)
    slack = float(np.spacing(x.size * max(abs(lo), abs(hi))))
    return math.fsum(x) + rng.laplace(0.0, (hi - lo + slack) / setting.epsilon, size)


def check(
    fn, pairs, seconds: float, seed: int, replay: str | None = None
) -> tuple[str, str, float]:
    """Run one check: its outcome, what it drew and its seconds."""
    started = time.perf_counter()
    options = {"max_seconds": seconds, "seed": seed, "replay": replay}
    try:
        result = assert_private(fn, CLAIM, pairs=pairs, **options)
        outcome, audit, search = "passed", result.audit, result.search
    except PrivacyViolation as error:
        outcome, audit, search = "failed", error.audit, error.search
    seconds = time.perf_counter() - started
    if search is not None:
        screened = int(np.isfinite(search.screen_epsilon).sum())
        drew = f"searched: {screened} of {len(search.candidates)} candidates screened"
    else:
        drew = (
            f"{max(audit.outputs_per_dataset):,} outputs per dataset, {audit.looks} looks, "
            f"{audit.phases} phases"
        )
    return outcome, drew, seconds


def cases(seeds: int) -> None:
    runs = {
        "correct": (laplace_release(1.0), PAIR, 10.0),
        "half scale": (laplace_release(0.5), PAIR, 10.0),
        "float sum": (float_sum, None, 60.0),
        "exact sum": (exact_sum, None, 60.0),
    }
    print("| case | seed | budget (s) | outcome | drew | seconds |")
    print("|---|---|---|---|---|---|")
    for name, (fn, pairs, budget) in runs.items():
        for seed in range(seeds):
            outcome, drew, seconds = check(fn, pairs, budget, seed)
            print(f"| {name} | {seed} | {budget:g} | {outcome} | {drew} | {seconds:.1f} |")


def budgets(values: list[float]) -> None:
    print("| budget (s) | smallest delta-leak caught (s) | smallest scale error caught (s) |")
    print("|---|---|---|")
    for budget in values:
        cells = []
        for grid, release, label in (
            (LEAKS, lambda p: laplace_release(1.0, leak=p), "delta = {:g}"),
            (SCALES, lambda c: laplace_release(c), "scale x{:g} (eps {:.3g})"),
        ):
            caught = "none"
            for value in grid:
                outcome, _, seconds = check(release(value), PAIR, budget, 0)
                if outcome == "passed":
                    break
                caught = label.format(value, 1 / value) + f" ({seconds:.1f})"
            cells.append(caught)
        print(f"| {budget:g} | {cells[0]} | {cells[1]} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3, help="checks per case (default 3)")
    parser.add_argument(
        "--budgets", type=float, nargs="*", default=None, help="measure what each budget catches"
    )
    args = parser.parse_args()
    started = time.perf_counter()
    if args.budgets:
        budgets(args.budgets)
    else:
        cases(args.seeds)
    print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
