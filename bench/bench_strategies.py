"""Certified eps of the threshold strategies across sample sizes, beside the ceilings.

For each mechanism (Gaussian, Laplace, randomized response and a two-sided geometric mechanism,
each with true ``eps = 1``) and each ``n`` trials per dataset (with ``n // 4`` selection trials
per dataset), ``--seeds`` audits are run once and every strategy is read off the same counts (a
strategy only post-processes counts). Printed per row, as medians of the certified ``eps`` at
``delta = --delta`` (95%): the default (``holdout``: two pessimisms, its reserve on small
selection samples, its choice at the selection medians and its Bonferroni fallback included);
the plain holdout (argmax of the predicted bound, one threshold at ``gamma/2`` per bound, no
reserve, no fallback: the first threshold when nothing is predicted positive) with the mild
pessimism ``0.16`` alone and with the earlier default ``1e-3`` alone; Bonferroni; the ratio
``default / max(plain holdout 1e-3, Bonferroni)`` (the earlier strategies); the same ratio
including the mild plain holdout; and the perfect-attack ceiling of those sample sizes. A row is
flagged when the first ratio is below 0.97 or the default certifies 0 where Bonferroni is
positive.

    python bench/bench_strategies.py --quick     # n up to 1e4 (a few seconds)
    python bench/bench_strategies.py             # n = 1e2 .. 1e6, 20 seeds

``--engine``: the engine's default (``holdout``) beside ``holdout+exact`` (the exact band of
:func:`dpaudit.audit.strategies.exact_band_upper` on the selection and evaluation trials pooled,
beside the holdout at the rest of ``gamma``) and ``crossed`` (each error bounded on its own
dataset's trials, pooled, configured by the other dataset's) on the same counts, for the
Gaussian mechanism that is exactly ``(1, 1e-5)``-DP and the Laplace mechanism with
``eps = 1``, at ``10^4`` to ``10^6`` trials (default selection sample): mean certified ``eps`` at
``delta = 1e-5`` and ``mu`` over ``--seeds`` audits, and the ratios of the means to the
holdout's.

    python bench/bench_strategies.py --engine --seeds 20
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from typing import Any

import numpy as np
from scipy import optimize, stats

import dpaudit
from dpaudit.attacks import Threshold
from dpaudit.audit.confidence import clopper_pearson_upper
from dpaudit.audit.lower_bounds import epsilon_from_errors
from dpaudit.audit.strategies import HOLDOUT_PESSIMISM, predicted_upper
from dpaudit.mechanisms import Gaussian, Laplace, RandomizedResponse
from dpaudit.mechanisms.base import Mechanism, NeighbouringPair


class Geometric(Mechanism):
    """Counting query plus two-sided geometric noise, ``P(Z = z) ∝ exp(-eps |z|)``: ``eps``-DP."""

    def __init__(self, eps: float) -> None:
        self.eps = float(eps)

    def params(self) -> dict[str, Any]:
        return {"eps": self.eps}

    def worst_case_pair(self) -> NeighbouringPair:
        return NeighbouringPair(np.zeros(0), np.ones(1), "add_remove", "count 0 vs 1")

    def sample(self, dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        p = 1.0 - np.exp(-self.eps)
        noise = rng.geometric(p, size) - rng.geometric(p, size)
        return (np.asarray(dataset).shape[0] + noise).astype(float)


def gaussian_sigma(eps: float, delta: float) -> float:
    """Noise of the Gaussian mechanism (sensitivity 1) that is exactly ``(eps, delta)``-DP
    (Balle and Wang 2018, Theorem 8)."""

    def excess(mu: float) -> float:
        return (
            stats.norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)
        ) - delta

    return 1.0 / optimize.brentq(excess, 1e-3, 20.0)


def mechanisms(delta: float) -> list[tuple[str, Any, Any]]:
    """(label, mechanism, attack) with true ``eps = 1`` at ``delta`` (pure for all but Gaussian)."""
    return [
        ("gaussian", Gaussian(gaussian_sigma(1.0, delta)), None),
        ("laplace", Laplace(1.0), None),
        ("randomized response", RandomizedResponse(1.0), None),
        ("geometric", Geometric(1.0), Threshold()),
    ]


def certified(result: Any, strategy: str, delta: float) -> float:
    """The eps lower bound ``result`` gives under ``strategy`` (the counts are the same)."""
    return dataclasses.replace(result, strategy=strategy).epsilon_lower_bound(delta)


def plain_holdout(result: Any, delta: float, pessimism: float) -> float:
    """The holdout without reserve or fallback: argmax of the predicted bound, read at ``gamma/2``
    per bound (``pessimism=1e-3`` is the earlier default)."""
    sel, ev = result.selection_tradeoff, result.tradeoff
    g = result.gamma / 2
    a = predicted_upper(sel.fp, sel.n_d, ev.n_d, g, pessimism)
    b = predicted_upper(sel.fn, sel.n_d_prime, ev.n_d_prime, g, pessimism)
    j = int(np.argmax(epsilon_from_errors(a, b, delta)))
    au = clopper_pearson_upper(ev.fp[j], ev.n_d, g)
    bu = clopper_pearson_upper(ev.fn[j], ev.n_d_prime, g)
    return float(epsilon_from_errors(au, bu, delta))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n up to 1e4 only")
    parser.add_argument("--seeds", type=int, default=None, help="audits per row (default 20)")
    parser.add_argument("--delta", type=float, default=1e-5)
    parser.add_argument(
        "--engine", action="store_true", help="holdout against holdout+exact and crossed"
    )
    args = parser.parse_args()
    if args.engine:
        engine_table(args.seeds or 20, args.delta)
        return
    sizes = [10**2, 10**3, 10**4] if args.quick else [10**k for k in range(2, 7)]
    seeds = args.seeds or 20
    started = time.perf_counter()
    print(
        f"median certified eps at delta={args.delta:g}, 95%, {seeds} seeds; "
        "selection n // 4; true eps = 1"
    )
    header = (
        f"{'mechanism':20s} {'n':>8s} {'default':>8s} {'holdout':>8s} {'h. 1e-3':>8s} "
        f"{'bonf.':>8s} "
        f"{'ratio':>6s} {'r. all':>6s} {'ceiling':>8s}"
    )
    print(header)
    print("-" * len(header))
    flagged = 0
    for label, mechanism, attack in mechanisms(args.delta):
        for n in sizes:
            rows: dict[str, list[float]] = {
                "default": [],
                "holdout": [],
                "holdout 1e-3": [],
                "bonferroni": [],
            }
            ceiling = 0.0
            for seed in range(seeds):
                result = dpaudit.audit_mechanism(
                    mechanism, attack=attack, trials=n, selection_trials=max(n // 4, 2), seed=seed
                )
                rows["default"].append(certified(result, "holdout", args.delta))
                rows["holdout"].append(plain_holdout(result, args.delta, HOLDOUT_PESSIMISM[1]))
                rows["holdout 1e-3"].append(plain_holdout(result, args.delta, 1e-3))
                rows["bonferroni"].append(certified(result, "bonferroni", args.delta))
                ceiling = result.epsilon_ceiling(args.delta)
            med = {k: float(np.median(v)) for k, v in rows.items()}
            best = max(med["holdout 1e-3"], med["bonferroni"])
            ratio = med["default"] / best if best > 0 else 1.0
            best_all = max(best, med["holdout"])
            ratio_all = med["default"] / best_all if best_all > 0 else 1.0
            bad = ratio < 0.97 or (med["default"] == 0.0 and med["bonferroni"] > 0.0)
            flagged += bad
            print(
                f"{label:20s} {n:>8.0e} {med['default']:8.3f} {med['holdout']:8.3f} "
                f"{med['holdout 1e-3']:8.3f} "
                f"{med['bonferroni']:8.3f} {ratio:6.3f} {ratio_all:6.3f} {ceiling:8.3f}"
                + ("  <-" if bad else "")
            )
    print(f"rows below 0.97 or zero where Bonferroni is positive: {flagged}")
    print(f"seconds: {time.perf_counter() - started:.1f}")


ENGINE_STRATEGIES = ("holdout", "holdout+exact", "crossed")


def engine_table(seeds: int, delta: float) -> None:
    """The engine's default beside ``holdout+exact`` and ``crossed`` on the same counts (module
    docstring)."""
    print(f"mean over {seeds} seeds, 95%; eps at delta={delta:g}; ratios to holdout")
    others = ENGINE_STRATEGIES[1:]
    print(
        "| mechanism | trials | holdout eps | "
        + " | ".join(f"{k} eps | ratio" for k in others)
        + " | holdout mu | "
        + " | ".join(f"{k} mu | ratio" for k in others)
        + " |"
    )
    print("|---" * (4 + 4 * len(others)) + "|", flush=True)
    for label, mechanism, attack in mechanisms(delta)[:2]:
        for n in (10**4, 10**5, 10**6):
            eps: dict[str, list[float]] = {k: [] for k in ENGINE_STRATEGIES}
            mu: dict[str, list[float]] = {k: [] for k in ENGINE_STRATEGIES}
            for seed in range(seeds):
                result = dpaudit.audit_mechanism(
                    mechanism, attack=attack, trials=n, seed=seed, progress=False
                )
                for strategy in ENGINE_STRATEGIES:
                    read = dataclasses.replace(result, strategy=strategy)
                    eps[strategy].append(read.epsilon_lower_bound(delta))
                    mu[strategy].append(read.mu_lower_bound())
            e = {k: float(np.mean(v)) for k, v in eps.items()}
            m = {k: float(np.mean(v)) for k, v in mu.items()}
            cells = [f"{e['holdout']:.4f}"]
            cells += [f"{e[k]:.4f} | {e[k] / e['holdout']:.3f}" for k in others]
            cells += [f"{m['holdout']:.4f}"]
            cells += [f"{m[k]:.4f} | {m[k] / m['holdout']:.3f}" for k in others]
            print(f"| {label} | {n:.0e} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
