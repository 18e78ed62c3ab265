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
- ``"fixed"``: thresholds given in advance by the user (``threshold=``); with ``K`` of them,
  ``gamma/(2K)`` per bound. The test is "D_prime iff score > t".

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
- fixed: as bonferroni, with the user's ``K`` thresholds fixed before any trial.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dpaudit._core.validation import check_integer
from dpaudit.audit.confidence import clopper_pearson_upper
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
    "holdout_choice",
    "choose_threshold",
    "HOLDOUT_RESERVE",
    "RESERVE_SELECTION",
    "SMALL_CANDIDATES_PER_SIDE",
    "bonferroni_candidates",
    "ceiling_errors",
    "oracle_errors",
]

STRATEGIES = ("holdout", "bonferroni", "fixed")

#: Default selection sample: ``max(trials // SELECTION_DIVISOR, MIN_SELECTION_TRIALS)`` per dataset.
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


def default_selection_trials(trials: int) -> int:
    """``max(trials // 4, 10_000)``: the selection sample per dataset unless told otherwise."""
    trials = check_integer("trials", trials, minimum=1)
    return max(trials // SELECTION_DIVISOR, MIN_SELECTION_TRIALS)


def predicted_upper(
    k_selection: np.ndarray,
    n_selection: int,
    n_evaluation: int,
    gamma_each: float,
    pessimism: float = HOLDOUT_PESSIMISM[0],
) -> np.ndarray:
    """The Clopper-Pearson upper bound an evaluation of ``n_evaluation`` trials would report if
    its rate were the selection's pessimistic estimate (its upper bound at ``1 - pessimism``)."""
    k = np.asarray(k_selection)
    values, inverse = np.unique(k, return_inverse=True)
    rate = clopper_pearson_upper(values, n_selection, pessimism)
    expected = np.minimum(rate * n_evaluation, n_evaluation)
    return clopper_pearson_upper(expected, n_evaluation, gamma_each)[inverse]


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
    selection: tuple[np.ndarray, np.ndarray, int, int],
    evaluation: tuple[np.ndarray, np.ndarray, int, int],
    gamma: float,
) -> dict[str, Any]:
    """The grid threshold a ``"holdout"`` or ``"bonferroni"`` audit reads its bound at.

    Parameters
    ----------
    strategy:
        ``"holdout"`` or ``"bonferroni"`` (``"fixed"`` thresholds are the user's).
    objective:
        ``objective(alpha_upper, beta_upper) -> array``, larger is better (e.g. the ``eps`` bound).
    selection, evaluation:
        ``(fp, fn, n_d, n_d_prime)``: false positives and false negatives at every grid edge and
        the trials per dataset, of the selection and of the evaluation sample.
    gamma:
        ``1 - confidence``.

    Returns
    -------
    ``{"index", "gamma_per_bound", "candidates", "strategy"}``: the grid index, the error
    probability of each of its two Clopper-Pearson bounds, the number of tests the confidence
    was split over, and the procedure used (``"holdout"``, ``"holdout+reserve"`` when the
    reserve's candidates won, ``"holdout+median"`` when the holdout chose at the selection
    medians, or ``"bonferroni"``). Valid by the arguments of the module docstring.
    """
    sel_fp, sel_fn, s0, s1 = selection
    ev_fp, ev_fn, n0, n1 = evaluation
    if strategy == "holdout":
        low, high = RESERVE_SELECTION
        reserve = HOLDOUT_RESERVE if low <= min(s0, s1) < high else 0.0
        share = (1.0 - reserve) * gamma / 2
        g = share / len(HOLDOUT_PESSIMISM)
        chosen = []
        for p in HOLDOUT_PESSIMISM:
            predicted = objective(
                predicted_upper(sel_fp, s0, n0, g, p), predicted_upper(sel_fn, s1, n1, g, p)
            )
            j = holdout_choice(predicted)
            if j is not None and j not in chosen:
                chosen.append(j)
        median = not chosen
        if median:
            predicted = objective(
                predicted_upper(sel_fp, s0, n0, share, FALLBACK_PESSIMISM),
                predicted_upper(sel_fn, s1, n1, share, FALLBACK_PESSIMISM),
            )
            j = holdout_choice(predicted)
            chosen = [] if j is None else [j]
        if chosen:
            g = share / len(chosen)
            best = _best(objective, np.array(chosen), ev_fp, ev_fn, n0, n1, g)
            choice = {"index": best[0], "gamma_per_bound": g, "candidates": len(chosen)}
            label = "holdout+median" if median else "holdout"
            if reserve == 0.0:
                return {**choice, "strategy": label}
            cand = bonferroni_candidates(sel_fp, sel_fn, s0, s1, SMALL_CANDIDATES_PER_SIDE)
            g_reserve = reserve * gamma / (2 * cand.size)
            other = _best(objective, cand, ev_fp, ev_fn, n0, n1, g_reserve)
            if best[1] >= other[1]:
                return {**choice, "strategy": label}
            return {
                "index": other[0],
                "gamma_per_bound": g_reserve,
                "candidates": int(cand.size),
                "strategy": "holdout+reserve",
            }
    elif strategy != "bonferroni":
        raise ValueError(f"strategy must be 'holdout' or 'bonferroni', got {strategy!r}")
    cand = bonferroni_candidates(sel_fp, sel_fn, s0, s1)
    g = gamma / (2 * cand.size)
    j, _ = _best(objective, cand, ev_fp, ev_fn, n0, n1, g)
    return {
        "index": j,
        "gamma_per_bound": g,
        "candidates": int(cand.size),
        "strategy": "bonferroni",
    }
