"""Bounds of ``audit_scores`` on Gaussian scores, per sample size and strategy.

Scores ``N(0, 1)`` on ``D`` and ``N(mu, 1)`` on ``D_prime`` (``mu``-GDP), ``n`` per side; for
each ``n`` and strategy, ``--seeds`` audits (seeds 0, 1, ...) at 95%. Printed: median and mean of
the ``mu`` bound and of the ``eps`` bound at ``delta = 1e-5``, and the true values.

    python bench/bench_scores.py                 # n = 100, 1000, 10000; 1000 seeds
    python bench/bench_scores.py --seeds 100
"""

from __future__ import annotations

import argparse

import numpy as np

from dpaudit.audit.scores import audit_scores
from dpaudit.bounds.gaussian_dp import gdp_epsilon

STRATEGIES = ("auto", "holdout+band", "holdout", "median", "bonferroni")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=1000, help="audits per cell (default 1000)")
    parser.add_argument("--mu", type=float, default=1.0, help="mean of the D_prime scores")
    args = parser.parse_args()
    print(f"true mu {args.mu}, true eps(1e-5) {gdp_epsilon(1e-5, args.mu):.3f}")
    print("| n per side | strategy | median mu | mean mu | median eps | mean eps |")
    print("|---|---|---|---|---|---|")
    for n in (100, 1_000, 10_000):
        for strategy in STRATEGIES:
            mus, eps = [], []
            for seed in range(args.seeds):
                rng = np.random.default_rng(seed)
                s0, s1 = rng.standard_normal(n), rng.standard_normal(n) + args.mu
                r = audit_scores(s0, s1, seed=seed, strategy=strategy)
                mus.append(r.mu_lower_bound())
                eps.append(r.epsilon_lower_bound(1e-5))
            print(
                f"| {n} | {strategy} | {np.median(mus):.3f} | {np.mean(mus):.3f} | "
                f"{np.median(eps):.3f} | {np.mean(eps):.3f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
