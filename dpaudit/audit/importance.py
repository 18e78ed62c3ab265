"""Exponential tilting of the privacy loss: importance sampling for tiny ``delta(eps)``.

For an ordered pair of output laws ``(A, B)`` with privacy loss ``L = log a(y)/b(y)`` the tilted
law of order ``lam >= 0`` has density

    r_lam(y) = a(y) e^{lam L(y)} / Z(lam),    Z(lam) = E_A[e^{lam L}] = e^{lam D_{1+lam}(A||B)},

with ``D_alpha`` the Renyi divergence (van Erven & Harremoes 2014). It moves ``A`` towards large
privacy loss, where the hockey-stick divergence ``delta(eps) = E_A[(1 - e^{eps - L})_+]``
(docs/theory.md#conventions; Steinke 2022, Proposition 7) lives, and its likelihood ratio
``a / r_lam = Z e^{-lam L}`` is a function of ``L`` alone. For a defensive mixture
``r = sum_j pi_j r_{lam_j}`` (``lam_0 = 0``: ``A`` itself) the importance-sampling summand
``W = (1 - e^{eps - L})_+ a(y) / r(y)`` is bounded on every sample:

    W <= min_j (Z(lam_j) / pi_j) e^{-lam_j eps} lam_j^lam_j / (1 + lam_j)^(1 + lam_j),

because ``max_{x > 0} e^{-lam x} (1 - e^{-x}) = lam^lam / (1 + lam)^(1 + lam)`` (at
``e^{-x} = lam / (1 + lam)``). The right-hand side is the improved conversion from Renyi DP to
``(eps, delta)`` (Canonne, Kamath & Steinke 2020; Balle et al. 2020) divided by ``pi_j``, so the
relative spread of ``W`` is the ratio of that conversion to the true ``delta``, whatever the size
of ``delta`` itself; empirical Bernstein bounds on ``W`` are exact (non-asymptotic).

Tilts compose: the tilted law of independent runs is the product of the runs' tilted laws with
the same ``lam``, and ``log Z`` adds up. Supported here (each tested against quadrature or brute
force):

- Gaussian noise (any pair of datasets): ``N(mu_A + lam (mu_A - mu_B), sigma^2 I)``,
  ``log Z = lam (1 + lam) ||mu_A - mu_B||^2 / (2 sigma^2)``.
- Laplace noise (any pair): per coordinate a three-piece exponential law (closed form below).
- k-ary randomized response (any pair): per differing record a categorical law.
- A subsampled Gaussian whose ``B`` side is one Gaussian and whose ``A`` side mixes it with a
  shifted copy, ``A = (1 - r) N(c, sigma^2) + r N(c + v, sigma^2)``, ``B = N(c, sigma^2)``
  (the order ``D_prime || D`` of the worst-case pairs of Poisson and fixed-size subsampling), at
  integer ``1 + lam = m``: ``r_lam`` is the Gaussian mixture with components
  ``N(c + k v, sigma^2)``, ``k = 0..m``, and weights
  ``C(m, k) (1 - r)^(m - k) r^k e^{(k^2 - k) ||v||^2 / (2 sigma^2)}``, whose sum is ``Z``:
  the binomial expansion behind the Renyi DP of the subsampled Gaussian
  (Mironov, Talwar & Zhang 2019, Section 3.3).
- Compositions of the above (one mechanism repeated, or a list).

The opposite order of a subsampled Gaussian (``A`` one Gaussian, ``B`` the mixture) has no such
closed form; :func:`loss_tilt` returns ``None`` for it and the caller samples ``A`` plainly.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import numpy as np
from scipy import special

from dpaudit.mechanisms.base import as_records
from dpaudit.mechanisms.composed import Composed
from dpaudit.mechanisms.gaussian import Gaussian
from dpaudit.mechanisms.laplace import Laplace
from dpaudit.mechanisms.randomized_response import RandomizedResponse
from dpaudit.mechanisms.subsampled import FixedSizeSubsampled, PoissonSubsampled

__all__ = ["LossTilt", "loss_tilt", "log_conversion_factor"]


def log_conversion_factor(lam: np.ndarray | float) -> np.ndarray:
    """``log(lam^lam / (1 + lam)^(1 + lam))``, the largest value of
    ``log(e^{-lam x} (1 - e^{-x}))`` over ``x > 0``; ``0`` at ``lam = 0``."""
    lam = np.asarray(lam, dtype=float)
    return special.xlogy(lam, lam) - (1.0 + lam) * np.log1p(lam)


class LossTilt(ABC):
    """Sampler of the tilted laws ``r_lam`` of one ordered pair ``(A, B)`` of one mechanism.

    ``sample(lam, size, rng)`` returns outputs in the mechanism's own layout (what
    ``mechanism.sample`` returns), so that ``mechanism.log_density`` gives their privacy loss.
    """

    #: True when only integer ``lam`` (integer Renyi orders ``1 + lam``) can be sampled.
    integer_orders: bool = False

    @abstractmethod
    def log_normalizer(self, lam: np.ndarray | float) -> np.ndarray:
        """``log Z(lam) = log E_A[e^{lam L}]``, vectorised over ``lam >= 0``."""

    @abstractmethod
    def sample(self, lam: float, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` independent draws from ``r_lam``."""

    def _check_lam(self, lam: float) -> float:
        lam = float(lam)
        if not (lam >= 0.0 and math.isfinite(lam)):
            raise ValueError(f"lam must be a finite number >= 0, got {lam!r}")
        if self.integer_orders and not lam.is_integer():
            raise ValueError(f"lam must be an integer for this tilt, got {lam!r}")
        return lam


