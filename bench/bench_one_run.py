"""Certified eps of one-run audits in the idealised setting, per method, family and strategy.

For each number of canaries ``m`` and each ``mu`` (scores ``N(mu * included, 1)``, each canary
included by a fair coin: ``mu``-GDP per canary), ``--seeds`` runs are simulated and every
configuration below is audited on the same scores (``delta = 1e-5``, 95%). Printed per cell: the
mean certified ``eps`` of each configuration and the true ``eps`` of ``mu``-GDP.

- ``fdp``: Algorithm 3 of Mahloujifar, Melis & Chaudhuri (2025) over the (eps, delta) curves
  (family-free, the default); ``fdp/gdp``: over Gaussian DP (``family="gdp"``: its ``eps``
  assumes the mechanism is GDP); ``steinke``: Theorem 5.2 of Steinke, Nasr & Jagielski (2023).
- strategies: ``bonferroni`` (best of 16 guess totals at ``gamma/16``), ``split`` (half the
  canaries choose the guesses, the other half is tested once), ``auto`` (the default, by ``m``).

    python bench/bench_one_run.py --quick      # m = 1e3, 1e4; 3 seeds
    python bench/bench_one_run.py              # m = 1e3, 1e4, 1e5; 10 seeds
    python bench/bench_one_run.py --idealised  # the defaults beside the papers' idealised sweep

``--idealised`` sets the defaults beside the idealised reference of the one-run papers at
``m = 10^5``: the number of correct guesses is its expectation, rounded down (no sampling error),
and the best number of guesses is taken *without* a correction, as the papers' tables do.
Computed here with this package's own tests: every total ``k`` of ``guess_grid(m,
IDEAL_TOTALS)`` (log-spaced from 10 to ``m``), guessed both ways (``k_+ = ceil(k/2)``,
``k_- = floor(k/2)``) and "in" only (``k_+ = k``); the reference is the largest eps over them of
Steinke's test (Theorem 5.2), of Algorithm 3 over the (eps, delta) curves (family-free, the test
of the default) and of Algorithm 3 over ``G_mu`` (then ``mu`` to eps). The defaults are the
means over ``--seeds`` simulated runs of ``audit_one_run(scores, included)`` (family-free) and of
``family="gdp"``, valid at 95%. A bound read at the expected count is not an upper bound on the
mean bound (the bound is not linear in the count), so a default may exceed its reference.
"""

from __future__ import annotations

import argparse
import itertools

import numpy as np
from joblib import Parallel, delayed
from scipy import special
from scipy.optimize import brentq

from dpaudit.audit.one_run import (
    audit_one_run,
    fdp_epsilon,
    fdp_mu,
    guess_grid,
    simulate_one_run,
    split_guesses,
    steinke_epsilon,
)
from dpaudit.bounds.gaussian_dp import gdp_epsilon

#: Totals of guesses the idealised reference sweeps.
IDEAL_TOTALS = 120

#: Canaries of the idealised comparison.
IDEAL_M = 100_000

CONFIGS = {
    f"{label} {strategy}": (kwargs, strategy)
    for (label, kwargs), strategy in itertools.product(
        [
            ("fdp", {"method": "fdp"}),
            ("fdp/gdp", {"method": "fdp", "family": "gdp"}),
            ("steinke", {"method": "steinke"}),
        ],
        ["bonferroni", "split", "auto"],
    )
}


def _cell(m: int, mu: float, seed: int) -> dict[str, float]:
    s, z = simulate_one_run(m, mu, seed=seed)
    return {
        name: audit_one_run(s, z, strategy=strategy, **kwargs).epsilon_lower_bound()
        for name, (kwargs, strategy) in CONFIGS.items()
    }


