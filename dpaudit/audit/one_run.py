"""One-run audits: many canaries, each included by an independent coin, one training run.

Every canary ``i`` of ``m`` is included independently with probability ``1/2`` (or the designed
``inclusion``, see below); the trained model gives every canary a score (larger = "included").
The auditor guesses "included" for the ``k_+``
canaries with the largest scores, "excluded" for the ``k_-`` canaries with the smallest scores,
and abstains on the others; ``c`` of its ``k = k_+ + k_-`` guesses are correct. Both papers guess
both ways (``sides="both"``, the default, splits ``k`` evenly); ``sides="in"`` makes only the
``k_+ = k`` positive guesses. Two tests turn ``(m, k, c)`` into a lower bound (both hold for any
guesses in {-1, 0, +1} that depend on the scores and on randomness independent of the
inclusions only):

- ``method="steinke"``: Steinke, Nasr & Jagielski 2023, "Privacy Auditing with One (1) Training
  Run", Theorem 5.2. If the algorithm is (eps, delta)-DP, then for every ``v``
  ``P[C >= v] <= f(v) + 2 m delta max_{1 <= i <= v} (f(v - i) - f(v)) / i`` with
  ``f(v) = P[Binomial(k, e^eps / (1 + e^eps)) >= v]``. The bound is the largest ``eps`` at which
  this p-value is below the test level.
- ``method="fdp"``: Mahloujifar, Melis & Chaudhuri 2025, "Auditing f-Differential Privacy in One
  Run", Theorem 3.1 computed by their Algorithm 3. For a trade-off curve
  ``f`` and ``b(x) = f(1 - x)``: ``r = tau c / m``, ``h = tau (k - c) / m``; for
  ``i = c - 1, ..., 0``: ``h' = max(h, b(r))``, ``r = min(r + i / (k - i) (h' - h), 1)``,
  ``h = h'``. The hypothesis "f-DP" is rejected at level ``tau`` when ``r + h > k / m``. Over an
  ordered family of curves the bound is the boundary between the rejected (too private) members
  and the others.

**Which family, and what it assumes.** A rejected member of a family only says that the
mechanism is not *that* member. The default family is (eps, delta)-DP itself (``family=None``:
``f_{eps,delta}(alpha) = max(0, 1 - delta - e^eps alpha, e^-eps (1 - delta - alpha))``, Dong, Roth
& Su 2022, Proposition 2.5), so the ``eps`` bound holds for *any* mechanism. A parametric family
gives more, but its ``eps`` is valid only for a mechanism that belongs to it, and it is asked for
by name: ``family="gdp"`` (Gaussian DP ``G_mu``, the bound is the largest rejected ``mu``) or
``family="dpsgd"`` (DP-SGD's Poisson-subsampled Gaussian composed over ``steps`` at
``sample_rate``, indexed by the noise multiplier ``sigma``; the bound is the smallest rejected
``sigma``, whose curve is the certified lower trade-off bound of
:func:`dpaudit.bounds.pld.poisson_subsampled_gaussian` composed ``steps`` times, so a rejection of
it implies the rejection of the exact curve). The result carries the assumption in
:attr:`OneRunResult.assumption`, and its label says it. What a family *refutes* needs no
assumption: every f-DP audit also reports the largest rejected GDP ``mu``
(:meth:`OneRunResult.mu_lower_bound`: "the mechanism is not ``mu'``-GDP for any ``mu' < mu``").

**Guesses depend on the scores only.** Canaries with equal scores are ordered by an independent
random key drawn from ``seed`` (:func:`tie_keys`, one key per canary), never by their position in
the arrays (a stable sort would let an array laid out "included first" certify privacy loss from
constant scores); the two halves of ``strategy="split"`` are ordered by their own canaries' keys,
so the selection half's order says nothing about the evaluation half's.

**Inclusion as designed.** Both theorems assume each canary is included by an independent fair
coin. The coin's probability is a parameter (``inclusion``, default 1/2), and the design is
checked: a membership vector that such coins make improbable (central two-sided binomial test,
p-value below :data:`DESIGN_CHECK_LEVEL`) is refused. Guesses are made among the canaries of a
*pool* (:func:`pools`): for guesses both ways, the canaries thinned to fair coins at the designed
probability (all of them at 1/2); for guesses one way only, the canaries thinned so that every
coin the check lets through with probability at least ``gamma`` (:func:`coin_range`) leaves a
kept canary included with probability at most 1/2 in the guessed direction. A fair coin is then
at most as favourable as the theorems assume, and a biased coin that gets past the check cannot
carry a bound: either the coin is in the range (the test is valid at ``gamma``) or the check
let it through with probability below ``gamma``. Guesses both ways, in equal numbers, are not
helped by a biased coin: what it adds to the "included" guesses it takes from the "excluded"
ones (for scores that carry no information, exactly).

**How the number of guesses is chosen** (``strategy``), each valid at the stated confidence:

- ``"bonferroni"``: the best of a fixed grid of :data:`GUESS_GRID_SIZE` totals ``k`` (log-spaced
  from 10 to ``m``, fixed before the scores are seen, each split into ``(k_+, k_-)`` by ``sides``),
  each tested at ``gamma / K``.
- ``"split"``: a random half of the canaries (:data:`SPLIT_SELECTION`, drawn from ``seed``)
  chooses ``(k_+, k_-)`` among :data:`SPLIT_GRID_SIZE` totals and, for ``sides="both"``, the
  :data:`SPLIT_SHARES` shares of "in" guesses, by the bound each would give there (for a family,
  its ``mu`` bound at the pessimistic level ``SPLIT_PESSIMISM * gamma``); the other half
  is tested once, at the full ``gamma``, with the chosen counts scaled to its size. Valid because
  the selection half's inclusions are independent of the evaluation half's: conditionally on
  them the evaluation canaries are ``m_eval`` canaries of a mechanism that is DP in each, and the
  guesses are a function of the output and of independent information.
- ``guesses=k``: one total fixed by the caller, tested at ``gamma``.
- ``"sweep"``: the best of the Bonferroni grid *without* the correction, as the published code of
  both papers does; labelled **uncorrected** in the result: an estimate, not a bound.

``"auto"`` (the default) is ``"split"`` for ``method="steinke"`` and for ``family="gdp"`` from
:data:`AUTO_SPLIT_FROM` canaries on, and ``"bonferroni"`` otherwise; it depends on the method, the
family and ``m`` only. Measured by ``bench/bench_one_run.py --seeds 8`` (idealised setting,
``m`` = 10^3, 10^4, 10^5, ``mu`` = 0.5, 1, 2): at 10^4 and 10^5 canaries the split raised the
mean Steinke bound in all six cells and the GDP-family bound in five (the sixth, 10^4 and
``mu = 0.5``: 1.119 against 1.124), the GDP family with the pessimistic ranking of
:data:`SPLIT_PESSIMISM`; at 10^3 it lowered the Steinke bound in 2 of 3
cells and the GDP bound in 1 of 3; the family-free f-DP bound was higher with Bonferroni in 8 of
the 9 cells. DP-SGD's family is not measured there and keeps Bonferroni.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy.special import expit, ndtr, ndtri

from dpaudit._core.jsonvalues import to_json_value
from dpaudit._core.streams import TAGS
from dpaudit._core.validation import (
    check_choice,
    check_integer,
    check_memory,
    check_nonnegative,
    check_probability,
    check_seed,
    real_scores,
)
from dpaudit.bounds.gaussian_dp import gdp_epsilon
from dpaudit.bounds.pld import MAX_COMPOSITIONS, poisson_subsampled_gaussian
from dpaudit.bounds.tradeoff import TradeoffCurve

__all__ = [
    "OneRunResult",
    "GUESS_GRID_SIZE",
    "SPLIT_GRID_SIZE",
    "SPLIT_SELECTION",
    "SPLIT_SHARES",
    "SPLIT_PESSIMISM",
    "AUTO_SPLIT_FROM",
    "DESIGN_CHECK_LEVEL",
    "ASSUMPTIONS",
    "TESTED_PARAMETERS",
    "audit_one_run",
    "guess_grid",
    "split_guesses",
    "canary_order",
    "tie_keys",
    "check_design",
    "coin_range",
    "pools",
    "correct_guesses",
    "simulate_one_run",
    "steinke_p_value",
    "steinke_epsilon",
    "fdp_rejects_gdp",
    "fdp_rejects_eps_delta",
    "fdp_rejects",
    "fdp_mu",
    "fdp_epsilon",
    "subsampled_gaussian_sigma",
]

#: Number of candidate guess counts in the Bonferroni grid.
GUESS_GRID_SIZE = 16

#: Number of candidate totals the selection half of ``strategy="split"`` chooses among.
SPLIT_GRID_SIZE = 64

#: Share of the canaries that ``strategy="split"`` uses to choose the guesses.
SPLIT_SELECTION = 0.5

#: Shares of "in" guesses that ``strategy="split"`` tries with ``sides="both"``.
SPLIT_SHARES = (0.5, 1.0, 0.0)

#: The selection half of ``strategy="split"`` ranks a family's guesses by their ``mu`` bound at
#: this share of ``gamma``: a pessimistic ranking, so that a small number of guesses that were
#: right by chance does not win (the winner's curse). Measured by ``bench/bench_one_run.py``.
SPLIT_PESSIMISM = 1e-4

#: ``strategy="auto"`` splits Steinke and GDP-family audits from this many canaries on.
AUTO_SPLIT_FROM = 2_000

#: A membership vector whose two-sided binomial p-value under the designed coins is below this is
#: refused.
DESIGN_CHECK_LEVEL = 1e-4

#: What each family assumes of the mechanism (``None``: nothing; the bound holds for any).
ASSUMPTIONS: dict[str | None, str | None] = {
    None: None,
    "gdp": "assumes the mechanism is mu-GDP for some mu (a Gaussian trade-off curve)",
    "dpsgd": (
        "assumes the mechanism is DP-SGD's Poisson-subsampled Gaussian at the given sampling "
        "rate and steps, for some noise multiplier"
    ),
}

#: The parameter a family's test bounds: ``bound`` and ``ceiling`` of a :class:`OneRunResult`.
TESTED_PARAMETERS: dict[str | None, str] = {None: "eps", "gdp": "mu", "dpsgd": "sigma"}

_METHODS = ("fdp", "steinke")
_FAMILIES = ("gdp", "dpsgd")
_STRATEGIES = ("auto", "bonferroni", "split", "sweep")
_SIDES = ("both", "in")


def simulate_one_run(
    m: int, mu: float, *, seed: int = 0, p: float = 0.5
) -> tuple[np.ndarray, np.ndarray]:
    """The idealised one-run setting: canary ``i`` included with probability ``p``, score
    ``N(mu * included_i, 1)``. This is ``mu``-GDP for every canary (the Gaussian mechanism with
    noise ``sigma = 1 / mu``), as in both papers' idealised experiments.

    Returns ``(scores, included)``.
    """
    m = check_integer("m", m, minimum=1)
    mu = check_nonnegative("mu", mu)
    p = check_probability("p", p)
    seed = check_seed("seed", seed)
    check_memory("m", m, 17 * m, "its scores and inclusions (and the uniform draws behind them)")
    rng = np.random.default_rng(seed)
    included = (rng.random(m) < p).astype(np.int8)
    return rng.standard_normal(m) + mu * included, included


def guess_grid(m: int, size: int = GUESS_GRID_SIZE) -> np.ndarray:
    """The fixed candidate guess counts: ``size`` values log-spaced from ``min(10, m)`` to ``m``."""
    m = check_integer("m", m, minimum=1)
    return np.unique(np.round(np.geomspace(min(10, m), m, size)).astype(np.int64))


def split_guesses(k: int, sides: str = "both") -> tuple[int, int]:
    """``(k_+, k_-)`` for ``k`` guesses in total: ``(ceil(k / 2), floor(k / 2))`` for
    ``sides="both"``, ``(k, 0)`` for ``sides="in"``."""
    k = check_integer("k", k, minimum=0)
    sides = check_choice("sides", sides, _SIDES)
    return (k, 0) if sides == "in" else ((k + 1) // 2, k // 2)


def tie_keys(m: int, seed: int = 0) -> np.ndarray:
    """One uniform key per canary, drawn from ``seed`` alone: the order among tied scores.

    Every canary has its own key, so two disjoint sets of canaries (the halves of
    ``strategy="split"``) are ordered by independent keys: a tie order that was lucky on the
    selection half says nothing about the evaluation half."""
    m = check_integer("m", m, minimum=0)
    tag = TAGS["one_run_ties"]
    return np.random.default_rng(np.random.SeedSequence([int(seed), tag])).random(m)


def canary_order(scores: object, seed: int = 0) -> np.ndarray:
    """Indices of the canaries from the highest score to the lowest; canaries with equal scores in
    the order of their :func:`tie_keys`, never by array position (which may carry membership:
    arrays laid out "included first")."""
    s = np.asarray(scores, dtype=float)
    return _order(s, tie_keys(s.size, seed))


def _order(s: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Indices from the highest score to the lowest, ties by ``key``."""
    return np.lexsort((key, -s))


