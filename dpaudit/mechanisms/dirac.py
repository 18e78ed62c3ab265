"""Exact laws of a Dirac canary's coordinate in DP-SGD (:mod:`dpaudit.mechanisms.dpsgd`).

A Dirac record ``i`` (coefficient ``c_i != 0``) adds ``c_i C`` to the canary coordinate's
gradient sum at each step whose batch holds it, ordinary records add nothing, and every step adds
``N(0, sigma^2 C^2)``. With the canary inserted only at some steps (``every = k``: steps
``s = 0, k, 2k, ...``, counted from 0), Dirac records add nothing at the other steps. In units
of ``C``:

- the update of step ``s`` is ``y_s = g_s sum_{i in B_s} c_i + sigma xi_s`` (``g_s = 1`` at the
  insertion steps, else 0): the white-box observation ``observe="updates"``;
- the final canary coordinate is ``theta_c(T) = theta_c(0) - (lr C / B) u`` with
  ``u = sum_s y_s = offset + step K + sigma sqrt(T) Z``: the final model's law
  (:class:`FinalLaw`), a lattice mixture of normals (Steinke et al. 2025, "The Last Iterate
  Advantage", for Poisson sampling).

``K`` counts the insertion steps at which the record that differs from the others is in the
batch; its law depends on the sampling (``n`` records trained on, ``I`` insertion steps):

- Poisson, rate ``q``: every Dirac record independently, so the nonzero coefficients must all
  be equal (``r`` records of coefficient ``v``): ``K ~ Binomial(r I, q)``, ``step = v``;
- fixed size, ``m`` of ``n`` per step, independently: every record but at most one has the same
  coefficient ``c_0`` (the other ``c_*``): ``offset = c_0 m I``, ``step = c_* - c_0``,
  ``K ~ Binomial(I, m/n)``;
- shuffled, ``b`` batches of ``m`` per epoch cut from a fresh permutation (the ``n - b m``
  records left over sit the epoch out): the same structure, ``offset = c_0 m I``, and ``K`` is a
  sum of independent Bernoulli variables, one per epoch ``e``, with probability
  ``m |J_e| / n`` (``J_e`` the insertion steps of the epoch within the ``T`` steps).

Other datasets raise ``NotImplementedError`` (the mixture would run over subsets of records).
Densities are exact to rounding: the mixture is summed outwards from its largest term, and the
terms left out are bounded by a geometric series (the terms are log-concave in ``K``) and kept
below ``2^-60`` of the sum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

__all__ = ["Schedule", "FinalLaw", "final_law", "shuffled_updates_log_density"]

# Outputs per block when a density is summed over a window of mixture atoms.
_BLOCK = 2**15
# Largest relative weight of the mixture terms left out of a window.
_TAIL = 2.0**-60
_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


@dataclass(frozen=True)
class Schedule:
    """When the canary is inserted and how batches are drawn.

    ``steps`` (``T``); ``every`` (insertion at steps ``s`` with ``s % every == 0``); ``sampling``
    (``"poisson"``, ``"fixed"`` or ``"shuffled"``); ``rate`` (Poisson ``q``); ``batch_size``
    (``m``, fixed and shuffled); ``batches`` (shuffled: ``b`` batches per epoch)."""

    steps: int
    every: int
    sampling: str
    rate: float
    batch_size: int
    batches: int

    def insertions(self) -> np.ndarray:
        """Whether the canary is inserted at each step, ``(T,)`` bool."""
        return np.arange(self.steps) % self.every == 0

    @property
    def inserted(self) -> int:
        """``I``, the number of insertion steps."""
        return -(-self.steps // self.every)

    def epochs(self) -> list[np.ndarray]:
        """Shuffled sampling: the steps of each epoch, ``[e b, min((e + 1) b, T))``."""
        b = self.batches
        return [np.arange(s, min(s + b, self.steps)) for s in range(0, self.steps, b)]


def _structure(c: np.ndarray) -> tuple[float, float | None]:
    """``(c_0, c_*)``: the coefficient every record but at most one has, and the other one's
    (``None`` when all are equal). Anything else raises ``NotImplementedError``."""
    values, counts = np.unique(c, return_counts=True)
    if values.size <= 1:
        return (float(values[0]) if values.size else 0.0), None
    if values.size == 2 and counts.min() == 1:
        common = int(np.argmax(counts))
        return float(values[common]), float(values[1 - common])
    raise NotImplementedError(
        "the exact law of the canary coordinate is known when every record but at most one "
        f"has the same canary coefficient; got the coefficients {values.tolist()[:6]} "
        f"with counts {counts.tolist()[:6]}"
    )


def _bernoulli_sum_pmf(probabilities: np.ndarray) -> np.ndarray:
    """The law of a sum of independent Bernoulli variables (exact convolution)."""
    pmf = np.ones(1)
    for p in probabilities:
        pmf = np.append(pmf * (1.0 - p), 0.0) + np.append(0.0, pmf * p)
    return pmf


@dataclass(frozen=True)
class FinalLaw:
    """``u = offset + step K + noise Z`` with ``Z ~ N(0, 1)`` and ``K`` either
    ``Binomial(trials, prob)`` (``bernoullis is None``) or a sum of independent
    ``Bernoulli(bernoullis[e])``."""

    offset: float
    step: float
    noise: float
    trials: int = 0
    prob: float = 0.0
    bernoullis: tuple[float, ...] | None = None

    @property
    def log_pmf(self) -> np.ndarray:
        """``log P(K = k)``, ``k = 0 .. max K``."""
        if self.bernoullis is None:
            from scipy import stats  # a slow import, left to the functions that use it

            k = np.arange(self.trials + 1)
            return stats.binom.logpmf(k, self.trials, self.prob)
        with np.errstate(divide="ignore"):
            return np.log(_bernoulli_sum_pmf(np.asarray(self.bernoullis)))

    def pmf(self) -> tuple[np.ndarray, np.ndarray]:
        """The atoms ``offset + step k`` and their probabilities (those above 0)."""
        w = np.exp(self.log_pmf)
        k = np.flatnonzero(w > 0.0)
        return self.offset + self.step * k, w[k]

    def sample(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` independent draws of ``u``."""
        if self.bernoullis is None:
            k = rng.binomial(self.trials, self.prob, size=size).astype(float)
        else:
            p = np.asarray(self.bernoullis)
            k = (rng.random((size, p.size)) < p).sum(axis=1).astype(float)
        return self.offset + self.step * k + self.noise * rng.standard_normal(size)

    def log_density(self, u: np.ndarray) -> np.ndarray:
        """Exact log density of ``u`` (module docstring: summed over a window of atoms)."""
        u = np.asarray(u, dtype=float)
        v = (u - self.offset) / self.noise
        log_w = self.log_pmf
        h = self.step / self.noise
        support = np.flatnonzero(np.isfinite(log_w))
        if h == 0.0 or support.size == 1:
            shift = h * support[0] if support.size == 1 else 0.0
            total = special.logsumexp(log_w) if support.size > 1 else 0.0
            return total - 0.5 * (v - shift) ** 2 - _LOG_SQRT_2PI - math.log(self.noise)
        out = np.empty(v.size)
        flat = v.ravel()
        for first in range(0, flat.size, _BLOCK):
            out[first : first + _BLOCK] = _log_lattice_mixture(
                flat[first : first + _BLOCK], log_w, h
            )
        return out.reshape(v.shape) - _LOG_SQRT_2PI - math.log(self.noise)


