"""Audits of scores computed elsewhere: two arrays of attack scores become an ``AuditResult``.

A practitioner who trained a few hundred or thousand models has, for a membership-inference
attack, scores of outputs on ``D`` (canary *out*) and on ``D_prime`` (*in*), larger = "in". Every
score of both samples becomes a threshold of the grid (:meth:`ScoreGrid.from_values`, one bin per
value: such samples are small), and each side is split at random (seeded) into a selection part
and an evaluation part.

The default first looks at a *scout*: the first ``SCOUT_FRACTION`` of each side in the random
order of the split (at most :data:`SCOUT_MOST` scores, a prefix of the selection part).

- *Few values* (``metadata["threshold_choice"] == "scouted"``). When the scout's pooled scores
  repeat (at most :data:`FEW_VALUES` distinct values, and at most half as many as scores), the
  thresholds between its values are fixed and all the other scores test them, the best of the
  ``K`` at ``(1 - BAND_SHARE) gamma / (2K)`` per error (``gamma_share = 1 - BAND_SHARE``). A
  randomized-response or other discrete score law is thus tested on nine tenths of its scores
  at a handful of thresholds.
- *Otherwise* ``"holdout+band"`` (:mod:`dpaudit.audit.strategies`) on the split: it spends the
  confidence on two tests and reports the better, the holdout, whose selection part chooses one
  or two thresholds among the selection's own scores for the evaluation part to test
  (``(1 - BAND_SHARE) gamma``), and a band over *all* scores of both parts that holds at every
  threshold at once (``BAND_SHARE gamma``), so that its best threshold needs no correction. The
  band uses every score, which is what small samples need; the holdout pays only for one or two
  thresholds, which is what large ones can afford. A grid of both samples' values has edges at
  evaluation scores; the strategies that choose a threshold choose among the selection's scores
  only (the band, being simultaneous, may read any).

Valid at ``1 - gamma`` whichever path runs: the band's failure is an event of all the scores,
whatever the scout shows, of probability at most ``BAND_SHARE gamma``; the holdout's evaluation
part and the scouted path's tested scores lie outside the scout, so given the scout each fails
with probability at most ``(1 - BAND_SHARE) gamma``. A union bound over the band and the path
taken gives ``gamma``. (The band cannot be left out of the scouted path's account: it reads the
scout, whose law the choice of path changes.) Samples too small for a scout (fewer than 2
scores per side, leaving 2 of the selection part) go straight to ``"holdout+band"``. The rules
depend on nothing but their constants and the scout.

``thresholds=`` declares thresholds fixed before the scores were seen (a label-only attack's
0/1 scores: ``[0.5]``): then every score evaluates and the best of the ``K`` is read at
``gamma/(2K)`` per error. The other strategies (``"holdout"``, ``"bonferroni"``, ``"median"``:
the median of the pooled selection scores as one threshold) remain available.

Mean ``eps`` bound at ``delta = 1e-5`` and 95% against jax-privacy's ``CanaryScoreAuditor`` on the
same scores: ``bench/bench_peers.py`` (its table is in ``bench/RESULTS.md``).
:meth:`~dpaudit.audit.result.AuditResult.epsilon_ceiling` and ``mu_ceiling`` of the result state
what a perfect attack could certify with the same sample sizes, so an audit limited by its ``n``
shows as such.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from dpaudit._core.provenance import versions
from dpaudit._core.validation import (
    as_float_array,
    check_choice,
    check_probability,
    check_seed,
    check_text,
    real_scores,
)
from dpaudit.audit.grid import ScoreGrid
from dpaudit.audit.result import AuditResult
from dpaudit.audit.strategies import BAND_SHARE
from dpaudit.mechanisms.base import NeighbouringPair

__all__ = [
    "FEW_VALUES",
    "SCOUT_FRACTION",
    "SCOUT_MOST",
    "audit_scores",
    "counts_on_grid",
    "scouted_thresholds",
    "split_scores",
]

#: Most distinct values of a scout whose thresholds the default tests (see the module docstring).
FEW_VALUES = 16

#: Share of each side that the default's scout looks at.
SCOUT_FRACTION = 0.1

#: Most scores of one side in the scout (enough to see a few repeating values).
SCOUT_MOST = 1000

_STRATEGIES = ("auto", "bonferroni", "holdout", "holdout+band", "median")


def _check_scores(name: str, scores: object) -> np.ndarray:
    s = real_scores(name, scores)
    if s.ndim != 1 or s.size < 4:
        raise ValueError(f"{name} must be a 1-d array of at least 4 scores, got shape {s.shape}")
    if np.isnan(s).any():
        raise ValueError(f"{name} must not contain NaN")
    return s


def _head(n: int, fraction: float) -> int:
    """``round(fraction * n)``, at least 2 and leaving at least 2."""
    return min(max(2, int(round(fraction * n))), n - 2)


def split_scores(
    scores: np.ndarray, fraction: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """A random split into ``(selection, evaluation)``, ``round(fraction * n)`` (at least 2) to
    selection and at least 2 to evaluation, in a random order that does not depend on values."""
    shuffled = scores[rng.permutation(scores.size)]
    n_sel = _head(scores.size, fraction)
    return shuffled[:n_sel], shuffled[n_sel:]


def _scout_size(n: int, selection: int) -> int:
    """Scores of one side in the scout: ``round(SCOUT_FRACTION * n)``, at least 2, at most
    :data:`SCOUT_MOST`, and leaving at least 2 scores of the selection part."""
    return min(_head(n, SCOUT_FRACTION), SCOUT_MOST, selection - 2)


def scouted_thresholds(scout_d: np.ndarray, scout_d_prime: np.ndarray) -> np.ndarray | None:
    """The thresholds between the values of a scout whose pooled scores repeat: each distinct
    finite value but the largest (the test "in iff score > t" then separates every pair of
    neighbouring values); ``None`` when the scout shows more than :data:`FEW_VALUES` values,
    more than half as many values as scores, or a single value."""
    pooled = np.concatenate([scout_d, scout_d_prime])
    values = np.unique(pooled)
    if not 2 <= values.size <= min(FEW_VALUES, pooled.size // 2):
        return None
    below = values[:-1]
    below = below[np.isfinite(below)]
    return below if below.size else None


def counts_on_grid(grid: ScoreGrid, s_d: np.ndarray, s_d_prime: np.ndarray) -> np.ndarray:
    """Counts per grid bin of the two sides, as the engine keeps them: shape ``(2, n_bins)``."""
    return np.stack(
        [np.bincount(grid.locate(s)[0], minlength=grid.n_bins) for s in (s_d, s_d_prime)]
    ).astype(np.int64)


def _fixed_counts(
    thresholds: np.ndarray, s_d: np.ndarray, s_d_prime: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The fixed-threshold record for the tests "D_prime iff score > t": ``#{s > t}`` on D,
    ``#{s <= t}`` on D_prime, one column per threshold."""
    fp = s_d.size - np.searchsorted(np.sort(s_d), thresholds, side="right")
    fn = np.searchsorted(np.sort(s_d_prime), thresholds, side="right")
    return thresholds.astype(float), np.stack([fp, fn]).astype(np.int64)


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
    gamma_share: float = 1.0,
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
        gamma_share=gamma_share,
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
    thresholds: Sequence[float] | None = None,
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
        ``"auto"`` (the default: the thresholds of a scout with few values, else
        ``"holdout+band"``; module docstring), ``"holdout+band"``, ``"holdout"``,
        ``"bonferroni"`` or ``"median"`` (:mod:`dpaudit.audit.strategies`); see the module
        docstring.
    selection_fraction:
        Share of each side used to choose thresholds (the scout included); the rest evaluates.
        When the scout has few values, the scout chooses and everything else evaluates.
    thresholds:
        Thresholds fixed before the scores were seen (the test "in iff score > t"), for scores
        with few known values: ``[0.5]`` for a label-only attack's 0/1 scores. Every score then
        evaluates (no split) and the best of the ``K`` thresholds is read at ``gamma/(2K)`` per
        error (strategy ``"fixed"``); ``strategy`` must be left at ``"auto"``.
    name:
        Name of the audit in reports.

    Returns
    -------
    AuditResult
        With ``epsilon_lower_bound(delta)``, ``mu_lower_bound()``, ``violates(claim)``,
        ``tradeoff``, ceilings, JSON and reports as for :func:`dpaudit.audit`;
        ``metadata["threshold_choice"]`` names the strategy used (``"declared"`` with
        ``thresholds``, ``"scouted"`` when the default tested the thresholds of a scout with few
        values).
    """
    started = time.perf_counter()
    s0 = _check_scores("scores_d", scores_d)
    s1 = _check_scores("scores_d_prime", scores_d_prime)
    confidence = check_probability("confidence", confidence, low_open=True, high_open=True)
    seed = check_seed("seed", seed)
    name = check_text("name", name)
    strategy = check_choice("strategy", strategy, _STRATEGIES)
    selection_fraction = check_probability(
        "selection_fraction", selection_fraction, low_open=True, high_open=True
    )
    declared = None
    if thresholds is not None:
        if strategy != "auto":
            raise ValueError(f"strategy must be 'auto' when thresholds are given, got {strategy!r}")
        given = as_float_array("thresholds", thresholds, "a non-empty list of finite numbers")
        declared = np.unique(given.ravel())
        if given.ndim > 1 or declared.size == 0 or not np.isfinite(declared).all():
            raise ValueError("thresholds must be a non-empty list of finite numbers")
        if declared.size != given.size:  # as the engine's strategy "fixed" says
            raise ValueError(f"thresholds must not repeat values, got {thresholds!r}"[:300])
    rng = np.random.default_rng(np.random.SeedSequence(seed))
    sel0, ev0 = split_scores(s0, selection_fraction, rng)
    sel1, ev1 = split_scores(s1, selection_fraction, rng)
    n_eval, n_sel = min(ev0.size, ev1.size), min(sel0.size, sel1.size)
    scouted = None
    if declared is not None:
        sel0, ev0, sel1, ev1, n_sel, n_eval = s0, s0, s1, s1, 0, min(s0.size, s1.size)
        strategy = "declared"
    elif strategy == "auto":
        # The scout: a prefix of each side's selection part, leaving it at least 2 scores.
        k0, k1 = _scout_size(s0.size, sel0.size), _scout_size(s1.size, sel1.size)
        if min(k0, k1) >= 2:
            scouted = scouted_thresholds(sel0[:k0], sel1[:k1])
        if scouted is None:
            strategy = "holdout+band"
        else:
            ev0, ev1 = np.concatenate([sel0[k0:], ev0]), np.concatenate([sel1[k1:], ev1])
            sel0, sel1 = sel0[:k0], sel1[:k1]
            n_sel, n_eval = min(k0, k1), min(ev0.size, ev1.size)
            strategy = "scouted"
    grid = ScoreGrid.from_values(np.concatenate([s0, s1]))
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
    fixed = None
    if strategy == "median":
        fixed = _fixed_counts(np.array([np.median(np.concatenate([sel0, sel1]))]), ev0, ev1)
    elif declared is not None:
        fixed = _fixed_counts(declared, s0, s1)
    elif scouted is not None:
        fixed = _fixed_counts(scouted, ev0, ev1)
    used = "fixed" if fixed is not None else strategy
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
        fixed,
        # The other path's band would have spent BAND_SHARE gamma (see the module docstring).
        gamma_share=1.0 if scouted is None else 1.0 - BAND_SHARE,
    )
    result.metadata["threshold_choice"] = strategy
    return result
