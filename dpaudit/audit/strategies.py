"""How an audit picks the thresholds its bounds are read at, without invalidating them.

Choosing the best threshold after seeing the evaluation counts would invalidate the confidence
level (docs/theory.md#empirical). Every audit names one of three strategies:

- ``"holdout"`` (default): for each quantity (``eps`` at a given ``delta``, ``mu``, a violation of
  a claim) at most two thresholds are chosen on the **selection sample**, a separate set of
  trials drawn from its own random stream, and the evaluation counts are read there; the
  confidence is split evenly over the two errors of each chosen threshold (``gamma/2`` per bound
  for one threshold, ``gamma/4`` for two). Each quantity is valid on its own at the stated
  confidence.
- ``"bonferroni"``: a candidate set of ``K`` thresholds is fixed from the selection sample (rates
  log-spaced from ``1/N_selection`` to ``1/2`` on both sides, :func:`bonferroni_candidates`), and
  the best candidate is taken on the evaluation counts with ``gamma/(2K)`` per bound.
- ``"fixed"``: thresholds fixed before the evaluation trials, by the user (``threshold=``, or
  ``thresholds=`` of an audit of given scores) or by the selection scores' median
  (:mod:`dpaudit.audit.scores`); with ``K`` of them, ``gamma/(2K)`` per bound. The test is
  "D_prime iff score > t".
- ``"holdout+band"``: the holdout at ``(1 - BAND_SHARE) gamma``, and a band over the selection
  and evaluation trials pooled at ``BAND_SHARE gamma`` (:func:`band_upper`: simultaneous over all
  thresholds by a union bound over its count indices, so its best threshold needs no
  correction); the better of the two is read.
- ``"holdout+exact"``: the same with the *exact* band (:func:`exact_band_upper`), whose joint
  coverage over its checkpoints is computed (:mod:`dpaudit.audit.crossing`) instead of
  union-bounded, at :func:`exact_share` of ``gamma`` (all of it unless both selection samples
  hold :data:`EXACT_HOLDOUT_SELECTION` trials, when the holdout spends the rest); each error's
  band has the shape (:func:`band_weights`) that the other side's trials suggest
  (:func:`band_shape`).
- ``"crossed"``: no threshold is chosen and no trial is spent on choosing. Each error is
  bounded on all of its own side's trials (selection and evaluation pooled) at ``gamma / 2``,
  and the other side's trials, independent of them, say how (:func:`crossed_upper`): at the
  rules "score >= v" for their values when they take few values (:func:`crossed_tests`,
  Bonferroni over those tests weighted by the other side's errors at them
  (:func:`crossed_weights`), beside an exact band at :data:`FEW_VALUES_BAND_SHARE` of the
  level), else by the exact band of the shape their tails suggest; every threshold is then
  read. The default of audits of given scores
  (:mod:`dpaudit.audit.scores`). The engine's default stays the holdout
  (``bench/bench_strategies.py --engine`` measures the three on the same counts).

The holdout choice maximises the bound the evaluation would give if its error rates were
*pessimistic* selection estimates (the selection's Clopper-Pearson upper bounds at level
``1 - p``). Taking the best of thousands of noisy selection estimates otherwise favours thresholds
whose counts were low by chance (the winner's curse). No single ``p`` suits every quantity: a
strong pessimism (``p = 1e-3``) suits ``mu`` (thresholds in the middle, large counts) but drives
``eps`` thresholds away from the tails where the best bounds live; a mild one (``p = 0.16``, about
one standard error) finds the tails but sometimes falls for the curse in the middle. So the
holdout takes the choice of each :data:`HOLDOUT_PESSIMISM` and reads both (one when they agree).
Measured by ``bench/bench_strategies.py`` and by ``10^6``-trial audits, median of 20 seeds:
Gaussian with true ``eps = 1`` at ``delta = 1e-5``, ``eps`` bound ``0.723`` (``1e-3`` alone),
``0.763`` (``0.16`` alone), ``0.748`` (both); ``N(0,1)`` vs ``N(1,1)``, ``mu`` bound ``0.9942``,
``0.9916`` (smallest of 20: ``0.961``), ``0.9938`` (smallest ``0.990``).

**Small selection samples.** With a few hundred to a few thousand selection trials per dataset
(:data:`RESERVE_SELECTION`) the winner's curse is strong (such samples locate the best tail
threshold badly), so the holdout keeps a fixed share :data:`HOLDOUT_RESERVE` of ``gamma`` for the
:data:`SMALL_CANDIDATES_PER_SIDE`-per-side Bonferroni candidates and reports the better of the
two tests. Below that range the reserve's candidates are too coarse to help and above it the
holdout's choice is good; the rule depends on the sample sizes only, never on the counts
(measured by ``bench/bench_strategies.py``: Gaussian, true ``eps = 1``, ``10^3`` trials and 250
selection trials per dataset, median over 20 seeds: ``0.032`` without the reserve, ``0.069``
with it, ``0.060`` for Bonferroni; ``0.103`` with the choice at the selection medians below,
which such samples often need).

**Holdout cannot collapse.** When the selection sample is too small for any threshold's predicted
bound to be positive at either pessimism (a few dozen to a few hundred trials), the holdout
chooses at the selection *medians* instead (:data:`FALLBACK_PESSIMISM`, one threshold; strategy
``"holdout+median"``), and only when even that predicts nothing does it fall back to the
Bonferroni candidates (:func:`holdout_choice` returns ``None``). The medians suffer the winner's
curse, but with so few trials the alternative, ``K`` candidates at ``gamma/(2K)`` each, costs
more (measured by ``bench/bench_strategies.py``, ``10^2`` trials and 25 selection trials per
dataset, median of 20 seeds, true ``eps = 1``: Laplace ``0.352`` with the Bonferroni fallback,
``0.405`` with the medians first; randomized response ``0.456`` and ``0.541``; geometric
``0.560`` and ``0.574``). Validity: which rule is applied and the threshold it picks are
functions of the selection counts only, which are independent of the evaluation counts;
conditionally on the selection sample, the procedure then applied (one threshold at ``gamma/2``
per bound, or ``(1 - r) gamma / 2`` beside the reserve, or ``K`` candidates at
``gamma/(2K)`` per bound) is a fixed, valid test, so the unconditional error probability is at
most ``gamma`` as well.

Proofs, each conditional on the selection sample (independent of the evaluation sample):

- holdout with a reserve: the ``J`` holdout thresholds at ``(1 - r) gamma / (2J)`` per bound and
  the ``K`` candidates at ``r gamma / (2K)`` per bound are ``2J + 2K`` bounds whose error
  probabilities sum to ``gamma``; all hold together with probability at least ``1 - gamma``, so
  the better test's bound is valid.
- holdout: the thresholds ``j`` (one or two) are fixed; the evaluation counts
  ``FP_j ~ Bin(N, alpha_j)`` and ``FN_j ~ Bin(N', beta_j)`` have Clopper-Pearson upper bounds at
  ``gamma/2`` each (one threshold) or ``gamma/4`` each (two), which all hold together with
  probability at least ``1 - gamma`` (union bound). Every bound read
  from ``(alpha+, beta+)`` is monotone in both, so it holds whenever they do (Kairouz et al. 2015,
  Theorem 2.4; Dong, Roth and Su 2022, Definition 2.1 for ``mu``).
- bonferroni: ``K`` thresholds are fixed; ``2K`` Clopper-Pearson bounds at ``gamma/(2K)`` each hold
  together with probability at least ``1 - gamma``, so the best of them is valid.
- fixed: as bonferroni, with ``K`` thresholds fixed before the evaluation trials were drawn (or
  independently of them).
- holdout+band: the holdout's bounds fail with probability at most ``(1 - BAND_SHARE) gamma``
  (as above, at that level) and the band's with at most ``BAND_SHARE gamma`` (its proof is in
  :func:`band_upper`; selection and evaluation trials are independent draws of the same laws,
  so their pool is one sample); all hold together with probability at least ``1 - gamma``
  (union bound), whichever of the two is read.
- holdout+exact: as holdout+band, with the exact band's failure probability computed
  (:func:`exact_band_levels`) in place of the union bound over its indices; each error's band
  at half the band's share, valid given the other side's trials that fix its shape.
- crossed: given the ``D_prime`` trials, the ``alpha`` bounds are a fixed procedure on the
  ``D`` trials (Clopper-Pearson bounds and a band whose levels add up to ``gamma / 2``, or a
  band simultaneous over every threshold at ``gamma / 2``) and all hold with probability at least
  ``1 - gamma / 2``; a threshold between tests is bounded by the nearest test below it
  (``alpha`` does not increase along the thresholds); the same for ``beta`` given the ``D``
  trials; so all hold together with probability at least ``1 - gamma`` and the best threshold
  may be read.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import special

from dpaudit._core.validation import check_integer, check_probability
from dpaudit.audit.confidence import clopper_pearson_upper
from dpaudit.audit.crossing import noncrossing_probability
from dpaudit.bounds.tradeoff import TradeoffCurve

__all__ = [
    "STRATEGIES",
    "SELECTION_DIVISOR",
    "MIN_SELECTION_TRIALS",
    "HOLDOUT_PESSIMISM",
    "FALLBACK_PESSIMISM",
    "CANDIDATES_PER_SIDE",
    "default_selection_trials",
    "predicted_upper",
    "PREDICTION_POINTS",
    "PREDICTION_ENDS",
    "holdout_choice",
    "choose_threshold",
    "HOLDOUT_RESERVE",
    "RESERVE_SELECTION",
    "SMALL_CANDIDATES_PER_SIDE",
    "bonferroni_candidates",
    "BAND_SHARE",
    "BAND_EXACT_COUNTS",
    "BAND_RATIO",
    "band_counts",
    "band_upper",
    "ceiling_errors",
    "band_ceiling_errors",
    "EXACT_SHARE",
    "EXACT_HOLDOUT_SELECTION",
    "EXACT_LINEAR_COUNTS",
    "EXACT_SPACING",
    "BAND_SHAPES",
    "MU_SHAPES",
    "TAIL_COUNTS",
    "TAIL_REST",
    "MIDDLE_FROM",
    "MIDDLE_REST",
    "HEAVY_TAIL_DISTANCE",
    "HEAVY_TAIL_SHARE",
    "band_weights",
    "band_shape",
    "FEW_VALUES",
    "FEW_VALUES_BAND_SHARE",
    "crossed_tests",
    "crossed_upper",
    "crossed_weights",
    "exact_share",
    "exact_band_counts",
    "exact_band_levels",
    "exact_band_upper",
    "oracle_errors",
]

STRATEGIES = ("holdout", "bonferroni", "fixed", "holdout+band", "holdout+exact", "crossed")

#: Default selection sample: ``max(trials // SELECTION_DIVISOR, MIN_SELECTION_TRIALS)`` per dataset
#: (at most ``trials`` for foreign code: :func:`default_selection_trials`).
SELECTION_DIVISOR = 4

#: Smallest default selection sample per dataset.
MIN_SELECTION_TRIALS = 10_000

#: Error probabilities of the pessimistic selection estimates the holdout chooses with: one
#: threshold per value (see the module docstring; measured by ``bench/bench_strategies.py``).
HOLDOUT_PESSIMISM = (1e-3, 0.16)

#: Error probability of the selection estimates (their medians) the holdout chooses with when no
#: threshold's bound is predicted positive at any :data:`HOLDOUT_PESSIMISM` (module docstring).
FALLBACK_PESSIMISM = 0.5

#: Number of log-spaced rates per side that define the Bonferroni candidate set.
CANDIDATES_PER_SIDE = 64

#: Share of ``gamma`` the holdout keeps for a few Bonferroni candidates on small selection samples.
HOLDOUT_RESERVE = 0.25

#: Selection trials per dataset ``[low, high)`` for which the holdout keeps :data:`HOLDOUT_RESERVE`.
RESERVE_SELECTION = (200, 10_000)

#: Rates per side of the reserve's candidate set (few: each costs confidence).
SMALL_CANDIDATES_PER_SIDE = 4


#: Share of ``gamma`` that ``"holdout+band"`` spends on the full-sample band (the holdout gets the
#: rest); measured by ``bench/bench_peers.py``.
BAND_SHARE = 0.25

#: :func:`predicted_upper` is exact at up to this many distinct selection counts, and linear in
#: between: the predictions are smooth, so the holdout chooses the thresholds an exact prediction
#: chooses (``tests/audit/test_strategies.py``) at a fraction of the inverse Beta evaluations.
PREDICTION_POINTS = 512

#: :func:`predicted_upper` is exact at this many of the smallest and of the largest counts.
PREDICTION_ENDS = 64

#: Counts up to this one are each an index of the band; above it the indices grow geometrically.
BAND_EXACT_COUNTS = 8

#: Ratio of consecutive band indices above :data:`BAND_EXACT_COUNTS`.
BAND_RATIO = 1.1


def band_counts(n: int) -> np.ndarray:
    """The count indices of the band for ``n`` trials: ``0..8``, then ``ceil(8 * 1.1^i)`` up to
    ``n``, and the mirror images ``n - c`` of all of them (both tails of both errors matter).

    A function of ``n`` only, fixed before any count is seen.
    """
    n = check_integer("n", n, minimum=1)
    counts = set(range(min(BAND_EXACT_COUNTS, n) + 1))
    x = float(BAND_EXACT_COUNTS)
    while x < n:
        x *= BAND_RATIO
        counts.add(min(math.ceil(x), n))
    return np.array(sorted(counts | {n - c for c in counts}), dtype=np.int64)


def band_upper(k: np.ndarray, n: int, gamma: float) -> np.ndarray:
    """Upper confidence bounds on the rate behind each count of ``k``, simultaneous over every
    threshold with probability at least ``1 - gamma``.

    ``k`` holds the counts of one error (false positives of ``D``, or false negatives of
    ``D_prime``) at any set of thresholds, chosen in any way, on one sample of ``n`` trials. Each
    count is rounded up to the next index ``c`` of :func:`band_counts` and bounded by the
    Clopper-Pearson upper bound of ``c`` at ``gamma / K`` (``K`` indices).

    Validity: let ``W_(1) <= ... <= W_(n)`` be the order statistics of the trials' tail
    probabilities (randomised at atoms), uniform on ``[0, 1]``; ``W_(c+1)`` has the law
    ``Beta(c + 1, n - c)``, whose upper ``gamma/K`` quantile is the Clopper-Pearson bound of ``c``
    (Clopper and Pearson 1934). A threshold whose count is ``k`` has a true rate of at most
    ``W_(k+1) <= W_(c+1)`` for ``c >= k``. The ``K`` events ``W_(c+1) <= bound(c)`` are fixed in
    advance (``K`` depends on ``n`` only) and hold together with probability at least
    ``1 - gamma`` (union bound), and then every threshold's bound holds: the band is
    simultaneous over all thresholds, so the best of them may be read without further
    correction.
    """
    grid = band_counts(n)
    return clopper_pearson_upper(grid, n, gamma / grid.size)[
        np.searchsorted(grid, np.asarray(k), side="left")
    ]


#: Share of ``gamma`` that ``"holdout+exact"`` spends on its exact band when the holdout runs
#: (the holdout gets the rest); measured by ``bench/bench_peers.py``.
EXACT_SHARE = 0.8

#: ``"holdout+exact"`` runs its holdout only when both selection samples hold at least this
#: many trials (a rule on sizes only); below, the exact band spends all of ``gamma``.
EXACT_HOLDOUT_SELECTION = 10_000

#: Counts up to this one are each a checkpoint of the exact band; above it the checkpoints are
#: :data:`EXACT_SPACING` standard deviations of the count apart.
EXACT_LINEAR_COUNTS = 1024

#: Gap between consecutive checkpoints of the exact band above :data:`EXACT_LINEAR_COUNTS`, in
#: standard deviations ``sqrt(c)`` of the count ``c``: a count between two checkpoints is read at
#: the next one, which costs at most this much of a deviation (a fixed share of the band's width,
#: wherever the bound is read), and more checkpoints cost the band almost nothing because
#: neighbouring order statistics move together.
EXACT_SPACING = 0.25

#: The shapes of the exact band: where it spends its error (:func:`band_weights`).
BAND_SHAPES = ("tail", "middle")

#: The shapes of both errors' exact bands when they bound ``mu``, which is read where both
#: errors are large (near ``Phi(-mu / 2)``) whatever the tails of the scores.
MU_SHAPES = ("middle", "middle")

#: The ``"tail"`` band spends its error at the counts up to this one ...
TAIL_COUNTS = 32

#: ... and this level relative to theirs at every larger count.
TAIL_REST = 0.1

#: The ``"middle"`` band spends its error at the counts above this share of ``n`` up to ``n / 2``
#: ...
MIDDLE_FROM = 0.1

#: ... and this level relative to theirs at every other count.
MIDDLE_REST = 0.02

#: ``"crossed"`` tests one side's error at fixed thresholds when the other side's trials take at
#: most this many values (:func:`crossed_tests`).
FEW_VALUES = 16

#: Share of an error's level that ``"crossed"`` spends on the exact band beside its tests
#: (:func:`crossed_upper`).
FEW_VALUES_BAND_SHARE = 0.1

#: A side's scores have *heavy tails* (:func:`band_shape`) when more than :data:`HEAVY_TAIL_SHARE`
#: of them lie farther than this many robust standard deviations (interquartile range / 1.349)
#: from their median ...
HEAVY_TAIL_DISTANCE = 2.5

#: ... a share that is 1.2% for a normal law and 7.7% for a Laplace law.
HEAVY_TAIL_SHARE = 0.04

#: The exact band is calibrated to fail with probability between ``(1 - _CALIBRATION_SLACK)``
#: and ``(1 - _CALIBRATION_MARGIN)`` times its ``gamma``.
_CALIBRATION_MARGIN = 1e-3
_CALIBRATION_SLACK = 0.03

#: Most evaluations of the crossing probability while calibrating one exact band.
_CALIBRATION_STEPS = 8


def exact_band_counts(n: int) -> np.ndarray:
    """The checkpoints of the exact band for ``n`` trials: every count up to
    :data:`EXACT_LINEAR_COUNTS`, then counts :data:`EXACT_SPACING` standard deviations apart
    (``c + ceil(sqrt(c) / 4)``) up to ``n / 2``, and the mirror images ``n - c`` of all of them.
    A function of ``n`` only (read-only, kept for the process)."""
    return _exact_band_counts(check_integer("n", n, minimum=1))


@functools.lru_cache(maxsize=64)
def _exact_band_counts(n: int) -> np.ndarray:
    counts = list(range(min(EXACT_LINEAR_COUNTS, n) + 1))
    c = counts[-1]
    while c < n / 2:
        c += math.ceil(EXACT_SPACING * math.sqrt(c))
        counts.append(min(c, n))
    low = set(counts)
    out = np.array(sorted(low | {n - c for c in low}), dtype=np.int64)
    out.setflags(write=False)
    return out


def band_weights(c: np.ndarray, n: int, shape: str) -> np.ndarray:
    """The relative level of the exact band at its checkpoints ``c`` (counts of ``n`` trials).

    ``"tail"``: 1 up to :data:`TAIL_COUNTS`, :data:`TAIL_REST` above; for laws whose privacy
    loss grows in the tails (a normal law's), where ``eps`` is read at a few false positives and
    a rate enters the bound as its denominator. ``"middle"``: 1 above ``MIDDLE_FROM * n`` up to
    ``n / 2``, :data:`MIDDLE_REST` elsewhere; for laws whose privacy loss is bounded (a Laplace
    law's), where ``eps`` is read at large counts. Measured by ``bench/bench_peers.py``.
    """
    c = np.asarray(c)
    if shape == "tail":
        return np.where(c <= TAIL_COUNTS, 1.0, TAIL_REST)
    if shape == "middle":
        return np.where((c > MIDDLE_FROM * n) & (c <= n / 2), 1.0, MIDDLE_REST)
    raise ValueError(f"shape must be one of {BAND_SHAPES}, got {shape!r}")


def band_shape(values: np.ndarray, counts: np.ndarray) -> str:
    """The shape of the exact band (:func:`band_weights`) that the *other* side's scores suggest:
    ``"middle"`` when they have heavy tails (more than :data:`HEAVY_TAIL_SHARE` of them farther
    than :data:`HEAVY_TAIL_DISTANCE` robust standard deviations from their median), else
    ``"tail"``.

    The median and quartiles are those of the *mid-distribution* function (each value at the
    share of scores below it plus half the share equal to it; Parzen, "Quantile Probability and
    Statistical Data Modeling", Statistical Science 19, 2004), interpolated between values: the
    ordinary quartiles of scores that take a few values jump from one value to the next and
    call a discretized normal law heavy-tailed and a two-sided geometric law light-tailed; the
    mid-distribution's do not, and for distinct scores they are the order statistics
    interpolated at the positions ``(i - 1/2) / n``. The share beyond the distance is read
    from the same function (so, between the lowest and the highest value, it moves by little
    when the distance moves across a value). A single value has no spread and no tails.

    ``values`` is one value per bin (``-inf`` and ``inf`` allowed) in increasing order and
    ``counts`` the scores per bin. The band of one side's error takes its shape from the other
    side's scores, which are independent of it, so the shape is fixed given them and the band
    keeps its level (:func:`choose_threshold`); a function of the other side's values only,
    never of their order.
    """
    h = np.asarray(counts, dtype=float)
    v = np.asarray(values, dtype=float)
    total = h.sum()
    if total <= 0:
        return "tail"
    held = h > 0
    v, h = v[held], h[held]
    mid = (np.cumsum(h) - h / 2) / total
    with np.errstate(invalid="ignore"):
        q25, median, q75 = np.interp([0.25, 0.5, 0.75], mid, v)
        scale = (q75 - q25) / 1.349
    if not (math.isfinite(median) and math.isfinite(scale)) or scale <= 0:
        return "tail"  # no spread (a single value): no tails
    finite = np.isfinite(v)
    below, above = h[v == -np.inf].sum() / total, h[v == np.inf].sum() / total
    reach = HEAVY_TAIL_DISTANCE * scale
    low, high = np.interp(
        [median - reach, median + reach], v[finite], mid[finite], left=below, right=1.0 - above
    )
    return "middle" if low + 1.0 - high > HEAVY_TAIL_SHARE else "tail"


def exact_band_levels(n: int, gamma: float, shape: str = "tail") -> tuple[np.ndarray, np.ndarray]:
    """The exact band of ``n`` trials at error probability ``gamma``: its checkpoints ``c`` (the
    counts of :func:`exact_band_counts` below ``n``) and the level ``g_c`` of each.

    The band bounds the rate behind a count ``c`` by the Clopper-Pearson upper bound of ``c`` at
    level ``g_c``, the upper ``g_c`` quantile of ``Beta(c + 1, n - c)``, which is the law of
    ``U_(c+1)`` (the ``(c+1)``-th smallest of the trials' tail probabilities; see
    :func:`band_upper`). The levels are ``g_c = s * w_c`` with the weights ``w_c`` of the band's
    ``shape`` (:func:`band_weights`). The scale ``s`` is chosen so that the probability that
    *some* ``U_(c+1)`` exceeds its bound, computed exactly (:func:`dpaudit.audit.crossing.
    noncrossing_probability`), lies between ``0.97 gamma`` and ``0.999 gamma``; it starts from the
    union bound's ``s = gamma / sum(w)``, which is valid by itself, and every scale tried whose
    exact probability is above ``0.999 gamma`` is refused, so the band is valid whatever the
    search does. Cached: a function of ``n``, ``gamma`` and ``shape`` only.
    """
    n = check_integer("n", n, minimum=1)
    gamma = check_probability("gamma", gamma, low_open=True, high_open=True)
    if shape not in BAND_SHAPES:
        raise ValueError(f"shape must be one of {BAND_SHAPES}, got {shape!r}")
    return _exact_band_levels(n, gamma, shape)


@functools.lru_cache(maxsize=64)
def _exact_band_levels(n: int, gamma: float, shape: str) -> tuple[np.ndarray, np.ndarray]:
    counts = exact_band_counts(n)
    c = counts[counts < n]
    weight = band_weights(c, n, shape)
    target = gamma * (1.0 - _CALIBRATION_MARGIN)

    def crossing(scale: float) -> float:
        bounds = special.betaincinv(c + 1.0, n - c, 1.0 - scale * weight)
        return 1.0 - noncrossing_probability(c + 1, bounds, n)

    best = target / weight.sum()
    scale = best
    p = p_best = crossing(best)
    slope = 1.0
    for _ in range(_CALIBRATION_STEPS):
        if p >= (1.0 - _CALIBRATION_SLACK) * target:
            break
        step = min(math.log(target / p) / slope, math.log(0.5 / (scale * weight.max())))
        trial = scale * math.exp(step)
        p_trial = crossing(trial)
        if p_trial > 0.0 and p > 0.0 and trial != scale:
            slope = max(math.log(p_trial / p) / math.log(trial / scale), 0.25)
        if p_best < p_trial <= target:
            best, p_best = trial, p_trial
        scale, p = (trial, p_trial) if p_trial <= target else (best, p_best)
    levels = best * weight
    c.setflags(write=False)
    levels.setflags(write=False)
    return c, levels


def exact_band_upper(k: np.ndarray, n: int, gamma: float, shape: str = "tail") -> np.ndarray:
    """Upper confidence bounds on the rate behind each count of ``k`` (one error of one sample of
    ``n`` trials), simultaneous over every threshold with probability at least ``1 - gamma``,
    the coverage computed exactly rather than by a union bound (:func:`exact_band_levels`, of
    the given ``shape``).

    A count ``k`` is bounded by the smallest checkpoint bound at or above it (a threshold with
    count ``k`` has a true rate of at most ``U_(k+1) <= U_(c+1)`` for every ``c >= k``), and a
    count of ``n`` by 1. Validity: with probability at least ``1 - gamma`` every
    ``U_(c+1)`` is at most its bound (the exact computation), and then every threshold's bound
    holds, so the best threshold may be read without a further correction.
    """
    if shape not in BAND_SHAPES:
        raise ValueError(f"shape must be one of {BAND_SHAPES}, got {shape!r}")
    c, bounds = _exact_band_bounds(check_integer("n", n, minimum=1), gamma, shape)
    return bounds[np.searchsorted(c, np.asarray(k), side="left")]


@functools.lru_cache(maxsize=64)
def _exact_band_bounds(n: int, gamma: float, shape: str) -> tuple[np.ndarray, np.ndarray]:
    """The checkpoints of the exact band and the bound read at each count up to the next
    checkpoint (the smallest bound at or above it), with a last bound of 1 for the count ``n``."""
    c, levels = exact_band_levels(n, gamma, shape)
    bounds = special.betaincinv(c + 1.0, n - c, 1.0 - levels)
    bounds = np.concatenate([np.minimum.accumulate(bounds[::-1])[::-1], [1.0]])
    bounds.setflags(write=False)
    return c, bounds


def _exact_band_runs(
    fp: np.ndarray, fn: np.ndarray, n0: int, n1: int, gamma: float, shapes: tuple[str, str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The exact band of both errors at every threshold (of the ``shapes`` of the ``alpha`` and
    ``beta`` bands), kept once per run of thresholds whose two bounds are the same: ``(first
    threshold of each run, alpha+, beta+)``. The counts move monotonically along the
    thresholds, so there are at most as many runs as checkpoints, however many thresholds; the
    best run's first threshold is the first best threshold."""
    c0, bounds0 = _exact_band_bounds(n0, gamma, shapes[0])
    c1, bounds1 = _exact_band_bounds(n1, gamma, shapes[1])
    i0 = np.searchsorted(c0, fp, side="left")
    i1 = np.searchsorted(c1, fn, side="left")
    changes = (i0[1:] != i0[:-1]) | (i1[1:] != i1[:-1])
    starts = np.concatenate([[0], np.flatnonzero(changes) + 1])
    return starts, bounds0[i0[starts]], bounds1[i1[starts]]


def default_selection_trials(trials: int, *, foreign_code: bool = False) -> int:
    """The selection sample per dataset unless told otherwise: ``max(trials // 4, 10_000)``.

    With ``foreign_code`` (a mechanism that runs code outside dpaudit, a black box, where each
    output may cost a call into a library) it is never more than ``trials`` either:
    ``min(trials, max(trials // 4, 10_000))``, at least 2. The outputs drawn, and so the calls
    into that code, are then at most ``6 * trials + 2`` from 4 trials on
    (:func:`dpaudit.audit.engine.most_outputs`), where the plain rule draws some ``30,000`` more
    than ``3 * trials`` when ``trials`` is small; from ``10_000`` trials on both rules agree.
    The size depends on ``trials`` alone, never on an output, so the selection sample stays
    independent of the evaluation sample and every bound read with it keeps its level (module
    docstring); a smaller selection sample only chooses the thresholds less well.
    """
    trials = check_integer("trials", trials, minimum=1)
    size = max(trials // SELECTION_DIVISOR, MIN_SELECTION_TRIALS)
    return max(min(size, trials), 2) if foreign_code else size


def predicted_upper(
    k_selection: np.ndarray,
    n_selection: int,
    n_evaluation: int,
    gamma_each: float,
    pessimism: float = HOLDOUT_PESSIMISM[0],
) -> np.ndarray:
    """The Clopper-Pearson upper bound an evaluation of ``n_evaluation`` trials would report if
    its rate were the selection's pessimistic estimate (its upper bound at ``1 - pessimism``).

    Exact at up to :data:`PREDICTION_POINTS` distinct counts; with more, exact at the
    :data:`PREDICTION_ENDS` smallest and largest distinct counts (where ``eps`` thresholds live)
    and at :data:`PREDICTION_POINTS` more geometrically spaced from both ends of the sorted counts,
    and linear in between. The prediction only ranks thresholds, on selection counts; no bound
    is read from it.
    """
    values, inverse = _distinct(np.asarray(k_selection))
    at = values
    if values.size > PREDICTION_POINTS:
        steps = np.geomspace(1, values.size, PREDICTION_POINTS // 2).astype(np.int64)
        steps = np.concatenate([steps, np.arange(1, min(PREDICTION_ENDS, values.size) + 1)])
        at = values[np.unique(np.concatenate([steps - 1, values.size - steps]))]
    rate = clopper_pearson_upper(at, n_selection, pessimism)
    expected = np.minimum(rate * n_evaluation, n_evaluation)
    predicted = clopper_pearson_upper(expected, n_evaluation, gamma_each)
    if at is not values:
        predicted = np.interp(values, at, predicted)
    return predicted[inverse]


def _distinct(k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(k, return_inverse=True)``, without its sort when ``k`` is monotone, as the
    counts of one error along the thresholds are."""
    if k.ndim != 1 or k.size < 2:
        return np.unique(k, return_inverse=True)
    step = np.diff(k)
    if (step >= 0).all():
        first = np.concatenate([[True], step != 0])
        return k[first], np.cumsum(first) - 1
    if (step <= 0).all():
        values, inverse = _distinct(k[::-1])
        return values, inverse[::-1]
    return np.unique(k, return_inverse=True)


def bonferroni_candidates(
    fp: np.ndarray,
    fn: np.ndarray,
    n_d: int,
    n_d_prime: int,
    per_side: int = CANDIDATES_PER_SIDE,
) -> np.ndarray:
    """Indices of the candidate thresholds, chosen from selection counts.

    For ``per_side`` rates ``r`` log-spaced from ``1/N`` to ``1/2``: the first threshold whose
    selection ``alpha`` is at most ``r`` and the last one whose selection ``beta`` is at most
    ``r``. This covers both tails (where ``eps`` bounds live) and the middle (``mu``) with about
    ``2 * per_side`` thresholds; duplicates are merged.
    """
    per_side = check_integer("per_side", per_side, minimum=1)
    alpha = np.asarray(fp) / n_d
    beta = np.asarray(fn) / n_d_prime
    last = alpha.size - 1
    rates_d = np.geomspace(1.0 / n_d, 0.5, per_side)
    rates_d_prime = np.geomspace(1.0 / n_d_prime, 0.5, per_side)
    # alpha is non-increasing along the thresholds, beta non-decreasing.
    from_alpha = np.searchsorted(-alpha, -rates_d, side="left")
    from_beta = np.searchsorted(beta, rates_d_prime, side="right") - 1
    return np.unique(np.clip(np.concatenate([from_alpha, from_beta]), 0, last))


def holdout_choice(objective: np.ndarray) -> int | None:
    """The holdout's threshold: the index of the largest predicted objective, or ``None`` when no
    threshold's predicted objective is positive (then the audit falls back to the Bonferroni
    candidates; see the module docstring). ``objective`` depends on selection counts only."""
    values = np.asarray(objective, dtype=float)
    if values.size == 0 or not np.nanmax(values, initial=-np.inf) > 0.0:
        return None
    return int(np.nanargmax(values))


def ceiling_errors(n_d: int, n_d_prime: int, gamma: float) -> tuple[float, float]:
    """Upper bounds on both errors of a *perfect* attack (zero false positives and negatives)
    with ``n_d`` and ``n_d_prime`` evaluation trials, one threshold, ``gamma/2`` per bound.

    The Clopper-Pearson upper bound at zero counts has the closed form ``1 - (gamma/2)^(1/n)``
    (Clopper and Pearson 1934), so no audit of these sizes can certify more than the bounds read
    from these two numbers, whatever the attack: the *ceiling* of the sample sizes.
    """
    n_d = check_integer("n_d", n_d, minimum=1)
    n_d_prime = check_integer("n_d_prime", n_d_prime, minimum=1)
    half = gamma / 2.0
    return -float(np.expm1(np.log(half) / n_d)), -float(np.expm1(np.log(half) / n_d_prime))


def band_ceiling_errors(
    n_d: int,
    n_d_prime: int,
    gamma: float,
    exact_share: float | None = None,
    shapes: tuple[str, str] = ("tail", "tail"),
) -> tuple[float, float]:
    """The upper bounds the band of ``"holdout+band"`` reads for a *perfect* attack on ``n_d``
    and ``n_d_prime`` pooled trials: :func:`band_upper` of a zero count at the band's share of
    ``gamma`` (:func:`ceiling_errors` gives the holdout's); with ``exact_share``, those of the
    exact bands of the given ``shapes`` spending that share (:func:`exact_band_upper`)."""
    if exact_share is None:
        half = BAND_SHARE * gamma / 2
        return float(band_upper(np.array(0), n_d, half)), float(
            band_upper(np.array(0), n_d_prime, half)
        )
    each = exact_share * gamma / 2
    return float(exact_band_upper(np.array(0), n_d, each, shapes[0])), float(
        exact_band_upper(np.array(0), n_d_prime, each, shapes[1])
    )


def exact_share(n_selection_d: int, n_selection_d_prime: int) -> float:
    """The share of ``gamma`` the exact band of ``"holdout+exact"`` spends: :data:`EXACT_SHARE`
    when both selection samples hold :data:`EXACT_HOLDOUT_SELECTION` trials or more (the holdout
    then spends the rest), else all of it. A rule on sizes only."""
    large = min(n_selection_d, n_selection_d_prime) >= EXACT_HOLDOUT_SELECTION
    return EXACT_SHARE if large else 1.0


def crossed_tests(other_counts: np.ndarray) -> np.ndarray | None:
    """The tests of one error under ``"crossed"`` when the *other* side's trials take few
    values: given that side's counts per bin (bin ``k`` holds the scores in
    ``[e_{k-1}, e_k)``), the indices ``j`` of the tests "score >= e_j" at each of its values but
    the lowest; ``None`` (the error gets the exact band alone) unless the other side occupies
    between 2 and :data:`FEW_VALUES` bins and at most half as many as its trials.

    Both errors are tested at the rules "score >= e_j" themselves, so where the two sides share
    a value the two bounds are of one test; a rule between two tests reads the nearest test
    below it for ``alpha`` and above it for ``beta`` (:func:`crossed_upper`)."""
    h = np.asarray(other_counts)
    occupied = np.flatnonzero(h)
    if not 2 <= occupied.size <= min(FEW_VALUES, int(h.sum()) // 2):
        return None
    return occupied[1:] - 1


def crossed_weights(other_errors: np.ndarray, n_other: int, shape: str) -> np.ndarray:
    """The relative levels of the tests of one error under ``"crossed"`` (:func:`crossed_tests`),
    from the *other* side's error counts ``other_errors`` at the tests' rules (of its
    ``n_other`` trials) and the shape of the error's band (:func:`band_shape`).

    ``"tail"``: equal. ``"middle"``: the ``"middle"`` band's weights (:func:`band_weights`) at the
    other side's error counts, so that a rule where the other side errs at a rate between
    :data:`MIDDLE_FROM` and ``1/2`` gets the most: a law whose privacy loss is bounded (a
    two-sided geometric law's) is read where both errors are large, and when its two sides are
    mirror images the rule at which one errs at such a rate is the one at which the other does
    too. A function of the other side's trials only, so the tests keep their level.
    """
    other = np.asarray(other_errors)
    if shape == "middle":
        return band_weights(other, n_other, "middle")
    if shape == "tail":
        return np.ones(other.shape)
    raise ValueError(f"shape must be one of {BAND_SHAPES}, got {shape!r}")


def crossed_upper(
    k: np.ndarray,
    n: int,
    gamma: float,
    tests: np.ndarray | None,
    shape: str,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """Upper bounds, holding together with probability at least ``1 - gamma``, on the rate
    behind the counts ``k`` of one error at every threshold, the counts non-increasing along
    the thresholds (``alpha``'s; ``beta``'s read in reverse order).

    Without ``tests``: the exact band of the given ``shape`` (:func:`exact_band_upper`),
    simultaneous over every threshold. With ``tests`` (sorted threshold indices,
    :func:`crossed_tests`): the smaller of two bounds, each valid at every threshold, that
    share ``gamma`` (a union bound): the Clopper-Pearson bound at the ``K`` tests, the ``i``-th
    at ``(1 - FEW_VALUES_BAND_SHARE) gamma w_i / sum(w)`` (weighted Bonferroni; ``weights``
    ``w``, fixed before ``k`` is seen, :func:`crossed_weights`; equal when ``None``), read at
    any other threshold from the nearest test before it (the rate there is at most that test's,
    the counts being those of a nested family of events), or 1 before the first; and the
    exact band at ``FEW_VALUES_BAND_SHARE gamma``, which reads the thresholds the tests do not
    reach (one side's values beyond all of the other's, as a perfect attack's are).
    """
    k = np.asarray(k)
    if tests is None:
        return exact_band_upper(k, n, gamma, shape)
    w = np.ones(tests.size) if weights is None else np.asarray(weights, dtype=float)
    level = (1.0 - FEW_VALUES_BAND_SHARE) * gamma * w / w.sum()
    at = clopper_pearson_upper(k[tests], n, level)
    before = np.searchsorted(tests, np.arange(k.size), side="right") - 1
    tested = np.where(before >= 0, at[np.maximum(before, 0)], 1.0)
    return np.minimum(tested, exact_band_upper(k, n, FEW_VALUES_BAND_SHARE * gamma, shape))


def oracle_errors(
    curve: TradeoffCurve, n_d: int, n_d_prime: int, gamma: float, points: int = 4096
) -> tuple[np.ndarray, np.ndarray]:
    """The upper bounds an evaluation would report at every threshold of the *oracle* single
    threshold attack on a mechanism whose trade-off curve ``beta = f(alpha)`` is known.

    At ``points`` type-I errors ``alpha`` (log-spaced from ``1/(100 n_d)`` to ``1/2``, and the
    mirror image), the expected counts ``n_d alpha`` and ``n_d_prime f(alpha)`` are turned into
    Clopper-Pearson upper bounds at ``gamma/2`` each. The best bound over these pairs is an
    *estimate* of what the best pre-registered threshold certifies (about its median over
    repetitions), not a bound. Returns ``(alpha_upper, beta_upper)`` arrays.
    """
    n_d = check_integer("n_d", n_d, minimum=1)
    n_d_prime = check_integer("n_d_prime", n_d_prime, minimum=1)
    low = np.geomspace(1.0 / (100.0 * n_d), 0.5, points)
    alpha = np.concatenate([low, 1.0 - low[::-1]])
    beta = np.clip(np.asarray(curve(alpha), dtype=float), 0.0, 1.0)
    half = gamma / 2.0
    return (
        clopper_pearson_upper(alpha * n_d, n_d, half),
        clopper_pearson_upper(beta * n_d_prime, n_d_prime, half),
    )


def _best(
    objective: Callable[[np.ndarray, np.ndarray], np.ndarray],
    index: np.ndarray,
    fp: np.ndarray,
    fn: np.ndarray,
    n_d: int,
    n_d_prime: int,
    gamma_each: float,
) -> tuple[int, float]:
    """The candidate of ``index`` with the best evaluation objective at ``gamma_each`` per bound."""
    values = objective(
        clopper_pearson_upper(fp[index], n_d, gamma_each),
        clopper_pearson_upper(fn[index], n_d_prime, gamma_each),
    )
    i = int(np.argmax(values))
    return int(index[i]), float(values[i])


def choose_threshold(
    strategy: str,
    objective: Callable[[np.ndarray, np.ndarray], np.ndarray],
    selection: tuple[np.ndarray, np.ndarray, int, int] | None,
    evaluation: tuple[np.ndarray, np.ndarray, int, int],
    gamma: float,
    named: np.ndarray | None = None,
    memo: dict[Any, np.ndarray] | None = None,
    shapes: tuple[str, str] = ("tail", "tail"),
    tests: tuple[np.ndarray | None, np.ndarray | None] = (None, None),
) -> dict[str, Any]:
    """The threshold an audit reads its bound at, chosen by ``strategy``, and its bounds.

    Parameters
    ----------
    strategy:
        One of :data:`STRATEGIES`.
    objective:
        ``objective(alpha_upper, beta_upper) -> array``, larger is better (e.g. the ``eps`` bound).
    selection, evaluation:
        ``(fp, fn, n_d, n_d_prime)``: false positives and false negatives at every candidate
        threshold and the trials per dataset, of the selection and of the evaluation sample. For
        ``"fixed"`` the evaluation counts are those at the fixed thresholds and ``selection`` is
        not used (it may be ``None``). ``"holdout+band"`` needs both samples on the same
        thresholds.
    gamma:
        ``1 - confidence``.
    named:
        Indices of the thresholds that the selection sample names (all of them when ``None``).
        A grid whose edges include evaluation scores (:meth:`ScoreGrid.from_values` of both
        samples) names a threshold that depends on evaluation data at every evaluation value; the
        strategies that choose one threshold from counts choose among ``named`` only, so that
        their choice stays a function of the selection sample. The band of ``"holdout+band"``
        is simultaneous over all thresholds and reads every one.
    memo:
        A dictionary that keeps what does not depend on ``objective`` (the holdout's predicted
        bounds, the band) between calls with the same ``strategy``, counts, ``gamma`` and
        ``named``, e.g. the ``eps`` bounds of one audit at many ``delta``; empty at first.
    shapes:
        The shapes (:func:`band_weights`) of the exact bands of ``alpha`` and of ``beta``
        (``"holdout+exact"`` and ``"crossed"``), each chosen from the other side's trials
        (:func:`band_shape`) or fixed in advance. The two bands then spend ``gamma / 2`` of the
        band's share each: the band of one error is valid given the other side's trials, which
        fix its shape, so the two fail together with probability at most the sum.
    tests:
        For ``"crossed"``: the thresholds at which ``alpha`` and ``beta`` are tested when the
        other side's trials take few values (:func:`crossed_tests`), ``None`` for a band.

    Returns
    -------
    ``{"index", "gamma_per_bound", "candidates", "strategy", "fp", "fn", "n_d", "n_d_prime",
    "alpha_upper", "beta_upper"}``: the index of the threshold, the error probability of each of
    its two bounds, the number of tests the confidence was split over, the procedure used
    (``"holdout"``, ``"holdout+reserve"`` when the reserve's candidates won, ``"holdout+median"``
    when the holdout chose at the selection medians, ``"bonferroni"``, ``"fixed"``: the best of
    the user's ``K`` thresholds at ``gamma/(2K)`` per bound, or ``"band"`` when the full-sample
    band of ``"holdout+band"`` won), the counts the bounds were read from with their sample
    sizes, and the two upper bounds. Valid by the arguments of the module docstring.
    """
    if strategy == "crossed":
        return _crossed_choice(objective, selection, evaluation, gamma, memo, shapes, tests)
    if strategy in ("holdout+band", "holdout+exact"):
        return _holdout_band_choice(
            strategy, objective, selection, evaluation, gamma, named, memo, shapes
        )
    if named is not None and strategy != "fixed":
        evaluation = (evaluation[0][named], evaluation[1][named], *evaluation[2:])
        if selection is not None:
            selection = (selection[0][named], selection[1][named], *selection[2:])
    choice = _single_choice(strategy, objective, selection, evaluation, gamma, memo)
    j, g = choice["index"], choice["gamma_per_bound"]
    fp, fn, n0, n1 = evaluation
    if named is not None and strategy != "fixed":
        choice["index"] = int(named[j])
    return {
        **choice,
        **_read_at(
            j,
            (fp, fn, n0, n1),
            clopper_pearson_upper(fp[j], n0, g),
            clopper_pearson_upper(fn[j], n1, g),
        ),
    }


def _single_choice(
    strategy: str,
    objective: Callable[[np.ndarray, np.ndarray], np.ndarray],
    selection: tuple[np.ndarray, np.ndarray, int, int] | None,
    evaluation: tuple[np.ndarray, np.ndarray, int, int],
    gamma: float,
    memo: dict[Any, np.ndarray] | None = None,
) -> dict[str, Any]:
    """The choice of the strategies that read one sample's counts at one error level."""
    if strategy == "fixed":
        ev_fp, ev_fn, n0, n1 = evaluation
        k = ev_fp.size
        g = gamma / (2 * k)
        j, _ = _best(objective, np.arange(k), ev_fp, ev_fn, n0, n1, g)
        return {"index": j, "gamma_per_bound": g, "candidates": k, "strategy": "fixed"}
    if selection is None:
        raise ValueError(f"strategy {strategy!r} needs the selection counts")
    if strategy == "holdout":
        choice = _holdout_choice(objective, selection, evaluation, gamma, memo)
        if choice is not None:
            return choice
    elif strategy != "bonferroni":
        raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
    return _bonferroni_choice(objective, selection, evaluation, gamma)


def _holdout_band_choice(
    strategy: str,
    objective: Callable[[np.ndarray, np.ndarray], np.ndarray],
    selection: tuple[np.ndarray, np.ndarray, int, int] | None,
    evaluation: tuple[np.ndarray, np.ndarray, int, int],
    gamma: float,
    named: np.ndarray | None,
    memo: dict[Any, np.ndarray] | None,
    shapes: tuple[str, str],
) -> dict[str, Any]:
    """The better of the holdout and a band over both samples pooled: ``"holdout+band"`` (the
    holdout at ``(1 - BAND_SHARE) gamma``, :func:`band_upper` at ``BAND_SHARE gamma / 2`` per
    error) or ``"holdout+exact"`` (the holdout at ``(1 - s) gamma`` and :func:`exact_band_upper`
    of the given ``shapes`` at ``s gamma / 2`` per error, ``s`` = :func:`exact_share`).

    Valid by a union bound: the holdout's bounds fail with probability at most its share and the
    band's (simultaneous over all thresholds, so its best threshold needs no correction) with at
    most the rest; whichever is reported, all hold together with probability at least
    ``1 - gamma``. The pooled sample is the selection and the evaluation trials together,
    independent draws of the same two laws. Each error's exact band is valid given the other
    side's trials (which may choose its shape), so the two fail together with probability at
    most the sum of their levels.
    """
    if selection is None:
        raise ValueError(f"strategy {strategy!r} needs the selection counts")
    exact = strategy == "holdout+exact"
    share = exact_share(selection[2], selection[3]) if exact else BAND_SHARE
    holdout = None
    if share < 1.0:
        holdout = choose_threshold(
            "holdout", objective, selection, evaluation, (1 - share) * gamma, named, memo
        )
    fp, fn, n0, n1 = pooled = _pooled(selection, evaluation)
    each = share * gamma / 2
    if exact:
        starts, a, b = _remembered(
            memo, ("exact", each, shapes), lambda: _exact_band_runs(fp, fn, n0, n1, each, shapes)
        )
        key, k0, k1, per_bound = (
            "exact",
            exact_band_counts(n0).size,
            exact_band_counts(n1).size,
            each,
        )
    else:
        a = _remembered(memo, ("band", 0, each), lambda: band_upper(fp, n0, each))
        b = _remembered(memo, ("band", 1, each), lambda: band_upper(fn, n1, each))
        starts = np.arange(a.size)
        key, k0, k1 = "band", band_counts(n0).size, band_counts(n1).size
        per_bound = each / max(k0, k1)
    values = objective(a, b)
    i = int(np.argmax(values))
    if holdout is not None and (
        not values[i]
        > objective(np.array([holdout["alpha_upper"]]), np.array([holdout["beta_upper"]]))[0]
    ):
        return holdout
    j = int(starts[i])
    return {
        "index": j,
        "gamma_per_bound": per_bound,
        "candidates": int(k0 + k1),
        "strategy": key,
        **_read_at(j, pooled, a[i], b[i]),
    }


def _crossed_choice(
    objective: Callable[[np.ndarray, np.ndarray], np.ndarray],
    selection: tuple[np.ndarray, np.ndarray, int, int] | None,
    evaluation: tuple[np.ndarray, np.ndarray, int, int],
    gamma: float,
    memo: dict[Any, np.ndarray] | None,
    shapes: tuple[str, str],
    tests: tuple[np.ndarray | None, np.ndarray | None],
) -> dict[str, Any]:
    """``"crossed"``: each error bounded on its own side's trials (selection and evaluation
    pooled) at ``gamma / 2`` by :func:`crossed_upper`, configured (tests or band, and the
    band's shape) by the other side's trials; the best threshold is read.

    Valid: the ``alpha`` bounds are a function of the ``D`` trials and of a configuration fixed
    by the ``D_prime`` trials, which are independent of them, so given the ``D_prime`` trials
    they all hold with probability at least ``1 - gamma / 2``; the same for ``beta``; so all
    hold together with probability at least ``1 - gamma``, and every threshold may be read.
    """
    fp, fn, n0, n1 = pooled = _pooled(selection, evaluation)
    half = gamma / 2
    last = fn.size - 1

    def bounds() -> tuple[np.ndarray, np.ndarray]:
        # Each error's tests are weighted by the other side's error counts at their rules.
        t0, t1 = tests
        w0 = None if t0 is None else crossed_weights(fn[t0], n1, shapes[0])
        w1 = None if t1 is None else crossed_weights(fp[t1], n0, shapes[1])
        mirrored = None if t1 is None else last - t1[::-1]
        a = crossed_upper(fp, n0, half, t0, shapes[0], w0)
        b = crossed_upper(
            fn[::-1], n1, half, mirrored, shapes[1], None if w1 is None else w1[::-1]
        )[::-1]
        return a, b

    a, b = _remembered(memo, ("crossed", half, shapes), bounds)
    values = objective(a, b)
    j = int(np.argmax(values))
    sizes = [
        exact_band_counts(n).size if t is None else t.size
        for n, t in ((n0, tests[0]), (n1, tests[1]))
    ]
    return {
        "index": j,
        "gamma_per_bound": half,
        "candidates": int(sum(sizes)),
        "strategy": "crossed",
        **_read_at(j, pooled, a[j], b[j]),
    }


def _pooled(
    selection: tuple[np.ndarray, np.ndarray, int, int] | None,
    evaluation: tuple[np.ndarray, np.ndarray, int, int],
) -> tuple[np.ndarray, np.ndarray, int, int]:
    """``(fp, fn, n_d, n_d_prime)`` of the selection and evaluation trials pooled (the
    evaluation's alone when there is no selection)."""
    fp, fn, n0, n1 = evaluation
    fp, fn = np.asarray(fp), np.asarray(fn)
    if selection is None:
        return fp, fn, n0, n1
    return fp + selection[0], fn + selection[1], n0 + selection[2], n1 + selection[3]


def _read_at(
    j: int,
    counts: tuple[np.ndarray, np.ndarray, int, int],
    alpha_upper: float,
    beta_upper: float,
) -> dict[str, Any]:
    """The part of a choice record that says what was read at threshold ``j``: its counts
    ``(fp, fn, n_d, n_d_prime)`` and the two upper bounds."""
    fp, fn, n0, n1 = counts
    return {
        "fp": int(fp[j]),
        "fn": int(fn[j]),
        "n_d": int(n0),
        "n_d_prime": int(n1),
        "alpha_upper": float(alpha_upper),
        "beta_upper": float(beta_upper),
    }


def _remembered(
    memo: dict[Any, Any] | None, key: tuple[Any, ...], compute: Callable[[], Any]
) -> Any:
    """``compute()``, kept in ``memo`` under ``key`` (``memo=None``: computed every time)."""
    if memo is None:
        return compute()
    if key not in memo:
        memo[key] = compute()
    return memo[key]


def _bonferroni_choice(
    objective: Callable[[np.ndarray, np.ndarray], np.ndarray],
    selection: tuple[np.ndarray, np.ndarray, int, int],
    evaluation: tuple[np.ndarray, np.ndarray, int, int],
    gamma: float,
) -> dict[str, Any]:
    """The best of the Bonferroni candidates on the evaluation sample, ``gamma/(2K)`` per bound."""
    cand = bonferroni_candidates(*selection)
    g = gamma / (2 * cand.size)
    j, _ = _best(objective, cand, *evaluation, g)
    return {
        "index": j,
        "gamma_per_bound": g,
        "candidates": int(cand.size),
        "strategy": "bonferroni",
    }


def _holdout_candidates(
    objective: Callable[[np.ndarray, np.ndarray], np.ndarray],
    selection: tuple[np.ndarray, np.ndarray, int, int],
    evaluation_sizes: tuple[int, int],
    share: float,
    memo: dict[Any, np.ndarray] | None = None,
) -> tuple[list[int], bool]:
    """The thresholds the selection sample predicts best at each pessimism, and whether the
    median fallback chose them (no pessimism found any)."""
    sel_fp, sel_fn, s0, s1 = selection
    n0, n1 = evaluation_sizes
    g = share / len(HOLDOUT_PESSIMISM)
    chosen: list[int] = []

    def predicted(level: float, pessimism: float) -> tuple[np.ndarray, np.ndarray]:
        return (
            _remembered(
                memo,
                ("predicted", 0, level, pessimism),
                lambda: predicted_upper(sel_fp, s0, n0, level, pessimism),
            ),
            _remembered(
                memo,
                ("predicted", 1, level, pessimism),
                lambda: predicted_upper(sel_fn, s1, n1, level, pessimism),
            ),
        )

    for p in HOLDOUT_PESSIMISM:
        j = holdout_choice(objective(*predicted(g, p)))
        if j is not None and j not in chosen:
            chosen.append(j)
    if chosen:
        return chosen, False
    j = holdout_choice(objective(*predicted(share, FALLBACK_PESSIMISM)))
    return ([] if j is None else [j]), True


def _holdout_choice(
    objective: Callable[[np.ndarray, np.ndarray], np.ndarray],
    selection: tuple[np.ndarray, np.ndarray, int, int],
    evaluation: tuple[np.ndarray, np.ndarray, int, int],
    gamma: float,
    memo: dict[Any, np.ndarray] | None = None,
) -> dict[str, Any] | None:
    """The holdout's choice (with the small-sample reserve when it applies), or ``None`` when
    the selection sample predicts no usable threshold (the caller falls back to Bonferroni)."""
    sel_fp, sel_fn, s0, s1 = selection
    n0, n1 = evaluation[2], evaluation[3]
    low, high = RESERVE_SELECTION
    reserve = HOLDOUT_RESERVE if low <= min(s0, s1) < high else 0.0
    share = (1.0 - reserve) * gamma / 2
    chosen, median = _holdout_candidates(objective, selection, (n0, n1), share, memo)
    if not chosen:
        return None
    g = share / len(chosen)
    best = _best(objective, np.array(chosen), *evaluation, g)
    label = "holdout+median" if median else "holdout"
    choice = {"index": best[0], "gamma_per_bound": g, "candidates": len(chosen), "strategy": label}
    if reserve == 0.0:
        return choice
    cand = bonferroni_candidates(sel_fp, sel_fn, s0, s1, SMALL_CANDIDATES_PER_SIDE)
    g_reserve = reserve * gamma / (2 * cand.size)
    other = _best(objective, cand, *evaluation, g_reserve)
    if best[1] >= other[1]:
        return choice
    return {
        "index": other[0],
        "gamma_per_bound": g_reserve,
        "candidates": int(cand.size),
        "strategy": "holdout+reserve",
    }
