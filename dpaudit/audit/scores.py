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
  ``K`` at ``gamma / (2K)`` per error. A randomized-response or other discrete score law is thus
  tested on nearly all its scores at a handful of thresholds.
- *Otherwise* ``"holdout+exact"`` (:mod:`dpaudit.audit.strategies`) on the split, the scout's
  scores left out: a band over the scores of both parts that holds at every threshold at once,
  its joint coverage computed exactly, so that its best threshold needs no correction; and,
  when the selection part holds 10,000 scores a side or more, a holdout beside it, whose
  selection part chooses one or two thresholds among its own scores for the evaluation part to
  test. The band uses every score, which small samples need and which reads the tails where
  ``eps`` is decided; the holdout pays for one or two thresholds, which large samples can
  afford for curves read in their middle.

Valid at ``1 - gamma`` whichever path runs: the scout decides the path, and given the scout each
path reads only scores outside it, which are independent of it, so each fails with probability
at most ``gamma``. Samples too small for a scout (fewer than 2 scores per side, leaving 2 of the
selection part) go straight to ``"holdout+exact"``. The rules depend on nothing but their
constants, the sizes and the scout.

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
from dpaudit.mechanisms.base import NeighbouringPair

__all__ = [
    "FEW_VALUES",
    "SCOUT_FRACTION",
    "SCOUT_MOST",
    "audit_scores",
    "scouted_thresholds",
    "split_scores",
]

#: Most distinct values of a scout whose thresholds the default tests (see the module docstring).
FEW_VALUES = 16

#: Share of each side that the default's scout looks at.
SCOUT_FRACTION = 0.1

#: Most scores of one side in the scout (enough to see a few repeating values).
SCOUT_MOST = 50

_STRATEGIES = ("auto", "bonferroni", "holdout", "holdout+band", "holdout+exact", "median")


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


def _split_positions(
    n: int, fraction: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """The positions of :func:`split_scores`' two parts among ``n`` scores."""
    order = rng.permutation(n)
    n_sel = _head(n, fraction)
    return order[:n_sel], order[n_sel:]


def split_scores(
    scores: np.ndarray, fraction: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """A random split into ``(selection, evaluation)``, ``round(fraction * n)`` (at least 2) to
    selection and at least 2 to evaluation, in a random order that does not depend on values."""
    selection, evaluation = _split_positions(scores.size, fraction, rng)
    return scores[selection], scores[evaluation]


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


def _grid_and_counts(
    *sides: tuple[np.ndarray, tuple[np.ndarray, ...]],
) -> tuple[ScoreGrid, list[np.ndarray]]:
    """The grid of every score's value (:meth:`ScoreGrid.from_values`) and the counts per bin of
    each part, given as ``(scores, (positions, ...))`` per side, the parts of a side together
    holding each of its scores once. Each part is sorted and the sorted parts are merged (a
    stable sort of sorted runs costs little), which bins every score at once: a finite score
    equal to the ``i``-th value is in bin ``i + 1``, ``-inf`` in bin 0 and ``+inf`` in the last."""
    runs = [np.sort(scores[part]) for scores, parts in sides for part in parts]
    pooled = np.concatenate(runs)
    order = np.argsort(pooled, kind="stable")
    merged = pooled[order]
    grid = ScoreGrid.from_values(merged)
    finite = np.isfinite(merged)
    new = finite & np.concatenate([[True], merged[1:] != merged[:-1]])
    bins = np.empty(merged.size, dtype=np.intp)
    bins[order] = np.where(finite, np.cumsum(new), np.where(merged > 0, grid.n_bins - 1, 0))
    ends = np.cumsum([run.size for run in runs])
    return grid, [
        np.bincount(part, minlength=grid.n_bins).astype(np.int64, copy=False)
        for part in np.split(bins, ends[:-1])
    ]


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
    selection_fraction: float = 0.3,
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
        ``"holdout+exact"``; module docstring), ``"holdout+exact"``, ``"holdout+band"``,
        ``"holdout"``, ``"bonferroni"`` or ``"median"`` (:mod:`dpaudit.audit.strategies`).
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
    rng = np.random.default_rng(np.random.SeedSequence(int(seed)))
    # Each side as positions of its scores: the selection part first, in a random order.
    sel0, ev0 = _split_positions(s0.size, selection_fraction, rng)
    sel1, ev1 = _split_positions(s1.size, selection_fraction, rng)
    scouted = None
    left0 = left1 = np.zeros(0, dtype=np.intp)  # scores on the grid but in neither count
    if declared is not None:
        sel0 = sel1 = np.zeros(0, dtype=np.intp)
        ev0, ev1 = np.arange(s0.size), np.arange(s1.size)
        strategy = "declared"
    elif strategy == "auto":
        # The scout: a prefix of each side's selection part, leaving it at least 2 scores.
        k0, k1 = _scout_size(s0.size, sel0.size), _scout_size(s1.size, sel1.size)
        if min(k0, k1) >= 2:
            scouted = scouted_thresholds(s0[sel0[:k0]], s1[sel1[:k1]])
        if scouted is None:
            # The scout decided the path: the band and the holdout leave its scores out.
            strategy = "holdout+exact"
            if min(k0, k1) >= 2:
                left0, left1, sel0, sel1 = sel0[:k0], sel1[:k1], sel0[k0:], sel1[k1:]
        else:
            ev0, ev1 = np.concatenate([sel0[k0:], ev0]), np.concatenate([sel1[k1:], ev1])
            sel0, sel1 = sel0[:k0], sel1[:k1]
            strategy = "scouted"
    n_sel = 0 if declared is not None else min(sel0.size, sel1.size)
    n_eval = min(ev0.size, ev1.size)
    grid, (c_ev0, c_sel0, _, c_ev1, c_sel1, _) = _grid_and_counts(
        (s0, (ev0, sel0, left0)), (s1, (ev1, sel1, left1))
    )

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
        median = np.median(np.concatenate([s0[sel0], s1[sel1]]))
        fixed = _fixed_counts(np.array([median]), s0[ev0], s1[ev1])
    elif declared is not None:
        fixed = _fixed_counts(declared, s0, s1)
    elif scouted is not None:
        fixed = _fixed_counts(scouted, s0[ev0], s1[ev1])
    used = "fixed" if fixed is not None else strategy
    result = _result(
        name,
        grid,
        np.stack([c_ev0, c_ev1]),
        np.stack([c_sel0, c_sel1]),
        n_eval,
        n_sel,
        int(seed),
        confidence,
        used,
        started,
        metadata,
        fixed,
    )
    result.metadata["threshold_choice"] = strategy
    return result
