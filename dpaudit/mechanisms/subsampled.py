"""Privacy amplification by subsampling: a noisy sum query run on a random subset of the records.

Two sampling schemes, each with the neighbouring relation its guarantee refers to:

- :class:`PoissonSubsampled` (``add_remove``): every record is included independently with
  probability ``rate``. With ``D_prime = D + {target}`` the outputs are ``P = M(D)`` and
  ``Q = (1 - q) P + q P'``, ``P'`` the base mechanism with the target included; the trade-off
  function is ``C_q(f)`` (Dong, Roth & Su 2022, "Gaussian differential privacy", Definition 6 and
  Theorem 9, which holds for Poisson sampling too, DRS Section 4.1).
- :class:`FixedSizeSubsampled` (``replace_one``): exactly ``size`` of ``population`` records are
  chosen uniformly (DRS ``Sample_m``). DRS Theorem 9 gives ``C_p(f)`` with ``p = size/population``
  where ``f`` is the base's trade-off under ``replace_one``: for a clipped sum query the
  replace-one sensitivity is ``2 * sensitivity`` (one record of norm ``Delta`` replaced by its
  opposite), as in DRS Section 5 (NoisySGD, sensitivity ``2C/m``). The dominating pair is the
  Poisson one with rate ``p`` and sensitivity ``2 Delta`` (Zhu, Dong & Wang 2022, "Optimal
  accounting of differential privacy via characteristic function", on dominating pairs).

Only noisy sum queries (:class:`~dpaudit.mechanisms.base.AdditiveNoiseMechanism`) can be
subsampled here: sampling and the exact density need the sum of the chosen records.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.special import betaln

from dpaudit._core.validation import check_integer, check_probability
from dpaudit.bounds import pld as pld_lib
from dpaudit.bounds import tradeoff
from dpaudit.bounds.composition import amplify_by_subsampling
from dpaudit.bounds.gdp import gdp
from dpaudit.bounds.rdp import (
    DEFAULT_ORDERS,
    RDPCurve,
    rdp_laplace,
    rdp_poisson_subsampled,
    rdp_poisson_subsampled_gaussian,
)
from dpaudit.mechanisms.base import (
    AdditiveNoiseMechanism,
    CurveProfile,
    Mechanism,
    NeighbouringPair,
    PrivacyProfile,
    as_records,
    check_outputs,
    check_rng,
    check_size,
    mechanism_spec,
)
from dpaudit.mechanisms.gaussian import Gaussian
from dpaudit.mechanisms.laplace import Laplace

__all__ = ["PoissonSubsampled", "FixedSizeSubsampled", "MAX_MIXTURE_TERMS"]

#: Largest number of mixture components :meth:`log_density` sums over (about 16 distinct records
#: that change the output; identical records are grouped, so many copies of one value are cheap).
MAX_MIXTURE_TERMS = 2**16

# Elements per block when outputs are broadcast against mixture components.
_BLOCK_ELEMENTS = 2**22


def _group(records: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct records (axis 0) and how often each occurs."""
    if records.shape[0] == 0:
        return records, np.zeros(0, dtype=np.int64)
    values, counts = np.unique(records, axis=0, return_counts=True)
    return values, counts.astype(np.int64)


def _flat(values: np.ndarray) -> np.ndarray:
    """View ``(J, *shape)`` as ``(J, prod(shape))`` (also for ``J = 0``)."""
    return values.reshape(values.shape[0], math.prod(values.shape[1:]))


def _logsumexp_columns(a: np.ndarray) -> np.ndarray:
    """``log(sum(exp(a), axis=0))`` computed around the column maximum (columns of ``-inf``
    stay ``-inf``). Components run along axis 0 so that every step is an elementwise operation
    over the outputs; much faster than ``scipy.special.logsumexp`` along a short axis."""
    if a.shape[0] == 1:
        return a[0]
    top = a.max(axis=0)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return top + np.log(np.exp(a - top).sum(axis=0))


