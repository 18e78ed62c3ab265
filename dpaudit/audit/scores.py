"""Audits of scores computed elsewhere: two arrays of attack scores become an ``AuditResult``.

A practitioner who trained a few hundred or thousand models has, for a membership-inference
attack, scores of outputs on ``D`` (canary *out*) and on ``D_prime`` (*in*), larger = "in". They
take the engine's path from the grid on: each side is split at random (seeded) into a selection
part and an evaluation part; the score grid (:class:`~dpaudit.audit.grid.ScoreGrid`) is chosen from
the selection scores alone (they play the pilot's role), the selection counts choose the
thresholds (:mod:`dpaudit.audit.strategies`) and the evaluation counts give the bounds, exactly as
for a Monte Carlo audit: the result is an :class:`~dpaudit.audit.result.AuditResult` whose bounds
equal the engine's on the same scores.

Small samples are the rule here. With a selection sample of a few dozen scores the holdout
strategy's predicted bound is 0 at every threshold, and Bonferroni's ~128 candidates cost more
than the evaluation counts can pay. ``strategy="median"`` reads one threshold, the median of the
pooled selection scores (chosen without the evaluation scores, so ``gamma/2`` per error rate is
valid), as the engine's ``"fixed"`` strategy. The default ``"auto"`` depends only on the sample
sizes: ``"median"`` below :data:`AUTO_MEDIAN_BELOW` evaluation scores per side, else the engine's
default ``"holdout"``. Gaussian scores (``mu = 1``), median over 200 seeds of the ``mu`` bound
(``bench/bench_scores.py``): 100 per side: median threshold 0.249, holdout 0.229, Bonferroni 0;
1,000 per side: 0.779, 0.751, 0.666 (and ``eps`` at ``1e-5``: 0.652, 1.062, 0.940).
:meth:`~dpaudit.audit.result.AuditResult.epsilon_ceiling` and ``mu_ceiling`` of the result state
what a perfect attack could certify with the same sample sizes, so an audit limited by its ``n``
shows as such.
"""

from __future__ import annotations

import time

import numpy as np

from dpaudit._core.provenance import versions
from dpaudit._core.validation import check_choice, check_probability
from dpaudit.audit.engine import default_bins
from dpaudit.audit.grid import ScoreGrid
from dpaudit.audit.result import AuditResult
from dpaudit.mechanisms.base import NeighbouringPair

__all__ = ["audit_scores", "split_scores", "counts_on_grid", "AUTO_MEDIAN_BELOW"]

#: ``strategy="auto"`` uses the median threshold below this many evaluation scores per side.
AUTO_MEDIAN_BELOW = 500

_STRATEGIES = ("auto", "bonferroni", "holdout", "median")


def _check_scores(name: str, scores: object) -> np.ndarray:
    s = np.asarray(scores, dtype=float)
    if s.ndim != 1 or s.size < 4:
        raise ValueError(f"{name} must be a 1-d array of at least 4 scores, got shape {s.shape}")
    if np.isnan(s).any():
        raise ValueError(f"{name} must not contain NaN")
    return s