def split_canaries(m: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The random halves of ``strategy="split"``: ``(selection, evaluation)`` index arrays,
    :data:`SPLIT_SELECTION` of the ``m`` canaries (at least one each) to selection, drawn from
    ``seed`` alone (never from scores or inclusions)."""
    m = check_integer("m", m, minimum=2)
    tag = TAGS["one_run_split"]
    perm = np.random.default_rng(np.random.SeedSequence([int(seed), tag])).permutation(m)
    n_sel = min(max(1, int(round(SPLIT_SELECTION * m))), m - 1)
    return np.sort(perm[:n_sel]), np.sort(perm[n_sel:])


def _check_inclusion(p: float) -> float:
    return check_probability("inclusion", p, low_open=True, high_open=True)


def check_design(included: np.ndarray, p: float = 0.5, level: float = DESIGN_CHECK_LEVEL) -> float:
    """The two-sided binomial p-value of the number of included canaries under independent coins
    of probability ``p`` (twice the smaller tail of Binomial(m, p), at most 1); raises
    ``ValueError`` naming ``included`` when it is below ``level``."""
    from scipy import stats

    p = _check_inclusion(p)
    z = np.asarray(included)
    n_in = int(z.sum())
    tails = stats.binom.cdf(n_in, z.size, p), stats.binom.sf(n_in - 1, z.size, p)
    p_value = float(min(1.0, 2.0 * min(tails)))
    if p_value < level:
        raise ValueError(
            f"included: {n_in} of {z.size} canaries are included, which independent inclusion "
            f"with probability {p:g} gives with p-value {p_value:.2g} (below {level:g}); both "
            f"one-run tests assume each canary is included by a coin of probability {p:g} "
            "(the inclusion= of the audit)"
        )
    return p_value


def coin_range(
    m: int, p: float, gamma: float, level: float = DESIGN_CHECK_LEVEL
) -> tuple[float, float]:
    """``(p_min, p_max)``: the coin probabilities for which :func:`check_design` at ``level``
    passes ``m`` canaries with probability at least ``gamma``.

    The check passes the counts ``lo <= n_in <= hi`` of the central two-sided test at ``level``
    around ``m p``; ``p_max`` is the coin at which ``P[Binomial(m, p_max) <= hi] = gamma`` (the
    one-sided Clopper–Pearson bound of ``hi`` at ``1 - gamma``) and ``p_min`` the coin at which
    ``P[Binomial(m, p_min) >= lo] = gamma``. A coin outside ``[p_min, p_max]`` gets past the
    check with probability below ``gamma``; one-sided guesses are made in pools thinned for the
    ends of this range (:func:`pools`), so a coin that the check lets through cannot carry a
    bound.
    """
    from scipy import stats

    m = check_integer("m", m, minimum=1)
    p = _check_inclusion(p)
    lo = int(stats.binom.ppf(level / 2.0, m, p))
    hi = m - int(stats.binom.ppf(level / 2.0, m, 1.0 - p))
    p_max = 1.0 if hi >= m else float(stats.beta.ppf(1.0 - gamma, hi + 1, m - hi))
    p_min = 0.0 if lo <= 0 else float(stats.beta.ppf(gamma, lo, m - lo + 1))
    return p_min, p_max


def _kept(z: np.ndarray, key: np.ndarray, coin: float) -> np.ndarray:
    """The canaries a pool keeps: all of one class, and of the other the share that makes the
    inclusion probability of a kept canary exactly 1/2 when the coins have probability
    ``coin`` (all canaries for ``coin = 1/2``); ``key`` are the canaries' thinning keys."""
    if coin >= 0.5:
        return (z == 0) | (key < (1.0 - coin) / coin)
    return (z == 1) | (key < coin / (1.0 - coin))


def pools(
    included: np.ndarray, p: float, coins: tuple[float, float], seed: int = 0
) -> dict[str, np.ndarray]:
    """The canaries each kind of guess is made among (indices, ascending).

    ``"both"`` (guesses both ways, in equal numbers): thinned so that a kept canary is included
    with probability exactly 1/2 when the coins have the designed probability ``p`` (no canary
    is dropped for ``p = 1/2``). ``"in"`` (only "included" guesses): thinned for the largest
    coin of ``coins``, so that every coin in that range leaves a kept canary included with
    probability at most 1/2. ``"out"`` (only "excluded" guesses): likewise for the smallest.
    Which canaries are dropped depends on the inclusions and on thinning keys drawn from
    ``seed`` alone, never on the scores.

    Why this is valid. Given the pool, its canaries' inclusions are independent coins of some
    probability ``p'``; for ``p' <= 1/2`` they are ``S'' AND U`` with fair ``S''`` and
    independent ``U ~ Bernoulli(2 p')``, and the mechanism, seen as a function of ``S''``, is DP
    in each canary as before (a mixture, with the same weights, of pairs that are). Every
    correct "included" guess is correct for ``S''`` too, so the number of correct guesses is at
    most that of a fair-coin one-run experiment on the pool, which both theorems cover
    (``p' >= 1/2`` and "excluded" guesses likewise with ``S'' OR U``).
    """
    z = np.asarray(included)
    tag = TAGS["one_run_thinning"]
    key = np.random.default_rng(np.random.SeedSequence([int(seed), tag])).random(z.size)
    p_min, p_max = coins
    modes = {"both": p, "in": p_max, "out": p_min}
    return {mode: np.flatnonzero(_kept(z, key, coin)) for mode, coin in modes.items()}


def correct_guesses(
    scores: object, included: object, k_in: int, k_out: int, *, seed: int = 0
) -> tuple[int, int]:
    """``(k, c)``: guesses made and correct when the ``k_in`` top-scoring canaries are guessed
    "included" and the ``k_out`` lowest-scoring ones "excluded", in :func:`canary_order`."""
    s, z = _check_inputs(scores, included)
    k_in = check_integer("k_in", k_in, minimum=0, maximum=s.size)
    k_out = check_integer("k_out", k_out, minimum=0, maximum=s.size - k_in)
    return _Counter(z[canary_order(s, seed)]).guesses(k_in, k_out)


def steinke_p_value(m: int, k: int, c: int, eps: float, delta: float) -> float:
    """P-value of ``c`` correct out of ``k`` guesses on ``m`` canaries under (eps, delta)-DP.

    Steinke, Nasr & Jagielski 2023, Theorem 5.2 (the ``delta`` term is ``2 m delta`` times the
    largest ``(f(c - i) - f(c)) / i``).
    """
    from scipy import stats

    q = float(expit(eps))
    tail = float(stats.binom.sf(c - 1, k, q))
    if delta == 0 or c == 0:
        return min(tail, 1.0)
    i = np.arange(1, c + 1)
    between = np.cumsum(stats.binom.pmf(c - i, k, q))
    return min(tail + 2.0 * m * delta * float(np.max(between / i)), 1.0)


def _bisect(reject: Any, hi: float, iterations: int = 40) -> float:
    """Largest parameter in ``[0, hi]`` at which ``reject`` holds (monotone: true below a point),
    to ``hi / 2^iterations``."""
    if not reject(1e-9):
        return 0.0
    lo = 1e-9
    while reject(hi):
        lo, hi = hi, 2.0 * hi
        if hi > 1e3:
            return lo
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        if reject(mid):
            lo = mid
        else:
            hi = mid
    return lo


def steinke_epsilon(
    m: int, k: int, c: int, delta: float, gamma: float, iterations: int = 40
) -> float:
    """Largest ``eps`` rejected at level ``gamma`` by :func:`steinke_p_value` (0 if none), by
    bisection over ``iterations`` halvings of a bracket that starts at ``[0, 4]`` (doubled while
    its top is rejected)."""
    return _bisect(lambda e: steinke_p_value(m, k, c, e, delta) < gamma, 4.0, iterations)


def _algorithm3(
    m: int, k: int, c: int, b: Callable[[np.ndarray], np.ndarray], shape: tuple, gamma: float
) -> np.ndarray:
    """Mahloujifar et al. 2025, Algorithm 3, vectorised over a family: ``b(r)`` returns
    ``f(1 - r)`` of every member (an array of ``shape``). True where the member is rejected."""
    if c == 0:
        return np.zeros(shape, dtype=bool)
    r = np.full(shape, gamma * c / m)
    h = np.full(shape, gamma * (k - c) / m)
    for i in range(c - 1, -1, -1):
        new_h = np.maximum(h, b(np.minimum(r, 1.0)))
        if np.array_equal(new_h, h):
            break
        r = np.minimum(r + i / (k - i) * (new_h - h), 1.0)
        h = new_h
    return r + h > k / m


def fdp_rejects_gdp(m: int, k: int, c: int, mu: np.ndarray, gamma: float) -> np.ndarray:
    """Algorithm 3 for ``G_mu`` (vectorised over ``mu``): True where ``mu``-GDP is rejected at
    level ``gamma`` by ``c`` correct out of ``k`` guesses. ``b(r) = Phi(Phi^-1(r) - mu)``."""
    mu = np.asarray(mu, dtype=float)

    def b(r: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return ndtr(ndtri(r) - mu)

    return _algorithm3(m, k, c, b, mu.shape, gamma)


def fdp_rejects_eps_delta(
    m: int, k: int, c: int, eps: np.ndarray, delta: float, gamma: float
) -> np.ndarray:
    """Algorithm 3 for the (eps, delta)-DP curves (vectorised over ``eps``): True where
    (eps, delta)-DP is rejected. ``b(r) = f_{eps,delta}(1 - r) =
    max(0, 1 - delta - e^eps (1 - r), e^-eps (r - delta))`` (Dong, Roth & Su 2022, Prop. 2.5)."""
    eps = np.asarray(eps, dtype=float)
    grow, shrink = np.exp(eps), np.exp(-eps)

    def b(r: np.ndarray) -> np.ndarray:
        return np.maximum(np.maximum(1.0 - delta - grow * (1.0 - r), shrink * (r - delta)), 0.0)

    return _algorithm3(m, k, c, b, eps.shape, gamma)


def fdp_rejects(m: int, k: int, c: int, curve: TradeoffCurve, gamma: float) -> bool:
    """Algorithm 3 for any trade-off curve ``f``: True when "f-DP" is rejected at level
    ``gamma`` by ``c`` correct out of ``k`` guesses on ``m`` canaries."""

    def b(r: np.ndarray) -> np.ndarray:
        return np.asarray(curve(np.maximum(0.0, 1.0 - r.reshape(1))), dtype=float).reshape(())

    return bool(_algorithm3(m, k, c, b, (), gamma))


def _largest_rejected(
    rejects: Callable[[np.ndarray], np.ndarray], top: float, refinements: int = 4
) -> float:
    """Largest parameter in ``(0, top]`` rejected by ``rejects`` (vectorised, monotone: rejected
    below a point): a 64-point log grid, then ``refinements`` linear grids of 33 points between
    the last rejected and the first accepted (about 1e-4 relative for 4); 0 if none."""
    if not rejects(np.array([1e-6]))[0]:
        return 0.0
    grid = np.geomspace(1e-6, top, 64)
    rejected = rejects(grid)
    last = int(np.flatnonzero(rejected).max())
    if last == grid.size - 1:
        return float(grid[-1])
    lo, hi = grid[last], grid[last + 1]
    for _ in range(refinements):
        fine = np.linspace(lo, hi, 33)
        j = int(np.flatnonzero(rejects(fine)).max())
        lo, hi = fine[j], fine[min(j + 1, fine.size - 1)]
    return float(lo)


def fdp_mu(m: int, k: int, c: int, gamma: float, refinements: int = 4) -> float:
    """Largest ``mu`` at which ``mu``-GDP is rejected (0 if none), to about 1e-4 relative."""
    if c == 0:
        return 0.0
    return _largest_rejected(lambda mu: fdp_rejects_gdp(m, k, c, mu, gamma), 64.0, refinements)


def fdp_epsilon(m: int, k: int, c: int, delta: float, gamma: float, refinements: int = 4) -> float:
    """Largest ``eps`` at which (eps, delta)-DP is rejected by Algorithm 3 (0 if none), to about
    1e-4 relative. Valid for any mechanism: no family is assumed."""
    if c == 0:
        return 0.0
    return _largest_rejected(
        lambda eps: fdp_rejects_eps_delta(m, k, c, eps, delta, gamma), 64.0, refinements
    )


def _dpsgd_curve(sigma: float, rate: float, steps: int) -> Any:
    return poisson_subsampled_gaussian(sigma, rate=rate).self_compose(steps)


def subsampled_gaussian_sigma(
    m: int, counts: list[tuple[int, int]], gamma: float, rate: float, steps: int
) -> float:
    """Smallest noise multiplier ``sigma`` of DP-SGD (``rate``, ``steps``) rejected by any of
    the ``(k, c)`` pairs at level ``gamma`` each (``inf`` if none is rejected), to 1% relative."""

    def rejected(sigma: float) -> bool:
        curve = _dpsgd_curve(sigma, rate, steps).tradeoff("lower")
        return any(fdp_rejects(m, k, c, curve, gamma) for k, c in counts)

    lo, hi = 0.05, 100.0
    if not rejected(hi):
        return math.inf
    if rejected(lo):
        return lo
    while hi / lo > 1.01:
        mid = math.sqrt(lo * hi)
        if rejected(mid):
            hi = mid
        else:
            lo = mid
    return hi


@dataclass(frozen=True)
class OneRunResult:
    """A one-run audit: what was guessed, what was certified, and the ceiling for ``m``.

    ``bound`` is ``eps`` at ``delta`` (``method="steinke"``, and ``method="fdp"`` with the default
    family-free test), ``mu`` (``family="gdp"``) or the noise multiplier ``sigma``
    (``family="dpsgd"``: the run is no more private than DP-SGD with this ``sigma``);
    :meth:`epsilon_lower_bound` converts, and :attr:`assumption` says what a conversion assumes
    (``None``: nothing). ``mu`` is the largest rejected GDP ``mu`` of an f-DP audit (valid without
    assumption). ``ceiling`` is the same bound if every guess had been correct (what a perfect
    attack could certify with these canaries). ``corrected`` is False for an uncorrected sweep:
    then the numbers are **estimates**, not bounds at ``confidence``. ``m_tested`` canaries were
    tested: those of the guesses' pool (:func:`pools`), less the selection half of
    ``strategy="split"``; ``counts`` holds ``[k, c]`` of every tested total, each at
    ``per_guess_level``; ``guesses = guesses_in + guesses_out`` are the counts behind ``bound``.
    ``inclusion`` is the designed probability of the inclusion coins and ``coins`` the range of
    coin probabilities ``[p_min, p_max]`` the one-sided pools were thinned for
    (:func:`coin_range`).
    """

    method: str
    strategy: str
    m: int
    included: int
    confidence: float
    delta: float
    guesses: int
    correct: int
    bound: float
    ceiling: float
    corrected: bool
    per_guess_level: float
    grid: list[int] = field(default_factory=list)
    family: str | None = None
    sample_rate: float | None = None
    steps: int | None = None
    sides: str = "both"
    guesses_in: int = 0
    guesses_out: int = 0
    m_tested: int = 0
    counts: list[list[int]] = field(default_factory=list)
    mu: float | None = None
    seed: int = 0
    inclusion: float = 0.5
    coins: list[float] = field(default_factory=lambda: [0.0, 1.0])

    @property
    def assumption(self) -> str | None:
        """What the ``eps`` of this result assumes of the mechanism; ``None`` when nothing."""
        return ASSUMPTIONS[self.family]

    @property
    def label(self) -> str:
        """``"lower bound"``, ``"lower bound, <assumption>"`` or, for an uncorrected sweep,
        ``"estimate (uncorrected sweep)"``."""
        if not self.corrected:
            return "estimate (uncorrected sweep)"
        return "lower bound" if self.assumption is None else f"lower bound, {self.assumption}"

    def _eps(self, value: float, delta: float, k_c: list[list[int]]) -> float:
        if self.family == "gdp":
            return float(gdp_epsilon(delta, value)) if value > 0 else 0.0
        if self.family == "dpsgd":
            if not math.isfinite(value):
                return 0.0
            return _dpsgd_curve(value, self.sample_rate, self.steps).epsilon(delta, "lower")
        if math.isclose(delta, self.delta):
            return value
        test = steinke_epsilon if self.method == "steinke" else fdp_epsilon
        m = self.m_tested or self.m
        return max((test(m, k, c, delta, self.per_guess_level) for k, c in k_c), default=0.0)

    def epsilon_lower_bound(self, delta: float | None = None) -> float:
        """``eps`` at ``delta`` (default: the audit's ``delta``). At another ``delta`` the tested
        counts are tested again at that ``delta`` (the family-free tests) or the family's
        parameter is converted (under :attr:`assumption`)."""
        delta = self.delta if delta is None else check_probability("delta", delta)
        return self._eps(self.bound, delta, self.counts)

    def mu_lower_bound(self) -> float:
        """The largest rejected ``mu`` of Gaussian DP (every ``method="fdp"`` audit): the
        mechanism is not ``mu'``-GDP for any smaller ``mu'``. No assumption."""
        if self.method != "fdp" or self.mu is None:
            raise ValueError("mu_lower_bound needs method 'fdp'")
        return self.mu

    def epsilon_ceiling(self) -> float:
        """``eps`` at the audit's ``delta`` that a perfect attack could certify with ``m``."""
        return self._eps(self.ceiling, self.delta, [[k, k] for k, _ in self.counts])

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready record, with ``eps`` at ``delta`` and its ceiling (``epsilon_lower_bound``,
        ``epsilon_ceiling``), the assumption and the label. The tested family's own parameter
        (``eps``, or ``mu`` for ``"gdp"``, the noise multiplier ``sigma`` for ``"dpsgd"``) goes
        under ``tested`` with its bound and ceiling, never under a bare ``ceiling`` that could be
        read as the ``eps`` ceiling. A value that is not finite (a ``sigma`` bound when no noise
        multiplier is rejected) is ``None``."""
        record = asdict(self)
        tested = {
            "parameter": TESTED_PARAMETERS[self.family],
            "bound": record.pop("bound"),
            "ceiling": record.pop("ceiling"),
        }
        return to_json_value(
            {
                **record,
                "epsilon_lower_bound": self.epsilon_lower_bound(),
                "epsilon_ceiling": self.epsilon_ceiling(),
                "tested": tested,
                "assumption": self.assumption,
                "label": self.label,
            },
            nonfinite="null",
        )

    def to_json(self, indent: int | None = None) -> str:
        """:meth:`to_dict` as strict JSON."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)


def _check_inputs(scores: object, included: object) -> tuple[np.ndarray, np.ndarray]:
    s = real_scores("scores", scores)
    if s.ndim != 1 or s.size < 2:
        raise ValueError(f"scores must be a 1-d array of at least 2 values, got shape {s.shape}")
    if np.isnan(s).any():
        raise ValueError("scores must not contain NaN")
    z = np.asarray(included)
    if z.shape != s.shape:
        raise ValueError(f"included must have the shape of scores {s.shape}, got {z.shape}")
    zf = z.astype(float)
    if np.isnan(zf).any() or not np.isin(zf, (0.0, 1.0)).all():
        raise ValueError("included must contain only 0 and 1")
    return s, zf.astype(np.int8)


def _check_family(
    family: str | None, method: str, sample_rate: float | None, steps: int | None
) -> tuple[str | None, float | None, int | None]:
    if family == "subsampled_gaussian":
        warnings.warn(
            "family='subsampled_gaussian' is deprecated and will be removed in the next release; "
            "use family='dpsgd'",
            DeprecationWarning,
            stacklevel=3,
        )
        family = "dpsgd"
    if family != "dpsgd" and (sample_rate is not None or steps is not None):
        raise ValueError("sample_rate and steps go with family 'dpsgd'")
    if family is None:
        return None, None, None
    family = check_choice("family", family, _FAMILIES)
    if method != "fdp":
        raise ValueError(f"family {family!r} needs method 'fdp'")
    if family == "gdp":
        return family, None, None
    if sample_rate is None or steps is None:
        raise ValueError("family 'dpsgd' needs sample_rate= and steps=")
    return (
        family,
        check_probability("sample_rate", sample_rate, low_open=True),
        check_integer("steps", steps, minimum=1, maximum=MAX_COMPOSITIONS),
    )


class _Counter:
    """Guesses made and correct for any ``(k_+, k_-)``, from the inclusions in
    :func:`canary_order`."""

    def __init__(self, ordered: np.ndarray) -> None:
        self.top = np.concatenate(([0], np.cumsum(ordered)))
        self.bottom = np.concatenate(([0], np.cumsum(1 - ordered[::-1])))

    def guesses(self, k_in: int, k_out: int) -> tuple[int, int]:
        """``(k, c)``: guesses made and correct."""
        return k_in + k_out, int(self.top[k_in] + self.bottom[k_out])


def audit_one_run(
    scores: object,
    included: object,
    *,
    delta: float = 1e-5,
    confidence: float = 0.95,
    method: str = "fdp",
    family: str | None = None,
    guesses: int | None = None,
    sides: str = "both",
    strategy: str = "auto",
    sample_rate: float | None = None,
    steps: int | None = None,
    inclusion: float = 0.5,
    seed: int = 0,
) -> OneRunResult:
    """Lower-bound the privacy of one training run from its canaries' scores.

    Parameters
    ----------
    scores:
        ``scores[i]``: the trained model's score of canary ``i`` (larger = "included").
    included:
        ``included[i]`` in {0, 1}: whether canary ``i`` was in the training set (each by an
        independent coin of probability ``inclusion``; checked, see :func:`check_design`).
    delta:
        The ``delta`` of the reported ``eps``.
    confidence:
        Level of the bound.
    method:
        ``"fdp"`` (Mahloujifar et al. 2025, Algorithm 3) or ``"steinke"`` (Steinke et al. 2023,
        Theorem 5.2).
    family:
        ``method="fdp"`` only. ``None`` (default): the (eps, delta) curves themselves, valid for
        any mechanism. ``"gdp"`` or ``"dpsgd"`` (needs ``sample_rate`` and ``steps``): a
        parametric family the caller declares the mechanism belongs to; the ``eps`` then carries
        that assumption (:attr:`OneRunResult.assumption`).
    guesses:
        Total number of guesses ``k`` (chosen before seeing the scores), split by ``sides``,
        tested once at the full level.
    sides:
        ``"both"``: guesses "included" for the top-scoring canaries and "excluded" for the
        lowest-scoring ones; ``"in"``: only "included".
    strategy:
        ``"auto"`` (by method, family and ``m`` only), ``"bonferroni"``, ``"split"`` (valid) or
        ``"sweep"`` (uncorrected: labelled an estimate, not a bound); see the module docstring.
    sample_rate, steps:
        The Poisson sampling rate and the number of steps of the audited DP-SGD run.
    inclusion:
        The probability of the coin that included each canary, as designed (default 1/2); the
        guesses are made among the canaries of :func:`pools`.
    seed:
        Seed of the order among tied scores (:func:`canary_order`), of the split's random
        halves (:func:`split_canaries`) and of the pools' thinning (:func:`pools`).
    """
    s, z = _check_inputs(scores, included)
    delta = check_probability("delta", delta)
    confidence = check_probability("confidence", confidence, low_open=True, high_open=True)
    method = check_choice("method", method, _METHODS)
    strategy = check_choice("strategy", strategy, _STRATEGIES)
    sides = check_choice("sides", sides, _SIDES)
    family, sample_rate, steps = _check_family(family, method, sample_rate, steps)
    inclusion = _check_inclusion(inclusion)
    seed = check_seed("seed", seed)
    check_design(z, inclusion)
    m = s.size
    if guesses is not None:
        guesses = check_integer("guesses", guesses, minimum=1, maximum=m)
        if strategy == "split":
            raise ValueError("guesses fixes the number of guesses; strategy 'split' chooses it")
    if strategy == "auto":
        split = guesses is None and (method == "steinke" or family == "gdp")
        split = split and m >= AUTO_SPLIT_FROM
        strategy = "split" if split else "bonferroni"
    gamma = 1.0 - confidence
    coins = coin_range(m, inclusion, gamma)
    pool = pools(z, inclusion, coins, seed)

    def value(m_t: int, k: int, c: int, level: float, coarse: bool = False) -> float:
        """The bound of one ``(k, c)``; ``coarse``: to about 1%, for the split's selection half
        (which ranks DP-SGD's sigma by GDP's mu: ordered alike, and far cheaper to test)."""
        if method == "steinke":
            return steinke_epsilon(m_t, k, c, delta, level, iterations=8 if coarse else 40)
        if family is None:
            return fdp_epsilon(m_t, k, c, delta, level, refinements=1 if coarse else 4)
        return fdp_mu(m_t, k, c, level, refinements=1 if coarse else 4)

    def bound(m_t: int, k_c: list[tuple[int, int]], level: float) -> tuple[float, int]:
        """The family's bound of the best pair and its index."""
        if family == "dpsgd":
            sigma = subsampled_gaussian_sigma(m_t, k_c, level, sample_rate, steps)
            if not math.isfinite(sigma):
                return sigma, 0
            curve = _dpsgd_curve(sigma, sample_rate, steps).tradeoff("lower")
            j = next((j for j, kc in enumerate(k_c) if fdp_rejects(m_t, *kc, curve, level)), 0)
            return sigma, j
        values = [value(m_t, k, c, level) for k, c in k_c]
        j = int(np.argmax(values))
        return values[j], j

    key = tie_keys(m, seed)
    if strategy == "split":
        sel, evaluation = split_canaries(m, seed)
        ranking = gamma if family is None else SPLIT_PESSIMISM * gamma
        k_in, k_out = _split_choice(
            s,
            z,
            key,
            {mode: np.intersect1d(sel, kept) for mode, kept in pool.items()},
            sides,
            lambda m_t, k, c: value(m_t, k, c, ranking, True),
        )
        chosen = pool[_mode(k_in, k_out, sides)]
        tested = np.intersect1d(evaluation, chosen)
        scale = tested.size / max(np.intersect1d(sel, chosen).size, 1)
        k_in = min(round(k_in * scale), tested.size)
        planned = [(k_in, min(round(k_out * scale), tested.size - k_in))]
        level = gamma
    else:
        tested = pool[sides]
        grid = [guesses] if guesses is not None else guess_grid(max(tested.size, 1))
        planned = [split_guesses(min(int(k), tested.size), sides) for k in grid]
        level = gamma / len(planned) if strategy == "bonferroni" else gamma
    counter = _Counter(z[tested][_order(s[tested], key[tested])])
    k_c = [counter.guesses(a, b) for a, b in planned]
    best, j = bound(tested.size, k_c, level)
    ceiling, _ = bound(tested.size, [(k, k) for k, _ in k_c], level)
    mu = None
    if method == "fdp":
        mu = best if family == "gdp" else max(fdp_mu(tested.size, k, c, level) for k, c in k_c)
    return OneRunResult(
        method=method,
        strategy=strategy,
        m=m,
        included=int(z.sum()),
        confidence=confidence,
        delta=delta,
        guesses=k_c[j][0],
        correct=k_c[j][1],
        bound=float(best),
        ceiling=float(ceiling),
        corrected=strategy != "sweep" or len(planned) == 1,
        per_guess_level=level,
        grid=[a + b for a, b in planned],
        family=family,
        sample_rate=sample_rate,
        steps=steps,
        sides=sides,
        guesses_in=planned[j][0],
        guesses_out=planned[j][1],
        m_tested=int(tested.size),
        counts=[[k, c] for k, c in k_c],
        mu=mu,
        seed=seed,
        inclusion=inclusion,
        coins=[coins[0], coins[1]],
    )


def _mode(k_in: int, k_out: int, sides: str) -> str:
    """The pool (:func:`pools`) of ``(k_+, k_-)`` guesses: ``"in"`` or ``"out"`` for guesses one
    way only, ``"both"`` for guesses both ways."""
    if sides == "in" or k_out == 0:
        return "in"
    return "out" if k_in == 0 else "both"


def _split_choice(
    s: np.ndarray,
    z: np.ndarray,
    key: np.ndarray,
    pools_sel: dict[str, np.ndarray],
    sides: str,
    value: Callable[[int, int, int], float],
) -> tuple[int, int]:
    """``(k_+, k_-)`` that gives the largest bound on the selection canaries, among
    :data:`SPLIT_GRID_SIZE` totals and the :data:`SPLIT_SHARES` of "in" guesses, each share
    counted in its own pool of the selection canaries (``pools_sel``, by :func:`_mode`);
    ``s``, ``z`` and ``key`` are the scores, inclusions and tie keys of all canaries."""
    shares = SPLIT_SHARES if sides == "both" else (1.0,)
    counters = {}
    for mode, idx in pools_sel.items():
        counters[mode] = (idx.size, _Counter(z[idx][_order(s[idx], key[idx])]))
    size = pools_sel[sides].size
    best, choice = -math.inf, split_guesses(min(10, max(size, 1)), sides)
    for k in guess_grid(max(size, 1), SPLIT_GRID_SIZE):
        for share in shares:
            k_in = int(round(share * int(k)))
            k_out = int(k) - k_in
            m_t, counter = counters[_mode(k_in, k_out, sides)]
            if k_in + k_out > m_t:
                continue
            v = value(m_t, *counter.guesses(k_in, k_out))
            if v > best:
                best, choice = v, (k_in, k_out)
    return choice