def _half_square_norm(v: np.ndarray, sigma: float) -> float:
    """``||v||^2 / (2 sigma^2)``, the Gaussian loss scale, computed as ``||v / sigma||^2 / 2`` so
    that no extreme ``sigma`` overflows or divides by zero on the way (the result may be 0 or
    ``inf``)."""
    with np.errstate(over="ignore", under="ignore"):
        return 0.5 * float(np.sum(np.square(v / sigma)))


class _GaussianTilt(LossTilt):
    """``N(mu_A + lam v, sigma^2 I)`` with ``v = mu_A - mu_B``."""

    def __init__(self, mechanism: Gaussian, a: np.ndarray, b: np.ndarray) -> None:
        self.mechanism = mechanism
        self.mean = np.asarray(mechanism.query(a), dtype=float)
        self.v = self.mean - np.asarray(mechanism.query(b), dtype=float)
        self.eta = _half_square_norm(self.v, mechanism.sigma)

    def log_normalizer(self, lam: np.ndarray | float) -> np.ndarray:
        lam = np.asarray(lam, dtype=float)
        return lam * (1.0 + lam) * self.eta

    def sample(self, lam: float, size: int, rng: np.random.Generator) -> np.ndarray:
        lam = self._check_lam(lam)
        centre = self.mean + lam * self.v
        return centre + self.mechanism.noise((size, *centre.shape), rng)


def _laplace_log_pieces(s: np.ndarray, lam: np.ndarray | float, scale: float) -> np.ndarray:
    """Log masses (up to the common factor ``1 / (2 scale)``) of the three pieces of the tilted
    law of ``x = y - mu_A`` for shifts ``s = |mu_B - mu_A|``: ``x < 0``, ``0 <= x <= s``, ``x > s``.
    Shape ``(3,) + broadcast(s, lam)``.

    With ``a(x) = e^{-|x|/b} / (2b)`` and ``b(x) = e^{-|x - s|/b} / (2b)``,
    ``a^{1+lam} b^{-lam}`` is ``e^{(x + lam s)/b}`` below 0, ``e^{(lam s - (1 + 2 lam) x)/b}`` on
    ``[0, s]`` and ``e^{-(x + lam s)/b}`` above ``s`` (times ``1 / (2b)``).
    """
    t = np.asarray(s, dtype=float) / scale
    lam = np.asarray(lam, dtype=float)
    log_b = math.log(scale)
    rate = 1.0 + 2.0 * lam
    with np.errstate(divide="ignore"):
        middle = lam * t + log_b - np.log(rate) + np.log(-np.expm1(-rate * t))
    left = log_b + lam * t
    right = log_b - lam * t - t
    return np.stack(np.broadcast_arrays(left, middle, right))