def split_scores(
    scores: np.ndarray, fraction: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """A random split into ``(selection, evaluation)``, ``round(fraction * n)`` (at least 2) to
    selection and at least 2 to evaluation, in a random order that does not depend on values."""
    n = scores.size
    n_sel = min(max(2, int(round(fraction * n))), n - 2)
    perm = rng.permutation(n)
    return scores[perm[:n_sel]], scores[perm[n_sel:]]


def counts_on_grid(grid: ScoreGrid, s_d: np.ndarray, s_d_prime: np.ndarray) -> np.ndarray:
    """Counts per grid bin of the two sides, as the engine keeps them: shape ``(2, n_bins)``."""
    return np.stack(
        [np.bincount(grid.locate(s)[0], minlength=grid.n_bins) for s in (s_d, s_d_prime)]
    ).astype(np.int64)


def _median_counts(
    median: float | None, s_d: np.ndarray, s_d_prime: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """The fixed-threshold record for the test "D_prime iff score > median": ``#{s > t}`` on D,
    ``#{s <= t}`` on D_prime."""
    if median is None:
        return None
    fp, fn = int((s_d > median).sum()), int((s_d_prime <= median).sum())
    return np.array([float(median)]), np.array([[fp], [fn]], dtype=np.int64)


def _result(
    name: str,
    grid: ScoreGrid,
    counts: np.ndarray,
    selection: np.ndarray,
    n_eval: int,
    n_sel: int,
    seed: int,
    confidence: float,
    strategy: str,
    started: float,
    metadata: dict,
    fixed: tuple[np.ndarray, np.ndarray] | None = None,
) -> AuditResult:
    return AuditResult(
        mechanism=None,
        pair=metadata["_pair"],
        attack=None,
        name=name,
        trials=n_eval,
        selection_trials=n_sel,
        pilot_trials=n_sel,
        fit_trials=0,
        seed=seed,
        confidence=confidence,
        strategy=strategy,
        elapsed_seconds=time.perf_counter() - started,
        grid=grid,
        counts=counts,
        selection_counts=selection,
        fixed_thresholds=None if fixed is None else fixed[0],
        fixed_counts=None if fixed is None else fixed[1],
        metadata={k: v for k, v in metadata.items() if k != "_pair"},
    )


def audit_scores(
    scores_d: object,
    scores_d_prime: object,
    *,
    confidence: float = 0.95,
    seed: int = 0,
    strategy: str = "auto",
    selection_fraction: float = 0.5,
    name: str = "scores",
) -> AuditResult:
    """Audit two arrays of attack scores: ``scores_d`` on ``D`` (out), ``scores_d_prime`` on
    ``D_prime`` (in), larger = "in".

    Parameters
    ----------
    scores_d, scores_d_prime:
        1-d arrays, one score per independent run (model), at least 4 per side, no NaN
        (``inf`` is allowed). The runs must be independent of each other.
    confidence:
        Level of every bound.
    seed:
        Seed of the random selection/evaluation split.
    strategy:
        ``"auto"`` (default: by sample size only), ``"median"``, ``"bonferroni"`` or
        ``"holdout"`` (:mod:`dpaudit.audit.strategies`); see the module docstring.
    selection_fraction:
        Share of each side used to fix the grid and choose thresholds; the rest evaluates.
    name:
        Name of the audit in reports.

    Returns
    -------
    AuditResult
        With ``epsilon_lower_bound(delta)``, ``mu_lower_bound()``, ``violates(claim)``,
        ``tradeoff``, ceilings, JSON and reports as for :func:`dpaudit.audit`;
        ``metadata["threshold_choice"]`` names the strategy used.
    """
    started = time.perf_counter()
    s0 = _check_scores("scores_d", scores_d)
    s1 = _check_scores("scores_d_prime", scores_d_prime)
    confidence = check_probability("confidence", confidence, low_open=True, high_open=True)
    strategy = check_choice("strategy", strategy, _STRATEGIES)
    selection_fraction = check_probability(
        "selection_fraction", selection_fraction, low_open=True, high_open=True
    )
    rng = np.random.default_rng(np.random.SeedSequence(int(seed)))
    sel0, ev0 = split_scores(s0, selection_fraction, rng)
    sel1, ev1 = split_scores(s1, selection_fraction, rng)
    n_eval, n_sel = min(ev0.size, ev1.size), min(sel0.size, sel1.size)
    if strategy == "auto":
        strategy = "median" if n_eval < AUTO_MEDIAN_BELOW else "holdout"
    grid = ScoreGrid.from_scores(np.concatenate([sel0, sel1]), bins=default_bins(n_eval))
    pair = NeighbouringPair(np.zeros(0), np.zeros(1), "add_remove", "scores given by the user")
    metadata = {
        "_pair": pair,
        "mechanism": {"name": name, "class": "scores", "params": {}},
        "attack": {
            "name": "given scores",
            "class": "scores",
            "params": {"n_d": int(s0.size), "n_d_prime": int(s1.size)},
            "exact_privacy_loss": False,
        },
        "pair": pair.to_dict(),
        "versions": versions(libraries=("numpy",)),
        "random": {"split": f"default_rng(SeedSequence({int(seed)})).permutation per side"},
    }
    median = np.median(np.concatenate([sel0, sel1])) if strategy == "median" else None
    used = "fixed" if strategy == "median" else strategy
    result = _result(
        name,
        grid,
        counts_on_grid(grid, ev0, ev1),
        counts_on_grid(grid, sel0, sel1),
        n_eval,
        n_sel,
        int(seed),
        confidence,
        used,
        started,
        metadata,
        _median_counts(median, ev0, ev1),
    )
    result.metadata["threshold_choice"] = strategy
    return result