def _log_binom(n: np.ndarray, k: np.ndarray) -> np.ndarray:
    """``log C(n, k) = -log(n + 1) - log B(n - k + 1, k + 1)`` for ``0 <= k <= n`` (the beta
    function form stays accurate to ~1e-14 relative for n up to 1e9, unlike three ``gammaln``)."""
    n = np.asarray(n, dtype=float)
    return -np.log1p(n) - betaln(n - k + 1.0, k + 1.0)


def _count_grid(counts: np.ndarray, what: str) -> np.ndarray:
    """Every vector ``K`` with ``0 <= K_j <= counts_j``: shape ``(prod(counts + 1), J)``."""
    terms = math.prod(int(c) + 1 for c in counts)
    if terms > MAX_MIXTURE_TERMS:
        raise ValueError(
            f"log_density of {what} sums over every subset of the records that change the output: "
            f"this dataset needs {terms} mixture terms, more than the limit {MAX_MIXTURE_TERMS} "
            "(about 16 distinct records that change the output; identical records count once)"
        )
    if counts.size == 0:
        return np.zeros((1, 0), dtype=np.int64)
    return np.indices(tuple(int(c) + 1 for c in counts)).reshape(counts.size, -1).T


def _require_sum_query(base: object, what: str) -> AdditiveNoiseMechanism:
    if not isinstance(base, AdditiveNoiseMechanism):
        raise ValueError(
            f"base of {what} must be a noisy sum query (an AdditiveNoiseMechanism such as "
            f"Gaussian or Laplace), got {type(base).__name__}"
        )
    return base