class _LaplaceTilt(LossTilt):
    """Independent coordinates, each a three-piece exponential law (:func:`_laplace_log_pieces`)."""

    def __init__(self, mechanism: Laplace, a: np.ndarray, b: np.ndarray) -> None:
        self.mechanism = mechanism
        self.mean = np.asarray(mechanism.query(a), dtype=float)
        shift = np.asarray(mechanism.query(b), dtype=float) - self.mean
        self.sign = np.where(shift < 0, -1.0, 1.0)
        self.s = np.abs(shift)

    def log_normalizer(self, lam: np.ndarray | float) -> np.ndarray:
        lam_arr = np.asarray(lam, dtype=float)
        log_2b = math.log(2.0 * self.mechanism.scale)
        pieces = _laplace_log_pieces(
            self.s.ravel()[None, :], lam_arr.reshape(-1, 1), self.mechanism.scale
        )
        out = (special.logsumexp(pieces, axis=0) - log_2b).sum(axis=1)
        return out.reshape(lam_arr.shape)

    def sample(self, lam: float, size: int, rng: np.random.Generator) -> np.ndarray:
        lam = self._check_lam(lam)
        b = self.mechanism.scale
        s = self.s.ravel()
        pieces = _laplace_log_pieces(s, lam, b)
        probs = np.exp(pieces - special.logsumexp(pieces, axis=0))
        u = rng.random((size, s.size))
        e = rng.standard_exponential((size, s.size))
        v = rng.random((size, s.size))
        rate = (1.0 + 2.0 * lam) / b
        # Truncated exponential with this rate on [0, s], by inversion.
        middle = -np.log1p(-v * (-np.expm1(-rate * s))) / rate
        x = np.where(u < probs[0], -b * e, np.where(u < probs[0] + probs[1], middle, s + b * e))
        x = x.reshape((size, *self.s.shape)) * self.sign
        return self.mean + x


def _categories(dataset: np.ndarray) -> np.ndarray:
    """A randomized-response dataset as int64 categories (the mechanism validates the range)."""
    values = np.asarray(dataset, dtype=float)
    if values.ndim != 1 or not (values == np.round(values)).all():
        raise ValueError(f"dataset must be a 1-d array of integer categories, got {dataset!r}")
    return values.astype(np.int64)


