"""Anytime-valid tests of a privacy claim: test supermartingales by betting, fed batch by batch.

An audit of fixed size spends its whole budget whatever the evidence; a sequential test looks at
the counts as they arrive and stops as soon as they decide, with its error still controlled at
*any* stopping time, however the stop was chosen. This module holds the test; the engine
(:func:`dpaudit.audit.engine.audit_sequential`) hands it the counts of each batch, and
:func:`dpaudit.testing.assert_private`, ``dpaudit run --until-decided`` and the library batteries
ask it when to stop.

**What is tested.** A claim is a trade-off curve ``f`` (``approx_dp(eps, delta)``, ``gdp(mu)``,
the curve of a zCDP or RDP guarantee). The mechanism is ``f``-DP on a pair when every test
``phi`` of ``D`` against ``D_prime`` has errors ``(alpha, beta)`` in the set
``C = {beta >= f(alpha), alpha >= f(beta)}`` (the second inequality is the other order of the
pair, ``T(D_prime, D) >= f``; for a symmetric ``f`` the two coincide). The test that answers
``D_prime`` iff ``score >= t`` has false positives ``X`` under ``D`` and false negatives ``Y`` under
``D_prime``, independent Bernoulli variables with means ``(alpha_t, beta_t)``; its complement
(``D_prime`` iff ``score < t``) is a test too, with errors ``(1 - alpha_t, 1 - beta_t)``. A claim is
refuted by showing that the errors of one such test lie outside ``C``.

``C`` is convex, and it is the intersection of the half-planes ``n . (alpha, beta) >= c`` of its
supporting lines: ``f``-DP implies ``(eps, delta_f(eps))``-DP for every ``eps >= 0``, that is
``e^eps alpha + beta >= 1 - delta_f(eps)``, and the inverse curve gives
``alpha + e^eps beta >= 1 - delta_{f^-1}(eps)`` (Dong, Roth & Su 2022, "Gaussian differential
privacy", Propositions 5 and 6: ``1 - delta_f(eps) = inf_alpha e^eps alpha + f(alpha)`` is the
support function of ``C`` in the direction ``(e^eps, 1)``). :func:`supporting_lines` takes them at
the slopes :data:`LINE_EPSILONS`, with ``delta_f`` the numerical dual of the curve's values (to
about ``1e-15``, never above the exact one) raised by :data:`DELTA_MARGIN`, so that no line cuts
into ``C``.

**The bet.** Before a batch, and from the counts of *earlier* batches only (a predictable choice;
nothing is chosen on the counts it is then scored on), the bettor names a threshold ``t`` (a
score-grid edge), the test or its complement, one supporting line ``n . x >= c``, a point
``(a, b)`` with ``n . (a, b) <= c`` and a stake ``m >= 0``. Each pair of trials, one under each
dataset, multiplies the wealth by

    ``(1 - m n_alpha (X - a)) (1 - m n_beta (Y - b))``.

*Lemma.* If ``(alpha, beta)`` lies in ``C`` and both factors are non-negative for ``X, Y`` in
``{0, 1}``, the expected factor is at most 1. Proof: with ``A = -m n_alpha (alpha - a)`` and
``B = -m n_beta (beta - b)``, the expectation is ``(1 + A)(1 + B)`` (``X`` and ``Y`` are
independent), both terms are expectations of non-negative variables, and
``A + B = -m (n . (alpha, beta) - n . (a, b)) <= -m (c - c) = 0`` on ``C``. If ``A`` and ``B`` are
both at most 0, ``(1 + A)(1 + B) <= 1``; otherwise ``AB <= 0`` and
``(1 + A)(1 + B) = 1 + A + B + AB <= 1``.

The factor is a product of a function of ``X`` and one of ``Y``, so a batch's factor depends only
on its counts (false positives among ``m0`` trials under ``D``, false negatives among ``m1`` under
``D_prime``), which is all the engine keeps. Since the trials of a batch are independent of the
past and the bet is fixed before them, the wealth is a non-negative supermartingale under every
distribution of the null (a test supermartingale), whatever the thresholds, lines, points and
stakes; by Ville's inequality ``P(sup_n W_n >= 1/a) <= a``: a test that rejects when the wealth
reaches ``1/a`` has level ``a`` at every stopping time (Ramdas, Grunwald, Vovk & Shafer 2023,
"Game-theoretic statistics and safe anytime-valid inference", Statistical Science, Section 3).
The mean of several test supermartingales (one per pair tested) is again one.

This is the betting construction of González, Dulce-Rubio, Ramdas & Ribero 2025 ("Sequentially
auditing differential privacy", NeurIPS), who bet on ``e^eps E_D[g] + delta - E_D_prime[g]`` for
a witness ``g`` learned online; here ``g`` is the indicator of a threshold test on the audit's
score (so counts suffice), every supporting line of an ``f``-DP claim is a candidate, and the
two errors carry separate stakes. **The choice of the bet** follows the growth-rate optimal
(GROW) e-value of a composite null (Grunwald, de Heide & Koolen 2024, "Safe testing", JRSS-B,
Theorem 1): against a simple alternative ``(alpha1, beta1)`` outside a convex null, the best
e-value is the likelihood ratio to its reverse information projection, the point of the null
closest in Kullback-Leibler divergence. For two Bernoulli errors and a half-plane, that ratio is
exactly the factor above, with ``(a, b)`` the projection of ``(alpha1, beta1)`` onto the line and
``m`` its Lagrange multiplier (:func:`kl_projection`). The alternative is the plug-in estimate
of the earlier batches (with half a pseudo-count on each side, so that it is never 0 or 1), as
for predictable plug-in bets on bounded means (Waudby-Smith & Ramdas 2024, "Estimating means of
bounded random variables by betting", JRSS-B). The threshold, side and line are those whose
plug-in estimate lies farthest outside the line in standard errors; the stake is
:data:`STAKE` of the projection's, which keeps the wealth from swinging on an estimate that the
choice among many thresholds made too optimistic. None of these choices affects validity.

**The decision** (:class:`SequentialTest`) spends ``level`` three ways, so that everything it
reports holds together with probability at least ``1 - level``:

- ``E_SHARE``: the claim's own test supermartingale (mean over the pairs) reaching
  ``1 / (E_SHARE level)`` refutes the claim;
- ``LADDER_SHARE``: an anytime-valid lower bound on ``eps`` at the claim's ``delta``: a test
  supermartingale for each claim ``(r_k, delta)``-DP on a ladder of values ``r_1 < r_2 < ...``
  above the claim's ``eps``, each at level ``LADDER_SHARE level``; the certified ``eps`` is the
  largest ``r_k`` such that ``r_1, ..., r_k`` are all refuted. The hypotheses are nested (a
  mechanism that is ``(r_j, delta)``-DP is ``(r_k, delta)``-DP for ``k > j``), so this
  fixed-sequence procedure overstates ``eps`` only if the first true hypothesis is refuted:
  probability at most ``LADDER_SHARE level``, with no correction for the number of rungs.
  ``r_1`` refuted refutes the claim, which is ``(eps, delta)``-DP at its own ``eps``.
- the rest, ``F = 1 - E_SHARE - LADDER_SHARE``: the fixed-sample verdict family of each pair
  (:meth:`AuditResult.verdict`), read at the look where the test stops, on that pair's counts of
  its last phase, at ``(1 - FINAL_SHARE) F level / (looks * pairs)``, plus
  ``FINAL_SHARE F level / pairs`` at the last look the schedule can make (the cap, where an
  audit of that size would be read). That family is defined at every look the schedule may
  make and these levels add up to ``F level``, so the union bound covers the look the evidence
  stopped at (whatever chose it): the bounds a report shows are valid, and a family that finds a
  violation refutes the claim too, so no bound beyond the claim is shown beside a "consistent"
  verdict.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import special

from dpaudit._core.validation import check_integer, check_probability
from dpaudit.audit.empirical import cumulative_errors
from dpaudit.bounds.tradeoff import TradeoffCurve

__all__ = [
    "DELTA_MARGIN",
    "E_SHARE",
    "FINAL_SHARE",
    "LADDER_SHARE",
    "LINE_EPSILONS",
    "STAKE",
    "Bet",
    "BettingProcess",
    "Candidates",
    "SequentialAudit",
    "SequentialTest",
    "SupportingLines",
    "claim_delta",
    "kl_projection",
    "ladder",
    "supporting_lines",
]

#: Slopes ``e^eps`` of the supporting lines a claim is tested on (both orders of the pair).
LINE_EPSILONS = np.concatenate([[0.0], np.geomspace(1e-3, 50.0, 96)])

#: How much each line's ``delta_f(eps)`` is raised (its offset lowered): more than the error of a
#: numerically computed dual, so that no line cuts into the claim's null set.
DELTA_MARGIN = 1e-9

#: Pseudo-count added to each error count (and twice to each total) of the plug-in estimates.
PRIOR_COUNT = 0.5

#: Share of the Kullback-Leibler projection's stake that a bet stakes.
STAKE = 0.5

#: Share of the level spent by the claim's own test supermartingale.
E_SHARE = 0.5

#: Share of the level spent by the ladder of ``(r_k, delta)`` claims (the certified ``eps``).
LADDER_SHARE = 0.25

#: Share of the families' level kept for the last look the schedule can make (the cap).
FINAL_SHARE = 0.5

#: Ladder: ``r_k = eps + base (LADDER_GROWTH^k - 1)`` with ``base = max(eps, LADDER_BASE)``, at
#: most ``LADDER_RUNGS`` rungs and none above ``LADDER_TOP``.
LADDER_GROWTH = 1.12
LADDER_BASE = 0.05
LADDER_RUNGS = 40
LADDER_TOP = 60.0

#: Slopes of a rung's lines, added to its ``eps``: the line of its own ``eps`` and steeper ones
#: through ``(0, 1 - delta)``, which decide events of probability near zero under ``D``.
_RUNG_SLOPES = np.array([0.0, 0.5, 2.0, 8.0])


@dataclass(frozen=True)
class SupportingLines:
    """Half-planes ``weight * alpha + (1 - weight) * beta >= offset`` containing a claim's null
    set; ``epsilon`` is the slope's ``eps`` (``weight = e^eps / (1 + e^eps)`` in order
    ``"d_d_prime"``, ``1 / (1 + e^eps)`` in ``"d_prime_d"``) and ``order`` the order of each."""

    weight: np.ndarray
    offset: np.ndarray
    epsilon: np.ndarray
    order: tuple[str, ...]

    def __len__(self) -> int:
        return int(self.weight.size)


def supporting_lines(
    claim: TradeoffCurve, epsilons: Sequence[float] | np.ndarray = LINE_EPSILONS
) -> SupportingLines:
    """The supporting lines of ``claim``'s null set at the slopes ``e^eps``, ``eps`` in
    ``epsilons``, in both orders of the pair (see the module docstring): from ``claim``,
    ``e^eps alpha + beta >= 1 - delta_f(eps) - DELTA_MARGIN``; from its inverse,
    ``alpha + e^eps beta >= 1 - delta_{f^-1}(eps) - DELTA_MARGIN``; normalised so that the two
    coefficients sum to 1."""
    eps = np.asarray(epsilons, dtype=float)
    if eps.ndim != 1 or eps.size == 0 or not np.all(np.isfinite(eps)) or (eps < 0).any():
        raise ValueError(f"epsilons must be a non-empty 1-d array of finite eps >= 0, got {eps!r}")
    forward = _support_delta(claim, eps)
    backward = forward if claim.symmetric else _support_delta(claim.inverse(), eps)
    share = special.expit(eps)  # e^eps / (1 + e^eps), without overflow
    scale = special.expit(-eps)  # 1 / (1 + e^eps)
    weight = np.concatenate([share, scale])
    raw = np.concatenate([1.0 - forward, 1.0 - backward]) - DELTA_MARGIN
    offset = raw * np.concatenate([scale, scale])
    orders = ("d_d_prime",) * eps.size + ("d_prime_d",) * eps.size
    return SupportingLines(weight, offset, np.concatenate([eps, eps]), orders)


def _support_delta(curve: TradeoffCurve, eps: np.ndarray) -> np.ndarray:
    """``1 - inf_alpha (e^eps alpha + f(alpha))`` of the curve's values (the numerical dual of
    :class:`~dpaudit.bounds.tradeoff.TradeoffCurve`), not a closed-form profile it may carry:
    the verdict reads the claim off the curve's values, and a profile that is not their exact
    dual (a zCDP guarantee's conversion) would put the lines off the curve."""
    values = TradeoffCurve(curve.__call__, name=curve.name, symmetric=curve.symmetric)
    with np.errstate(all="ignore"):
        return np.asarray(values.delta(eps), dtype=float)


def _rung_lines(epsilon: float, delta: float) -> SupportingLines:
    """The lines of ``(epsilon, delta)``-DP at the slopes ``epsilon + _RUNG_SLOPES``: the claim's
    profile is ``delta`` at every ``eps' >= epsilon`` (its curve's dual, in closed form), in both
    orders (the curve is symmetric); equal to :func:`supporting_lines` of
    :func:`~dpaudit.bounds.tradeoff.approx_dp` at those slopes, without its numerical dual."""
    eps = epsilon + _RUNG_SLOPES
    share, scale = special.expit(eps), special.expit(-eps)
    offset = (1.0 - delta - DELTA_MARGIN) * scale
    return SupportingLines(
        np.concatenate([share, scale]),
        np.concatenate([offset, offset]),
        np.concatenate([eps, eps]),
        ("d_d_prime",) * eps.size + ("d_prime_d",) * eps.size,
    )


def _toward(p: np.ndarray, k: np.ndarray) -> np.ndarray:
    """The root in ``[p, 1)`` of ``k a^2 + (1 - k) a - p = 0`` (``a - p = k a (1 - a)``), the
    projection of one error estimate ``p`` for the multiplier ``k = m n >= 0``."""
    root = np.sqrt((1.0 - k) ** 2 + 4.0 * k * p)
    # 2p / ((1 - k) + root): the stable form of (root - (1 - k)) / (2k) for both signs of 1 - k.
    with np.errstate(divide="ignore", invalid="ignore"):
        stable = np.where(1.0 - k >= 0, 2.0 * p / ((1.0 - k) + root), (root - (1.0 - k)) / (2 * k))
    return np.where(k > 0, stable, p)


def kl_projection(
    alpha: float, beta: float, weight: float, offset: float
) -> tuple[float, float, float]:
    """The Kullback-Leibler projection of the errors ``(alpha, beta)`` (both in ``(0, 1)``) onto
    the line ``weight * a + (1 - weight) * b = offset``: the point ``(a, b)`` of the line that
    minimises ``KL(Bern(alpha) || Bern(a)) + KL(Bern(beta) || Bern(b))``, and its multiplier
    ``m``. The stationarity conditions are ``a - alpha = m weight a (1 - a)`` and
    ``b - beta = m (1 - weight) b (1 - b)`` (:func:`_toward`); ``m >= 0`` is the root of the
    line's equation (Brent's method), and the point returned lies on the side
    ``weight a + (1 - weight) b <= offset`` (the bet needs it there). ``m = 0`` and
    ``(alpha, beta)`` when the estimate is not below the line."""
    p = np.array([alpha, beta], dtype=float)
    n = np.array([weight, 1.0 - weight])

    def side(m: float) -> tuple[np.ndarray, float]:
        point = _toward(p, m * n)
        return point, float(n @ point)

    if float(n @ p) >= offset:
        return float(p[0]), float(p[1]), 0.0
    hi = 1.0
    while side(hi)[1] < offset and hi < 1e300:
        hi *= 2.0
    from scipy import optimize  # slow to import: only when a test is run

    m = optimize.brentq(lambda k: side(k)[1] - offset, 0.0, hi, xtol=1e-300, rtol=1e-15)
    while m > 0.0 and side(m)[1] > offset:  # the bet needs the point on the lower side
        m = float(np.nextafter(m, 0.0))
    point, _ = side(m)
    return float(point[0]), float(point[1]), m


@dataclass(frozen=True)
class Bet:
    """One batch's bet, fixed before its counts: the test at grid edge ``edge`` (or its
    ``complement``) on line ``line`` of the bettor's :class:`SupportingLines`, with point
    ``(a, b)`` and stakes ``(stake_alpha, stake_beta) = m n``; ``estimate`` is the plug-in
    ``(alpha, beta)`` of the test it was chosen on (an estimate from earlier batches)."""

    edge: int
    complement: bool
    line: int
    a: float
    b: float
    stake_alpha: float
    stake_beta: float
    estimate: tuple[float, float]

    def log_factor(self, counts: np.ndarray) -> float:
        """``log`` of the factor the batch with per-bin ``counts`` (shape ``(2, bins)``) pays:
        ``sum_i log(1 - m n_alpha (X_i - a)) + sum_i log(1 - m n_beta (Y_i - b))``."""
        c0, c1 = np.asarray(counts[0], np.int64), np.asarray(counts[1], np.int64)
        m0, m1 = int(c0.sum()), int(c1.sum())
        fp = int(c0[self.edge + 1 :].sum())
        fn = int(c1[: self.edge + 1].sum())
        if self.complement:
            fp, fn = m0 - fp, m1 - fn
        total = 0.0
        for hits, size, stake, point in (
            (fp, m0, self.stake_alpha, self.a),
            (fn, m1, self.stake_beta, self.b),
        ):
            if stake == 0.0:
                continue
            total += hits * math.log1p(-stake * (1.0 - point)) if hits else 0.0
            total += (size - hits) * math.log1p(stake * point)
        return total


@dataclass(frozen=True)
class Candidates:
    """The tests a bet may be placed on, from the counts of the batches so far: for each, its
    score-grid ``edge``, whether it is the ``complement`` of "D_prime iff score >= edge", and
    its plug-in errors ``alpha``, ``beta`` (each count plus :data:`PRIOR_COUNT`, each total plus
    twice that, so that no estimate is 0 or 1).

    Only the vertices of the lower convex hull of the estimated points are kept (of the tests,
    and separately of their complements): the best test for any one supporting line is a
    vertex, and the choice then weighs each vertex by its standard error. The set depends on the
    counts alone (of edges with equal counts, the first one is kept).
    """

    edge: np.ndarray
    complement: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray

    @classmethod
    def from_counts(cls, counts: np.ndarray) -> Candidates | None:
        """The candidates of per-bin ``counts`` (``(2, bins)``), ``None`` without trials."""
        c0, c1 = np.asarray(counts[0], np.int64), np.asarray(counts[1], np.int64)
        n0, n1 = int(c0.sum()), int(c1.sum())
        if n0 == 0 or n1 == 0:
            return None
        fp, fn = cumulative_errors(c0, c1)
        # fp never grows and fn never shrinks along the edges: distinct points start a run.
        start = np.flatnonzero(np.concatenate([[True], (np.diff(fp) != 0) | (np.diff(fn) != 0)]))
        fp, fn = fp[start], fn[start]
        parts = []
        for complement in (False, True):
            k0, k1 = (n0 - fp, n1 - fn) if complement else (fp, fn)
            alpha = (k0 + PRIOR_COUNT) / (n0 + 2 * PRIOR_COUNT)
            beta = (k1 + PRIOR_COUNT) / (n1 + 2 * PRIOR_COUNT)
            keep = _hull_vertices(alpha, beta)
            parts.append((start[keep], np.full(keep.size, complement), alpha[keep], beta[keep]))
        return cls(*(np.concatenate(column) for column in zip(*parts, strict=True)))


def _hull_vertices(alpha: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Indices of the vertices of the lower convex hull of the points ``(alpha_i, beta_i)``
    (``alpha`` strictly monotone after keeping, at each ``alpha``, the point of smallest
    ``beta``): the boundaries of the pools of the isotonic regression of the chord slopes
    weighted by the ``alpha`` steps (Barlow, Bartholomew, Bremner & Brunk 1972, ch. 1)."""
    from scipy.optimize import isotonic_regression

    order = np.lexsort((beta, alpha))
    a, b = alpha[order], beta[order]
    first = np.concatenate([[True], np.diff(a) > 0])
    order, a, b = order[first], a[first], b[first]
    if a.size <= 2:
        return order
    blocks = isotonic_regression(np.diff(b) / np.diff(a), weights=np.diff(a)).blocks
    return order[blocks]


def _line_scores(
    alpha: np.ndarray, beta: np.ndarray, lines: SupportingLines
) -> tuple[np.ndarray, np.ndarray]:
    """For each estimate ``(alpha_i, beta_i)`` the best line: its index and the estimate's
    distance below it in standard errors of one trial pair (``0`` when above every line)."""
    w, c = lines.weight[None, :], lines.offset[None, :]
    a, b = alpha[:, None], beta[:, None]
    gap = c - (w * a + (1.0 - w) * b)
    var = w * w * a * (1.0 - a) + (1.0 - w) ** 2 * b * (1.0 - b)
    score = np.where(gap > 0, gap / np.sqrt(var), 0.0)
    best = np.argmax(score, axis=1)
    return best, score[np.arange(score.shape[0]), best]


class BettingProcess:
    """A test supermartingale for one claim on one pair (see the module docstring).

    Each batch is first scored with the bet fixed before it (:meth:`settle`); the next bet is
    then chosen from the candidates of all counts so far (:meth:`choose`), so a bet never sees
    the counts it is scored on. :meth:`restart` drops the bet when the score or the grid changes
    (a new phase of the engine); the wealth carries over. :meth:`update` does both steps for a
    process fed on its own.
    """

    def __init__(self, lines: SupportingLines, *, stake: float = STAKE) -> None:
        if not 0.0 < stake <= 1.0:
            raise ValueError(f"stake must be in (0, 1], got {stake!r}")
        self.lines = lines
        self.stake = float(stake)
        self.log_wealth = 0.0
        self.bet: Bet | None = None
        self.settled: Bet | None = None
        self._counts: np.ndarray | None = None

    def restart(self) -> None:
        """A new score or grid: forget the counts; the next batch is not bet on."""
        self._counts, self.bet = None, None

    def settle(self, counts: np.ndarray) -> float:
        """Score the batch of per-bin ``counts`` (``(2, bins)``) with the bet fixed before it;
        return its log factor (``0`` without a bet)."""
        step = 0.0 if self.bet is None else self.bet.log_factor(counts)
        self.log_wealth += step
        self.settled = self.bet
        return step

    def update(self, counts: np.ndarray) -> float:
        """:meth:`settle` the batch, add it to this process's counts and :meth:`choose` the
        next bet from them; returns the batch's log factor."""
        counts = np.asarray(counts, dtype=np.int64)
        step = self.settle(counts)
        self._counts = counts.copy() if self._counts is None else self._counts + counts
        self.choose(Candidates.from_counts(self._counts))
        return step

    def choose(self, candidates: Candidates | None) -> None:
        """Fix the next bet: the candidate test and supporting line whose estimate lies most
        standard errors below the line, the Kullback-Leibler projection of the estimate onto
        that line, :attr:`stake` of its multiplier (module docstring); none when no estimate
        lies below a line."""
        self.bet = None
        if candidates is None or candidates.edge.size == 0:
            return
        line, score = _line_scores(candidates.alpha, candidates.beta, self.lines)
        i = int(np.argmax(score))
        if score[i] <= 0:
            return
        alpha, beta = float(candidates.alpha[i]), float(candidates.beta[i])
        j = int(line[i])
        w = float(self.lines.weight[j])
        a, b, m = kl_projection(alpha, beta, w, float(self.lines.offset[j]))
        m *= self.stake
        if m > 0.0:
            edge, complement = int(candidates.edge[i]), bool(candidates.complement[i])
            self.bet = Bet(edge, complement, j, a, b, m * w, m * (1.0 - w), (alpha, beta))


def claim_delta(claim: TradeoffCurve, deltas: Sequence[float] = (0.0, 1e-5)) -> float:
    """The ``delta`` at which a claim states its ``eps``: ``delta(700) = 1 - f(0)`` (an
    ``(eps, delta)`` claim's own ``delta``) when the claim's ``eps`` is finite there, else the
    first of ``deltas`` where it is (``1e-5`` for a GDP or zCDP claim), else ``1 - f(0)``."""
    own = float(np.asarray(claim.delta(700.0)).ravel()[0])
    for delta in (own, *deltas):
        if math.isfinite(claim.epsilon(delta)):
            return float(delta)
    return own


def ladder(epsilon: float) -> np.ndarray:
    """The rungs ``r_1 < r_2 < ...`` above a claim's ``epsilon`` (see the module docstring)."""
    if not math.isfinite(epsilon):
        return np.zeros(0)
    base = max(epsilon, LADDER_BASE)
    rungs = epsilon + base * (LADDER_GROWTH ** np.arange(1, LADDER_RUNGS + 1) - 1.0)
    return rungs[rungs <= LADDER_TOP]


@dataclass
class _Pair:
    """The processes of one pair: the claim's and one per rung."""

    claim: BettingProcess
    rungs: list[BettingProcess]
    refuted_family: bool = False
    counts: np.ndarray | None = None


@dataclass
class SequentialTest:
    """The anytime-valid decision on ``claim`` over ``pairs`` pairs (module docstring).

    Parameters
    ----------
    claim:
        The claimed trade-off curve.
    level:
        Probability, at most, that a mechanism satisfying the claim is declared in violation,
        and that any number reported is wrong, whenever the test stops.
    pairs:
        Number of pairs tested together.
    looks:
        The most looks the schedule can make (the fixed-sample family of each look is read at
        ``(1 - E_SHARE - LADDER_SHARE) level / (looks * pairs)``).
    delta:
        The ``delta`` of the ladder's certified ``eps`` (default :func:`claim_delta`).
    """

    claim: TradeoffCurve
    level: float
    pairs: int = 1
    looks: int = 1
    delta: float | None = None
    log_e_value: float = 0.0
    history: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.level = check_probability("level", self.level, low_open=True, high_open=True)
        self.pairs = check_integer("pairs", self.pairs)
        self.looks = check_integer("looks", self.looks)
        if self.delta is None:
            self.delta = claim_delta(self.claim)
        self.claimed_epsilon = float(self.claim.epsilon(self.delta))
        self.rungs = ladder(self.claimed_epsilon)
        claim_lines = self.lines = supporting_lines(self.claim)
        rung_lines = [_rung_lines(r, self.delta) for r in self.rungs]
        self._pairs = [
            _Pair(BettingProcess(claim_lines), [BettingProcess(lines) for lines in rung_lines])
            for _ in range(self.pairs)
        ]

    # ------------------------------------------------------------------ levels
    @property
    def e_threshold(self) -> float:
        """The e-value at which the claim's test supermartingale refutes the claim."""
        return 1.0 / (E_SHARE * self.level)

    @property
    def ladder_threshold(self) -> float:
        """The e-value at which a rung of the ladder is refuted."""
        return 1.0 / (LADDER_SHARE * self.level)

    @property
    def family_share(self) -> float:
        """The share of the level the pairs' fixed-sample families spend."""
        return 1.0 - E_SHARE - LADDER_SHARE

    @property
    def look_gamma(self) -> float:
        """The level of each pair's fixed-sample family at a look: half of its share split
        over every look the schedule may make and the pairs."""
        return (1.0 - FINAL_SHARE) * self.family_share * self.level / (self.looks * self.pairs)

    @property
    def final_look_gamma(self) -> float:
        """The level at the last look the schedule can make (the cap): :attr:`look_gamma` plus
        :data:`FINAL_SHARE` of the families' share split over the pairs, so that an audit that
        runs to its cap reads its bounds almost as an audit of that size would."""
        return self.look_gamma + FINAL_SHARE * self.family_share * self.level / self.pairs

    # ------------------------------------------------------------------ feeding
    def restart(self, pair: int) -> None:
        """A new score or grid for ``pair``: its processes forget their counts."""
        state = self._pairs[pair]
        state.counts = None
        for process in (state.claim, *state.rungs):
            process.restart()

    def update(self, pair: int, counts: np.ndarray) -> None:
        """Feed one batch of ``pair``'s per-bin counts (``(2, bins)``) to its processes: each
        settles its bet, then all choose their next one from the same candidates."""
        state = self._pairs[pair]
        counts = np.asarray(counts, dtype=np.int64)
        processes = (state.claim, *state.rungs)
        for process in processes:
            process.settle(counts)
        state.counts = counts.copy() if state.counts is None else state.counts + counts
        candidates = Candidates.from_counts(state.counts)
        for process in processes:
            process.choose(candidates)

    def family(self, pair: int, verdict: str) -> None:
        """The fixed-sample family of ``pair`` at the stop (read at :attr:`look_gamma`, or at
        :attr:`final_look_gamma` at the cap) gave ``verdict`` (``"violated"`` or
        ``"consistent"``)."""
        if verdict == "violated":
            self._pairs[pair].refuted_family = True

    def close_look(self, **record: Any) -> None:
        """End a look: record the evidence and the look's own ``record`` entries."""
        self.history.append(
            {
                **record,
                "log_e_value": self.claim_log_e_value,
                "certified_epsilon": self.certified_epsilon,
                "family_refuted": [p.refuted_family for p in self._pairs],
            }
        )

    # ------------------------------------------------------------------ evidence
    @staticmethod
    def _log_mean(values: list[float]) -> float:
        return float(special.logsumexp(values) - math.log(len(values)))

    @property
    def claim_log_e_value(self) -> float:
        """``log`` of the claim's e-value: the mean over the pairs of their wealths."""
        return self._log_mean([p.claim.log_wealth for p in self._pairs])

    def _rung_refuted(self, k: int) -> bool:
        log_e = self._log_mean([p.rungs[k].log_wealth for p in self._pairs])
        return log_e >= math.log(self.ladder_threshold)

    @property
    def certified_epsilon(self) -> float | None:
        """The ladder's certified ``eps`` at :attr:`delta`: the largest rung with every rung up
        to it refuted, ``None`` when the first is not."""
        certified = None
        for k, rung in enumerate(self.rungs):
            if not self._rung_refuted(k):
                break
            certified = float(rung)
        return certified

    @property
    def decided_by(self) -> str | None:
        """What refuted the claim: ``"e-value"`` (the claim's test supermartingale), ``"ladder"``
        (the first rung above the claim's ``eps``), ``"family"`` (a pair's fixed-sample family
        at the stop), or ``None``."""
        if self.claim_log_e_value >= math.log(self.e_threshold):
            return "e-value"
        if self.certified_epsilon is not None:
            return "ladder"
        if any(p.refuted_family for p in self._pairs):
            return "family"
        return None

    @property
    def refuted(self) -> bool:
        """Whether the claim is refuted (at :attr:`level`, at any stopping time)."""
        return self.decided_by is not None

    def pair_log_e_values(self) -> list[float]:
        """Each pair's claim wealth (``log``); their mean is the claim's e-value."""
        return [p.claim.log_wealth for p in self._pairs]

    def leading_pair(self) -> int:
        """The pair that carries the most evidence: one whose family refuted the claim, else the
        one with the largest claim wealth."""
        for index, state in enumerate(self._pairs):
            if state.refuted_family:
                return index
        return int(np.argmax(self.pair_log_e_values()))

    def last_bet(self, pair: int) -> Bet | None:
        """The bet ``pair``'s claim process placed on its last batch."""
        return self._pairs[pair].claim.settled

    def record(self) -> dict[str, Any]:
        """The test as ``results.json`` holds it: levels, thresholds, evidence and history."""
        return {
            "method": "test supermartingale by betting (anytime-valid)",
            "level": self.level,
            "e_share": E_SHARE,
            "ladder_share": LADDER_SHARE,
            "e_threshold": self.e_threshold,
            "ladder_threshold": self.ladder_threshold,
            "look_gamma": self.look_gamma,
            "final_look_gamma": self.final_look_gamma,
            "final_share": FINAL_SHARE,
            "looks_at_most": self.looks,
            "pairs": self.pairs,
            "e_value": float(math.exp(min(self.claim_log_e_value, 700.0))),
            "pair_e_values": [float(math.exp(min(v, 700.0))) for v in self.pair_log_e_values()],
            "delta": self.delta,
            "claimed_epsilon": self.claimed_epsilon,
            "certified_epsilon": self.certified_epsilon,
            "refuted": self.refuted,
            "decided_by": self.decided_by,
            "history": list(self.history),
        }


@dataclass(frozen=True)
class SequentialAudit:
    """A sequential audit that stopped (:func:`dpaudit.audit.engine.audit_sequential`).

    ``test`` is the :class:`SequentialTest` as it stood at the stop; ``results`` the
    :class:`~dpaudit.audit.result.AuditResult` of each pair's last phase at the stop, read at the
    per-look level (:attr:`SequentialTest.look_gamma`, or :attr:`SequentialTest.final_look_gamma`
    at the cap) and ``verdicts`` their
    :meth:`~dpaudit.audit.result.AuditResult.verdict` families; ``stopped`` is ``"refuted"`` (a
    betting test refuted the claim at a look), ``"max_trials"`` (the last phase, of the cap's
    size, ended undecided) or ``"max_seconds"``, ``reason`` says why in a sentence (the
    families, read at the stop, may still refute the claim: :attr:`verdict`); ``looks`` and
    ``phases`` count what was made; ``outputs_per_dataset`` are the outputs each pair drew per
    dataset over all phases (probe, fit, training, pilot, selection and evaluation);
    ``schedule`` the design's settings.
    """

    test: SequentialTest
    results: tuple[Any, ...]
    verdicts: tuple[dict[str, Any], ...]
    stopped: str
    reason: str
    looks: int
    phases: int
    outputs_per_dataset: tuple[int, ...]
    seconds: float
    schedule: dict[str, Any]

    @property
    def verdict(self) -> str:
        """``"violated"`` when the claim is refuted, else ``"consistent"``."""
        return "violated" if self.test.refuted else "consistent"

    @property
    def pair(self) -> int:
        """The pair that carries the evidence (:meth:`SequentialTest.leading_pair`)."""
        return self.test.leading_pair()

    def epsilon_lower_bound(self, delta: float) -> float:
        """The certified ``eps`` at ``delta``: the largest of the pairs' family bounds at the
        stop and, at the ladder's ``delta``, the ladder's; all hold together at the test's
        level (module docstring)."""
        key = repr(float(delta))
        values = [v["epsilon_lower_bounds"].get(key) for v in self.verdicts]
        if any(v is None for v in values):
            raise ValueError(f"delta must be one of the deltas tested, got {delta!r}")
        best = max(values)
        if float(delta) == self.test.delta and self.test.certified_epsilon is not None:
            best = max(best, self.test.certified_epsilon)
        return float(best)

    def evidence(self) -> dict[str, Any] | None:
        """What refuted the claim, or ``None``: the pair and, for the test supermartingale, its
        last bet (threshold test, supporting line, the plug-in estimates it was chosen on);
        for the ladder, the certified ``eps``; for a family, the family's witness."""
        by = self.test.decided_by
        if by is None:
            return None
        index = self.pair
        out: dict[str, Any] = {"test": by, "pair": index}
        if by == "family":
            out["witness"] = self.verdicts[index]["witness"]
            return out
        if by == "ladder":
            out["certified_epsilon"] = self.test.certified_epsilon
            out["delta"] = self.test.delta
            return out
        out["e_value"] = float(math.exp(min(self.test.claim_log_e_value, 700.0)))
        bet = self.test.last_bet(index)
        if bet is not None:
            lines = self.test.lines
            edges = self.results[index].grid.edges
            out.update(
                {
                    "threshold": float(edges[bet.edge]),
                    "rule": "D_prime iff score < threshold"
                    if bet.complement
                    else "D_prime iff score >= threshold",
                    "alpha_estimate": bet.estimate[0],
                    "beta_estimate": bet.estimate[1],
                    "line_epsilon": float(lines.epsilon[bet.line]),
                    "line_order": lines.order[bet.line],
                }
            )
        return out

    def record(self) -> dict[str, Any]:
        """The audit's sequential record, as ``results.json`` holds it."""
        return {
            **self.test.record(),
            "stopped": self.stopped,
            "reason": self.reason,
            "looks": self.looks,
            "phases": self.phases,
            "outputs_per_dataset": list(self.outputs_per_dataset),
            "seconds": self.seconds,
            "schedule": dict(self.schedule),
            "family_gamma": float(self.results[0].gamma) if self.results else None,
            "evidence": self.evidence(),
        }