class _SubsampledSum(Mechanism):
    """Shared machinery: the sum of a random subset of the clipped records, plus the base noise.

    Records are grouped by value; a subsample is described by how many copies ``K_j`` of each
    distinct value ``v_j`` it contains, so its sum is ``K @ v``. Subclasses draw ``K`` and list the
    mixture components ``(K, log weight)`` of the output law.

    Theory (for Gaussian and Laplace bases) is that of the dominating pair ``P`` vs
    ``(1 - r) P + r P'``, with ``P, P'`` the base noise around 0 and around ``shift``, where
    ``r = rate`` and ``shift`` is :attr:`sensitivity` (Poisson) or twice it (fixed size).
    """

    def __init__(self, base: AdditiveNoiseMechanism) -> None:
        self.base = base

    @property
    def sensitivity(self) -> float:
        """Clipping norm of the base mechanism."""
        return self.base.sensitivity

    @property
    @abstractmethod
    def rate(self) -> float:
        """Probability that a given record is in the subsample."""

    @property
    @abstractmethod
    def shift(self) -> float:
        """Largest change of the sum between neighbouring datasets (the base pair's shift)."""

    def _require_theory(self) -> None:
        if not isinstance(self.base, Gaussian | Laplace):
            raise ValueError(
                f"{self.name} has no theory: only Gaussian and Laplace bases are covered"
            )

    def exact_curve(self) -> tradeoff.TradeoffCurve:
        """``C_r(f)`` with ``f`` the base trade-off at the shift (DRS Definition 6, Theorem 9,
        closed form eq. (13)). It is the largest symmetric trade-off function below both orders
        of the dominating pair, so its ``delta(eps)`` is exact."""
        self._require_theory()
        if isinstance(self.base, Gaussian):
            f = gdp(self.shift / self.base.sigma)
        else:
            f = tradeoff.laplace_tradeoff(self.shift / self.base.scale)
        return tradeoff.subsample(f, self.rate)

    def pld(self, step: float | None = None) -> pld_lib.PLD:
        """Privacy loss distributions of the dominating pair, both orders (``delta`` is the
        larger of the two)."""
        self._require_theory()
        if isinstance(self.base, Gaussian):
            return pld_lib.poisson_subsampled_gaussian(
                self.base.sigma, self.rate, self.shift, step=step
            )
        return pld_lib.poisson_subsampled_laplace(self.base.scale, self.rate, self.shift, step=step)

    def rdp(self, orders: object = None) -> RDPCurve:
        """RDP of the dominating pair. Gaussian base: Mironov, Talwar & Zhang 2019 (exact, both
        orders). Laplace base: the Zhu & Wang 2019 bound (Theorem 6), defined at integer orders;
        a fractional order takes the value of the next integer order, a valid bound because
        Rényi divergences do not decrease with the order (van Erven & Harremoës 2014, Thm. 3).
        """
        self._require_theory()
        lam = np.asarray(DEFAULT_ORDERS if orders is None else orders, dtype=float)
        if isinstance(self.base, Gaussian):
            return rdp_poisson_subsampled_gaussian(self.rate, self.base.sigma / self.shift, lam)
        at = np.maximum(np.ceil(lam), 2.0)
        integers = np.unique(at)
        base = rdp_laplace(self.base.scale, self.shift, orders=np.arange(2.0, integers[-1] + 1))
        sub = rdp_poisson_subsampled(self.rate, lambda k: base.eps[int(k) - 2], integers)
        eps = sub.eps[np.searchsorted(sub.orders, at)]
        return RDPCurve(lam, eps, name=f"RDP {self.name}")

    @property
    def pure_epsilon(self) -> float | None:
        """Laplace base: ``log(1 + r (e^eps0 - 1))`` with ``eps0 = shift / b`` (amplification by
        subsampling, Steinke 2022 Theorem 29, Balle, Barthe & Gaboardi 2018); otherwise ``None``."""
        if not isinstance(self.base, Laplace):
            return None
        return amplify_by_subsampling(self.shift / self.base.scale, 0.0, self.rate)[0]

    def _theories(self) -> dict[str, Callable[[], PrivacyProfile]]:
        """``exact`` (``C_r(f)``), ``pld``, ``rdp`` for Gaussian and Laplace bases."""
        if not isinstance(self.base, Gaussian | Laplace):
            return {}
        return {
            "exact": lambda: CurveProfile(self.exact_curve()),
            "pld": self.pld,
            "rdp": self.rdp,
        }

    def output_shape(self, dataset: np.ndarray) -> tuple[int, ...]:
        """The base mechanism's output shape."""
        return self.base.output_shape(dataset)

    def _clipped(self, dataset: object) -> np.ndarray:
        return self.base.clip(as_records(dataset))

    @abstractmethod
    def _draw(self, counts: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        """``(size, J)`` numbers of copies of each distinct value in each subsample."""

    @abstractmethod
    def _mixture(self, values: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Means ``(G, *shape)`` and log weights ``(G,)`` of the mixture components."""

    def _groups(self, clipped: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Distinct values and counts that take part in the subsampling."""
        return _group(clipped)

    def sample(self, dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` outputs (float64, shape ``(size,) + output_shape``): the sum of a fresh random
        subsample of the clipped records plus the base noise, one subsample per output."""
        size = check_size(size)
        rng = check_rng(rng)
        clipped = self._clipped(dataset)
        values, counts = self._groups(clipped)
        included = self._draw(counts, size, rng).astype(float)
        sums = (included @ _flat(values)).reshape((size, *clipped.shape[1:]))
        return sums + self.base.noise(sums.shape, rng)

    def log_density(self, dataset: np.ndarray, outputs: np.ndarray) -> np.ndarray:
        """Exact log density, shape ``(size,)``: the log of the mixture over subsamples,
        ``log sum_S P(S) p_noise(y - sum(S))``, summed around the largest term (stable far in
        the tails).

        Identical records are grouped (the mixture runs over how many copies of each value are
        included), so the number of terms is the product of ``count + 1`` over the distinct
        records that change the output; more than :data:`MAX_MIXTURE_TERMS` raises ``ValueError``.
        """
        clipped = self._clipped(dataset)
        shape = clipped.shape[1:]
        y = check_outputs(outputs, shape)
        means, log_w = self._mixture(*self._groups(clipped))
        keep = np.isfinite(log_w)
        means, log_w = means[keep], log_w[keep]
        flat_y = _flat(y)
        flat_means = _flat(means)
        block = max(1, _BLOCK_ELEMENTS // max(1, flat_means.size))
        out = np.empty(y.shape[0])
        for start in range(0, y.shape[0], block):
            chunk = flat_y[start : start + block]
            comp = self.base.noise_logpdf(chunk[None, :, :] - flat_means[:, None, :])
            comp = comp[:, :, 0] if comp.shape[2] == 1 else comp.sum(axis=2)
            out[start : start + block] = _logsumexp_columns(comp + log_w[:, None])
        return out


class PoissonSubsampled(_SubsampledSum):
    """Poisson subsampling: each record enters the sum independently with probability ``rate``.

    Relation ``add_remove``. Outputs are ``sum_{i in S} clip(x_i) + noise`` with a fresh ``S`` per
    output; the worst-case pair is the base's (empty dataset vs one record of norm
    ``sensitivity``), on which ``Q = (1 - q) P + q P'`` (docs/theory.md#pld).

    Parameters
    ----------
    base:
        A noisy sum query (:class:`~dpaudit.mechanisms.Gaussian` or
        :class:`~dpaudit.mechanisms.Laplace`).
    rate:
        Inclusion probability ``q`` in ``(0, 1]``.
    """

    relation = "add_remove"

    def __init__(self, base: AdditiveNoiseMechanism, rate: float) -> None:
        super().__init__(_require_sum_query(base, "PoissonSubsampled"))
        self._rate = check_probability("rate", rate, low_open=True)

    @property
    def rate(self) -> float:
        """Inclusion probability ``q`` of every record."""
        return self._rate

    @property
    def shift(self) -> float:
        """Adding one record moves the sum by at most ``sensitivity``."""
        return self.sensitivity

    @property
    def name(self) -> str:
        """E.g. ``PoissonSubsampled(Gaussian(sigma=1.1, sensitivity=1.0), rate=0.00426667)``."""
        return f"PoissonSubsampled({self.base.name}, rate={self.rate:.6g})"

    def params(self) -> dict[str, Any]:
        """``{"base": {"kind": ..., **base params}, "rate": ...}``."""
        return {"base": mechanism_spec(self.base), "rate": self.rate}

    def _groups(self, clipped: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Distinct nonzero records (zero records never change the sum) and their counts."""
        nonzero = _flat(clipped).any(axis=1)
        return _group(clipped[nonzero])

    def _draw(self, counts: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        """``K_j ~ Binomial(counts_j, q)`` independently: copies of value ``j`` included."""
        return rng.binomial(counts, self.rate, size=(size, counts.size))

    def _mixture(self, values: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Components ``K`` with weight ``prod_j C(c_j, K_j) q^K_j (1 - q)^(c_j - K_j)``."""
        grid = _count_grid(counts, self.name)
        left_out = counts - grid
        log_drop = math.log1p(-self.rate) if self.rate < 1.0 else -np.inf
        log_w = (
            _log_binom(counts, grid)
            + grid * math.log(self.rate)
            + left_out * np.where(left_out > 0, log_drop, 0.0)
        ).sum(axis=1)
        means = (grid.astype(float) @ _flat(values)).reshape((grid.shape[0], *values.shape[1:]))
        return means, log_w

    def worst_case_pair(self) -> NeighbouringPair:
        """The base's pair: empty dataset vs one record of norm ``sensitivity`` (``add_remove``)."""
        return self.base.worst_case_pair()


class FixedSizeSubsampled(_SubsampledSum):
    """Sampling without replacement: exactly ``size`` of the ``population`` records are summed.

    Relation ``replace_one``; datasets must hold exactly ``population`` records. The worst-case
    pair: ``population - 1`` records equal to ``-sensitivity`` and the target ``-sensitivity``
    against ``+sensitivity``. Then ``P`` is the base noise around ``-size * Delta`` and
    ``Q = (1 - p) P + p P'`` with ``P'`` shifted by ``2 Delta`` (``p = size / population``): exactly
    the dominating pair of DRS Theorem 9 with the replace-one sensitivity ``2 Delta``. (A target
    ``0`` against ``Delta`` among zero records only reaches the shift ``Delta`` and under-states
    the privacy loss.)

    Parameters
    ----------
    base:
        A noisy sum query (:class:`~dpaudit.mechanisms.Gaussian` or
        :class:`~dpaudit.mechanisms.Laplace`).
    size:
        Number of records in every subsample, ``1 <= size <= population``.
    population:
        Number of records in every dataset.
    """

    relation = "replace_one"

    def __init__(self, base: AdditiveNoiseMechanism, size: int, population: int) -> None:
        super().__init__(_require_sum_query(base, "FixedSizeSubsampled"))
        self.population = check_integer("population", population, minimum=1)
        self.subsample_size = check_integer("size", size, minimum=1, maximum=self.population)

    @property
    def rate(self) -> float:
        """Sampling ratio ``p = size / population``."""
        return self.subsample_size / self.population

    @property
    def shift(self) -> float:
        """Replacing one record moves the sum by at most ``2 * sensitivity``."""
        return 2.0 * self.sensitivity

    @property
    def name(self) -> str:
        """E.g. ``FixedSizeSubsampled(Gaussian(sigma=1.0, ...), size=256, population=60000)``."""
        return (
            f"FixedSizeSubsampled({self.base.name}, size={self.subsample_size}, "
            f"population={self.population})"
        )

    def params(self) -> dict[str, Any]:
        """``{"base": {"kind": ..., **base params}, "size": ..., "population": ...}``."""
        return {
            "base": mechanism_spec(self.base),
            "size": self.subsample_size,
            "population": self.population,
        }

    def _clipped(self, dataset: object) -> np.ndarray:
        clipped = super()._clipped(dataset)
        if clipped.shape[0] != self.population:
            raise ValueError(
                f"dataset must hold exactly population={self.population} records, "
                f"got {clipped.shape[0]}"
            )
        return clipped

    def _draw(self, counts: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        """Multivariate hypergeometric counts: ``size`` records drawn without replacement."""
        return rng.multivariate_hypergeometric(counts, self.subsample_size, size=size)

    def _mixture(self, values: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Components with weight ``prod_j C(c_j, K_j) / C(n, m)`` and ``sum_j K_j = m``.

        Every subsample has ``m`` records, so ``sum(S) = m v_r + sum_j K_j (v_j - v_r)`` for any
        reference value ``v_r``; taking the most frequent value, only the other distinct values
        are enumerated and ``K_r = m - sum_{j != r} K_j``.
        """
        m, n = self.subsample_size, self.population
        r = int(np.argmax(counts))
        others = np.arange(counts.size) != r
        flat = _flat(values)
        grid = _count_grid(counts[others], self.name)
        k_ref = m - grid.sum(axis=1)
        feasible = (k_ref >= 0) & (k_ref <= counts[r])
        k_ref = np.clip(k_ref, 0, counts[r])
        log_w = (
            _log_binom(counts[others], grid).sum(axis=1)
            + _log_binom(counts[r], k_ref)
            - _log_binom(np.int64(n), np.int64(m))
        )
        log_w = np.where(feasible, log_w, -np.inf)
        means = m * flat[r] + grid.astype(float) @ (flat[others] - flat[r])
        return means.reshape((grid.shape[0], *values.shape[1:])), log_w

    def worst_case_pair(self) -> NeighbouringPair:
        """``population - 1`` records at ``-Delta``; the target ``-Delta`` vs ``+Delta``."""
        d = np.full(self.population, -self.sensitivity)
        d_prime = d.copy()
        d_prime[-1] = self.sensitivity
        return NeighbouringPair(
            d,
            d_prime,
            "replace_one",
            description="all records at -sensitivity; the target -sensitivity vs +sensitivity",
        )
