"""One-run audits: many canaries, each included with probability 1/2, one training run.

Every canary ``i`` of ``m`` is included independently with probability ``1/2``; the trained model
gives every canary a score (larger = "included"). The auditor guesses "included" for the ``k_+``
canaries with the largest scores, "excluded" for the ``k_-`` canaries with the smallest scores,
and abstains on the others; ``c`` of its ``k = k_+ + k_-`` guesses are correct. Both papers guess
both ways (``sides="both"``, the default, splits ``k`` evenly); ``sides="in"`` makes only the
``k_+ = k`` positive guesses. Two tests turn ``(m, k, c)`` into a lower bound (both hold for any
guesses in {-1, 0, +1} that depend on the scores only):

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
  ordered family the bound is the boundary between the rejected (too private) members and the
  others; its ``eps`` at ``delta`` is reported. Families: Gaussian DP ``G_mu`` (``family="gdp"``,
  the bound is the largest rejected ``mu``), and DP-SGD's Poisson-subsampled Gaussian composed
  over ``steps`` at ``sample_rate`` (``family="subsampled_gaussian"``, indexed by the noise
  multiplier ``sigma``; the bound is the smallest rejected ``sigma``, whose curve is the certified
  lower trade-off bound of :func:`dpaudit.bounds.pld.poisson_subsampled_gaussian` composed
  ``steps`` times, so a rejection of it implies the rejection of the exact curve).

The number of guesses is chosen validly: either fixed by the caller (``guesses=k``), or the best
of a fixed grid of :data:`GUESS_GRID_SIZE` totals ``k`` (log-spaced from 10 to ``m``, fixed before
the scores are seen, each split into ``(k_+, k_-)`` by ``sides``) with a Bonferroni correction
(each member tested at ``gamma / K``). The published
one-run code sweeps ``k`` without a correction; ``strategy="sweep"`` does the same and is labelled
**uncorrected** in the result: it is not a bound at the stated confidence.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy import stats
from scipy.special import expit, ndtr, ndtri

from dpaudit._core.jsonvalues import to_json_value
from dpaudit._core.validation import (
    check_choice,
    check_integer,
    check_nonnegative,
    check_probability,
)
from dpaudit.bounds.gdp import gdp_epsilon
from dpaudit.bounds.pld import poisson_subsampled_gaussian
from dpaudit.bounds.tradeoff import TradeoffCurve

__all__ = [
    "OneRunResult",
    "GUESS_GRID_SIZE",
    "audit_one_run",
    "guess_grid",
    "split_guesses",
    "correct_guesses",
    "simulate_one_run",
    "steinke_p_value",
    "steinke_epsilon",
    "fdp_rejects_gdp",
    "fdp_rejects",
    "fdp_mu",
    "subsampled_gaussian_sigma",
]

#: Number of candidate guess counts in the Bonferroni grid.
GUESS_GRID_SIZE = 16

_METHODS = ("fdp", "steinke")
_FAMILIES = ("gdp", "subsampled_gaussian")
_STRATEGIES = ("bonferroni", "sweep")
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


def correct_guesses(scores: object, included: object, k_in: int, k_out: int) -> int:
    """Correct guesses when the ``k_in`` top-scoring canaries are guessed "included" and the
    ``k_out`` lowest-scoring ones "excluded" (ties broken by index, never by membership)."""
    s, z = _check_inputs(scores, included)
    k_in = check_integer("k_in", k_in, minimum=0, maximum=s.size)
    k_out = check_integer("k_out", k_out, minimum=0, maximum=s.size - k_in)
    ordered = z[np.argsort(-s, kind="stable")]
    return int(ordered[:k_in].sum()) + k_out - int(ordered[s.size - k_out :].sum())


def steinke_p_value(m: int, k: int, c: int, eps: float, delta: float) -> float:
    """P-value of ``c`` correct out of ``k`` guesses on ``m`` canaries under (eps, delta)-DP.

    Steinke, Nasr & Jagielski 2023, Theorem 5.2 (the ``delta`` term is ``2 m delta`` times the
    largest ``(f(c - i) - f(c)) / i``).
    """
    q = float(expit(eps))
    tail = float(stats.binom.sf(c - 1, k, q))
    if delta == 0 or c == 0:
        return min(tail, 1.0)
    i = np.arange(1, c + 1)
    between = np.cumsum(stats.binom.pmf(c - i, k, q))
    return min(tail + 2.0 * m * delta * float(np.max(between / i)), 1.0)


def _bisect(reject: Any, hi: float) -> float:
    """Largest parameter in ``[0, hi]`` at which ``reject`` holds (monotone: true below a point)."""
    if not reject(1e-9):
        return 0.0
    lo = 1e-9
    while reject(hi):
        lo, hi = hi, 2.0 * hi
        if hi > 1e3:
            return lo
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if reject(mid):
            lo = mid
        else:
            hi = mid
    return lo


def steinke_epsilon(m: int, k: int, c: int, delta: float, gamma: float) -> float:
    """Largest ``eps`` rejected at level ``gamma`` by :func:`steinke_p_value` (0 if none)."""
    return _bisect(lambda e: steinke_p_value(m, k, c, e, delta) < gamma, 4.0)


def fdp_rejects_gdp(m: int, k: int, c: int, mu: np.ndarray, gamma: float) -> np.ndarray:
    """Mahloujifar et al. 2025, Algorithm 3 for ``G_mu`` (vectorised over ``mu``): True where
    ``mu``-GDP is rejected at level ``gamma`` by ``c`` correct out of ``k`` guesses."""
    mu = np.asarray(mu, dtype=float)
    if c == 0:
        return np.zeros(mu.shape, dtype=bool)
    r = np.full(mu.shape, gamma * c / m)
    h = np.full(mu.shape, gamma * (k - c) / m)
    for i in range(c - 1, -1, -1):
        # b(x) = f(1 - x) = Phi(Phi^{-1}(x) - mu) for G_mu.
        with np.errstate(divide="ignore", invalid="ignore"):
            b = ndtr(ndtri(np.minimum(r, 1.0)) - mu)
        new_h = np.maximum(h, b)
        if np.array_equal(new_h, h):
            break
        r = np.minimum(r + i / (k - i) * (new_h - h), 1.0)
        h = new_h
    return r + h > k / m


def fdp_rejects(m: int, k: int, c: int, curve: TradeoffCurve, gamma: float) -> bool:
    """Mahloujifar et al. 2025, Algorithm 3 for any trade-off curve ``f``: True when "f-DP" is
    rejected at level ``gamma`` by ``c`` correct out of ``k`` guesses on ``m`` canaries."""
    if c == 0:
        return False
    r, h = gamma * c / m, gamma * (k - c) / m
    for i in range(c - 1, -1, -1):
        new_h = max(h, float(curve(np.array([max(0.0, 1.0 - min(r, 1.0))]))[0]))
        if new_h == h:
            break
        r = min(r + i / (k - i) * (new_h - h), 1.0)
        h = new_h
    return r + h > k / m


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


def fdp_mu(m: int, k: int, c: int, gamma: float) -> float:
    """Largest ``mu`` at which ``mu``-GDP is rejected (0 if none), to about 1e-4 relative."""
    if c == 0 or not fdp_rejects_gdp(m, k, c, np.array([1e-6]), gamma)[0]:
        return 0.0
    grid = np.geomspace(1e-6, 64.0, 64)
    rejected = fdp_rejects_gdp(m, k, c, grid, gamma)
    last = int(np.flatnonzero(rejected).max())
    if last == grid.size - 1:
        return float(grid[-1])
    lo, hi = grid[last], grid[last + 1]
    for _ in range(4):
        fine = np.linspace(lo, hi, 33)
        rej = fdp_rejects_gdp(m, k, c, fine, gamma)
        j = int(np.flatnonzero(rej).max())
        lo, hi = fine[j], fine[min(j + 1, fine.size - 1)]
    return float(lo)


@dataclass(frozen=True)
class OneRunResult:
    """A one-run audit: what was guessed, what was certified, and the ceiling for ``m``.

    ``bound`` is ``eps`` at ``delta`` (``method="steinke"``), ``mu`` (``method="fdp"``, Gaussian
    DP family) or the noise multiplier ``sigma`` (``family="subsampled_gaussian"``: the audit shows
    the run is no more private than DP-SGD with this ``sigma``); :meth:`epsilon_lower_bound`
    converts. ``ceiling`` is the same bound if every guess
    had been correct (what a perfect attack could certify with these ``m`` canaries).
    ``corrected`` is False for an uncorrected sweep: then the numbers are **estimates**, not
    bounds at ``confidence``. ``guesses = guesses_in + guesses_out``: the top-scoring canaries
    guessed "included" and the lowest-scoring guessed "excluded".
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
    family: str = "gdp"
    sample_rate: float | None = None
    steps: int | None = None
    sides: str = "both"
    guesses_in: int = 0
    guesses_out: int = 0

    def _eps(self, value: float, delta: float) -> float:
        if self.method == "steinke":
            return value
        if self.family == "gdp":
            return float(gdp_epsilon(delta, value)) if value > 0 else 0.0
        if not math.isfinite(value):
            return 0.0
        return _dpsgd_curve(value, self.sample_rate, self.steps).epsilon(delta, "lower")

    def epsilon_lower_bound(self, delta: float | None = None) -> float:
        """``eps`` at ``delta`` (default: the audit's ``delta``). The Steinke bound exists only
        at the audit's own ``delta``; the f-DP bound converts its ``mu`` at any ``delta``."""
        delta = self.delta if delta is None else check_probability("delta", delta)
        if self.method == "steinke":
            if not math.isclose(delta, self.delta):
                raise ValueError(
                    f"delta must be the audit's delta {self.delta} for method 'steinke', "
                    f"got {delta}"
                )
        return self._eps(self.bound, delta)

    def mu_lower_bound(self) -> float:
        """The largest rejected ``mu`` of Gaussian DP (``method="fdp"``, ``family="gdp"``)."""
        if self.method != "fdp" or self.family != "gdp":
            raise ValueError("mu_lower_bound needs method 'fdp' and family 'gdp'")
        return self.bound

    def epsilon_ceiling(self) -> float:
        """``eps`` at the audit's ``delta`` that a perfect attack could certify with ``m``."""
        return self._eps(self.ceiling, self.delta)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready record, with ``eps`` at ``delta`` and its ceiling; a value that is not
        finite (a ``sigma`` bound when no noise multiplier is rejected) is ``None``."""
        return to_json_value(
            {
                **asdict(self),
                "epsilon_lower_bound": self.epsilon_lower_bound(),
                "epsilon_ceiling": self.epsilon_ceiling(),
                "label": "lower bound" if self.corrected else "estimate (uncorrected sweep)",
            },
            nonfinite="null",
        )

    def to_json(self, indent: int | None = None) -> str:
        """:meth:`to_dict` as strict JSON."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)


