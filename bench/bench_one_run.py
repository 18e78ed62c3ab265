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
"""

from __future__ import annotations

import argparse
import itertools

import numpy as np
from joblib import Parallel, delayed

from dpaudit.audit.one_run import audit_one_run, simulate_one_run
from dpaudit.bounds.gaussian_dp import gdp_epsilon

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="m = 1e3, 1e4 and 3 seeds")
    parser.add_argument("--seeds", type=int, help="seeds per cell (default 10, --quick 3)")
    parser.add_argument("--n-jobs", type=int, default=-1, help="workers (joblib convention)")
    args = parser.parse_args()
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