def _log_lattice_mixture(v: np.ndarray, log_w: np.ndarray, h: float) -> np.ndarray:
    """``log sum_k exp(log_w[k] - (v - h k)^2 / 2)`` for every ``v``.

    ``log_w`` is concave on its (contiguous) support, so the terms are log-concave in ``k``:
    their largest sits at an index that grows with ``v`` (found from the breakpoints where two
    neighbours are equal), and the ratio of neighbours ``t_{k+1} / t_k = exp(a_k + h v)``, with
    ``a_k = log_w[k+1] - log_w[k] - h^2 (2k + 1) / 2``, falls as ``k`` grows. From the largest
    term outwards each side is summed by these ratios until the geometric bound on the terms
    left out, ``t r / (1 - r)`` with ``r`` the next ratio, is at most :data:`_TAIL` of the sum
    for every ``v``; the rounding of the products is a few units in the last place per term."""
    finite = np.flatnonzero(np.isfinite(log_w))
    lo, hi = int(finite[0]), int(finite[-1])
    lw = log_w[lo : hi + 1]
    k = np.arange(lo, hi + 1, dtype=float)
    if h < 0.0:
        v, h = -v, -h
    # v at which terms k and k + 1 are equal; non-decreasing since lw is concave
    breaks = np.maximum.accumulate((lw[:-1] - lw[1:]) / h + h * (k[:-1] + 0.5))
    mode = np.searchsorted(breaks, v)
    top = lw[mode] - 0.5 * (v - h * (mode + lo)) ** 2
    # step[e] = log(t_{e+1} / t_e) - h v: going up from edge e the next ratio is
    # exp(step[e] + h v), going down exp(-(step[e - 1] + h v)); none past either end
    step = lw[1:] - lw[:-1] - 0.5 * h * h * (2.0 * k[:-1] + 1.0)
    up = np.append(step, -np.inf)
    down = np.concatenate([[np.inf], step])
    hv = h * v
    total = np.ones(v.size)
    for ratios, move in ((up, 1), (down, -1)):
        term = np.ones(v.size)
        edge = mode.copy()
        while True:
            log_r = move * (ratios[edge] + hv)
            r = np.exp(log_r)
            with np.errstate(divide="ignore", invalid="ignore"):
                left_out = np.where(r < 1.0, term * r / (1.0 - r), np.inf)
            if not (left_out > _TAIL * total).any():
                break
            term *= r
            total += term
            edge = np.clip(edge + move, 0, lw.size - 1)
    return top + np.log(total)