def _expected_correct(m: int, k_in: int, k_out: int, mu: float) -> int:
    """Expected number of correct guesses, rounded down, when the ``k_in`` largest of ``m``
    scores ``N(mu * z, 1)`` (``z`` a fair coin) guess "in" and the ``k_out`` smallest guess
    "out": the thresholds are the mixture's quantiles."""

    def above(t: float) -> float:
        return 0.5 * (special.ndtr(-t) + special.ndtr(mu - t))

    def cut(k: int) -> float:
        """The threshold with ``k`` of the ``m`` scores above it, in expectation."""
        return brentq(lambda t: m * above(t) - k, -60.0, mu + 60.0)

    correct = 0.0
    if k_in:
        t = cut(k_in) if k_in < m else -np.inf
        correct += 0.5 * m * special.ndtr(mu - t)
    if k_out:
        t = cut(m - k_out) if k_out < m else np.inf
        correct += 0.5 * m * special.ndtr(t)
    return int(np.floor(correct))


def _idealised(m: int, mu: float) -> tuple[float, float, float]:
    """The uncorrected idealised sweep: the largest Steinke eps, family-free Algorithm 3 eps and
    GDP-family eps over every total of the grid, both ways and "in" only, at the expected number
    of correct guesses."""
    steinke, free, gdp = 0.0, 0.0, 0.0
    for k in guess_grid(m, IDEAL_TOTALS):
        for sides in ("both", "in"):
            k_in, k_out = split_guesses(int(k), sides)
            c = _expected_correct(m, k_in, k_out, mu)
            steinke = max(steinke, steinke_epsilon(m, int(k), c, 1e-5, 0.05))
            free = max(free, fdp_epsilon(m, int(k), c, 1e-5, 0.05))
            gdp = max(gdp, gdp_epsilon(1e-5, fdp_mu(m, int(k), c, 0.05)))
    return steinke, free, gdp


def _defaults(m: int, mu: float, seed: int) -> tuple[float, float]:
    s, z = simulate_one_run(m, mu, seed=seed)
    free = audit_one_run(s, z).epsilon_lower_bound()
    return free, audit_one_run(s, z, family="gdp").epsilon_lower_bound()


def idealised(seeds: int, n_jobs: int) -> None:
    """Print the defaults beside the idealised reference (module docstring)."""
    mus = (0.5, 1.0, 2.0)
    references = Parallel(n_jobs=n_jobs)(delayed(_idealised)(IDEAL_M, mu) for mu in mus)
    print(
        "| mu | true eps | idealised Steinke | idealised f-DP | default (family-free) "
        "| / Steinke | / f-DP | idealised f-DP/GDP | family=gdp | / f-DP/GDP |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for mu, (steinke, idealised_free, gdp) in zip(mus, references, strict=True):
        runs = Parallel(n_jobs=n_jobs)(
            delayed(_defaults)(IDEAL_M, mu, seed) for seed in range(seeds)
        )
        free, family = np.mean(runs, axis=0)
        print(
            f"| {mu} | {gdp_epsilon(1e-5, mu):.3f} | {steinke:.3f} | {idealised_free:.3f} | "
            f"{free:.3f} | {free / steinke:.3f} | {free / idealised_free:.3f} | {gdp:.3f} | "
            f"{family:.3f} | {family / gdp:.3f} |",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="m = 1e3, 1e4 and 3 seeds")
    parser.add_argument("--seeds", type=int, help="seeds per cell (default 10, --quick 3)")
    parser.add_argument("--n-jobs", type=int, default=-1, help="workers (joblib convention)")
    parser.add_argument(
        "--idealised",
        action="store_true",
        help="the defaults beside the papers' idealised, uncorrected sweep at m = 1e5",
    )
    args = parser.parse_args()
    if args.idealised:
        idealised(args.seeds or 10, args.n_jobs)
        return
    ms = (1_000, 10_000) if args.quick else (1_000, 10_000, 100_000)
    seeds = args.seeds or (3 if args.quick else 10)
    names = list(CONFIGS)
    print("| m | mu | true eps | " + " | ".join(names) + " |")
    print("|---|---|---|" + "---|" * len(names))
    for m, mu in itertools.product(ms, (0.5, 1.0, 2.0)):
        runs = Parallel(n_jobs=args.n_jobs)(delayed(_cell)(m, mu, seed) for seed in range(seeds))
        means = [np.mean([r[n] for r in runs]) for n in names]
        cells = " | ".join(f"{v:.3f}" for v in means)
        print(f"| {m} | {mu} | {gdp_epsilon(1e-5, mu):.3f} | {cells} |", flush=True)


if __name__ == "__main__":
    main()
