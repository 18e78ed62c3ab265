"""Privacy loss distributions (PLDs): the numerically tight (eps, delta) accountant.

For an ordered pair of output distributions ``(P, Q)`` the privacy loss is
``L = log p(y)/q(y)`` and its law under ``y ~ P`` is the PLD ``PLD(P||Q)``
(docs/theory.md#conventions).
Everything in this module follows from three facts:

* ``delta(eps) = E_P[(1 - e^{eps - L})_+]`` is the hockey-stick divergence ``H_{e^eps}(P||Q)``
  (Steinke 2022, Proposition 7). It holds for every real ``eps``, and ``g_eps(L) =
  (1 - e^{eps - L})_+`` is non-decreasing in ``L`` with values in ``[0, 1]``.
* The PLD of a composition is the convolution of the PLDs, order by order (Steinke 2022,
  Theorem 9); a mechanism's ``delta(eps)`` is the larger of its two orders.
* The trade-off curve is ``T(P, Q)(alpha) = sup_eps (1 - delta(eps) - e^eps alpha)`` over all real
  ``eps`` (the convex-conjugate form of DRS 2022, Propositions 5 and 6).

**Grid.** Losses live on ``{k * step}`` with an atom at ``+inf`` (mass where ``q = 0``)
(Meiser & Mohammadi 2018; Koskela, Jalko & Honkela 2020). Each loss value ``L`` between two grid
points is split between them so that both its ``P``-mass and its ``Q``-mass ``E_P[e^{-L}]`` are
kept ("connect the dots", Doroshenko et al. 2022). For every real ``eps``, ``g_eps`` is affine in
``e^{-L}`` between grid points except on the interval containing ``eps``, where it is convex, so
the split can only increase ``delta``: the grid PLD *dominates* (``delta_grid >= delta`` for all
``eps``, hence ``T_grid <= T``) and is exact at grid values of ``eps``. Domination survives
composition (``(x)`` is monotone, DRS 2022 Theorem 4). Atoms already on the grid stay exact, so
``randomized_response`` is exact. Compositions are FFT convolutions (zero-padded, no wrap-around),
``n``-fold ones by repeated squaring. Tails are cut pessimistically after every step (left-tail
mass moves up to the lowest kept bin, right-tail mass into the ``+inf`` atom, as do FFT round-off
bins at either end); the moved mass ``tau`` is recorded and adds up through compositions.

**Bracket from one convolution chain.** Write ``L_grid = L + S`` for a composition of ``T``
discretised factors. ``S = U_1 + ... + U_T`` where ``U_t = l_grid,t - L_t`` lies in
``[-step, step]``; the ``U_t`` are independent (each depends only on its own factor) and their
means ``m_t = E[l_grid,t] - E[L_t]`` are known exactly (``E_P[L_t]`` is the Kullback-Leibler
divergence: closed form or adaptive quadrature). Given ``L_t`` the split is a two-point law
``step`` wide with ``E[e^{-U_t} | L_t] = 1``, so ``Var[U_t] <= step^2/4 + 3 step^4``. With
``m = sum m_t`` and, for ``eta > 0``, ``r`` from Hoeffding's or Bernstein's inequality
(``P(S < m - r) <= eta``, ``P(S > m + r) <= eta``), and since ``g_eps(L_grid - c) =
g_{eps + c}(L_grid)``:

* on ``{S >= m - r}``, ``g_eps(L) <= g_eps(L_grid - (m - r))``, so
  ``delta(eps) <= delta_grid(eps + m - r) + eta``;
* on ``{S <= m + r}``, ``g_eps(L) >= g_eps(L_grid - (m + r))``, so
  ``delta(eps) >= delta_grid(eps + m + r) - eta``.

Tail cutting only moves mass upwards, on an event of probability at most ``tau``, so the computed
``delta_comp`` satisfies ``delta_grid <= delta_comp <= delta_grid + tau``. Hence
``delta_comp(eps + m + r) - eta - tau <= delta(eps) <= min(delta_comp(eps),
delta_comp(eps + m - r) + eta)``, and the deterministic range ``S in [low, high]`` adds
``delta <= delta_comp(eps + low)`` and ``delta >= delta_comp(eps + high) - tau``. These are
deterministic inequalities (the concentration bounds are applied to the exact law of ``S``), so
the best of them over a grid of ``eta`` is valid too. The lower bound trails the truth by about
``sqrt(T) * step`` instead of ``T * step``; the upper bound is tight to second order in ``step``.
The same shifts turn the Neyman-Pearson curve ``T_grid`` of the grid PLD into curve bounds,
``T(alpha) >= T_grid(alpha)`` or ``T_grid(e^{-(m - r)} alpha) - eta`` and
``T(alpha) <= T_grid(e^{-(m + r)} alpha) + eta + tau``.

Limits: FFT round-off (about ``1e-16`` of the largest bin) is not part of the bound; values of
``delta`` below the truncated mass ``tau`` (``1e-16`` to ``1e-10`` depending on the number of
compositions) cannot be resolved and ``epsilon`` refuses them.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.fft
from scipy import special

from dpaudit._core.validation import (
    check_choice,
    check_eps_array,
    check_integer,
    check_positive,
    check_probability,
    check_real,
)
from dpaudit.bounds.tradeoff import (
    PiecewiseLinearTradeoff,
    TradeoffCurve,
    from_points,
    register_composition,
)

__all__ = [
    "TAIL_MASS",
    "MAX_BINS",
    "MAX_COMPOSITIONS",
    "Rounding",
    "DiscretePLD",
    "PLD",
    "auto_step",
    "gaussian",
    "laplace",
    "randomized_response",
    "discrete",
    "poisson_subsampled_gaussian",
    "poisson_subsampled_laplace",
    "gaussian_mixture",
    "last_iterate",
    "poisson_subsampled_discrete",
    "from_tradeoff",
    "compose_tradeoffs",
]

#: Probability mass cut from the tails at each construction or convolution (half on each side).
TAIL_MASS = 1e-15
#: Largest number of grid bins a PLD may hold; ``self_compose`` coarsens the grid to stay below.
MAX_BINS = 2**22

#: Most compositions :meth:`PLD.self_compose` takes: beyond 2^53 a count is no longer exact as
#: a float, and the grid (coarsened to stay within MAX_BINS) could not be indexed.
MAX_COMPOSITIONS = 2**53

_BOUNDS = ("upper", "lower")
# Hoeffding levels tried for every query; each gives a valid bound, the best one is kept.
_ETAS = 10.0 ** -np.arange(1.0, 18.01, 0.5)
# Level used for trade-off curves (one level, so that the curve's vertices are exact).
_CURVE_ETA = 1e-12
# Vertices per order kept in a trade-off curve (the PLD is coarsened pessimistically beyond).
_CURVE_VERTICES = 20_000
# FFT convolutions are exact up to ~1e-16 of the largest bin; bins below this are noise.
_FFT_NOISE = 2e-15
# Below this many multiply-adds a direct convolution is used (exact, no FFT noise).
_DIRECT_CONV = 2_000_000
# Target bracket of the default grids: single releases (Gaussian, Laplace, discrete pairs and
# curves) get a fine grid, which costs little; subsampled mechanisms are meant to be composed
# thousands of times (DP-SGD), where auto_step's default keeps the FFTs small.
_SINGLE_REL_ERROR = 1e-3
_MANY_REL_ERROR = 5e-3


@dataclass(frozen=True)
class Rounding:
    """What discretisation did to the privacy loss: ``L_grid = L + S``.

    ``S`` is a sum of independent blocks (one per discretised factor). It always lies in
    ``[low, high]``; ``mean`` is ``E[S]`` up to ``mean_tol``; ``range_sq`` is the sum over blocks
    of the squared width of each block's range (Hoeffding), ``var`` a bound on ``Var[S]`` and
    ``dev`` a bound on every block's deviation from its mean (Bernstein). ``dominating`` says
    that the grid PLD dominates the exact one (``delta_grid >= delta`` for every ``eps``), which
    holds for rounding up and for connect-the-dots splitting, and is kept by composition.
    """

    low: float = 0.0
    high: float = 0.0
    mean: float = 0.0
    mean_tol: float = 0.0
    range_sq: float = 0.0
    var: float = 0.0
    dev: float = 0.0
    dominating: bool = True

    def __add__(self, other: Rounding) -> Rounding:
        return Rounding(
            low=self.low + other.low,
            high=self.high + other.high,
            mean=self.mean + other.mean,
            mean_tol=self.mean_tol + other.mean_tol,
            range_sq=self.range_sq + other.range_sq,
            var=self.var + other.var,
            dev=max(self.dev, other.dev),
            dominating=self.dominating and other.dominating,
        )

    @property
    def random(self) -> bool:
        """True when ``S`` is not a constant."""
        return self.range_sq > 0

    def radius(self, eta: np.ndarray) -> np.ndarray:
        """``r`` with ``P(S - E S >= r) <= eta`` and ``P(S - E S <= -r) <= eta``.

        The smaller of Hoeffding's ``sqrt(range_sq log(1/eta) / 2)`` (Hoeffding 1963, Thm. 2)
        and Bernstein's ``b L/3 + sqrt((b L/3)^2 + 2 V L)`` with ``L = log(1/eta)``, ``V = var``,
        ``b = dev`` (from ``P(dev >= t) <= exp(-t^2 / (2 (V + b t / 3)))``).
        """
        log_inv = np.log(1.0 / np.asarray(eta, dtype=float))
        hoeffding = np.sqrt(self.range_sq * log_inv / 2.0)
        lin = self.dev * log_inv / 3.0
        bernstein = lin + np.sqrt(lin**2 + 2.0 * self.var * log_inv)
        return np.minimum(hoeffding, bernstein)

    @staticmethod
    def block(
        low: float,
        high: float,
        mean: float,
        mean_tol: float,
        var: float | None = None,
        dominating: bool = True,
    ) -> Rounding:
        """One block with values in ``[low, high]`` and known mean; ``var`` defaults to
        Popoviciu's bound ``(high - low)^2 / 4``."""
        width = high - low
        return Rounding(
            low=low,
            high=high,
            mean=mean,
            mean_tol=mean_tol,
            range_sq=width**2,
            var=width**2 / 4.0 if var is None else var,
            dev=width,
            dominating=dominating,
        )


def _check_bound(bound: object) -> str:
    return check_choice("bound", bound, _BOUNDS)


def _same_step(a: float, b: float) -> float:
    if abs(a - b) > 1e-12 * max(a, b):
        raise ValueError(
            f"PLDs on different grids cannot be composed: step {a!r} vs step {b!r}; "
            "build both with the same step"
        )
    return a