def final_law(c: np.ndarray, schedule: Schedule, sigma: float) -> FinalLaw:
    """The law of ``u`` (module docstring) on a dataset with canary coefficients ``c``."""
    noise = sigma * math.sqrt(schedule.steps)
    inserted = schedule.inserted
    n = c.size
    if schedule.sampling == "poisson":
        nonzero = c[c != 0.0]
        if nonzero.size == 0:
            return FinalLaw(0.0, 0.0, noise)
        if np.unique(nonzero).size > 1:
            raise NotImplementedError(
                "with Poisson sampling the exact law of the canary coordinate is known when "
                f"the Dirac records share one coefficient; got {np.unique(nonzero).tolist()[:6]}"
            )
        return FinalLaw(0.0, float(nonzero[0]), noise, nonzero.size * inserted, schedule.rate)
    common, special_ = _structure(c)
    m = schedule.batch_size
    offset = common * m * inserted
    if special_ is None:
        return FinalLaw(offset, 0.0, noise)
    step = special_ - common
    if schedule.sampling == "fixed":
        return FinalLaw(offset, step, noise, inserted, m / n)
    ins = schedule.insertions()
    probs = tuple(float(m * ins[epoch].sum() / n) for epoch in schedule.epochs())
    return FinalLaw(offset, step, noise, bernoullis=probs)


def shuffled_updates_log_density(
    c: np.ndarray, y: np.ndarray, schedule: Schedule, sigma: float
) -> np.ndarray:
    """Exact log density of the updates ``(size, T)`` of shuffled batches (module docstring).

    Given where the record ``c_*`` sits in each epoch, the updates are independent normals; it
    lands in each of the epoch's ``b`` batches with probability ``m/n`` and sits the epoch out
    otherwise, independently across epochs. Per epoch the density is the normal density at the
    common offsets ``c_0 m`` (insertion steps) times ``(1 - |J| m/n) + sum_{j in J} (m/n)
    exp((step (y_j - base_j) - step^2/2) / sigma^2)`` over the epoch's insertion steps ``J``
    within the ``T`` steps (a batch elsewhere moves no update)."""
    common, special_ = _structure(c)
    m, n = schedule.batch_size, c.size
    ins = schedule.insertions()
    base = np.where(ins, common * m, 0.0)
    z = (y - base) / sigma
    out = (-0.5 * z * z - _LOG_SQRT_2PI - math.log(sigma)).sum(axis=1)
    if special_ is None:
        return out
    step = (special_ - common) / sigma
    p = m / n
    for epoch in schedule.epochs():
        cols = epoch[ins[epoch]]
        if cols.size == 0:
            continue
        terms = step * z[:, cols] - 0.5 * step * step + math.log(p)
        rest = (n - m * cols.size) / n  # the record is in no insertion batch of the epoch
        if rest > 0.0:
            terms = np.column_stack([terms, np.full(len(z), math.log(rest))])
        out += special.logsumexp(terms, axis=1)
    return out
