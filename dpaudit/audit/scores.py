"""Audits of scores computed elsewhere: two arrays of attack scores become an ``AuditResult``.

A practitioner who trained a few hundred or thousand models has, for a membership-inference
attack, scores of outputs on ``D`` (canary *out*) and on ``D_prime`` (*in*), larger = "in". Every
score of both samples becomes a threshold of the grid (:meth:`ScoreGrid.from_values`, one bin per
value: such samples are small).

The default (``"crossed"``, :mod:`dpaudit.audit.strategies`) bounds each error on its own side's
scores, all of them, and lets the *other* side's scores decide how:

- when the other side's scores take few values (at most
  :data:`~dpaudit.audit.strategies.FEW_VALUES`, and at most half as many as scores), the error is
  tested at the rules "score >= v" for those values but the lowest, by a Bonferroni correction
  whose weights follow the other side's errors at those rules
  (:func:`~dpaudit.audit.strategies.crossed_weights`), beside a band at a tenth of its level
  (:func:`~dpaudit.audit.strategies.crossed_upper`): a randomized-response or other discrete
  score law is tested at a handful of thresholds on every score;
- otherwise by an exact band that holds at every threshold at once, its joint coverage
  computed exactly, at ``gamma/2``; its shape (where it spends its error: the few false
  positives where a normal law's ``eps`` is read, or the large counts where a Laplace law's is)
  follows the tails of the other side's scores.

Valid at ``1 - gamma``: the bounds of one error depend on the other side's scores only through
these choices, and the two sides are independent, so given the other side each error's bounds
hold together with probability at least ``1 - gamma/2``, and both errors' with at least
``1 - gamma``; the best threshold is then read without a further correction. No score is spent
on choosing, and the rules depend on the values only, never on their order.

``thresholds=`` declares thresholds fixed before the scores were seen (a label-only attack's
0/1 scores: ``[0.5]``): then every score evaluates and the best of the ``K`` is read at
``gamma/(2K)`` per error. The other strategies (``"holdout+exact"``, ``"holdout+band"``,
``"holdout"``, ``"bonferroni"``, ``"median"``: the median of the pooled selection scores as one
threshold) split each side at random into a selection and an evaluation part.

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
from dpaudit.audit.strategies import band_shape
from dpaudit.mechanisms.base import NeighbouringPair

__all__ = ["audit_scores", "split_scores"]

_STRATEGIES = (
    "auto",
    "bonferroni",
    "crossed",
    "holdout",
    "holdout+band",
    "holdout+exact",
    "median",
)


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


def _grid_and_counts(
    *sides: tuple[np.ndarray, tuple[np.ndarray, ...]],
) -> tuple[ScoreGrid, list[np.ndarray], list[np.ndarray]]:
    """The grid of every score's value (:meth:`ScoreGrid.from_values`), the counts per bin of
    each part, given as ``(scores, (positions, ...))`` per side, the parts of a side together
    holding each of its scores once, and each part's scores sorted. Each part is sorted and the
    sorted parts are merged (a stable sort of sorted runs costs little), which bins every score
    at once: a finite score equal to the ``i``-th value is in bin ``i + 1``, ``-inf`` in bin 0
    and ``+inf`` in the last."""
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
    counts = [
        np.bincount(part, minlength=grid.n_bins).astype(np.int64, copy=False)
        for part in np.split(bins, ends[:-1])
    ]
    return grid, counts, runs


def _shape_of(sorted_scores: np.ndarray) -> str:
    """The band shape (:func:`~dpaudit.audit.strategies.band_shape`) one side's scores, sorted,
    suggest for the other side's error, each distinct score one bin."""
    starts = np.flatnonzero(np.append(True, sorted_scores[1:] != sorted_scores[:-1]))
    counts = np.diff(np.append(starts, sorted_scores.size))
    return band_shape(sorted_scores[starts], counts)


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
        ``"auto"`` (the default: ``"crossed"`` on every score; module docstring), ``"crossed"``,
        ``"holdout+exact"``, ``"holdout+band"``, ``"holdout"``, ``"bonferroni"`` or
        ``"median"`` (:mod:`dpaudit.audit.strategies`).
    selection_fraction:
        Share of each side used to choose thresholds by the strategies that split (all but
        ``"crossed"``); the rest evaluates.
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
        ``thresholds``, ``"crossed"`` by default).
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
    if strategy == "auto":
        strategy = "crossed"
    if declared is not None or strategy == "crossed":
        # Every score evaluates: no part of either side is spent on choosing.
        sel0 = sel1 = np.zeros(0, dtype=np.intp)
        ev0, ev1 = np.arange(s0.size), np.arange(s1.size)
    else:
        # Each side as positions of its scores: the selection part first, in a random order.
        rng = np.random.default_rng(np.random.SeedSequence(int(seed)))
        sel0, ev0 = _split_positions(s0.size, selection_fraction, rng)
        sel1, ev1 = _split_positions(s1.size, selection_fraction, rng)
    if declared is not None:
        strategy = "declared"
    n_sel = min(sel0.size, sel1.size)
    n_eval = min(ev0.size, ev1.size)
    grid, (c_ev0, c_sel0, c_ev1, c_sel1), runs = _grid_and_counts(
        (s0, (ev0, sel0)), (s1, (ev1, sel1))
    )
    # Each side's scores sorted: the run of its evaluation part when it holds them all.
    sorted0 = runs[0] if runs[0].size == s0.size else np.sort(s0)
    sorted1 = runs[2] if runs[2].size == s1.size else np.sort(s1)

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
        # Each error's band takes its shape from the other side's scores themselves (a bin of
        # the grid of both sides' values would stand for a value that depends on both).
        "band_shapes": [_shape_of(sorted1), _shape_of(sorted0)],
    }
    fixed = None
    if strategy == "median":
        median = np.median(np.concatenate([s0[sel0], s1[sel1]]))
        fixed = _fixed_counts(np.array([median]), s0[ev0], s1[ev1])
    elif declared is not None:
        fixed = _fixed_counts(declared, s0, s1)
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