class DiscretePLD:
    """The privacy loss distribution of one ordered pair ``(P, Q)`` on the grid ``{k * step}``.

    ``pmf[i]`` is the ``P``-mass of the loss value ``(offset + i) * step``; ``inf_mass`` is the
    ``P``-mass at loss ``+inf`` (where ``q = 0``, plus right-tail mass cut pessimistically);
    ``tail_mass`` bounds the total mass moved by tail cutting; ``rounding`` describes the rounding
    error ``S = L_grid - L`` (see the module docstring for how the bracket is derived).
    Objects are immutable; use :meth:`compose` and :meth:`self_compose` to build new ones.
    """

    def __init__(
        self,
        step: float,
        offset: int,
        pmf: np.ndarray,
        *,
        inf_mass: float = 0.0,
        tail_mass: float = 0.0,
        rounding: Rounding | None = None,
    ) -> None:
        self._step = check_positive("step", step)
        self._offset = int(offset)
        arr = np.array(pmf, dtype=float).ravel()
        if arr.size == 0 or not np.isfinite(arr).all() or (arr < 0).any():
            raise ValueError("pmf must be a non-empty array of finite non-negative masses")
        nonzero = np.flatnonzero(arr)
        if nonzero.size:
            self._offset += int(nonzero[0])
            arr = arr[nonzero[0] : nonzero[-1] + 1]
        else:
            arr = arr[:1]
        arr.setflags(write=False)
        self._pmf = arr
        self._inf_mass = check_probability("inf_mass", min(float(inf_mass), 1.0))
        self._tail_mass = check_probability("tail_mass", min(float(tail_mass), 1.0))
        self._rounding = rounding if rounding is not None else Rounding()
        self._tables: tuple[np.ndarray, ...] | None = None

    @classmethod
    def _new(
        cls,
        step: float,
        offset: int,
        pmf: np.ndarray,
        inf_mass: float,
        tail_mass: float,
        rounding: Rounding,
    ) -> DiscretePLD:
        """Internal constructor for arrays already checked and trimmed (no copy)."""
        obj = cls.__new__(cls)
        pmf.setflags(write=False)
        obj._step, obj._offset, obj._pmf = step, int(offset), pmf
        obj._inf_mass, obj._tail_mass = min(inf_mass, 1.0), min(tail_mass, 1.0)
        obj._rounding, obj._tables = rounding, None
        return obj

    # ------------------------------------------------------------------ properties
    @property
    def step(self) -> float:
        """Grid spacing of the loss values."""
        return self._step

    @property
    def offset(self) -> int:
        """Grid index of ``pmf[0]``: its loss value is ``offset * step``."""
        return self._offset

    @property
    def pmf(self) -> np.ndarray:
        """``P``-masses of the finite loss values (read-only)."""
        return self._pmf

    @property
    def losses(self) -> np.ndarray:
        """The loss value of each entry of :attr:`pmf`."""
        return (self._offset + np.arange(self._pmf.size)) * self._step

    @property
    def inf_mass(self) -> float:
        """``P``-mass at loss ``+inf``."""
        return self._inf_mass

    @property
    def tail_mass(self) -> float:
        """Upper bound on the mass moved by tail cutting (``tau``)."""
        return self._tail_mass

    @property
    def rounding(self) -> Rounding:
        """Summary of the rounding error ``S = L_grid - L``."""
        return self._rounding

    def __repr__(self) -> str:
        return (
            f"<DiscretePLD step={self._step:.3g} bins={self._pmf.size} "
            f"losses=[{self.losses[0]:.4g}, {self.losses[-1]:.4g}] inf_mass={self._inf_mass:.3g}>"
        )

    def mean_loss(self) -> tuple[float, float]:
        """Mean and standard deviation of the finite part of the (rounded) loss under ``P``."""
        mass = float(self._pmf.sum())
        if mass <= 0:
            return 0.0, 0.0
        idx = np.arange(self._pmf.size, dtype=float)
        mean_idx = float(idx @ self._pmf) / mass
        var_idx = float(((idx - mean_idx) ** 2) @ self._pmf) / mass
        return (self._offset + mean_idx) * self._step, math.sqrt(var_idx) * self._step

    # ------------------------------------------------------------------ composition
    def compose(self, other: DiscretePLD) -> DiscretePLD:
        """PLD of the composition (independent outputs): the convolution of the two PLDs."""
        if not isinstance(other, DiscretePLD):
            raise ValueError(f"other must be a DiscretePLD, got {type(other).__name__}")
        step = _same_step(self._step, other._step)
        conv, noisy = _convolve(self._pmf, other._pmf)
        inf_mass = self._inf_mass + other._inf_mass - self._inf_mass * other._inf_mass
        return _finish(
            step,
            self._offset + other._offset,
            conv,
            noisy,
            inf_mass,
            self._tail_mass + other._tail_mass,
            self._rounding + other._rounding,
        )

    def _square(self) -> DiscretePLD:
        conv, noisy = _convolve(self._pmf, None)
        inf_mass = 2 * self._inf_mass - self._inf_mass**2
        return _finish(
            self._step,
            2 * self._offset,
            conv,
            noisy,
            inf_mass,
            2 * self._tail_mass,
            self._rounding + self._rounding,
        )

    def self_compose(self, n: int) -> DiscretePLD:
        """PLD of ``n`` independent repetitions, by repeated squaring.

        If the composed loss would need more than :data:`MAX_BINS` bins, the grid is first
        coarsened by an integer factor (see :meth:`coarsen`), so the result may have a larger
        :attr:`step` than ``self``.
        """
        n = check_integer("n", n, minimum=1, maximum=MAX_COMPOSITIONS)
        return self.coarsen(self._coarsening_for(n))._power(n)

    def _coarsening_for(self, n: int) -> int:
        """Integer factor that keeps the ``n``-fold composition within :data:`MAX_BINS` bins
        (width estimated from the mean and a 10-sigma spread of the summed loss)."""
        mean, sd = self.mean_loss()
        width = n * abs(mean) + 20.0 * sd * math.sqrt(n) + self._pmf.size * self._step
        return max(1, int(math.ceil(width / self._step / MAX_BINS)))

    def _power(self, n: int) -> DiscretePLD:
        result: DiscretePLD | None = None
        power: DiscretePLD = self
        while True:
            if n & 1:
                result = power if result is None else result.compose(power)
            n >>= 1
            if not n:
                return result
            power = power._square()

    def coarsen(self, factor: int) -> DiscretePLD:
        """The same PLD on the grid ``{k * factor * step}``, by connect-the-dots splitting.

        Each atom is split between its two neighbours on the coarse grid so that its mass and
        ``E[e^{-L}]`` are preserved; the result still dominates. The extra error ``V`` lies in
        ``[-(factor - 1) step, (factor - 1) step]`` with exactly known mean; ``S + V`` becomes one
        block of the rounding summary, so later compositions keep the bracket valid.
        """
        factor = check_integer("factor", factor, minimum=1)
        if factor == 1:
            return self
        idx = self._offset + np.arange(self._pmf.size)
        start, pmf, shift_mean = _coarse_split(idx, self._pmf, factor, self._step)
        r = self._rounding
        width = (factor - 1) * self._step
        rounding = Rounding.block(
            low=r.low - width,
            high=r.high + width,
            mean=r.mean + shift_mean,
            mean_tol=r.mean_tol + width * self._tail_mass,
            dominating=r.dominating,
        )
        return DiscretePLD(
            self._step * factor,
            start,
            pmf,
            inf_mass=self._inf_mass,
            tail_mass=self._tail_mass,
            rounding=rounding,
        )

    # ------------------------------------------------------------------ hockey stick
    def _get_tables(self) -> tuple[np.ndarray, ...]:
        """Suffix sums for O(log n) evaluation of ``delta_comp`` and its inverse.

        ``A[k] = inf_mass + sum_{j>=k} p_j``, ``logB[k] = log sum_{j>=k} p_j e^{-l_j}`` and
        ``D[k] = delta_comp(l_k)``; on ``(l_{k-1}, l_k]``, ``delta_comp(x) = A[k] - e^x B[k]``.
        """
        if self._tables is None:
            losses = self.losses
            p = self._pmf
            a = np.empty(p.size + 1)
            a[-1] = self._inf_mass
            a[:-1] = np.cumsum(p[::-1])[::-1] + self._inf_mass
            with np.errstate(divide="ignore"):
                logq = np.log(p) - losses
                log_b = np.empty(p.size + 1)
                log_b[-1] = -np.inf
                if losses[-1] < 600:  # Q-masses p e^{-l} above 1e-47 are normal floats
                    log_b[:-1] = np.log(np.cumsum(np.exp(logq)[::-1])[::-1])
                else:
                    log_b[:-1] = np.logaddexp.accumulate(logq[::-1])[::-1]
            d = a[1:] - np.exp(losses + log_b[1:])
            d = np.minimum.accumulate(np.clip(d, self._inf_mass, 1.0))
            self._tables = (losses, a, log_b, d)
        return self._tables

    def _delta_comp(self, x: np.ndarray) -> np.ndarray:
        """``delta_comp(x) = sum_k p_k (1 - e^{x - l_k})_+ + inf_mass`` for real ``x``."""
        losses, a, log_b, _ = self._get_tables()
        idx = np.searchsorted(losses, x, side="right")
        with np.errstate(invalid="ignore"):
            val = a[idx] - np.exp(x + log_b[idx])
        val = np.where(idx == losses.size, a[-1], val)
        return np.clip(val, self._inf_mass, 1.0)

    def _eps_comp(self, d: np.ndarray) -> np.ndarray:
        """``inf{x : delta_comp(x) <= d}`` (``+inf`` if none, ``-inf`` if every ``x`` works)."""
        losses, a, log_b, dk = self._get_tables()
        d = np.asarray(d, dtype=float)
        k = np.searchsorted(-dk, -d, side="left")
        kk = np.minimum(k, losses.size - 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            x = np.log(a[kk] - d) - log_b[kk]
        x = np.where(a[kk] > d, x, -np.inf)
        lower = np.where(kk > 0, losses[np.maximum(kk - 1, 0)], -np.inf)
        x = np.clip(x, lower, losses[kk])
        return np.where(k >= losses.size, np.inf, x)

    def _candidates(self, bound: str) -> tuple[np.ndarray, np.ndarray]:
        """Loss shifts ``c`` and slacks ``eta``: ``delta <= delta_comp(eps + c) + eta`` (upper)
        or ``delta >= delta_comp(eps + c) - eta - tau`` (lower), one pair per valid bound."""
        r = self._rounding
        if bound == "upper":
            shifts, etas = [r.low], [0.0]
            if r.dominating:
                shifts.append(0.0)
                etas.append(0.0)
            if r.random:
                shifts.extend(r.mean - r.mean_tol - r.radius(_ETAS))
                etas.extend(_ETAS)
        else:
            shifts, etas = [r.high], [0.0]
            if r.random:
                shifts.extend(r.mean + r.mean_tol + r.radius(_ETAS))
                etas.extend(_ETAS)
        return np.asarray(shifts), np.asarray(etas)

    def delta(self, eps: float | np.ndarray, bound: str = "upper") -> float | np.ndarray:
        """A valid upper (or lower) bound on ``H_{e^eps}(P||Q)`` for ``eps`` in ``[0, inf]``.

        ``delta(eps) = E_P[(1 - e^{eps - L})_+]`` (Steinke 2022, Proposition 7), bracketed as in
        the module docstring. Returns a float for scalar ``eps``.
        """
        bound = _check_bound(bound)
        eps_arr = check_eps_array(eps)
        shifts, etas = self._candidates(bound)
        vals = self._delta_comp(eps_arr[..., None] + shifts)
        if bound == "upper":
            out = np.clip((vals + etas).min(axis=-1), 0.0, 1.0)
        else:
            out = np.clip((vals - etas - self._tail_mass).max(axis=-1), 0.0, 1.0)
        return float(out) if out.ndim == 0 else out

    def epsilon(self, delta: float, bound: str = "upper") -> float:
        """Smallest ``eps >= 0`` whose upper (lower) ``delta`` bound is at most ``delta``.

        The upper value is a valid ``eps`` for ``(eps, delta)``-DP in this order; the lower value
        is a valid lower bound on the smallest such ``eps``. Raises ``ValueError`` when
        ``delta`` is below the numerical resolution (the mass cut from the tails), and returns
        ``inf`` when a genuine atom at ``+inf`` (``q = 0``) exceeds ``delta``.
        """
        bound = _check_bound(bound)
        target = check_probability("delta", delta)
        shifts, etas = self._candidates(bound)
        if bound == "upper":
            eps = float(np.min(self._eps_comp(target - etas) - shifts))
            if eps == np.inf and target >= self._inf_mass - self._tail_mass:
                raise ValueError(
                    f"delta must exceed the numerical resolution of this PLD "
                    f"(tail mass cut: {self._tail_mass:.2g}, atom at +inf: {self._inf_mass:.2g}); "
                    f"got {target!r}"
                )
        else:
            eps = float(np.max(self._eps_comp(target + etas + self._tail_mass) - shifts))
        return max(eps, 0.0)

    # ------------------------------------------------------------------ trade-off
    def _curve_vertices(self, bound: str) -> tuple[np.ndarray, np.ndarray]:
        """Vertices of a lower (upper) bound on ``T(P, Q)``, inside ``[0, 1]^2``.

        The Neyman-Pearson curve of the grid pair (atoms ``l_k``, ``P``-masses ``p_k``,
        ``Q``-masses ``p_k e^{-l_k}``, ``Q``'s remaining mass at ``l = -inf``; docs/theory.md#pld)
        is shifted as in the module docstring. Beyond ``_CURVE_VERTICES`` atoms the lower bound
        is taken from a coarser grid (connect-the-dots split, which dominates) and the upper bound
        from every ``factor``-th vertex (merging outcomes is post-processing: chords lie above).
        """
        p = self._pmf
        idx = self._offset + np.arange(p.size)
        factor = max(1, int(math.ceil(p.size / _CURVE_VERTICES)))
        if factor > 1 and bound == "lower":
            start, p, _ = _coarse_split(idx, p, factor, self._step)
            losses = (start + np.arange(p.size)) * factor * self._step
        else:
            losses = idx * self._step
        with np.errstate(divide="ignore"):
            qm = np.exp(np.log(p) - losses)
        # Reject the outcomes with the largest q/p (smallest loss) first: after bin k,
        # alpha = sum_{j<=k} p_j and beta = sum_{j>k} q_j (suffix sums keep small values exact).
        alpha = np.concatenate([[0.0], np.minimum(np.cumsum(p), 1.0), [1.0]])
        beta = np.concatenate([np.cumsum(qm[::-1])[::-1], [0.0, 0.0]])
        beta[0] = min(beta[0], 1.0)
        if factor > 1 and bound == "upper":
            # merging consecutive outcomes is post-processing: the chords lie above the curve
            keep = np.unique(np.concatenate([np.arange(0, alpha.size, factor), [alpha.size - 2]]))
            alpha, beta = np.append(alpha[keep], 1.0), np.append(beta[keep], 0.0)

        # One valid shift per curve (so that its vertices are exact): the best of the
        # deterministic range, domination, and the concentration bound at level _CURVE_ETA.
        r = self._rounding
        radius = float(r.radius(np.array(_CURVE_ETA)))
        if bound == "lower":
            options = [(r.low, 0.0)]
            if r.dominating:
                options.append((0.0, 0.0))
            if r.random:
                options.append((r.mean - r.mean_tol - radius, -_CURVE_ETA))
            shift, slack = max(options, key=lambda o: (o[0], o[1]))
        else:
            options = [(r.high, self._tail_mass)]
            if r.random:
                options.append((r.mean + r.mean_tol + radius, _CURVE_ETA + self._tail_mass))
            shift, slack = min(options, key=lambda o: (o[0], o[1]))
        try:
            scale = math.exp(shift)
        except OverflowError:  # 1e9 compositions or more: every vertex but alpha = 0 then
            scale = math.inf  # lies past alpha = 1, where the curve is cut below
        with np.errstate(invalid="ignore"):
            a = np.where(alpha > 0.0, alpha * scale, 0.0)
        b = beta + slack
        if a[-1] > 1.0:
            b_end = float(np.interp(1.0, a, b))
            keep = a < 1.0
            a, b = np.append(a[keep], 1.0), np.append(b[keep], b_end)
        if bound == "lower" and (b < 0).any():
            j = int(np.argmax(b < 0))
            if j == 0:
                return np.array([0.0, 1.0]), np.array([0.0, 0.0])
            t = b[j - 1] / (b[j - 1] - b[j])
            a_cross = a[j - 1] + t * (a[j] - a[j - 1])
            a, b = np.append(a[:j], a_cross), np.append(b[:j], 0.0)
        if bound == "upper":
            keep = b <= 1.0 - a
            a, b = a[keep], b[keep]
        return np.clip(a, 0.0, 1.0), np.clip(b, 0.0, 1.0)

    def tradeoff(self, bound: str = "lower") -> PiecewiseLinearTradeoff:
        """A valid lower (``"lower"``, kind ``bound``) or upper (``"upper"``, kind
        ``approximation``) bound on the trade-off curve ``T(P, Q)`` of this order."""
        bound = _check_bound(bound)
        a, b = self._curve_vertices(bound)
        kind = "bound" if bound == "lower" else "approximation"
        return from_points(a, b, name=f"PLD {bound} bound", kind=kind)


# ---------------------------------------------------------------------- grid splitting
def _split_weights(excess: np.ndarray, width: float) -> np.ndarray:
    """Share of an atom sent to the lower of two grid points ``width`` apart, when the atom
    lies ``excess`` below the upper one: it preserves the atom's mass and ``E[e^{-L}]``
    (connect the dots; Doroshenko et al. 2022)."""
    return np.clip(np.expm1(excess) / math.expm1(width), 0.0, 1.0)


def _coarse_split(
    idx: np.ndarray, pmf: np.ndarray, factor: int, step: float
) -> tuple[int, np.ndarray, float]:
    """Split atoms at grid indices ``idx`` onto the grid of ``factor * step``.

    Returns the first coarse index, the coarse pmf and the mean of the added error ``V``."""
    lower = idx // factor
    rem = idx - lower * factor
    w = _split_weights((factor - rem) * step, factor * step)
    start = int(lower[0])
    size = int(lower[-1]) - start + 2
    out = np.bincount(lower - start, weights=w * pmf, minlength=size)
    out += np.bincount(lower - start + 1, weights=(1.0 - w) * pmf, minlength=size)
    v_mean = float(pmf @ (w * (-rem) + (1.0 - w) * (factor - rem))) * step
    return start, out, v_mean


# ------------------------------------------------------------------ convolution and tail cutting
def _convolve(a: np.ndarray, b: np.ndarray | None) -> tuple[np.ndarray, bool]:
    """Linear convolution of ``a`` with ``b`` (``b=None``: with itself); True when by FFT."""
    other = a if b is None else b
    if a.size * other.size <= _DIRECT_CONV or min(a.size, other.size) <= 32:
        return np.convolve(a, other), False
    size = a.size + other.size - 1
    n = scipy.fft.next_fast_len(size, real=True)
    fa = scipy.fft.rfft(a, n)
    prod = fa * fa if b is None else fa * scipy.fft.rfft(other, n)
    return scipy.fft.irfft(prod, n)[:size], True


def _edge_cut(pmf: np.ndarray, budget: float) -> tuple[int, float]:
    """Largest prefix of ``pmf`` holding at most ``budget`` (never the whole array): returns its
    length ``i`` and its mass. Only a growing prefix is summed, so the cost is proportional to the
    cut, not to the array."""
    window = 4096
    while True:
        cs = np.cumsum(pmf[:window])
        i = int(np.searchsorted(cs, budget, side="right"))
        if i < cs.size or window >= pmf.size:
            i = min(i, cs.size - 1)
            return i, float(cs[i - 1]) if i > 0 else 0.0
        window *= 4


def _finish(
    step: float,
    offset: int,
    pmf: np.ndarray,
    noisy: bool,
    inf_mass: float,
    tail_mass: float,
    rounding: Rounding,
) -> DiscretePLD:
    """Clip FFT round-off and cut the tails pessimistically (left tail up, right tail to +inf).

    After an FFT, entries below ``_FFT_NOISE`` times the largest one at either end are noise;
    they are cut too, and all cut mass is added to the recorded tail mass.
    """
    pmf = np.maximum(pmf, 0.0)
    peak = float(pmf.max())
    if peak <= 0:
        return DiscretePLD._new(step, offset, np.zeros(1), inf_mass, tail_mass, rounding)
    keep = pmf > (_FFT_NOISE * peak if noisy else 0.0)
    first = int(keep.argmax())
    last = pmf.size - 1 - int(keep[::-1].argmax())
    noise_left = float(pmf[:first].sum())
    noise_right = float(pmf[last + 1 :].sum())
    core = pmf[first : last + 1]
    i_lo, cut_left = _edge_cut(core, TAIL_MASS / 2)
    j, cut_right = _edge_cut(core[::-1], TAIL_MASS / 2)
    i_hi = core.size - 1 - j
    if i_lo > i_hi:
        i_lo = i_hi = int(core.argmax())
        cut_left, cut_right = float(core[:i_lo].sum()), float(core[i_lo + 1 :].sum())
    kept = core[i_lo : i_hi + 1].copy()
    moved_left = noise_left + cut_left
    moved_right = noise_right + cut_right
    kept[0] += moved_left
    return DiscretePLD._new(
        step,
        offset + first + i_lo,
        kept,
        inf_mass + moved_right,
        tail_mass + moved_left + moved_right,
        rounding,
    )


# ---------------------------------------------------------------------- both orders
class PLD:
    """Privacy loss distributions of a neighbouring pair in both orders: the tight accountant.

    ``pq`` is ``PLD(P||Q)`` (the loss ``log p/q`` under ``P``) and ``qp`` is ``PLD(Q||P)``.
    A guarantee for a symmetric neighbouring relation must hold in both orders, so ``delta`` is
    the larger of the two orders (docs/theory.md#pld) and the trade-off curve is the convex hull of
    the smaller of the two order curves (``min(T(P,Q), T(Q,P))**``, cf. DRS Proposition 2).
    ``PLD`` objects satisfy the ``PrivacyProfile`` protocol (``delta``, ``epsilon``, ``tradeoff``).
    """

    #: The statement a PLD makes about the mechanism: a valid (numerically tight) bound.
    kind = "bound"

    def __init__(
        self, pq: DiscretePLD, qp: DiscretePLD | None = None, *, name: str = "PLD"
    ) -> None:
        if not isinstance(pq, DiscretePLD):
            raise ValueError(f"pq must be a DiscretePLD, got {type(pq).__name__}")
        if qp is None:
            qp = pq
        if not isinstance(qp, DiscretePLD):
            raise ValueError(f"qp must be a DiscretePLD, got {type(qp).__name__}")
        _same_step(pq.step, qp.step)
        self.pq = pq
        self.qp = qp
        self.name = name

    def __repr__(self) -> str:
        return f"<PLD {self.name} step={self.step:.3g} symmetric={self.symmetric}>"

    @property
    def step(self) -> float:
        """Grid spacing of the loss values (both orders share it)."""
        return self.pq.step

    @property
    def symmetric(self) -> bool:
        """True when both orders are the same distribution (one object is stored)."""
        return self.pq is self.qp

    def _orders(self) -> tuple[DiscretePLD, ...]:
        return (self.pq,) if self.symmetric else (self.pq, self.qp)

    def compose(self, other: PLD) -> PLD:
        """PLD of running both mechanisms on the same pair with independent randomness."""
        if not isinstance(other, PLD):
            raise ValueError(f"other must be a PLD, got {type(other).__name__}")
        pq = self.pq.compose(other.pq)
        both = self.symmetric and other.symmetric
        qp = pq if both else self.qp.compose(other.qp)
        return PLD(pq, qp, name=f"{self.name} + {other.name}")

    def self_compose(self, n: int) -> PLD:
        """PLD of ``n``-fold composition (repeated squaring in each order); both orders are
        coarsened by the same factor if needed (see :meth:`DiscretePLD.self_compose`)."""
        n = check_integer("n", n, minimum=1, maximum=MAX_COMPOSITIONS)
        factor = max(order._coarsening_for(n) for order in self._orders())
        pq = self.pq.coarsen(factor)._power(n)
        qp = pq if self.symmetric else self.qp.coarsen(factor)._power(n)
        return PLD(pq, qp, name=f"{n} x {self.name}")

    def delta(self, eps: float | np.ndarray, bound: str = "upper") -> float | np.ndarray:
        """Upper (or lower) bound on ``max(H_{e^eps}(P||Q), H_{e^eps}(Q||P))``, ``eps >= 0``."""
        values = [order.delta(eps, bound) for order in self._orders()]
        out = np.maximum.reduce([np.asarray(v) for v in values])
        return float(out) if out.ndim == 0 else out

    def epsilon(self, delta: float, bound: str = "upper") -> float:
        """Smallest ``eps`` with ``delta(eps, bound) <= delta``: with ``bound="upper"`` a valid
        ``(eps, delta)``-DP guarantee, with ``"lower"`` a lower bound on the tight one."""
        return max(order.epsilon(delta, bound) for order in self._orders())

    def error(self, eps: float | np.ndarray) -> float | np.ndarray:
        """Width of the numerical bracket, ``delta(eps, "upper") - delta(eps, "lower")``."""
        out = np.asarray(self.delta(eps, "upper")) - np.asarray(self.delta(eps, "lower"))
        return float(out) if out.ndim == 0 else out

    def tradeoff(self, bound: str = "lower") -> PiecewiseLinearTradeoff:
        """Trade-off curve valid in both orders: ``conv(min(T(P,Q), T(Q,P)))``.

        ``"lower"`` (default) gives a valid lower bound on it (kind ``bound``: a privacy
        guarantee); ``"upper"`` an upper bound (kind ``approximation``); the exact curve lies
        between them. Built from the Neyman-Pearson curves of the grid PLDs (docs/theory.md#pld).
        """
        bound = _check_bound(bound)
        parts = [order._curve_vertices(bound) for order in self._orders()]
        a = np.concatenate([p[0] for p in parts])
        b = np.concatenate([p[1] for p in parts])
        kind = "bound" if bound == "lower" else "approximation"
        return from_points(a, b, name=f"{self.name} (PLD {bound} bound)", kind=kind)


# ---------------------------------------------------------------------- step choice
def auto_step(
    compositions: int,
    *,
    loss_std: float = 1.0,
    loss_mean: float = 0.0,
    rel_error: float = 5e-3,
    max_bins: int = MAX_BINS,
) -> float:
    """A grid step for which the ``eps`` bracket after ``compositions`` factors is at most about
    ``rel_error`` of ``eps`` (0.2-0.4% for DP-SGD-like losses with the default).

    ``loss_std`` and ``loss_mean`` describe the loss of one factor under ``P``. After ``T``
    factors, ``eps`` at ``delta ~ 1e-5`` is at least about ``T * mean + 3 * std * sqrt(T)``
    (a conservative estimate: the central limit gives about ``4.3 std sqrt(T)``); the
    connect-the-dots upper bound is tight to second order in the step and the lower bound trails
    it by the concentration radius ``step * sqrt(T log(1/eta) / 2)`` (``eta ~ 1e-10``). Both grow
    like ``sqrt(T)``, so the step hardly depends on ``T``. The step is enlarged if the composed
    loss would need more than ``max_bins`` bins.
    """
    t = check_integer("compositions", compositions, minimum=1)
    std = check_positive("loss_std", loss_std)
    mean = abs(check_real("loss_mean", loss_mean))
    rel = check_probability("rel_error", rel_error, low_open=True, high_open=True)
    bins = check_integer("max_bins", max_bins, minimum=16)
    eps_typical = t * mean + 3.0 * std * math.sqrt(t)
    step = rel * eps_typical / math.sqrt(t * math.log(1e10) / 2.0)
    width = t * mean + 20.0 * std * math.sqrt(t)
    return max(step, width / bins)


# ---------------------------------------------------------------------- monotone losses
@dataclass(frozen=True)
class _Component:
    """A normal or Laplace law with tail-accurate CDF and survival function."""

    kind: str  # "normal" or "laplace"
    loc: float
    scale: float

    def cdf(self, t: np.ndarray) -> np.ndarray:
        z = (np.asarray(t, dtype=float) - self.loc) / self.scale
        if self.kind == "normal":
            return special.ndtr(z)
        with np.errstate(over="ignore", invalid="ignore"):
            return np.where(z < 0, 0.5 * np.exp(np.minimum(z, 0.0)), 1.0 - 0.5 * np.exp(-z))

    def sf(self, t: np.ndarray) -> np.ndarray:
        return _Component(self.kind, -self.loc, self.scale).cdf(-np.asarray(t, dtype=float))

    def pdf(self, t: np.ndarray) -> np.ndarray:
        z = (np.asarray(t, dtype=float) - self.loc) / self.scale
        if self.kind == "normal":
            return np.exp(-0.5 * z**2) / (math.sqrt(2.0 * math.pi) * self.scale)
        return 0.5 * np.exp(-np.abs(z)) / self.scale

    def lower_quantile(self, tail: float) -> float:
        """The point with mass ``tail`` below it."""
        if self.kind == "normal":
            return self.loc + self.scale * float(special.ndtri(tail))
        return self.loc + self.scale * math.log(2.0 * tail)


@dataclass(frozen=True)
class _Law:
    """A finite mixture of normal and Laplace laws on the real line."""

    weights: tuple[float, ...]
    parts: tuple[_Component, ...]

    def cdf(self, t: np.ndarray) -> np.ndarray:
        return sum(w * c.cdf(t) for w, c in zip(self.weights, self.parts, strict=True))

    def sf(self, t: np.ndarray) -> np.ndarray:
        return sum(w * c.sf(t) for w, c in zip(self.weights, self.parts, strict=True))

    def pdf(self, t: np.ndarray) -> np.ndarray:
        return sum(w * c.pdf(t) for w, c in zip(self.weights, self.parts, strict=True))

    def masses(self, t: np.ndarray) -> np.ndarray:
        """``Pr(t_i <= Y <= t_{i+1})`` for non-decreasing ``t``, each from the tail (CDF or
        survival function) that keeps its relative accuracy."""
        total = np.zeros(t.size - 1)
        for w, c in zip(self.weights, self.parts, strict=True):
            cdf, sf = c.cdf(t), c.sf(t)
            lo, hi = t[:-1], t[1:]
            right = sf[:-1] - sf[1:]
            left = cdf[1:] - cdf[:-1]
            middle = 1.0 - cdf[:-1] - sf[1:]
            total += w * np.where(lo >= c.loc, right, np.where(hi <= c.loc, left, middle))
        return np.maximum(total, 0.0)

    def support(self, tail: float) -> tuple[float, float]:
        """``[lo, hi]`` with at most ``tail`` mass below ``lo`` and at most ``tail`` above."""
        lo = min(c.lower_quantile(tail) for c in self.parts)
        hi = max(2.0 * c.loc - c.lower_quantile(tail) for c in self.parts)
        return lo, hi

    def points(self) -> list[float]:
        return [c.loc for c in self.parts]


def _normal(loc: float, scale: float) -> _Law:
    return _Law((1.0,), (_Component("normal", loc, scale),))


def _laplace(loc: float, scale: float) -> _Law:
    return _Law((1.0,), (_Component("laplace", loc, scale),))


@dataclass(frozen=True)
class _Ratio:
    """A monotone log likelihood ratio ``z(y) = log p'(y)/p(y)`` and its generalised inverses."""

    z: Callable[[np.ndarray], np.ndarray]
    y_ge: Callable[[np.ndarray], np.ndarray]  # inf{y : z(y) >= z}
    y_le: Callable[[np.ndarray], np.ndarray]  # sup{y : z(y) <= z}
    kinks: tuple[float, ...] = ()


def _log_mix(z: np.ndarray, q: float) -> np.ndarray:
    """``log(1 - q + q e^z)`` without overflow or cancellation."""
    z = np.asarray(z, dtype=float)
    if q == 1.0:
        return z
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        small = np.log1p(q * np.expm1(np.minimum(z, 1.0)))
        large = z + np.log(q + (1.0 - q) * np.exp(-np.maximum(z, 1.0)))
    return np.where(z <= 1.0, small, large)


def _inv_log_mix(u: np.ndarray, q: float) -> np.ndarray:
    """The ``z`` with ``log(1 - q + q e^z) = u`` (``-inf`` where ``e^u <= 1 - q``)."""
    u = np.asarray(u, dtype=float)
    if q == 1.0:
        return u
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        v = np.expm1(np.minimum(u, 1.0)) / q
        small = np.where(v > -1.0, np.log1p(v), -np.inf)
        large = u + np.log1p(-(1.0 - q) * np.exp(-np.maximum(u, 1.0))) - math.log(q)
    return np.where(u <= 1.0, small, large)


def _gaussian_ratio(sigma: float, delta_: float) -> _Ratio:
    def z(y: np.ndarray) -> np.ndarray:
        return delta_ * (np.asarray(y) - delta_ / 2.0) / sigma**2

    def inv(zz: np.ndarray) -> np.ndarray:
        return sigma**2 * np.asarray(zz) / delta_ + delta_ / 2.0

    return _Ratio(z, inv, inv)


def _laplace_ratio(scale: float, delta_: float) -> _Ratio:
    eps0 = delta_ / scale
    tol = 8 * np.finfo(float).eps * eps0

    def z(y: np.ndarray) -> np.ndarray:
        return np.clip((2.0 * np.asarray(y) - delta_) / scale, -eps0, eps0)

    def y_ge(zz: np.ndarray) -> np.ndarray:
        zz = np.asarray(zz, dtype=float)
        with np.errstate(invalid="ignore"):
            mid = (scale * zz + delta_) / 2.0
        return np.where(zz <= -eps0 + tol, -np.inf, np.where(zz > eps0 + tol, np.inf, mid))

    def y_le(zz: np.ndarray) -> np.ndarray:
        zz = np.asarray(zz, dtype=float)
        with np.errstate(invalid="ignore"):
            mid = (scale * zz + delta_) / 2.0
        return np.where(zz >= eps0 - tol, np.inf, np.where(zz < -eps0 - tol, -np.inf, mid))

    return _Ratio(z, y_ge, y_le, kinks=(0.0, delta_))


def _loss_moments(loss: Callable, law: _Law, kinks: Sequence[float]) -> tuple[float, float, float]:
    """``E[L]``, ``E[L^2]`` under ``law`` and a bound on the error of ``E[L]``.

    Composite 8-point Gauss-Legendre quadrature on panels that never straddle a kink of the
    loss or of the density, between the ``1e-30`` quantiles; the error bound is ten times the
    change when the panels are halved, plus ``1e-13 E|L|`` for round-off, plus the neglected
    tails.
    """
    lo, hi = law.support(1e-30)
    pts = sorted({p for p in [*kinks, *law.points()] if lo < p < hi})
    edges = [lo, *pts, hi]
    nodes, weights = np.polynomial.legendre.leggauss(8)

    def integrals(panels: int) -> tuple[float, float, float]:
        cuts = np.concatenate(
            [np.linspace(a, b, panels + 1)[:-1] for a, b in itertools.pairwise(edges)] + [[hi]]
        )
        mid, half = (cuts[1:] + cuts[:-1]) / 2, (cuts[1:] - cuts[:-1]) / 2
        y = mid[:, None] + half[:, None] * nodes
        w = half[:, None] * weights * law.pdf(y)
        values = loss(y)
        return (
            float((w * values).sum()),
            float((w * values**2).sum()),
            float((w * abs(values)).sum()),
        )

    m1, m2, scale = integrals(400)
    fine, _, _ = integrals(800)
    ends = float(np.abs(loss(np.array([lo, hi]))).max())
    return fine, m2, 10.0 * abs(fine - m1) + 1e-13 * scale + 4e-30 * (ends + 1.0)


def _loss_range(ratio: _Ratio, law: _Law, q: float, sign: int) -> tuple[float, float]:
    """Loss values at the ``TAIL_MASS / 4`` quantiles of ``law`` (the loss is monotone in y)."""
    y_lo, y_hi = law.support(TAIL_MASS / 4)
    ends = sign * _log_mix(ratio.z(np.array([y_lo, y_hi])), q)
    return float(ends.min()), float(ends.max())


def _monotone_order(
    ratio: _Ratio,
    law: _Law,
    other: _Law,
    q: float,
    sign: int,
    step: float,
    mean_loss: float,
    mean_tol: float,
) -> DiscretePLD:
    """Connect-the-dots PLD of a loss that is a monotone function of a scalar ``y ~ law``.

    ``sign = -1``: ``L(y) = -log(1 - q + q e^{z(y)})`` (order ``P||Q``: ``law = P``,
    ``other = Q``, ``L`` non-increasing in ``y``); ``sign = +1``: ``L(y) = +log(...)`` (order
    ``Q||P``: ``law = Q``, ``other = P``, non-decreasing). ``{L <= x}`` is a half-line in ``y``
    ending at the inverse loss, so the ``law``-mass ``P_k`` and the ``other``-mass
    ``Q_k = E_law[e^{-L}; L in I_k]`` of each loss interval ``I_k = (l_{k-1}, l_k]`` are
    differences of CDFs (no sampling, no quadrature).

    Each loss value in ``I_k`` is split between the two grid points so that the mass and
    ``E[e^{-L}]`` are preserved (Doroshenko et al. 2022, "Connect the dots"): ``l_{k-1}`` receives
    ``W_k = (Q_k - e^{-l_k} P_k) / (e^{-l_{k-1}} - e^{-l_k})``. For any ``eps`` the function
    ``(1 - e^{eps - L})_+`` is affine in ``e^{-L}`` on intervals not containing ``eps`` and
    convex on the one that does, so the split PLD has ``delta >= `` the exact one for every real
    ``eps`` (it dominates) and equals it on the grid. The rounding error ``U = l_grid - L`` lies
    in ``[-step, step]``, with ``E[U] = E[l_grid] - E[L]`` exact, and since
    ``E[e^{-U} | L] = 1`` the two-point law of ``U`` given ``L`` has variance at most
    ``step^2/4`` and mean in ``[0, 1.7 step^2]``, so ``Var[U] <= step^2/4 + 3 step^4``
    (``step <= 1``), which feeds Bernstein's inequality.
    """
    x_lo, x_hi = _loss_range(ratio, law, q, sign)
    # lowest grid point strictly below x_lo, so that an atom at x_lo is not counted as tail
    k_lo = math.floor(x_lo / step) - 1
    k_hi = max(math.ceil(x_hi / step), k_lo + 1)
    if k_hi - k_lo + 1 > MAX_BINS:
        raise ValueError(
            f"step must be at least {(x_hi - x_lo) / MAX_BINS:.3g} for this loss range "
            f"[{x_lo:.4g}, {x_hi:.4g}] (at most {MAX_BINS} bins); got {step!r}"
        )
    x = np.arange(k_lo, k_hi + 1) * step  # grid points l_{k_lo} .. l_{k_hi}
    if sign < 0:
        t = ratio.y_ge(_inv_log_mix(-x, q))  # {L <= x} = {y >= t}, t non-increasing in x
        p_k, q_k = law.masses(t[::-1])[::-1], other.masses(t[::-1])[::-1]
        below, above = float(law.sf(t[0])), float(law.cdf(t[-1]))
    else:
        t = ratio.y_le(_inv_log_mix(x, q))  # {L <= x} = {y <= t}, t non-decreasing in x
        p_k, q_k = law.masses(t), other.masses(t)
        below, above = float(law.cdf(t[0])), float(law.sf(t[-1]))
    # W_k e^{-l_{k-1}} (1 - e^{-step}) = Q_k - e^{-l_k} P_k; scale by e^{l_{k-1}} in log space.
    with np.errstate(divide="ignore"):
        scaled_q = np.exp(np.log(q_k) + x[:-1])
    w_k = np.clip((scaled_q - math.exp(-step) * p_k) / -math.expm1(-step), 0.0, p_k)
    pmf = np.zeros(x.size)
    pmf[:-1] += w_k
    pmf[1:] += p_k - w_k
    mean = float(x @ pmf) - mean_loss
    pmf[0] += below
    tol = mean_tol + 2.0 * (below + above) * (abs(x_lo) + abs(x_hi) + 2.0 * step)
    var = step**2 / 4.0 + 3.0 * step**4 if step <= 1.0 else step**2
    rounding = Rounding(
        low=-step,
        high=step,
        mean=min(max(mean, -step), step),
        mean_tol=tol,
        range_sq=(2.0 * step) ** 2,
        var=var,
        dev=2.0 * step,
    )
    return DiscretePLD(step, k_lo, pmf, inf_mass=above, tail_mass=below + above, rounding=rounding)


def _monotone_pld(
    ratio: _Ratio,
    base: _Law,
    prime: _Law,
    q: float,
    step: float | None,
    name: str,
    closed_form: tuple[float, float] | None = None,
    symmetric: bool = False,
    rel_error: float = _MANY_REL_ERROR,
) -> PLD:
    """Both orders of ``P = base`` against ``Q = (1 - q) base + q prime``.

    ``closed_form = (E_P[L], Var_P[L])`` of the ``P||Q`` order when known; otherwise both orders'
    moments come from quadrature. ``symmetric`` reuses the ``P||Q`` order for ``Q||P``.
    """
    mix = prime
    if q < 1.0:
        mix = _Law(
            tuple((1.0 - q) * w for w in base.weights) + tuple(q * w for w in prime.weights),
            base.parts + prime.parts,
        )

    def loss_pq(y: np.ndarray) -> np.ndarray:
        return -_log_mix(ratio.z(y), q)

    def loss_qp(y: np.ndarray) -> np.ndarray:
        return _log_mix(ratio.z(y), q)

    if closed_form is not None:
        mean_pq, var_pq = closed_form
        tol_pq = 1e-15 * abs(mean_pq)
    else:
        mean_pq, m2, tol_pq = _loss_moments(loss_pq, base, ratio.kinks)
        var_pq = max(m2 - mean_pq**2, 0.0)
    orders = [("pq", base, -1, mean_pq, tol_pq, var_pq)]
    if not symmetric:
        mean_qp, m2, tol_qp = _loss_moments(loss_qp, mix, ratio.kinks)
        orders.append(("qp", mix, +1, mean_qp, tol_qp, max(m2 - mean_qp**2, 0.0)))
    if step is None:
        steps = [
            auto_step(1, loss_std=math.sqrt(var), loss_mean=mean, rel_error=rel_error)
            for _, _, _, mean, _, var in orders
            if var > 0
        ]
        step = min(steps) if steps else 1e-3
        # keep one factor within a quarter of MAX_BINS, leaving room for compositions
        ranges = [_loss_range(ratio, law, q, sign) for _, law, sign, *_ in orders]
        step = max(step, 4.0 * max(hi - lo for lo, hi in ranges) / MAX_BINS)
    else:
        step = check_positive("step", step)
    others = {"pq": mix, "qp": base}
    built = [
        _monotone_order(ratio, law, others[key], q, sign, step, mean, tol)
        for key, law, sign, mean, tol, _ in orders
    ]
    return PLD(built[0], built[-1] if not symmetric else None, name=name)


def _check_gaussian(sigma: float, sensitivity: float) -> tuple[float, float]:
    sigma = check_positive("sigma", sigma)
    sens = check_positive("sensitivity", sensitivity)
    if sens / sigma > 1e4:
        raise ValueError(
            f"sensitivity/sigma must be at most 1e4; got sigma={sigma!r}, sensitivity={sens!r}"
        )
    return sigma, sens


def _check_laplace(scale: float, sensitivity: float) -> tuple[float, float]:
    scale = check_positive("scale", scale)
    sens = check_positive("sensitivity", sensitivity)
    if sens / scale > 1e6:
        raise ValueError(f"sensitivity/scale must be at most 1e6, got {sens / scale!r}")
    return scale, sens


def _gaussian_family(
    sigma: float, sens: float, q: float, step: float | None, name: str, **options: Any
) -> PLD:
    """``N(0, sigma^2)`` against ``(1 - q) N(0, sigma^2) + q N(sens, sigma^2)``, both orders.

    The privacy loss depends on ``sens / sigma`` alone, so the laws are taken in units of
    ``sigma`` (``N(0, 1)`` and ``N(sens / sigma, 1)``): no ``sigma**2`` of an extreme ``sigma``
    overflows or underflows on the way."""
    shift = sens / sigma
    base, prime = _normal(0.0, 1.0), _normal(shift, 1.0)
    return _monotone_pld(_gaussian_ratio(1.0, shift), base, prime, q, step, name, **options)


def _laplace_family(
    scale: float, sens: float, q: float, step: float | None, name: str, **options: Any
) -> PLD:
    """``Lap(0, scale)`` against ``(1 - q) Lap(0, scale) + q Lap(sens, scale)``, both orders."""
    base, prime = _laplace(0.0, scale), _laplace(sens, scale)
    return _monotone_pld(_laplace_ratio(scale, sens), base, prime, q, step, name, **options)


def gaussian(sigma: float, sensitivity: float = 1.0, *, step: float | None = None) -> PLD:
    """PLD of the Gaussian mechanism, ``P = N(0, sigma^2)``, ``Q = N(sensitivity, sigma^2)``.

    The exact loss law is ``N(eta, 2 eta)`` with ``eta = sensitivity^2 / (2 sigma^2)`` in both
    orders (Steinke 2022, Proposition 3); bins are exact differences of the normal CDF and
    ``E_P[L] = eta`` is used for the rounding mean. ``step=None`` uses :func:`auto_step` for one
    release with ``rel_error=1e-3``; to compose many times pass ``auto_step(T, ...)``.
    """
    sigma, sens = _check_gaussian(sigma, sensitivity)
    eta = 0.5 * (sens / sigma) ** 2
    return _gaussian_family(
        sigma,
        sens,
        1.0,
        step,
        f"gaussian(sigma={sigma:g}, sensitivity={sens:g})",
        closed_form=(eta, 2.0 * eta),
        symmetric=True,
        rel_error=_SINGLE_REL_ERROR,
    )


def laplace(scale: float, sensitivity: float = 1.0, *, step: float | None = None) -> PLD:
    """PLD of the Laplace mechanism, ``P = Lap(0, scale)``, ``Q = Lap(sensitivity, scale)``.

    With ``eps0 = sensitivity / scale`` the loss has atoms at ``+eps0`` (mass 1/2) and ``-eps0``
    (mass ``e^{-eps0}/2``) and a continuous part in between; the two orders have the same law.
    ``E_P[L] = eps0 + e^{-eps0} - 1``. With ``step=None`` the step divides ``eps0``, so the atoms
    sit exactly on the grid.
    """
    scale, sens = _check_laplace(scale, sensitivity)
    eps0 = sens / scale
    mean = eps0 + math.expm1(-eps0)
    # E_P[L^2] = eps0^2 - 2 eps0 + 4 - (2 eps0 + 4) e^{-eps0} (integrate the three pieces).
    second = eps0**2 - 2.0 * eps0 + 4.0 - (2.0 * eps0 + 4.0) * math.exp(-eps0)
    # (for small eps0 the formula cancels; there L is eps0 or nearly so and the std is ~eps0)
    var = max(second - mean**2, 0.0) if eps0 > 1e-2 else eps0**2
    if step is None:
        raw = auto_step(1, loss_std=math.sqrt(var), loss_mean=mean, rel_error=_SINGLE_REL_ERROR)
        step = eps0 / math.ceil(eps0 / raw)
    return _laplace_family(
        scale,
        sens,
        1.0,
        step,
        f"laplace(scale={scale:g}, sensitivity={sens:g})",
        closed_form=(mean, var),
        symmetric=True,
    )


def poisson_subsampled_gaussian(
    sigma: float, *, rate: float, sensitivity: float = 1.0, step: float | None = None
) -> PLD:
    """PLD of the Poisson-subsampled Gaussian mechanism (one step of DP-SGD), both orders.

    ``P = N(0, sigma^2)`` and ``Q = (1 - q) N(0, sigma^2) + q N(sensitivity, sigma^2)`` with
    ``q = rate`` (add/remove: ``D_prime = D + {target}``; docs/theory.md#pld). The order ``P||Q``
    has ``L(y) = -log(1 - q + q e^{z(y)})`` with ``z(y) = (2 y Delta - Delta^2)/(2 sigma^2)``;
    ``Q||P`` has ``+log(...)`` under ``Q``. Both losses are monotone in ``y``, so bin masses are
    differences of normal CDFs at the inverse losses (no sampling, no quadrature error); the
    Kullback-Leibler means used by the bracket come from adaptive quadrature. The two orders
    differ and :class:`PLD` takes the larger ``delta``.

    Sampling ``m`` of ``n`` records without replacement under ``replace_one`` with
    ``rate = m/n`` is dominated by the same pair ``P`` vs ``(1 - p) P + p P'`` in both orders
    (DRS 2022, Theorem 9), so fixed-size batches can reuse this PLD.

    ``step=None`` uses :func:`auto_step` from the loss moments of one step (default
    ``rel_error``): after thousands of compositions the ``eps`` bracket is 0.2-0.4% wide.
    """
    q = check_probability("rate", rate, low_open=True)
    sigma, sens = _check_gaussian(sigma, sensitivity)
    if q == 1.0:
        return gaussian(sigma, sens, step=step)
    name = f"poisson_subsampled_gaussian(sigma={sigma:g}, rate={q:g}, sensitivity={sens:g})"
    return _gaussian_family(sigma, sens, q, step, name)


def poisson_subsampled_laplace(
    scale: float, *, rate: float, sensitivity: float = 1.0, step: float | None = None
) -> PLD:
    """PLD of the Poisson-subsampled Laplace mechanism, both orders.

    ``P = Lap(0, scale)``, ``Q = (1 - q) Lap(0, scale) + q Lap(sensitivity, scale)``; the loss
    is a monotone function of ``y`` with two atoms (where the Laplace ratio is constant), so bin
    masses are differences of Laplace CDFs. The same pair dominates sampling without replacement
    under ``replace_one`` with ``rate = m/n`` (DRS 2022, Theorem 9). ``step=None`` as for
    :func:`poisson_subsampled_gaussian`.
    """
    q = check_probability("rate", rate, low_open=True)
    scale, sens = _check_laplace(scale, sensitivity)
    if q == 1.0:
        return laplace(scale, sens, step=step)
    name = f"poisson_subsampled_laplace(scale={scale:g}, rate={q:g}, sensitivity={sens:g})"
    return _laplace_family(scale, sens, q, step, name)


# ---------------------------------------------------------------------- Gaussian mixtures
#: Mixture atoms with a weight below this are dropped (see :func:`gaussian_mixture`).
_MIN_WEIGHT = 1e-300
#: Grid points per block when a quantity is summed over every atom of a mixture.
_MIXTURE_BLOCK = 2**16


class _LatticeMixture:
    """The law ``sum_k w_k N(a_k, 1)``: the :class:`_Law` interface, vectorised over atoms."""

    def __init__(self, shifts: np.ndarray, weights: np.ndarray) -> None:
        self.shifts, self.weights = shifts, weights
        self.log_weights = np.log(weights)

    def _rows(self, t: np.ndarray) -> Iterable[slice]:
        per = max(1, _MIXTURE_BLOCK // self.shifts.size)
        return (slice(i, i + per) for i in range(0, t.size, per))

    def _sum(self, fn: Callable[[np.ndarray], np.ndarray], t: np.ndarray) -> np.ndarray:
        """``sum_k w_k fn(t - a_k)`` for every entry of ``t``."""
        t = np.asarray(t, dtype=float)
        flat = t.ravel()
        out = np.empty(flat.size)
        for rows in self._rows(flat):
            out[rows] = fn(flat[rows, None] - self.shifts) @ self.weights
        return out.reshape(t.shape)

    def cdf(self, t: np.ndarray) -> np.ndarray:
        return self._sum(special.ndtr, t)

    def sf(self, t: np.ndarray) -> np.ndarray:
        return self._sum(lambda z: special.ndtr(-z), t)

    def pdf(self, t: np.ndarray) -> np.ndarray:
        return self._sum(lambda z: np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi), t)

    def masses(self, t: np.ndarray) -> np.ndarray:
        """``Pr(t_i <= Y <= t_{i+1})`` for non-decreasing ``t``: each atom's mass of
        ``[z_lo, z_hi]`` is ``Phi(-z_lo) - Phi(-z_hi)``, after reflecting intervals that lie
        below the atom's mean (``[-z_hi, -z_lo]`` has the same mass), so that a tail mass is a
        difference of survival functions and keeps its relative accuracy."""
        lo, hi = t[:-1], t[1:]
        out = np.empty(lo.size)
        for rows in self._rows(lo):
            zl = lo[rows, None] - self.shifts
            zh = hi[rows, None] - self.shifts
            below = zh <= 0.0
            first = np.where(below, -zh, zl)
            second = np.where(below, -zl, zh)
            out[rows] = (special.ndtr(-first) - special.ndtr(-second)) @ self.weights
        return np.maximum(out, 0.0)

    def support(self, tail: float) -> tuple[float, float]:
        """``[lo, hi]`` with at most ``tail`` mass below ``lo`` and at most ``tail`` above."""
        z = float(special.ndtri(tail))
        return float(self.shifts.min()) + z, float(self.shifts.max()) - z

    def points(self) -> list[float]:
        """The mean (the density is smooth: no kink to keep quadrature panels away from)."""
        return [float(self.shifts @ self.weights)]

    def log_ratio(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``z(y) = log sum_k w_k e^{a_k y - a_k^2 / 2}`` (the log density ratio against
        ``N(0, 1)``) and its derivative, the posterior mean of the shift."""
        y = np.asarray(y, dtype=float)
        flat = y.ravel()
        z, dz = np.empty(flat.size), np.empty(flat.size)
        bias = self.log_weights - 0.5 * self.shifts**2
        for rows in self._rows(flat):
            terms = flat[rows, None] * self.shifts + bias
            top = terms.max(axis=1)
            e = np.exp(terms - top[:, None])
            total = e.sum(axis=1)
            z[rows] = top + np.log(total)
            dz[rows] = (e @ self.shifts) / total
        return z.reshape(y.shape), dz.reshape(y.shape)

    def inverse(self, u: np.ndarray) -> np.ndarray:
        """The ``y`` with ``z(y) = u``: ``z`` is increasing and convex, so Newton's iterates from
        a table's interpolation converge monotonically after the first step. ``-inf`` where
        ``u`` is at most ``inf z`` (``log w_0`` when an atom sits at 0), ``+inf`` above ``sup z``
        (only when every shift is 0)."""
        u = np.asarray(u, dtype=float)
        lo, hi = self.support(1e-300)
        grid = np.linspace(lo - 40.0, hi + 40.0, 4097)
        table, _ = self.log_ratio(grid)
        floor = float(self.log_weights[self.shifts == 0.0].max(initial=-np.inf))
        y = np.interp(u, table, grid)
        y = np.where(u > table[-1], grid[-1] + (u - table[-1]) / max(hi, 1e-300), y)
        todo = np.isfinite(u) & (u > floor)
        for _ in range(100):
            if not todo.any():
                break
            z, dz = self.log_ratio(y[todo])
            with np.errstate(divide="ignore", invalid="ignore"):
                move = (z - u[todo]) / dz
            move = np.where(np.isfinite(move), move, 0.0)
            y[todo] -= move
            # quadratic convergence: the step after one of 1e-9 is far below rounding
            done = np.abs(move) <= 1e-9 * np.maximum(1.0, np.abs(y[todo]))
            todo[np.flatnonzero(todo)[done]] = False
        y = np.where(u <= floor, -np.inf, y)
        if not (self.shifts > 0.0).any():
            y = np.where(u >= 0.0, np.inf, -np.inf)
        return np.where(np.isnan(u), np.nan, y)

    def ratio(self) -> _Ratio:
        """The monotone log likelihood ratio ``z`` and its inverse, as :func:`_monotone_pld`
        reads them (with ``q = 1``)."""
        return _Ratio(lambda y: self.log_ratio(y)[0], self.inverse, self.inverse)


def gaussian_mixture(
    shifts: Sequence[float] | np.ndarray,
    weights: Sequence[float] | np.ndarray,
    *,
    sigma: float = 1.0,
    step: float | None = None,
    name: str | None = None,
) -> PLD:
    """PLD of ``P = N(0, sigma^2)`` against the mixture ``Q = sum_k w_k N(a_k, sigma^2)`` with
    shifts ``a_k >= 0``, both orders.

    The privacy loss ``log q(y)/p(y) = log sum_k w_k e^{(a_k y - a_k^2/2)/sigma^2}`` is a
    log-sum-exp of affine functions of ``y``: convex and non-decreasing, so the PLD is built like
    :func:`poisson_subsampled_gaussian`'s (bin masses are differences of normal CDFs at the
    inverse losses; connect-the-dots splitting; both orders' Kullback-Leibler means by
    quadrature), the inverse by Newton's method. Atoms of weight below ``1e-300`` are dropped:
    the total variation between ``Q`` and what is computed is at most twice their mass, which
    moves ``delta(eps)`` by at most ``2 e^eps`` times it (below ``1e-280`` in all practical
    cases). ``step=None`` uses :func:`auto_step` for one release (``rel_error=1e-3``).
    """
    sigma = check_positive("sigma", sigma)
    a = np.asarray(shifts, dtype=float).ravel()
    w = np.asarray(weights, dtype=float).ravel()
    if a.size == 0 or a.shape != w.shape:
        raise ValueError(
            f"shifts and weights must be non-empty and of the same length, got {a.size} "
            f"and {w.size}"
        )
    if not np.isfinite(a).all() or (a < 0).any():
        raise ValueError("shifts must be finite and non-negative")
    w = _check_pmf("weights", w)
    keep = w >= _MIN_WEIGHT
    a, w = a[keep] / sigma, w[keep]
    if a.max() > 1e4:
        raise ValueError(f"shifts/sigma must be at most 1e4, got {a.max()!r}")
    mixture = _LatticeMixture(a, w / w.sum())
    label = name or f"gaussian_mixture({a.size} atoms, sigma={sigma:g})"
    return _monotone_pld(
        mixture.ratio(),
        _normal(0.0, 1.0),
        mixture,  # type: ignore[arg-type]
        1.0,
        step,
        label,
        rel_error=_SINGLE_REL_ERROR,
    )


def last_iterate(
    sigma: float,
    steps: int,
    *,
    rate: float,
    sensitivity: float = 1.0,
    insertions: int | None = None,
    step: float | None = None,
) -> PLD:
    """PLD of the last iterate of DP-SGD for a canary whose clipped gradient is constant along
    a coordinate no other example touches (Steinke et al. 2025, "The Last Iterate Advantage",
    the linear-loss pair of their Section 3), both orders.

    After ``T = steps`` steps with noise multiplier ``sigma`` the canary coordinate, in units of
    the clipping norm, is ``P = N(0, T sigma^2)`` without the canary and
    ``Q = sum_k Binomial(k; I, q) N(k Delta, T sigma^2)`` with it: the canary is inserted at
    ``I = insertions`` of the steps (default all ``T``), taken with probability ``q = rate``
    each time (Poisson sampling, add/remove, ``Delta = sensitivity = 1``; fixed-size batches of
    ``m`` of ``n`` records under replace-one are ``q = m/n``, ``Delta = 2``). At ``q = 1`` it is
    the Gaussian mechanism with ``mu = I Delta / (sqrt(T) sigma)``.

    The pair is the exact law of the final model for that canary; for other losses the curve is
    a prediction, not a bound. :func:`gaussian_mixture` computes it (certified bracket).
    """
    sigma = check_positive("sigma", sigma)
    steps = check_integer("steps", steps, minimum=1)
    q = check_probability("rate", rate, low_open=True)
    sens = check_positive("sensitivity", sensitivity)
    count = steps if insertions is None else check_integer("insertions", insertions, minimum=0)
    if count > steps:
        raise ValueError(f"insertions must be at most steps={steps}, got {count}")
    from scipy import stats  # a slow import, left to the functions that use it

    k = np.arange(count + 1)
    weights = np.exp(stats.binom.logpmf(k, count, q))
    name = f"last_iterate(sigma={sigma:g}, T={steps}, rate={q:g}, sensitivity={sens:g}"
    name += ")" if insertions is None else f", insertions={count})"
    return gaussian_mixture(k * sens, weights, sigma=sigma * math.sqrt(steps), step=step, name=name)


# ---------------------------------------------------------------------- discrete pairs
def _check_pmf(name: str, value: object) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=float).ravel()
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of probabilities, got {value!r}") from None
    if arr.size == 0 or not np.isfinite(arr).all() or (arr < 0).any():
        raise ValueError(f"{name} must be a non-empty array of probabilities in [0, 1]")
    total = float(arr.sum())
    if abs(total - 1.0) > 1e-9:
        raise ValueError(f"{name} must sum to 1 (tolerance 1e-9), got sum {total!r}")
    return arr / total


def _discrete_moments(p: np.ndarray, q: np.ndarray) -> tuple[float, float]:
    """Mean and variance of the finite loss ``log p/q`` under ``p`` (zero if none)."""
    fin = (p > 0) & (q > 0)
    mass = float(p[fin].sum())
    if mass <= 0:
        return 0.0, 0.0
    loss = np.log(p[fin]) - np.log(q[fin])
    mean = float(loss @ p[fin]) / mass
    return mean, float(((loss - mean) ** 2) @ p[fin]) / mass


def _discrete_order(p: np.ndarray, q: np.ndarray, step: float) -> DiscretePLD:
    """Connect-the-dots ``PLD(P||Q)`` of two probability vectors.

    Each atom ``l = log p_i/q_i`` is split between the grid points around it so that its mass
    and ``E[e^{-L}]`` are preserved (it dominates; atoms on the grid stay exact). The error of
    each atom is a known two-point law, so ``S`` has exact mean, variance and range.
    """
    support = p > 0
    inf_mass = float(p[support & (q == 0)].sum())
    fin = support & (q > 0)
    if not fin.any():
        return DiscretePLD(step, 0, [0.0], inf_mass=1.0)
    pf = p[fin]
    loss = np.log(pf) - np.log(q[fin])
    k = np.floor(loss / step)
    # a loss within a few ulps of a grid point is that grid point (log p/q is no more exact)
    snap = np.abs(loss - (k + 1) * step) <= 8 * np.finfo(float).eps * np.maximum(np.abs(loss), step)
    k = np.where(snap, k + 1, k).astype(np.int64)
    span = int(k.max() - k.min()) + 2
    if span > MAX_BINS:
        raise ValueError(
            f"step must be at least {(loss.max() - loss.min()) / MAX_BINS:.3g} for losses in "
            f"[{loss.min():.4g}, {loss.max():.4g}] (at most {MAX_BINS} bins); got {step!r}"
        )
    u_lo = k * step - loss
    u_lo = np.where(
        np.abs(u_lo) <= 8 * np.finfo(float).eps * np.maximum(np.abs(loss), step), 0.0, u_lo
    )
    u_hi = u_lo + step
    w = _split_weights(u_hi, step)
    w = np.where(u_lo == 0.0, 1.0, w)
    mean = float(pf @ (w * u_lo + (1.0 - w) * u_hi))
    var = float(pf @ (w * (u_lo - mean) ** 2 + (1.0 - w) * (u_hi - mean) ** 2))
    var += inf_mass * mean**2
    branches = np.concatenate([u_lo[w > 0], u_hi[w < 1]])
    if inf_mass > 0:  # U = 0 on the atom at +inf
        branches = np.append(branches, 0.0)
    low, high = float(branches.min()), float(branches.max())
    rounding = Rounding(
        low=low,
        high=high,
        mean=mean,
        mean_tol=4 * np.finfo(float).eps * float(np.abs(loss) @ pf),
        range_sq=(high - low) ** 2,
        var=var,
        dev=float(np.abs(branches - mean).max()),
    )
    start = int(k.min())
    pmf = np.bincount(k - start, weights=w * pf, minlength=span)
    pmf += np.bincount(k - start + 1, weights=(1.0 - w) * pf, minlength=span)
    return _finish(step, start, pmf, False, inf_mass, 0.0, rounding)


def _discrete_step(
    pairs: Sequence[tuple[np.ndarray, np.ndarray]], compositions: int, rel_error: float
) -> float:
    """Default step for discrete pairs from the exact loss moments of both orders."""
    means, variances, spans = [], [], [0.0]
    for p, q in pairs:
        both = (p > 0) & (q > 0)
        if both.any():
            loss = np.log(p[both]) - np.log(q[both])
            spans.append(float(loss.max() - loss.min()))
        for a, b in ((p, q), (q, p)):
            m, v = _discrete_moments(a, b)
            means.append(m)
            variances.append(v)
    std = math.sqrt(float(np.mean(variances)))
    mean = float(np.mean(np.abs(means)))
    if std <= 0:
        return max(mean, 1.0) * 1e-3
    step = auto_step(compositions, loss_std=std, loss_mean=mean, rel_error=rel_error)
    # keep one factor within a quarter of MAX_BINS, leaving room for compositions
    return max(step, 4.0 * max(spans) / MAX_BINS)


def discrete(p: np.ndarray, q: np.ndarray, *, step: float | None = None) -> PLD:
    """PLD of two distributions ``P = p`` and ``Q = q`` on a finite set of outcomes.

    Atoms of the loss ``log p_i/q_i`` are split between the neighbouring grid points (connect
    the dots); outcomes with ``q_i = 0`` (``p_i = 0``) go to the ``+inf`` atom of the ``P||Q``
    (``Q||P``) order. ``step=None`` uses :func:`auto_step` for one release (``rel_error=1e-3``)
    from the exact loss moments.
    """
    p = _check_pmf("p", p)
    q = _check_pmf("q", q)
    if p.shape != q.shape:
        raise ValueError(f"p and q must have the same length, got {p.size} and {q.size}")
    if step is None:
        step = _discrete_step([(p, q)], 1, _SINGLE_REL_ERROR)
    else:
        step = check_positive("step", step)
    return PLD(_discrete_order(p, q, step), _discrete_order(q, p, step), name="discrete")


def poisson_subsampled_discrete(
    p: np.ndarray, p_prime: np.ndarray, *, rate: float, step: float | None = None
) -> PLD:
    """PLD of ``P = p`` against ``Q = (1 - rate) p + rate p_prime`` (Poisson subsampling under
    add/remove), both orders. The same pair dominates sampling ``m`` of ``n`` without
    replacement under ``replace_one`` with ``rate = m/n`` (DRS 2022, Theorem 9)."""
    p = _check_pmf("p", p)
    p_prime = _check_pmf("p_prime", p_prime)
    if p.shape != p_prime.shape:
        raise ValueError(
            f"p and p_prime must have the same length, got {p.size} and {p_prime.size}"
        )
    rate = check_probability("rate", rate, low_open=True)
    q = (1.0 - rate) * p + rate * p_prime
    pld = discrete(p, q, step=step)
    pld.name = f"poisson_subsampled_discrete(rate={rate:g})"
    return pld


def randomized_response(eps: float, k: int = 2, *, step: float | None = None) -> PLD:
    """PLD of ``k``-ary randomized response: report the true value with probability
    ``e^eps / (e^eps + k - 1)``, otherwise one of the other ``k - 1`` values uniformly.

    Neighbours differ in the input value. The loss takes the values ``+eps`` (probability
    ``e^eps/Z``), ``-eps`` (``1/Z``) and ``0`` (``(k - 2)/Z``), ``Z = e^eps + k - 1``, in both
    orders. With ``step=None`` the grid step is ``eps`` itself, so the PLD and every composition
    of it are exact (no rounding; only tails below :data:`TAIL_MASS` are cut).
    """
    eps = check_positive("eps", eps)
    k = check_integer("k", k, minimum=2)
    # probabilities 1/(1 + (k-1) e^-eps) and e^-eps/(1 + (k-1) e^-eps) avoid overflow
    z = 1.0 + (k - 1) * math.exp(-eps)
    keep, other = 1.0 / z, math.exp(-eps) / z
    name = f"randomized_response(eps={eps:g}, k={k})"
    if step is None:
        pmf = np.array([other, (k - 2) * other, keep])
        order = _finish(eps, -1, pmf, False, 0.0, 0.0, Rounding())
        return PLD(order, name=name)
    p = np.array([keep, other] + [other] * (k - 2))
    q = np.array([other, keep] + [other] * (k - 2))
    pld = discrete(p, q, step=step)
    pld.name = name
    return pld


# ---------------------------------------------------------------------- trade-off curves
def _sandwich_vertices(curve: TradeoffCurve) -> tuple[np.ndarray, np.ndarray]:
    """Vertices of a piecewise-linear function below a convex curve, from its values.

    On ``[a_j, a_{j+1}]`` a convex ``f`` lies above the extensions of the neighbouring chords
    (those of ``[a_{j-1}, a_j]`` and ``[a_{j+1}, a_{j+2}]``); their maximum passes through the
    sampled points and has one kink per interval.
    """
    tail = np.geomspace(1e-12, 1e-2, 400)
    x = np.unique(np.concatenate([[0.0, 1.0], tail, np.linspace(0, 1, 2001), 1.0 - tail]))
    y = np.asarray(curve(x), dtype=float)
    s = np.diff(y) / np.diff(x)
    j = np.arange(1, x.size - 2)
    sl, sr = s[j - 1], s[j + 1]
    den = sl - sr
    with np.errstate(divide="ignore", invalid="ignore"):
        xs = (y[j + 1] - y[j] + sl * x[j] - sr * x[j + 1]) / den
    ok = (den < 0) & (xs > x[j]) & (xs < x[j + 1])
    ys = y[j] + sl * (xs - x[j])
    start = y[1] - s[1] * x[1]
    end_slope = s[-2]
    xe = x[-2] - y[-2] / end_slope if end_slope < 0 else 1.0
    ax = np.concatenate([[0.0], x[1:-1], xs[ok], [min(xe, 1.0), 1.0]])
    ay = np.concatenate([[min(start, y[0])], y[1:-1], ys[ok], [0.0, 0.0]])
    return np.clip(ax, 0.0, 1.0), np.clip(ay, 0.0, 1.0)


def _canonical_pair(curve: TradeoffCurve) -> tuple[np.ndarray, np.ndarray]:
    """A pair of discrete distributions whose trade-off curve lies below ``curve`` (and equals it
    when ``curve`` is piecewise linear and convex).

    Each segment of the convex hull becomes one outcome with ``P``-mass ``d alpha`` and
    ``Q``-mass ``-d beta``; ``Q``'s remaining mass ``1 - f(0)`` sits where ``p = 0``.
    """
    if not isinstance(curve, TradeoffCurve):
        raise ValueError(f"curve must be a TradeoffCurve, got {type(curve).__name__}")
    if isinstance(curve, PiecewiseLinearTradeoff):
        a, b = curve.points()
    else:
        a, b = _sandwich_vertices(curve)
    a, b = from_points(a, b).points()
    p = np.append(np.diff(a), 0.0)
    q = np.append(-np.diff(b), 1.0 - b[0])
    p, q = np.maximum(p, 0.0), np.maximum(q, 0.0)
    return p / p.sum(), q / q.sum()


def from_tradeoff(curve: TradeoffCurve, *, step: float | None = None) -> PLD:
    """PLD (both orders) of the canonical discrete pair ``(P, Q)`` of a trade-off curve.

    A piecewise-linear convex curve is exactly ``T(P, Q)`` for the pair whose outcomes are its
    segments (docs/theory.md#tradeoff, read backwards); any other curve is first replaced by a
    piecewise-linear curve below it (from chord extensions), so the PLD is pessimistic.
    """
    p, q = _canonical_pair(curve)
    pld = discrete(p, q, step=step)
    pld.name = f"from_tradeoff({getattr(curve, 'name', 'curve')})"
    return pld


def compose_tradeoffs(
    curves: Iterable[TradeoffCurve], *, step: float | None = None
) -> PiecewiseLinearTradeoff:
    """A valid lower bound on ``f_1 (x) f_2 (x) ... (x) f_n`` (DRS 2022, Definition 5, Theorem 4).

    Each curve becomes its canonical pair; the ``P||Q`` PLDs are convolved and the result's
    Neyman-Pearson curve, shifted by the rounding bracket, is returned (kind ``bound``).
    """
    curves = list(curves)
    if not curves:
        raise ValueError("curves must contain at least one trade-off curve, got none")
    pairs = [_canonical_pair(c) for c in curves]
    if step is None:
        step = _discrete_step(pairs, len(pairs), _SINGLE_REL_ERROR)
    else:
        step = check_positive("step", step)
    orders = [_discrete_order(p, q, step) for p, q in pairs]
    total = orders[0]
    for order in orders[1:]:
        total = total.compose(order)
    names = " x ".join(getattr(c, "name", "f") for c in curves)
    a, b = total._curve_vertices("lower")
    return from_points(a, b, name=f"composition({names})", kind="bound")


register_composition(compose_tradeoffs, general=True)
