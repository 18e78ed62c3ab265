"""How an audit picks the thresholds its bounds are read at, without invalidating them.

Choosing the best threshold after seeing the evaluation counts would invalidate the confidence
level (docs/theory.md#empirical). Every audit names one of three strategies:

- ``"holdout"`` (default): for each quantity (``eps`` at a given ``delta``, ``mu``, a violation of
  a claim) the threshold is chosen on the **selection sample**, a separate set of trials drawn
  from its own random stream, and the evaluation counts are read once, at that threshold. The
  confidence is split between ``alpha_upper`` and ``beta_upper`` (``gamma/2`` each). Each
  quantity is valid on its own at the stated confidence.
- ``"bonferroni"``: a candidate set of ``K`` thresholds is fixed from the selection sample (rates
  log-spaced from ``1/N_selection`` to ``1/2`` on both sides, :func:`bonferroni_candidates`), and
  the best candidate is taken on the evaluation counts with ``gamma/(2K)`` per bound.
- ``"fixed"``: thresholds given in advance by the user (``threshold=``); with ``K`` of them,
  ``gamma/(2K)`` per bound. The test is "D_prime iff score > t".

The holdout choice maximises the bound the evaluation would give if its error rates were
*pessimistic* selection estimates (the selection's Clopper-Pearson upper bounds at level
``1 - HOLDOUT_PESSIMISM``). Taking the best of thousands of noisy selection estimates otherwise
favours thresholds whose tail counts were low by chance (the winner's curse), which costs far
more than the pessimism does. This only affects which threshold is used, never the validity.
"""

from __future__ import annotations

import numpy as np

from dpaudit.audit.confidence import clopper_pearson_upper
from dpaudit.bounds.validation import check_integer

__all__ = [
    "STRATEGIES",
    "SELECTION_DIVISOR",
    "MIN_SELECTION_TRIALS",
    "HOLDOUT_PESSIMISM",
    "CANDIDATES_PER_SIDE",
    "default_selection_trials",
    "predicted_upper",
    "bonferroni_candidates",
]

STRATEGIES = ("holdout", "bonferroni", "fixed")

#: Default selection sample: ``max(trials // SELECTION_DIVISOR, MIN_SELECTION_TRIALS)`` per dataset.
SELECTION_DIVISOR = 4

#: Smallest default selection sample per dataset.
MIN_SELECTION_TRIALS = 10_000

#: Error probability of the pessimistic selection estimates used to choose holdout thresholds.
HOLDOUT_PESSIMISM = 1e-3

#: Number of log-spaced rates per side that define the Bonferroni candidate set.
CANDIDATES_PER_SIDE = 64


def default_selection_trials(trials: int) -> int:
    """``max(trials // 4, 10_000)``: the selection sample per dataset unless told otherwise."""
    trials = check_integer("trials", trials, minimum=1)
    return max(trials // SELECTION_DIVISOR, MIN_SELECTION_TRIALS)


def predicted_upper(
    k_selection: np.ndarray, n_selection: int, n_evaluation: int, gamma_each: float
) -> np.ndarray:
    """The Clopper-Pearson upper bound an evaluation of ``n_evaluation`` trials would report if
    its rate were the selection's pessimistic estimate (its upper bound at
    ``1 - HOLDOUT_PESSIMISM``)."""
    k = np.asarray(k_selection)
    values, inverse = np.unique(k, return_inverse=True)
    rate = clopper_pearson_upper(values, n_selection, HOLDOUT_PESSIMISM)
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
