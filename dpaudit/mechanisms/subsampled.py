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

Noisy sum queries (:class:`~dpaudit.mechanisms.base.AdditiveNoiseMechanism`) are sampled through
the sum of the chosen records. **Any other mechanism** on a dataset of records (randomized
response, a composition, ...) is subsampled by *substitution*: a record left out of the sample is
replaced by the ``reference`` record (the base's "absent" value; default: the record of the base's
worst-case ``D``, category ``0`` for randomized response), so the base always sees a dataset of
the same size. For a sum query with reference ``0`` this is exactly subsampling. On the pair
``D = [..., reference]`` vs ``D_prime = [..., x]`` the outputs are ``P = M(D)`` and
``Q = (1 - q) P + q M(D_prime)``: the dominating pair of subsampling (DRS Theorem 9; Zhu, Dong &
Wang 2022), in both orders. Sampling draws one inclusion pattern per output and groups outputs by
pattern (one base ``sample`` call per distinct pattern); :meth:`log_density` sums the base density
over every pattern of the records that differ from the reference (at most 16 of them). Theory:
randomized-response bases get the exact ``C_q(f)``, a PLD (``pld.poisson_subsampled_discrete``)
and their exact RDP; subsampled randomized response is the worst case of every subsampled
``eps0``-DP mechanism (Balle, Barthe & Gaboardi 2018), so its theory is also the generic bound.
Compositions run on one subsample: ``t`` runs of one randomized response get the same theory
through a sufficient statistic with ``2 t + 1`` values, Gaussian runs with one clipping norm
(reference 0) that of one Gaussian with ``sigma = (sum_i 1/sigma_i^2)^(-1/2)``; any other base
with an RDP curve gets RDP (docs/theory.md#tradeoff).
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy.special import betaln, gammaln, logsumexp

from dpaudit._core.device import has_twin
from dpaudit._core.validation import check_integer, check_memory, check_probability
from dpaudit.bounds import pld as pld_lib
from dpaudit.bounds import tradeoff
from dpaudit.bounds.composition import amplify_by_subsampling
from dpaudit.bounds.gaussian_dp import gdp
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
from dpaudit.mechanisms.randomized_response import RandomizedResponse

__all__ = [
    "PoissonSubsampled",
    "FixedSizeSubsampled",
    "MAX_MIXTURE_TERMS",
    "MAX_SUBSTITUTED_RECORDS",
]

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


def _require_mechanism(base: object, what: str) -> Mechanism:
    if not isinstance(base, Mechanism):
        raise ValueError(
            f"base of {what} must be a dpaudit Mechanism (a noisy sum query such as Gaussian or "
            f"Laplace, randomized response, a composition, ...), got {type(base).__name__}"
        )
    return base


def _rr_runs_log_pmf(eps: float, k: int, times: int) -> np.ndarray:
    """``log P(S = s)`` for ``s = -times .. times``, where ``S`` counts the reports equal to the
    other category minus those equal to the true one, over ``times`` independent ``k``-ary
    randomized-response reports of one record.

    Each report is the truth with probability ``a = e^eps / (e^eps + k - 1)``, a given other
    category with ``b = 1 / (e^eps + k - 1)`` and one of the remaining ``k - 2`` with
    ``(k - 2) b``, so ``(#truth, #other, #rest)`` is multinomial; the trinomial terms are summed
    in log space (entries ``-inf`` where ``s`` cannot occur, e.g. wrong parity for ``k = 2``).
    """
    z = 1.0 + (k - 1) * math.exp(-eps)
    log_a, log_b = -math.log(z), -eps - math.log(z)
    n = np.arange(times + 1, dtype=float)
    minus, plus = n[:, None], n[None, :]
    rest = times - minus - plus
    feasible = rest >= 0 if k > 2 else rest == 0
    rest = np.maximum(rest, 0.0)
    log_rest = math.log(k - 2) + log_b if k > 2 else 0.0
    terms = (
        gammaln(times + 1.0)
        - gammaln(minus + 1.0)
        - gammaln(plus + 1.0)
        - gammaln(rest + 1.0)
        + minus * log_a
        + plus * log_b
        + rest * log_rest
    )
    terms = np.where(feasible, terms, -np.inf)
    # s = plus - minus is constant along each diagonal of the (minus, plus) grid
    diagonals = [np.diagonal(terms, offset=s) for s in range(-times, times + 1)]
    return np.array([logsumexp(d) if np.isfinite(d).any() else -np.inf for d in diagonals])


def _mixture_rdp(
    log_p: np.ndarray, log_ratio: np.ndarray, orders: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Exact Rényi divergences ``D_lambda(Q||P)`` and ``D_lambda(P||Q)`` of two pmfs given
    ``log p`` and ``log q/p`` (both finite), ``lambda > 1``:
    ``log sum_s p_s (q_s/p_s)^lambda / (lambda - 1)`` and
    ``log sum_s p_s (q_s/p_s)^(1 - lambda) / (lambda - 1)`` (Mironov 2017, Definition 3)."""
    lam = orders[:, None]
    qp = logsumexp(log_p[None, :] + lam * log_ratio[None, :], axis=1) / (orders - 1.0)
    pq = logsumexp(log_p[None, :] + (1.0 - lam) * log_ratio[None, :], axis=1) / (orders - 1.0)
    return np.maximum(qp, 0.0), np.maximum(pq, 0.0)


#: Most records that differ from the reference in a dataset subsampled by substitution (the
#: exact density sums over all ``2^m`` inclusion patterns).
MAX_SUBSTITUTED_RECORDS = 16


class _Subsampled(Mechanism):
    """Shared machinery: the sum of a random subset of the clipped records, plus the base noise.

    Records are grouped by value; a subsample is described by how many copies ``K_j`` of each
    distinct value ``v_j`` it contains, so its sum is ``K @ v``. Subclasses draw ``K`` and list the
    mixture components ``(K, log weight)`` of the output law.

    Theory (for Gaussian and Laplace bases) is that of the dominating pair ``P`` vs
    ``(1 - r) P + r P'``, with ``P, P'`` the base noise around 0 and around ``shift``, where
    ``r = rate`` and ``shift`` is :attr:`sensitivity` (Poisson) or twice it (fixed size).
    Randomized response, compositions of one randomized response, Gaussian runs and other bases
    with an RDP curve: see :meth:`exact_curve`, :meth:`pld` and :meth:`rdp`.
    """

    def __init__(self, base: Mechanism, reference: object = None) -> None:
        self.base = base
        self.summed = isinstance(base, AdditiveNoiseMechanism)
        self.reference: np.ndarray | None = None
        if self.summed:
            if reference is not None:
                raise ValueError("reference is only used for bases that are not sum queries")
            return
        if reference is None:
            d = np.asarray(base.worst_case_pair().d)
            if d.ndim == 0 or d.shape[0] != 1:
                raise ValueError(
                    f"reference must be given: the worst-case D of {base.name} does not hold "
                    "exactly one record"
                )
            reference = d[0]
        self.reference = np.asarray(reference)
        self.relation = base.relation

    @property
    def sensitivity(self) -> float:
        """Clipping norm of the base mechanism (for a composition of Gaussian runs with one
        clipping norm, that norm)."""
        gaussian = self._gaussian_runs()
        return gaussian[1] if gaussian is not None else self.base.sensitivity

    @property
    @abstractmethod
    def rate(self) -> float:
        """Probability that a given record is in the subsample."""

    @property
    @abstractmethod
    def shift(self) -> float:
        """Largest change of the sum between neighbouring datasets (the base pair's shift)."""

    def _composed_atoms(self) -> list[tuple[Mechanism, int]] | None:
        """The runs of a composed base, ``(mechanism, times)`` from its ``atoms()``
        (substitution: one subsample serves every run, as :meth:`sample` draws it); ``None`` for
        any other base. Read through ``atoms`` because the composition module imports this one."""
        atoms = getattr(self.base, "atoms", None)
        return atoms() if callable(atoms) else None

    def _gaussian_runs(self) -> tuple[float, float] | None:
        """``(sigma, Delta)`` of the single Gaussian equivalent to the base, or ``None``.

        A Gaussian base is itself. A composition whose runs are all Gaussian with one clipping
        norm ``Delta``, subsampled by substitution with the zero record as reference, adds the
        noise of every run to the sum of one subsample; on ``s`` against ``s + v`` the log
        likelihood ratio of the runs depends on the outputs only through ``sum_i y_i / sigma_i^2``,
        a sufficient statistic that is the sum plus Gaussian noise with
        ``sigma = (sum_i n_i / sigma_i^2)^(-1/2)`` (``sigma / sqrt(t)`` for ``t`` equal runs:
        ``mu = sqrt(t) Delta / sigma``, as in DRS Corollary 2). The subsampling mixture is a
        function of the same statistic, so the pair ``P`` vs ``(1 - r) P + r P'`` of the
        composition has the privacy loss distribution of the subsampled single Gaussian.
        """
        if isinstance(self.base, Gaussian):
            return self.base.sigma, self.base.sensitivity
        atoms = self._composed_atoms()
        if atoms is None or not all(isinstance(m, Gaussian) for m, _ in atoms):
            return None
        norms = {m.sensitivity for m, _ in atoms}
        if len(norms) != 1 or np.any(self.reference):
            return None
        precision = math.fsum(n / m.sigma**2 for m, n in atoms)
        return 1.0 / math.sqrt(precision), norms.pop()

    def _rr_runs(self) -> tuple[RandomizedResponse, int] | None:
        """``(mechanism, times)`` when the base is ``times`` runs of one randomized response
        mechanism (a composition with that single atom, or the mechanism itself once), else
        ``None``."""
        if isinstance(self.base, RandomizedResponse):
            return self.base, 1
        atoms = self._composed_atoms()
        if atoms is None or len(atoms) != 1 or not isinstance(atoms[0][0], RandomizedResponse):
            return None
        return atoms[0]

    def _rr_runs_laws(self) -> tuple[np.ndarray, np.ndarray]:
        """``t`` runs of randomized response on one record: ``log p`` of the sufficient statistic
        ``S`` (reports equal to the other category minus reports equal to the reference) on the
        reference, and ``log p'/p = eps S`` (each report's likelihood ratio between the other
        category and the reference is ``e^eps``, ``e^-eps`` or 1, and the runs are independent;
        every other category gives the same law by symmetry). The likelihood ratio, hence every
        privacy loss of ``P`` against ``(1 - r) P + r P'``, is a function of ``S``; outcomes that
        cannot occur are dropped. ``S`` has ``2 t + 1`` values instead of ``k^t`` outputs."""
        rr, times = self._rr_runs()
        log_p = _rr_runs_log_pmf(rr.eps, rr.k, times)
        s = np.arange(-times, times + 1, dtype=float)
        keep = np.isfinite(log_p)
        return log_p[keep], rr.eps * s[keep]

    def _rr_runs_pmfs(self) -> tuple[np.ndarray, np.ndarray]:
        """The pmfs ``p``, ``p'`` of the sufficient statistic of :meth:`_rr_runs_laws`."""
        log_p, log_lr = self._rr_runs_laws()
        p = np.exp(log_p)
        p_prime = np.exp(log_p + log_lr)
        return p / p.sum(), p_prime / p_prime.sum()

    @property
    def _generic_rdp(self) -> bool:
        """Whether the base's own RDP curve bounds the pair of the reference against any other
        record, so that :meth:`rdp` can subsample it: the base has an RDP curve and either
        replaces one record (``replace_one``: the reference and the record are neighbours) or,
        under Poisson sampling (``add_remove``), is a composition of noisy sum queries with the
        zero record as reference (a zero record is the same as no record, so reference against
        record is an add/remove pair). Fixed-size sampling of an ``add_remove`` base would need
        the base's replace-one curve, which it does not state."""
        if self.summed or "rdp" not in self.base.theory_methods:
            return False
        if self.base.relation == "replace_one":
            return True
        atoms = self._composed_atoms()
        poisson = type(self).relation == "add_remove"  # the sampling scheme's own relation
        return (
            poisson
            and atoms is not None
            and all(isinstance(m, AdditiveNoiseMechanism) for m, _ in atoms)
            and not np.any(self.reference)
        )

    @property
    def _has_theory(self) -> bool:
        if isinstance(self.base, Laplace | RandomizedResponse):
            return True
        return self._gaussian_runs() is not None or self._rr_runs() is not None

    def _require_theory(self) -> None:
        if not self._has_theory:
            raise ValueError(
                f"{self.name} has no theory here: exact curves and privacy loss distributions "
                "cover Gaussian, Laplace and randomized-response bases, compositions of Gaussian "
                "runs with one clipping norm (reference 0) and compositions of one "
                "randomized-response mechanism; RDP also covers other bases with an RDP curve "
                "(replace_one, or noisy sums with reference 0 under Poisson sampling)"
            )

    def _rr_pmfs(self) -> tuple[np.ndarray, np.ndarray]:
        """Randomized-response base: the report's law on the reference and on another category
        (by symmetry every other category gives the same privacy loss distribution)."""
        base = self.base
        r = int(np.asarray(self.reference).ravel()[0])
        other = (r + 1) % base.k
        outputs = np.arange(base.k)[:, None]
        p = np.exp(base.log_density(np.array([r]), outputs))
        p_prime = np.exp(base.log_density(np.array([other]), outputs))
        return p, p_prime

    def exact_curve(self) -> tradeoff.TradeoffCurve:
        """``C_r(f)`` with ``f`` the base trade-off at the shift (DRS Definition 6, Theorem 9,
        closed form eq. (13)). It is the largest symmetric trade-off function below both orders
        of the dominating pair, so its ``delta(eps)`` is exact. Gaussian runs: ``f = G_mu`` of
        the equivalent Gaussian (:meth:`_gaussian_runs`); runs of randomized response: ``f`` is
        the exact trade-off of the sufficient statistic's two pmfs (:meth:`_rr_runs_laws`,
        Neyman-Pearson)."""
        self._require_theory()
        gaussian = self._gaussian_runs()
        if isinstance(self.base, RandomizedResponse):
            f = tradeoff.randomized_response_tradeoff(self.base.eps, self.base.k)
        elif gaussian is not None:
            f = gdp(self.shift / gaussian[0])
        elif isinstance(self.base, Laplace):
            f = tradeoff.laplace_tradeoff(self.shift / self.base.scale)
        else:
            f = tradeoff.from_discrete(*self._rr_runs_pmfs(), name=f"T({self.base.name})")
        return tradeoff.subsample(f, self.rate)

    def pld(self, step: float | None = None) -> pld_lib.PLD:
        """Privacy loss distributions of the dominating pair, both orders (``delta`` is the
        larger of the two). Randomized-response base: the exact PLD of ``p`` against
        ``(1 - q) p + q p'`` on the report's ``k`` values; runs of randomized response: the same
        on the ``2 t + 1`` values of the sufficient statistic (:meth:`_rr_runs_laws`); Gaussian
        runs: the subsampled equivalent Gaussian (:meth:`_gaussian_runs`)."""
        self._require_theory()
        gaussian = self._gaussian_runs()
        if isinstance(self.base, RandomizedResponse):
            p, p_prime = self._rr_pmfs()
            return pld_lib.poisson_subsampled_discrete(p, p_prime, rate=self.rate, step=step)
        if gaussian is not None:
            return pld_lib.poisson_subsampled_gaussian(
                gaussian[0], rate=self.rate, sensitivity=self.shift, step=step
            )
        if isinstance(self.base, Laplace):
            return pld_lib.poisson_subsampled_laplace(
                self.base.scale, rate=self.rate, sensitivity=self.shift, step=step
            )
        p, p_prime = self._rr_runs_pmfs()
        return pld_lib.poisson_subsampled_discrete(p, p_prime, rate=self.rate, step=step)

    def rdp(self, orders: object = None) -> RDPCurve:
        """RDP of the dominating pair. Gaussian base or Gaussian runs (the equivalent Gaussian of
        :meth:`_gaussian_runs`): Mironov, Talwar & Zhang 2019 (exact, both orders). Laplace
        base: the binomial formula of Steinke 2022, Theorem 34 (both orders), defined at integer
        orders; a fractional order takes the value
        of the next integer order, a valid bound because Rényi divergences do not decrease with
        the order (van Erven & Harremoës 2014, Thm. 3). Randomized-response base and runs of it:
        the exact Rényi divergences of ``P`` and ``(1 - r) P + r P'`` in both orders (the larger
        one), summed over the sufficient statistic of :meth:`_rr_runs_laws`, at every order
        ``> 1``. Any other base with an RDP curve: :meth:`_generic_rdp_curve`.
        """
        if not self._has_theory and self._generic_rdp:
            return self._generic_rdp_curve(orders)
        self._require_theory()
        lam = np.asarray(DEFAULT_ORDERS if orders is None else orders, dtype=float)
        gaussian = self._gaussian_runs()
        if gaussian is not None:
            return rdp_poisson_subsampled_gaussian(
                gaussian[0] / self.shift, rate=self.rate, orders=lam
            )
        if self._rr_runs() is not None:
            return self._rr_runs_rdp(lam)
        at = np.maximum(np.ceil(lam), 2.0)
        integers = np.unique(at)
        base_orders = np.arange(2.0, integers[-1] + 1)
        base = rdp_laplace(self.base.scale, self.shift, orders=base_orders)
        sub = rdp_poisson_subsampled(
            lambda k: base.eps[int(k) - 2], rate=self.rate, orders=integers
        )
        eps = sub.eps[np.searchsorted(sub.orders, at)]
        return RDPCurve(lam, eps, name=f"RDP {self.name}")

    def _generic_rdp_curve(self, orders: object) -> RDPCurve:
        """Any base with an RDP curve ``eps(.)`` (see :attr:`_generic_rdp`), integer orders: the
        binomial formula of :func:`rdp_poisson_subsampled` from the base's curve at
        ``2 ... lambda`` (Steinke 2022, Theorem 34; it bounds both orders, the order
        ``D_lambda(P||Q)`` never being the larger, his Theorem 35). A fractional order takes the
        value of the next integer order (Rényi divergences do not decrease with the order, van
        Erven & Harremoës 2014, Thm. 3). Neither order exceeds the
        base's own ``eps(lambda)``: ``(p, q) -> p^lambda q^(1-lambda)`` is jointly convex (the
        perspective of ``x^lambda``), so ``E[(Q/P)^lambda] <= 1 - r + r e^{(lambda-1) eps}`` and
        likewise for ``P||Q``; the smaller value is kept. For a neighbouring pair that is not the
        worst case, the same joint convexity over the other records' inclusion reduces it to
        such pairs (Zhu & Wang 2019, Section 3)."""
        lam = np.asarray(DEFAULT_ORDERS if orders is None else orders, dtype=float)
        at = np.maximum(np.ceil(lam), 2.0)
        integers = np.unique(at)
        base = self.base.rdp(orders=np.arange(2.0, integers[-1] + 1)).eps
        unsampled = self.base.rdp(orders=lam).eps

        def eps(k: float) -> float:
            return base[int(k) - 2]

        both = rdp_poisson_subsampled(eps, rate=self.rate, orders=integers).eps
        both = both[np.searchsorted(integers, at)]
        return RDPCurve(lam, np.minimum(both, unsampled), name=f"RDP {self.name}")

    def _rr_runs_rdp(self, orders: np.ndarray) -> RDPCurve:
        """Exact RDP of subsampled runs of randomized response: with ``log q/p =
        log(1 - r + r e^{eps S})`` on the sufficient statistic ``S``, the larger of
        ``D_lambda(Q||P)`` and ``D_lambda(P||Q)`` (:func:`_mixture_rdp`)."""
        lam = np.asarray(orders, dtype=float)
        if lam.ndim != 1 or lam.size == 0 or not np.all(lam > 1.0) or not np.isfinite(lam).all():
            raise ValueError(
                f"orders must be a non-empty 1-d array of finite values > 1, got {orders!r}"
            )
        log_p, log_lr = self._rr_runs_laws()
        log_ratio = np.logaddexp(
            math.log1p(-self.rate) if self.rate < 1 else -np.inf, math.log(self.rate) + log_lr
        )
        qp, pq = _mixture_rdp(log_p, log_ratio, lam)
        return RDPCurve(lam, np.maximum(qp, pq), name=f"RDP {self.name}")

    @property
    def pure_epsilon(self) -> float | None:
        """Laplace base: ``log(1 + r (e^eps0 - 1))`` with ``eps0 = shift / b`` (amplification by
        subsampling, Steinke 2022 Theorem 29, Balle, Barthe & Gaboardi 2018); the same with
        ``eps0 = eps`` for a randomized-response base and ``eps0 = t eps`` for ``t`` runs of it
        (the largest privacy loss, ``S = t``, attains it); otherwise ``None``."""
        if isinstance(self.base, RandomizedResponse):
            return amplify_by_subsampling(self.base.eps, 0.0, self.rate)[0]
        runs = self._rr_runs()
        if runs is not None:
            return amplify_by_subsampling(runs[1] * runs[0].eps, 0.0, self.rate)[0]
        if not isinstance(self.base, Laplace):
            return None
        return amplify_by_subsampling(self.shift / self.base.scale, 0.0, self.rate)[0]

    def _theories(self) -> dict[str, Callable[[], PrivacyProfile]]:
        """``exact`` (``C_r(f)``), ``pld``, ``rdp`` for Gaussian, Laplace and randomized-response
        bases, compositions of Gaussian runs (reference 0) and compositions of one
        randomized-response mechanism."""
        if not self._has_theory:
            return {"rdp": self.rdp} if self._generic_rdp else {}
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

    # ------------------------------------------------------------------ substitution
    def _differing(self, dataset: object) -> tuple[np.ndarray, np.ndarray]:
        """The records and the positions of those that differ from the reference."""
        records = np.asarray(dataset)
        if records.ndim == 0 or records.shape[1:] != self.reference.shape:
            raise ValueError(
                f"dataset must be an array of records of shape {self.reference.shape}, "
                f"got shape {records.shape}"
            )
        flat = records.reshape(records.shape[0], -1)
        differ = np.flatnonzero((flat != self.reference.reshape(1, -1)).any(axis=1))
        if differ.size > MAX_SUBSTITUTED_RECORDS:
            raise ValueError(
                f"{self.name}: at most {MAX_SUBSTITUTED_RECORDS} records may differ from the "
                f"reference, got {differ.size}"
            )
        return records, differ

    @abstractmethod
    def _included(self, n: int, m: int, size: int, rng: np.random.Generator) -> np.ndarray:
        """Substitution: ``(size, m)`` booleans, which of the ``m`` records that differ from the
        reference (out of ``n``) are in each sample."""

    @abstractmethod
    def _pattern_log_weights(self, n: int, bits: np.ndarray) -> np.ndarray:
        """Substitution: log probability of each inclusion pattern ``bits`` ``(G, m)``."""

    def _substituted(self, records: np.ndarray, differ: np.ndarray, bits: np.ndarray) -> object:
        out = records.copy()
        out[differ[~bits]] = self.reference
        return out

    def _sample_substituted(self, dataset: object, size: int, rng: np.random.Generator):
        records, differ = self._differing(dataset)
        bits = self._included(records.shape[0], differ.size, size, rng)
        codes = bits.astype(np.int64) @ (np.int64(1) << np.arange(differ.size, dtype=np.int64))
        patterns, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
        inverse = inverse.ravel()
        out = None
        for g in range(patterns.size):
            rows = np.flatnonzero(inverse == g)
            part = np.asarray(
                self.base.sample(self._substituted(records, differ, bits[first[g]]), rows.size, rng)
            )
            if out is None:
                out = np.empty((size, *part.shape[1:]), dtype=part.dtype)
            out[rows] = part
        if out is None:
            shape = self.base.output_shape(records)
            out = np.empty((0, *shape))
        return out

    def _log_density_substituted(self, dataset: object, outputs: np.ndarray) -> np.ndarray:
        records, differ = self._differing(dataset)
        m = differ.size
        bits = (np.arange(2**m)[:, None] >> np.arange(m)[None, :]) & 1 == 1
        log_w = self._pattern_log_weights(records.shape[0], bits)
        keep = np.isfinite(log_w)
        comp = np.stack(
            [
                self.base.log_density(self._substituted(records, differ, b), outputs)
                for b in bits[keep]
            ]
        )
        return _logsumexp_columns(comp + log_w[keep][:, None])

    def sample(self, dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` outputs (shape ``(size,) + output_shape``), one fresh subsample per output:
        the sum of the chosen clipped records plus the base noise (sum queries), or the base run
        on the dataset with the records left out replaced by the reference (float64 for sums,
        the base's type otherwise)."""
        size = check_size(size)
        rng = check_rng(rng)
        if not self.summed:
            return self._sample_substituted(dataset, size, rng)
        clipped = self._clipped(dataset)
        values, counts = self._groups(clipped)
        included = self._draw(counts, size, rng).astype(float)
        sums = (included @ _flat(values)).reshape((size, *clipped.shape[1:]))
        return sums + self.base.noise(sums.shape, rng)

    def runs_on_device(self) -> bool:
        """Whether :meth:`torch_sample` applies: a sum query (not substitution) whose subsample
        counts have a device twin (``_torch_draw``, Poisson only) and whose base noise, and its
        log density, have theirs."""
        base = self.base
        return (
            self.summed
            and super().runs_on_device()
            and has_twin(self, "_draw", "_torch_draw")
            and base.runs_on_device()
            and has_twin(base, "noise_logpdf", "torch_noise_logpdf")
        )

    def torch_sample(
        self, dataset: np.ndarray, sizes: Sequence[int], generators: Sequence[Any]
    ) -> Any:
        """The device twin of :meth:`sample` for sum queries: ``sum(sizes)`` outputs as one
        float64 tensor on the generators' device, block ``i`` drawn from ``generators[i]``
        alone (its subsample counts, then its noise)."""
        import torch

        clipped = self._clipped(dataset)
        values, counts = self._groups(clipped)
        device = generators[0].device
        flat_values = torch.as_tensor(_flat(values), dtype=torch.float64, device=device)
        shape = clipped.shape[1:]
        out = torch.empty((sum(sizes), *shape), dtype=torch.float64, device=device)
        start = 0
        for size, generator in zip(sizes, generators, strict=True):
            included = self._torch_draw(counts, size, generator)
            block = out[start : start + size]
            self.base.torch_noise(block, generator)
            block += (included @ flat_values).reshape((size, *shape))
            start += size
        return out

    def torch_log_density(self, dataset: np.ndarray, outputs: Any) -> Any:
        """The device twin of :meth:`log_density` for sum queries: the log of the mixture over
        subsamples, float64 ``(size,)``, summed one component at a time around the running
        largest term (memory of one component, stable far in the tails)."""
        import torch

        clipped = self._clipped(dataset)
        means, log_w = self._mixture(*self._groups(clipped))
        keep = np.isfinite(log_w)
        flat_y = outputs.reshape(outputs.shape[0], -1)
        top, total = None, None
        for mean, weight in zip(_flat(means[keep]), log_w[keep], strict=True):
            shift = torch.as_tensor(mean, dtype=torch.float64, device=outputs.device)
            term = self.base.torch_noise_logpdf(flat_y - shift).sum(dim=1).add_(float(weight))
            if top is None:
                top, total = term, torch.ones_like(term)
                continue
            higher = torch.maximum(top, term)
            total.mul_((top - higher).exp_()).add_((term - higher).exp_())
            top = higher
        return total.log_().add_(top)

    def log_density(self, dataset: np.ndarray, outputs: np.ndarray) -> np.ndarray:
        """Exact log density, shape ``(size,)``: the log of the mixture over subsamples,
        ``log sum_S P(S) p_noise(y - sum(S))``, summed around the largest term (stable far in
        the tails).

        Identical records are grouped (the mixture runs over how many copies of each value are
        included), so the number of terms is the product of ``count + 1`` over the distinct
        records that change the output; more than :data:`MAX_MIXTURE_TERMS` raises ``ValueError``.
        Substitution: the base's density summed over the ``2^m`` inclusion patterns of the ``m``
        records that differ from the reference.
        """
        if not self.summed:
            return self._log_density_substituted(dataset, outputs)
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


class PoissonSubsampled(_Subsampled):
    """Poisson subsampling: each record enters the sum independently with probability ``rate``.

    Relation ``add_remove``. Outputs are ``sum_{i in S} clip(x_i) + noise`` with a fresh ``S`` per
    output; the worst-case pair is the base's (empty dataset vs one record of norm
    ``sensitivity``), on which ``Q = (1 - q) P + q P'`` (docs/theory.md#pld).

    Parameters
    ----------
    base:
        Any mechanism on records: a noisy sum query (:class:`~dpaudit.mechanisms.Gaussian`,
        :class:`~dpaudit.mechanisms.Laplace`) or, by substitution, any other (randomized
        response, compositions, ...).
    reference:
        Substitution only: the record that replaces a record left out of the sample; default the
        single record of the base's worst-case ``D``.
    rate:
        Inclusion probability ``q`` in ``(0, 1]``.
    """

    relation = "add_remove"

    def __init__(self, base: Mechanism, rate: float, *, reference: object = None) -> None:
        super().__init__(_require_mechanism(base, "PoissonSubsampled"), reference)
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

    def _included(self, n: int, m: int, size: int, rng: np.random.Generator) -> np.ndarray:
        """Every record independently with probability ``q``."""
        return rng.random((size, m)) < self.rate

    def _pattern_log_weights(self, n: int, bits: np.ndarray) -> np.ndarray:
        """``q^k (1 - q)^(m - k)`` for ``k`` records included."""
        k = bits.sum(axis=1)
        m = bits.shape[1]
        with np.errstate(divide="ignore"):
            return k * math.log(self.rate) + (m - k) * np.log1p(-self.rate)

    def _groups(self, clipped: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Distinct nonzero records (zero records never change the sum) and their counts."""
        nonzero = _flat(clipped).any(axis=1)
        return _group(clipped[nonzero])

    def _draw(self, counts: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        """``K_j ~ Binomial(counts_j, q)`` independently: copies of value ``j`` included."""
        return rng.binomial(counts, self.rate, size=(size, counts.size))

    def _torch_draw(self, counts: np.ndarray, size: int, generator: Any) -> Any:
        """The device twin of :meth:`_draw`: float64 ``(size, J)`` binomial counts."""
        import torch

        device = generator.device
        total = torch.as_tensor(counts, dtype=torch.float64, device=device).expand(size, -1)
        rate = torch.full_like(total, self.rate)
        return torch.binomial(total.contiguous(), rate, generator=generator)

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
        """The base's pair: empty dataset vs one record of norm ``sensitivity`` (``add_remove``);
        substitution: the reference record vs the base's other record."""
        pair = self.base.worst_case_pair()
        if self.summed:
            return pair
        return NeighbouringPair(
            self.reference[None, ...],
            np.asarray(pair.d_prime),
            pair.relation,
            description="the reference record vs another record",
        )


class FixedSizeSubsampled(_Subsampled):
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
    base, reference:
        As for :class:`PoissonSubsampled`.
    size:
        Number of records in every subsample, ``1 <= size <= population``.
    population:
        Number of records in every dataset.
    """

    relation = "replace_one"

    def __init__(
        self, base: Mechanism, size: int, population: int, *, reference: object = None
    ) -> None:
        super().__init__(_require_mechanism(base, "FixedSizeSubsampled"), reference)
        self.population = check_integer("population", population, minimum=1)
        self.subsample_size = check_integer("size", size, minimum=1, maximum=self.population)
        # Datasets hold exactly ``population`` records, each at least one float64.
        check_memory(
            "population",
            self.population,
            2 * 8 * self.population * max(1, int(np.size(self.reference))),
            "its two datasets of that many records each",
        )

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

    def _included(self, n: int, m: int, size: int, rng: np.random.Generator) -> np.ndarray:
        """``k ~ Hypergeometric(m, n - m, size)`` of the ``m`` records, a uniform ``k``-subset."""
        self._check_population(n)
        if m == 0:
            return np.zeros((size, 0), dtype=bool)
        k = rng.hypergeometric(m, n - m, self.subsample_size, size=size) if n > m else None
        if k is None:
            k = np.full(size, self.subsample_size)
        ranks = np.argsort(np.argsort(rng.random((size, m)), axis=1), axis=1)
        return ranks < k[:, None]

    def _pattern_log_weights(self, n: int, bits: np.ndarray) -> np.ndarray:
        """``C(n - m, s - k) / C(n, s)`` for one given set of ``k`` of the ``m`` records."""
        self._check_population(n)
        m, s = bits.shape[1], self.subsample_size
        k = bits.sum(axis=1)
        rest = s - k
        ok = (rest >= 0) & (rest <= n - m)
        log_w = _log_binom(np.int64(n - m), np.clip(rest, 0, n - m)) - _log_binom(
            np.int64(n), np.int64(s)
        )
        return np.where(ok, log_w, -np.inf)

    def _check_population(self, n: int) -> None:
        if n != self.population:
            raise ValueError(
                f"dataset must hold exactly population={self.population} records, got {n}"
            )

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
        """``population - 1`` records at ``-Delta``; the target ``-Delta`` vs ``+Delta``.
        Substitution: ``population`` reference records vs the same with the last record
        replaced by the base's other record."""
        if not self.summed:
            other = np.asarray(self.base.worst_case_pair().d_prime)[0]
            d = np.repeat(self.reference[None, ...], self.population, axis=0)
            d_prime = d.copy()
            d_prime[-1] = other
            return NeighbouringPair(
                d, d_prime, "replace_one", description="reference records; the last one replaced"
            )
        d = np.full(self.population, -self.sensitivity)
        d_prime = d.copy()
        d_prime[-1] = self.sensitivity
        return NeighbouringPair(
            d,
            d_prime,
            "replace_one",
            description="all records at -sensitivity; the target -sensitivity vs +sensitivity",
        )
