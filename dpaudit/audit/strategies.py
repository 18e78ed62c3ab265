"""How an audit picks the thresholds its bounds are read at, without invalidating them.

Choosing the best threshold after seeing the evaluation counts would invalidate the confidence
level (THEORY.md section 5). Every audit names one of three strategies:

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
``1 - HOLDOUT_PESSIMISM``, about one standard error above the estimate). Taking the best of
thousands of noisy selection estimates otherwise favours thresholds whose tail counts were low by
chance (the winner's curse); a much stronger pessimism (``1e-3``) overshoots and drives the choice
away from the tails where the best bounds live (Gaussian, true ``eps = 1`` at ``delta = 1e-5``,
``10^6`` trials, median of 20 seeds: ``0.72`` at ``1e-3``, ``0.76`` at ``0.16``).

**Holdout cannot collapse.** When the selection sample is too small for any threshold's predicted
bound to be positive (a few hundred trials), the holdout falls back to the Bonferroni candidates
(:func:`holdout_choice` returns ``None``). Validity: the decision to fall back is a function of
the selection counts only, which are independent of the evaluation counts; conditionally on the
selection sample, the procedure then applied (one threshold at ``gamma/2`` per bound, or ``K``
candidates at ``gamma/(2K)`` per bound) is a fixed, valid test, so the unconditional error
probability is at most ``gamma`` as well.

Proofs, each conditional on the selection sample (independent of the evaluation sample):

- holdout: the threshold ``j`` is fixed; the evaluation counts ``FP_j ~ Bin(N, alpha_j)`` and
  ``FN_j ~ Bin(N', beta_j)`` are independent, and their Clopper-Pearson upper bounds at ``gamma/2``
  each hold together with probability at least ``1 - gamma`` (union bound). Every bound read
  from ``(alpha+, beta+)`` is monotone in both, so it holds whenever they do (Kairouz et al. 2015,
  Theorem 2.4; Dong, Roth and Su 2022, Definition 2.1 for ``mu``).
- bonferroni: ``K`` thresholds are fixed; ``2K`` Clopper-Pearson bounds at ``gamma/(2K)`` each hold
  together with probability at least ``1 - gamma``, so the best of them is valid.
- fixed: as bonferroni, with the user's ``K`` thresholds fixed before any trial.
"""

from __future__ import annotations

import numpy as np

from dpaudit.audit.confidence import clopper_pearson_upper
from dpaudit.bounds.tradeoff import TradeoffCurve
from dpaudit.bounds.validation import check_integer

__all__ = [
    "STRATEGIES",
    "SELECTION_DIVISOR",
    "MIN_SELECTION_TRIALS",
    "HOLDOUT_PESSIMISM",
    "CANDIDATES_PER_SIDE",
    "default_selection_trials",
    "predicted_upper",
    "holdout_choice",
    "bonferroni_candidates",
    "ceiling_errors",
    "oracle_errors",
]

STRATEGIES = ("holdout", "bonferroni", "fixed")

#: Default selection sample: ``max(trials // SELECTION_DIVISOR, MIN_SELECTION_TRIALS)`` per dataset.
SELECTION_DIVISOR = 4

#: Smallest default selection sample per dataset.
MIN_SELECTION_TRIALS = 10_000

#: Error probability of the pessimistic selection estimates used to choose holdout thresholds
#: (one-sided, about one standard error; measured by ``bench/bench_strategies.py``).
HOLDOUT_PESSIMISM = 0.16

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