class _RandomizedResponseTilt(LossTilt):
    """Per differing record (truth ``a_i`` under ``A``, ``b_i`` under ``B``) a categorical law
    with masses ``p_keep e^{lam eps}`` at ``a_i``, ``p_other e^{-lam eps}`` at ``b_i`` and
    ``p_other`` elsewhere; equal records keep the mechanism's own law."""

    def __init__(self, mechanism: RandomizedResponse, a: np.ndarray, b: np.ndarray) -> None:
        self.mechanism = mechanism
        self.a = _categories(a)
        self.b = _categories(b)
        if self.a.shape != self.b.shape:
            raise ValueError("randomized response datasets must have the same number of records")
        self.diff = np.flatnonzero(self.a != self.b)
        k = mechanism.k
        cats = np.arange(k)
        self.others = np.array(
            [cats[(cats != self.a[i]) & (cats != self.b[i])] for i in self.diff], dtype=np.int64
        ).reshape(self.diff.size, k - 2)

    def _log_masses(self, lam: np.ndarray | float) -> np.ndarray:
        """Log masses of (truth under ``A``, truth under ``B``, all others), shape
        ``(3,) + shape(lam)``."""
        m = self.mechanism
        e = np.asarray(lam, dtype=float) * m.eps
        other = m.log_p_other + math.log(m.k - 2) if m.k > 2 else -np.inf
        return np.stack(np.broadcast_arrays(m.log_p_keep + e, m.log_p_other - e, other))

    def log_normalizer(self, lam: np.ndarray | float) -> np.ndarray:
        return self.diff.size * special.logsumexp(self._log_masses(lam), axis=0)

    def sample(self, lam: float, size: int, rng: np.random.Generator) -> np.ndarray:
        lam = self._check_lam(lam)
        out = self.mechanism.sample(self.a, size, rng)
        if self.diff.size == 0:
            return out
        log_m = self._log_masses(lam)
        p = np.exp(log_m - special.logsumexp(log_m))
        u = rng.random((size, self.diff.size))
        pick = rng.integers(0, max(self.mechanism.k - 2, 1), size=(size, self.diff.size))
        if self.mechanism.k > 2:
            other = self.others[np.arange(self.diff.size)[None, :], pick]
        else:
            other = np.zeros_like(pick)
        tilted = np.where(
            u < p[0], self.a[self.diff], np.where(u < p[0] + p[1], self.b[self.diff], other)
        )
        out[:, self.diff] = tilted
        return out


class _SubsampledGaussianTilt(LossTilt):
    """``A = (1 - r) N(c, sigma^2) + r N(c + v, sigma^2)`` against ``B = N(c, sigma^2)`` at
    integer ``m = 1 + lam``: a Gaussian mixture over ``k = 0..m`` (module docstring)."""

    integer_orders = True

    def __init__(self, noise: Gaussian, rate: float, centre: np.ndarray, v: np.ndarray) -> None:
        self.noise = noise
        self.rate = float(rate)
        self.centre = np.asarray(centre, dtype=float)
        self.v = np.asarray(v, dtype=float)
        self.eta = _half_square_norm(self.v, noise.sigma)

    def _log_weights(self, lam: np.ndarray | float) -> np.ndarray:
        """Log weights of the components ``k = 0..m`` (``m = 1 + lam``), shape
        ``shape(lam) + (max m + 1,)``; ``-inf`` beyond each ``m``."""
        m = np.round(np.asarray(lam, dtype=float))[..., None] + 1.0
        k = np.arange(float(np.max(m)) + 1.0)
        log_keep = math.log1p(-self.rate) if self.rate < 1.0 else -np.inf
        with np.errstate(divide="ignore", invalid="ignore"):
            log_binom = (
                special.gammaln(m + 1.0) - special.gammaln(k + 1.0) - special.gammaln(m - k + 1.0)
            )
            kept = np.where(m - k > 0, (m - k) * log_keep, 0.0)
            out = log_binom + special.xlogy(k, self.rate) + kept + (k * k - k) * self.eta
        return np.where(k <= m, out, -np.inf)

    def log_normalizer(self, lam: np.ndarray | float) -> np.ndarray:
        lam_arr = np.asarray(lam, dtype=float)
        if not np.all(lam_arr == np.round(lam_arr)):
            raise ValueError(f"lam must be integers for this tilt, got {lam!r}")
        return special.logsumexp(self._log_weights(lam_arr), axis=-1)

    def sample(self, lam: float, size: int, rng: np.random.Generator) -> np.ndarray:
        lam = self._check_lam(lam)
        log_w = self._log_weights(lam)
        p = np.exp(log_w - special.logsumexp(log_w))
        k = rng.choice(p.size, size=size, p=p).astype(float)
        means = self.centre + k.reshape((size,) + (1,) * self.v.ndim) * self.v
        return means + self.noise.noise(means.shape, rng)