def _check_inputs(scores: object, included: object) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(scores, dtype=float)
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


def audit_one_run(
    scores: object,
    included: object,
    *,
    delta: float = 1e-5,
    confidence: float = 0.95,
    method: str = "fdp",
    guesses: int | None = None,
    sides: str = "both",
    strategy: str = "bonferroni",
    family: str = "gdp",
    sample_rate: float | None = None,
    steps: int | None = None,
) -> OneRunResult:
    """Lower-bound the privacy of one training run from its canaries' scores.

    Parameters
    ----------
    scores:
        ``scores[i]``: the trained model's score of canary ``i`` (larger = "included").
    included:
        ``included[i]`` in {0, 1}: whether canary ``i`` was in the training set (each with
        probability 1/2, independently of everything else).
    delta:
        The ``delta`` of the reported ``eps``.
    confidence:
        Level of the bound.
    method:
        ``"fdp"`` (Mahloujifar et al. 2025, Gaussian DP family) or ``"steinke"`` (Steinke et al.
        2023, (eps, delta)).
    guesses:
        Total number of guesses ``k`` (chosen before seeing the scores), split by ``sides``.
        Default: the best of :func:`guess_grid` with a Bonferroni correction.
    sides:
        ``"both"``: guess "included" for the ``ceil(k / 2)`` top-scoring canaries and
        "excluded" for the ``floor(k / 2)`` lowest-scoring ones, as both papers do; ``"in"``:
        only the ``k`` top-scoring canaries, guessed "included".
    strategy:
        ``"bonferroni"`` (valid) or ``"sweep"``: the best of the grid without correction, as the
        published code does; labelled an estimate, not a bound.
    family:
        ``method="fdp"`` only: ``"gdp"`` or ``"subsampled_gaussian"`` (needs ``sample_rate`` and
        ``steps`` of the DP-SGD run).
    sample_rate, steps:
        The Poisson sampling rate and the number of steps of the audited DP-SGD run.
    """
    s, z = _check_inputs(scores, included)
    delta = check_probability("delta", delta)
    confidence = check_probability("confidence", confidence, low_open=True, high_open=True)
    method = check_choice("method", method, _METHODS)
    strategy = check_choice("strategy", strategy, _STRATEGIES)
    sides = check_choice("sides", sides, _SIDES)
    family = check_choice("family", family, _FAMILIES)
    if family == "subsampled_gaussian":
        if method != "fdp":
            raise ValueError("family 'subsampled_gaussian' needs method 'fdp'")
        if sample_rate is None or steps is None:
            raise ValueError("family 'subsampled_gaussian' needs sample_rate= and steps=")
        sample_rate = check_probability("sample_rate", sample_rate, low_open=True)
        steps = check_integer("steps", steps, minimum=1)
    m = s.size
    if guesses is not None:
        grid = np.array([check_integer("guesses", guesses, minimum=1, maximum=m)])
    else:
        grid = guess_grid(m)
    gamma = 1.0 - confidence
    level = gamma / grid.size if strategy == "bonferroni" else gamma
    # Stable descending order; ties broken by index, never by membership.
    ordered = z[np.argsort(-s, kind="stable")]
    top_hits = np.concatenate(([0], np.cumsum(ordered)))
    bottom_hits = np.concatenate(([0], np.cumsum(1 - ordered[::-1])))
    splits = {int(k): split_guesses(int(k), sides) for k in grid}

    def bound(k: int, c: int) -> float:
        if method == "steinke":
            return steinke_epsilon(m, k, c, delta, level)
        return fdp_mu(m, k, c, level)

    counts = [(k, int(top_hits[k_in] + bottom_hits[k_out])) for k, (k_in, k_out) in splits.items()]
    if family == "subsampled_gaussian":
        # Smaller sigma = less private: the bound is the smallest rejected sigma.
        best = subsampled_gaussian_sigma(m, counts, level, sample_rate, steps)
        perfect = [(k, k) for k, _ in counts]
        ceiling = subsampled_gaussian_sigma(m, perfect, level, sample_rate, steps)
        best_k, best_c = counts[0]
        if math.isfinite(best):
            curve = _dpsgd_curve(best, sample_rate, steps).tradeoff("lower")
            best_k, best_c = next(
                (kc for kc in counts if fdp_rejects(m, *kc, curve, level)), counts[0]
            )
    else:
        values = [bound(k, c) for k, c in counts]
        ceiling = max(bound(k, k) for k, _ in counts)
        j = int(np.argmax(values))
        best, (best_k, best_c) = values[j], counts[j]
    return OneRunResult(
        method=method,
        strategy=strategy,
        m=m,
        included=int(z.sum()),
        confidence=confidence,
        delta=delta,
        guesses=best_k,
        correct=best_c,
        bound=float(best),
        ceiling=float(ceiling),
        corrected=strategy == "bonferroni" or grid.size == 1,
        per_guess_level=level,
        grid=[int(k) for k in grid],
        family=family,
        sample_rate=sample_rate,
        steps=steps,
        sides=sides,
        guesses_in=splits[best_k][0],
        guesses_out=splits[best_k][1],
    )