def _subsampled_gaussian_tilt(
    mechanism: PoissonSubsampled | FixedSizeSubsampled, a: np.ndarray, b: np.ndarray
) -> LossTilt | None:
    """The mixture tilt when ``B``'s output is one Gaussian and ``A``'s mixes it with one
    shifted copy; ``None`` otherwise."""
    base = mechanism.base
    if not isinstance(base, Gaussian):
        return None
    ca = base.clip(as_records(a))
    cb = base.clip(as_records(b))
    width = math.prod(ca.shape[1:])
    flat_a = ca.reshape(ca.shape[0], width)
    flat_b = cb.reshape(cb.shape[0], width)
    if isinstance(mechanism, PoissonSubsampled):
        nonzero_a = flat_a[flat_a.any(axis=1)]
        if flat_b.any() or nonzero_a.shape[0] != 1:
            return None
        centre = np.zeros(ca.shape[1:])
        v = nonzero_a[0].reshape(ca.shape[1:])
        return _SubsampledGaussianTilt(base, mechanism.rate, centre, v)
    if flat_a.shape != flat_b.shape or flat_b.shape[0] == 0:
        return None
    if not (flat_b == flat_b[0]).all():
        return None
    differs = (flat_a != flat_b).any(axis=1)
    if differs.sum() != 1:
        return None
    m = mechanism.subsample_size
    centre = (m * flat_b[0]).reshape(ca.shape[1:])
    v = (flat_a[differs][0] - flat_b[0]).reshape(ca.shape[1:])
    return _SubsampledGaussianTilt(base, mechanism.rate, centre, v)


class _ComposedTilt(LossTilt):
    """Independent runs tilted with the same ``lam``; outputs laid out as :class:`Composed`."""

    def __init__(self, mechanism: Composed, parts: list[LossTilt], a: np.ndarray) -> None:
        self.mechanism = mechanism
        self.parts = parts
        self.integer_orders = any(p.integer_orders for p in parts)
        self.shapes = [m.output_shape(a) for m in mechanism.components]

    def log_normalizer(self, lam: np.ndarray | float) -> np.ndarray:
        if self.mechanism.base is not None:
            return self.mechanism.times * self.parts[0].log_normalizer(lam)
        return sum(p.log_normalizer(lam) for p in self.parts)

    def sample(self, lam: float, size: int, rng: np.random.Generator) -> np.ndarray:
        lam = self._check_lam(lam)
        times = self.mechanism.times
        if self.mechanism.base is not None:
            runs = self.parts[0].sample(lam, size * times, rng)
            return runs.reshape((size, times, *runs.shape[1:]))
        flat = [
            p.sample(lam, size, rng).reshape(size, math.prod(shape)).astype(float)
            for p, shape in zip(self.parts, self.shapes, strict=True)
        ]
        return np.concatenate(flat, axis=1)


def loss_tilt(mechanism: object, a: np.ndarray, b: np.ndarray) -> LossTilt | None:
    """The tilted laws of the privacy loss ``log a/b`` of ``mechanism`` on datasets ``a``
    (sampled) and ``b``, or ``None`` when no exact sampler is known (see the module docstring)."""
    if isinstance(mechanism, Gaussian):
        return _GaussianTilt(mechanism, a, b)
    if isinstance(mechanism, Laplace):
        return _LaplaceTilt(mechanism, a, b)
    if isinstance(mechanism, RandomizedResponse):
        return _RandomizedResponseTilt(mechanism, a, b)
    if isinstance(mechanism, PoissonSubsampled | FixedSizeSubsampled):
        return _subsampled_gaussian_tilt(mechanism, a, b)
    if isinstance(mechanism, Composed):
        parts = [loss_tilt(m, a, b) for m in mechanism.components]
        if any(p is None for p in parts):
            return None
        return _ComposedTilt(mechanism, parts, a)
    return None
