"""Deliberately flawed (and correct) mechanisms from the literature on detecting DP violations.

The benchmark of Ding et al. 2018 ("Detecting violations of differential privacy", CCS; StatDP)
and Bichsel et al. 2021 ("DP-Sniper", IEEE S&P): report-noisy-max and sparse-vector variants,
noisy histograms and prefix sums, plus Mironov's floating-point Laplace flaw (Mironov 2012, "On
significance of the least significant bits for differential privacy", CCS) and randomized-response
variants. Each mechanism claims ``eps``-DP (the constructor's ``eps``); its true privacy is
documented in :attr:`FlawedMechanism.epsilon_bounds`, proved in the class docstring:

- ``(x, x)``: the true ``eps`` is exactly ``x``;
- ``(lower, upper)``: not known exactly; ``lower`` is proved by an explicit event (probabilities
  computed by adaptive quadrature of a one-dimensional integral, error below ``1e-9``), and
  ``upper`` by an argument in the docstring (``inf`` when none is known);
- correct mechanisms have ``upper <= eps``.

Conventions (as in Ding et al. 2018 and Lyu, Su & Li 2017): the *dataset* is the vector of true
query answers ``a`` (one entry per query, sensitivity one). For query mechanisms (report noisy
max, sparse vector) neighbouring vectors differ by at most one in every entry (``|a_i - a'_i| <=
1``); for histograms and prefix sums one count changes by one (``||a - a'||_1 <= 1``). Pairs have
the same length, so their relation is ``replace_one``. Each mechanism's :meth:`worst_case_pair` is
the pair on which its leak is largest (or the pair StatDP and DP-Sniper report).

:data:`FLAWED` maps the registry names (``dpaudit list``, spec kind ``flawed``) to the classes;
:func:`dpaudit.audit.benchmark.run_benchmark` audits all of them and lays the certified lower
bounds beside the true ``eps`` and the best published lower bounds (:data:`PUBLISHED`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from dpaudit._core.validation import check_integer, check_positive, check_probability, check_real
from dpaudit.bounds.tradeoff import TradeoffCurve, approx_dp
from dpaudit.mechanisms.base import (
    Mechanism,
    NeighbouringPair,
    PrivacyProfile,
    check_rng,
    check_size,
)

__all__ = [
    "FlawedMechanism",
    "FLAWED",
    "PUBLISHED",
    "flawed",
    "claimed_curve",
    "NoisyHist",
    "NoisyHistWrongScale",
    "ReportNoisyMax",
    "ReportNoisyMaxExponential",
    "ReportNoisyMaxValue",
    "ReportNoisyMaxExponentialValue",
    "SparseVector",
    "SparseVectorDworkRoth",
    "SparseVectorOutputsNoisyValue",
    "SparseVectorLeeClifton",
    "SparseVectorThresholdNoiseOnly",
    "SparseVectorNoCutoff",
    "SparseVectorNoThresholdNoise",
    "PrefixSum",
    "NoisyPrefixSums",
    "LaplaceFloat",
    "LaplaceSkippedNoise",
    "RandomizedResponseBinary",
    "RandomizedResponseBinaryFormula",
    "DeltaLeakMechanism",
    "LaplaceRareExactAnswer",
    "LaplacePairExactCoordinate",
    "NoisyHistZeroBinUnnoised",
    "DP_AUDITORIUM",
    "DPAuditoriumMeanNoisyScale",
    "DPAuditoriumSVTRevealRecords",
    "DPAuditoriumNoisyMaxGumbel",
]


def claimed_curve(eps: float) -> TradeoffCurve:
    """The claim ``(eps, 0)``-DP as a trade-off curve of kind ``claim``."""
    exact = approx_dp(eps, 0.0)
    return TradeoffCurve(
        exact.__call__,
        name=f"claimed ({eps:g}, 0)-DP",
        kind="claim",
        symmetric=True,
        delta_fn=exact.delta,
    )


class _ClaimProfile:
    """The claimed ``(eps, 0)``-DP guarantee as a privacy profile."""

    def __init__(self, eps: float) -> None:
        self.curve = claimed_curve(eps)
        self.eps = eps

    def delta(self, eps: float | np.ndarray) -> np.ndarray | float:
        return self.curve.delta(eps)

    def epsilon(self, delta: float) -> float:
        return self.eps

    def tradeoff(self) -> TradeoffCurve:
        return self.curve


class FlawedMechanism(Mechanism):
    """Base class: a mechanism on a vector of query answers that claims ``(eps, 0)``-DP.

    Subclasses set :attr:`registry_name`, :attr:`citation`, implement :meth:`_sample`,
    :meth:`epsilon_bounds` and :meth:`worst_case_pair`. ``k`` is the number of queries (the
    length of every dataset).
    """

    relation = "replace_one"
    #: Name in :data:`FLAWED` and in specs (``mechanism = { kind = "flawed", name = ... }``).
    registry_name: str = ""
    #: Where the mechanism (and its analysis) comes from.
    citation: str = ""
    #: Neighbouring notion: ``"linf"`` (every answer moves by at most one) or ``"l1"`` (one
    #: count moves by one).
    adjacency: str = "linf"
    #: Default number of queries.
    default_k: int = 5
    #: Smallest number of extra training outputs per dataset :func:`run_benchmark` gives the
    #: learned attack on this mechanism (its ``train_trials`` when that is smaller).
    benchmark_train_trials: int = 0

    def __init__(self, eps: float = 0.1, k: int | None = None) -> None:
        self.eps = check_positive("eps", eps)
        self.k = check_integer("k", self.default_k if k is None else k, minimum=1)

    @property
    def claimed_epsilon(self) -> float:
        """The ``eps`` the mechanism claims."""
        return self.eps

    def epsilon_bounds(self) -> tuple[float, float]:
        """Proven ``(lower, upper)`` bounds on the true ``eps`` (equal when it is known)."""
        raise NotImplementedError

    @property
    def true_epsilon(self) -> float | None:
        """The true ``eps`` when known exactly (possibly ``inf``), else ``None``."""
        lower, upper = self.epsilon_bounds()
        return lower if lower == upper else None

    @property
    def correct(self) -> bool:
        """True when the claim is proved: the true ``eps`` is at most the claimed one."""
        return self.epsilon_bounds()[1] <= self.eps * (1 + 1e-12)

    def params(self) -> dict[str, Any]:
        """``{"name": registry name, "eps": ..., "k": ...}``."""
        return {"name": self.registry_name, "eps": self.eps, "k": self.k}

    @property
    def name(self) -> str:
        """``flawed:<registry name>(eps=..., ...)``."""
        inner = ", ".join(f"{k}={v}" for k, v in self.params().items() if k != "name")
        return f"flawed:{self.registry_name}({inner})"

    def _theories(self) -> dict[str, Callable[[], PrivacyProfile]]:
        """``claim``: the claimed ``(eps, 0)``-DP (not a proven bound unless :attr:`correct`)."""
        return {"claim": lambda: _ClaimProfile(self.eps)}

    def features(self, pair: NeighbouringPair) -> Callable[[np.ndarray], np.ndarray] | None:
        """A distinguishing statistic for a learned attack when the flaw needs one (``None``:
        the outputs themselves suffice)."""
        return None

    def _answers(self, dataset: object) -> np.ndarray:
        try:
            a = np.asarray(dataset, dtype=float)
        except (TypeError, ValueError) as exc:
            kind = type(dataset).__name__
            raise ValueError(f"dataset must be a vector of query answers, got {kind}") from exc
        if a.ndim != 1 or a.size != self.k:
            raise ValueError(
                f"dataset must be a vector of {self.k} query answers for {self.name}, "
                f"got shape {a.shape}"
            )
        if not np.isfinite(a).all():
            raise ValueError("dataset must contain only finite numbers, got NaN or inf")
        return a

    def sample(self, dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` outputs on the query answers ``dataset`` (axis 0 = trials), float64."""
        a = self._answers(dataset)
        size = check_size(size)
        rng = check_rng(rng)
        return np.asarray(self._sample(a, size, rng), dtype=float)

    def _sample(self, a: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError

    def _pair(self, d: list[float], d_prime: list[float], description: str) -> NeighbouringPair:
        return NeighbouringPair(
            np.asarray(d, float), np.asarray(d_prime, float), "replace_one", description
        )


# ------------------------------------------------------------------------------------ histograms


class NoisyHist(FlawedMechanism):
    """Noisy histogram, ``a + Lap(1/eps)`` per count (Ding et al. 2018, Algorithm 9). Correct.

    True ``eps`` exactly ``eps``: with one count moving by one this is the Laplace mechanism
    with ``l1`` sensitivity one (Dwork et al. 2006), and the ratio ``e^eps`` is attained for
    outputs below both counts.
    """

    registry_name = "noisy_hist"
    citation = "Ding et al. 2018, Algorithm 9; Dwork, McSherry, Nissim & Smith 2006"
    adjacency = "l1"

    @property
    def scale(self) -> float:
        """Laplace scale of every count."""
        return 1.0 / self.eps

    def epsilon_bounds(self) -> tuple[float, float]:
        return (1.0 / self.scale, 1.0 / self.scale)

    def _sample(self, a, size, rng):
        return a + rng.laplace(0.0, self.scale, (size, self.k))

    def worst_case_pair(self) -> NeighbouringPair:
        """``[1, 1, ...]`` vs ``[2, 1, ...]`` (the pair StatDP reports)."""
        d = [1.0] * self.k
        return self._pair(d, [2.0] + d[1:], "first count 1 vs 2")


class NoisyHistWrongScale(NoisyHist):
    """Noisy histogram with the scale inverted, ``Lap(eps)`` instead of ``Lap(1/eps)`` (Ding et
    al. 2018, Algorithm 10). True ``eps`` exactly ``1/eps`` (``10`` for ``eps = 0.1``): the Laplace
    mechanism with scale ``eps`` and sensitivity one.
    """

    registry_name = "noisy_hist_wrong_scale"
    citation = "Ding et al. 2018, Algorithm 10"

    @property
    def scale(self) -> float:
        """Laplace scale of every count (the bug: ``eps`` instead of ``1/eps``)."""
        return self.eps


# ------------------------------------------------------------------------- report noisy max


class ReportNoisyMax(FlawedMechanism):
    """Report noisy max: the index of the largest ``a_i + Lap(2/eps)`` (Ding et al. 2018,
    Algorithm 5). Correct: each noisy answer alone is ``eps/2``-DP and the standard argument
    (Dwork & Roth 2014, Claim 3.9, with scale doubled for answers that move in both
    directions) gives ``eps``-DP. The exact ``eps`` over all pairs is not known.
    """

    registry_name = "report_noisy_max"
    citation = "Ding et al. 2018, Algorithm 5; Dwork & Roth 2014, Claim 3.9"

    def _noise(self, rng, size):
        return rng.laplace(0.0, 2.0 / self.eps, (size, self.k))

    def epsilon_bounds(self) -> tuple[float, float]:
        return (0.0, self.eps)

    def _sample(self, a, size, rng):
        return np.argmax(a + self._noise(rng, size), axis=1)

    def worst_case_pair(self) -> NeighbouringPair:
        """``[1, 1, ...]`` vs ``[2, 0, 0, ...]`` (StatDP's counterexample search)."""
        return self._pair(
            [1.0] * self.k, [2.0] + [0.0] * (self.k - 1), "first answer up, rest down"
        )


class ReportNoisyMaxExponential(ReportNoisyMax):
    """Report noisy max with ``Exp(2/eps)`` noise (Ding et al. 2018, Algorithm 6). Correct
    (equivalent to the exponential mechanism's "permute and flip" form; McKenna & Sheldon 2020).
    """

    registry_name = "report_noisy_max_exponential"
    citation = "Ding et al. 2018, Algorithm 6; McKenna & Sheldon 2020"

    def _noise(self, rng, size):
        return rng.exponential(2.0 / self.eps, (size, self.k))

    def worst_case_pair(self) -> NeighbouringPair:
        """``[1, 1, ...]`` vs ``[0, 2, 2, ...]``."""
        return self._pair(
            [1.0] * self.k, [0.0] + [2.0] * (self.k - 1), "first answer down, rest up"
        )


class ReportNoisyMaxValue(ReportNoisyMax):
    """Report noisy max that releases the noisy maximum *value* instead of its index (Ding et
    al. 2018, Algorithm 7). True ``eps`` exactly ``k eps / 2`` (``0.25`` for ``k = 5``):

    - upper: the value is a function of the ``k`` noisy answers, each ``eps/2``-DP;
    - lower: with ``a = 0`` and ``a' = 1`` (every answer up by one) and ``b = 2/eps``, for
      ``y < 0`` the density of the maximum is ``k F(y)^(k-1) f(y)`` with ``F(y) = e^(y/b)/2``, so
      ``p(y)/q(y) = e^(k/b) = e^(k eps/2)`` on the whole event ``{y < 0}`` (probability
      ``2^-k`` under ``a``).
    """

    registry_name = "report_noisy_max_value"
    citation = "Ding et al. 2018, Algorithm 7"

    def epsilon_bounds(self) -> tuple[float, float]:
        value = self.k * self.eps / 2.0
        return (value, value)

    def _sample(self, a, size, rng):
        return np.max(a + self._noise(rng, size), axis=1)

    def worst_case_pair(self) -> NeighbouringPair:
        """``[0, ..., 0]`` vs ``[1, ..., 1]``: every answer moves up by one."""
        return self._pair([0.0] * self.k, [1.0] * self.k, "every answer up by one")


class ReportNoisyMaxExponentialValue(ReportNoisyMaxExponential):
    """Report noisy max with exponential noise releasing the maximum value (Ding et al. 2018,
    Algorithm 8). True ``eps`` infinite: noise is non-negative, so with ``a = 1`` and ``a' = 2``
    (every answer up by one) outputs in ``[1, 2)`` have probability ``(1 - e^(-eps/2))^k > 0``
    under ``a`` and zero under ``a'``.
    """

    registry_name = "report_noisy_max_exponential_value"
    citation = "Ding et al. 2018, Algorithm 8"

    def epsilon_bounds(self) -> tuple[float, float]:
        return (math.inf, math.inf)

    def _sample(self, a, size, rng):
        return np.max(a + self._noise(rng, size), axis=1)

    def worst_case_pair(self) -> NeighbouringPair:
        """``[1, ..., 1]`` vs ``[2, ..., 2]``."""
        return self._pair([1.0] * self.k, [2.0] * self.k, "every answer up by one")


# ---------------------------------------------------------------------------- sparse vector


def _sparse_vector(
    a: np.ndarray,
    size: int,
    rng: np.random.Generator,
    *,
    threshold: float,
    rho_scale: float | None,
    nu_scale: float | None,
    cutoff: int | None,
    resample: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Answer codes ``(size, k)`` (``1`` above, ``0`` below, ``-1`` after the cutoff) and the noisy
    answers ``a + nu``. Vectorised over trials; the loop runs over the ``k`` queries, because
    with ``resample`` the threshold noise depends on the answers so far (Lyu et al. 2017,
    Algorithm 2)."""
    k = a.size
    segments = cutoff if resample and cutoff else 1
    rho = (
        np.zeros((size, segments))
        if rho_scale is None
        else rng.laplace(0.0, rho_scale, (size, segments))
    )
    noisy = a + (np.zeros((size, k)) if nu_scale is None else rng.laplace(0.0, nu_scale, (size, k)))
    codes = np.empty((size, k), dtype=np.int8)
    count = np.zeros(size, dtype=np.int64)
    rows = np.arange(size)
    for i in range(k):
        active = count < cutoff if cutoff is not None else np.ones(size, dtype=bool)
        segment = np.minimum(count, segments - 1)
        above = noisy[:, i] >= threshold + rho[rows, segment]
        codes[:, i] = np.where(active, above, -1)
        count += above & active
    return codes, noisy


class SparseVector(FlawedMechanism):
    """Sparse vector technique, Lyu, Su & Li 2017, Algorithm 1 (``AboveThreshold`` with cutoff
    ``c``): ``rho ~ Lap(1/eps1)``, ``nu_i ~ Lap(2c/eps2)``, ``eps1 = eps2 = eps/2``; answers
    "above" while fewer than ``c`` were above, then aborts. Correct (proved by Lyu et al. 2017).
    Outputs: codes ``1`` above, ``0`` below, ``-1`` aborted.
    """

    registry_name = "svt"
    citation = "Lyu, Su & Li 2017, Algorithm 1"
    #: The best answer pattern ("first above at query 6", ratio ``e^0.0878`` on the default pair)
    #: is a few hundredths of ``eps`` above the next ones at probability ``0.02``: about ``10^6``
    #: training outputs per dataset order the 11 patterns reliably.
    benchmark_train_trials = 2**20
    default_k = 10
    default_threshold = 0.5

    def __init__(
        self, eps: float = 0.1, k: int | None = None, c: int = 1, threshold: float | None = None
    ) -> None:
        super().__init__(eps, k)
        self.c = check_integer("c", c, minimum=1)
        t = self.default_threshold if threshold is None else threshold
        self.threshold = check_real("threshold", t)

    def params(self) -> dict[str, Any]:
        """Registry name, ``eps``, ``k``, cutoff ``c`` and ``threshold``."""
        return {**super().params(), "c": self.c, "threshold": self.threshold}

    @property
    def eps1(self) -> float:
        """Budget of the threshold noise."""
        return self.eps / 2.0

    @property
    def eps2(self) -> float:
        """Budget of the query noise."""
        return self.eps - self.eps1

    def epsilon_bounds(self) -> tuple[float, float]:
        return (0.0, self.eps)

    def _sample(self, a, size, rng):
        codes, _ = _sparse_vector(
            a,
            size,
            rng,
            threshold=self.threshold,
            rho_scale=1.0 / self.eps1,
            nu_scale=2.0 * self.c / self.eps2,
            cutoff=self.c,
        )
        return codes

    def features(self, pair: NeighbouringPair) -> Callable[[np.ndarray], np.ndarray]:
        """The whole answer pattern as one category (``sum_i (code_i + 1) 3^i``): the output is
        a categorical event, and a learned attack should count each pattern exactly rather than
        fit a smooth model of the codes."""
        weights = 3.0 ** np.arange(self.k)

        def answer_pattern(outputs: np.ndarray) -> np.ndarray:
            return (np.asarray(outputs, dtype=float).reshape(-1, self.k) + 1.0) @ weights

        return answer_pattern

    def worst_case_pair(self) -> NeighbouringPair:
        """Half the answers ``0 -> 1``, the other half ``1 -> 0`` (DP-Sniper's pair)."""
        h = self.k // 2
        d = [0.0] * h + [1.0] * (self.k - h)
        d_prime = [1.0] * h + [0.0] * (self.k - h)
        return self._pair(d, d_prime, "first half of the answers up, second half down")


class SparseVectorDworkRoth(SparseVector):
    """Lyu et al. 2017, Algorithm 2 (Dwork & Roth 2014, "Sparse"): ``rho ~ Lap(c/eps1)`` drawn
    afresh after every "above", ``nu_i ~ Lap(2c/eps2)``. Correct (Dwork & Roth 2014, Section
    3.6)."""

    registry_name = "svt_dwork_roth"
    citation = "Lyu, Su & Li 2017, Algorithm 2; Dwork & Roth 2014, Section 3.6 (Sparse)"
    default_threshold = 1.0

    def __init__(
        self, eps: float = 0.1, k: int | None = None, c: int = 2, threshold: float | None = None
    ) -> None:
        super().__init__(eps, k, c, threshold)

    def _sample(self, a, size, rng):
        codes, _ = _sparse_vector(
            a,
            size,
            rng,
            threshold=self.threshold,
            rho_scale=self.c / self.eps1,
            nu_scale=2.0 * self.c / self.eps2,
            cutoff=self.c,
            resample=True,
        )
        return codes


class SparseVectorOutputsNoisyValue(SparseVector):
    """Lyu et al. 2017, Algorithm 3 (Roth's 2011 lecture notes): releases the noisy answer
    ``a_i + nu_i`` of every query above the threshold; ``rho ~ Lap(1/eps1)``,
    ``nu_i ~ Lap(c/eps2)``. Not ``eps'``-DP for any ``eps'`` uniformly in the number of queries
    (Lyu et al. 2017). For ``k`` queries:

    - upper ``k eps2 / c``: the output is a function of the data-independent ``rho`` and of ``k``
      Laplace releases of scale ``c/eps2``;
    - lower (``c = 1``, ``threshold = 1``, default pair ``[1]*k`` vs ``[2]*(k/2) + [0]*(k/2)``):
      the output "first above at query ``h + 1 = k/2 + 1`` with value ``z = 1``" has density
      ``f_nu(z - a_{h+1}) * integral over r <= z - 1 of f_rho(r) prod_{i <= h} F_nu(r + 1 - a_i)``;
      for ``r <= 0`` every ``F_nu`` factor has ratio exactly ``e^(eps2)`` and the ``f_nu`` factor
      ``e^(eps2)``, so the density ratio is ``e^((h + 1) eps2)`` (``0.3`` for ``k = 10``,
      ``eps = 0.1``; quadrature agrees to ``1e-12``).

    Outputs: ``k`` codes then ``k`` values (the noisy answer where the code is ``1``, else ``0``).
    """

    registry_name = "svt_outputs_noisy_value"
    citation = "Lyu, Su & Li 2017, Algorithm 3"
    default_threshold = 1.0

    def epsilon_bounds(self) -> tuple[float, float]:
        lower = 0.0
        if self.c == 1 and self.threshold == 1.0 and self.k % 2 == 0:
            lower = (self.k // 2 + 1) * self.eps2
        return (lower, self.k * self.eps2 / self.c)

    def _sample(self, a, size, rng):
        codes, noisy = _sparse_vector(
            a,
            size,
            rng,
            threshold=self.threshold,
            rho_scale=1.0 / self.eps1,
            nu_scale=self.c / self.eps2,
            cutoff=self.c,
        )
        return np.hstack([codes, np.where(codes == 1, noisy, 0.0)])

    def features(self, pair: NeighbouringPair) -> None:
        """``None``: the outputs carry noisy values beside the codes, not a pattern alone."""
        return None

    def worst_case_pair(self) -> NeighbouringPair:
        """``[1, ..., 1]`` vs ``[2, ..., 2, 0, ..., 0]`` (DP-Sniper's pair)."""
        h = self.k // 2
        return self._pair(
            [1.0] * self.k, [2.0] * h + [0.0] * (self.k - h), "first half up, second half down"
        )


class SparseVectorLeeClifton(SparseVectorOutputsNoisyValue):
    """Lyu et al. 2017, Algorithm 4 (Lee & Clifton 2014): ``eps1 = eps/4``, ``rho ~ Lap(1/eps1)``,
    ``nu_i ~ Lap(1/eps2)`` with ``eps2 = 3 eps/4`` (no factor ``c``), cutoff ``c``; outputs codes.
    Lyu et al. 2017 show it is ``((1 + 6c)/4) eps``-DP (the upper bound). Lower bound for
    ``k = 10``, ``c = 1``, ``threshold = 1``, ``eps = 0.1`` on the default pair: the output
    "first above at query 6" has probabilities ``0.0167128`` and ``0.0140652`` (one-dimensional
    quadrature over ``rho``), ratio ``e^0.17247``: the true ``eps`` lies in ``[0.1724, 0.175]``.
    """

    registry_name = "svt_lee_clifton"
    citation = "Lyu, Su & Li 2017, Algorithm 4; Lee & Clifton 2014"
    #: The best event ("first above at query 6", ratio ``e^0.1725``) must be told apart from
    #: patterns with ratios a few percent smaller: about ``10^6`` training outputs per dataset
    #: order the 11 answer patterns reliably.
    benchmark_train_trials = 2**20
    #: Proven lower bounds (quadrature) for ``(k, c, threshold, eps)`` on the default pair.
    proven_lower = {(10, 1, 1.0, 0.1): 0.1724}

    @property
    def eps1(self) -> float:
        """Budget of the threshold noise (``eps/4``)."""
        return self.eps / 4.0

    def epsilon_bounds(self) -> tuple[float, float]:
        lower = self.proven_lower.get((self.k, self.c, self.threshold, self.eps), 0.0)
        return (lower, (1.0 + 6.0 * self.c) / 4.0 * self.eps)

    def _sample(self, a, size, rng):
        codes, _ = _sparse_vector(
            a,
            size,
            rng,
            threshold=self.threshold,
            rho_scale=1.0 / self.eps1,
            nu_scale=1.0 / self.eps2,
            cutoff=self.c,
        )
        return codes

    features = SparseVector.features


class SparseVectorThresholdNoiseOnly(SparseVector):
    """Lyu et al. 2017, Algorithm 5 (Stoddard et al. 2014): noise on the threshold only
    (``rho ~ Lap(1/eps1)``, no query noise, no cutoff). True ``eps`` infinite: with
    ``a' = [1, ..., 1]`` all answers compare equal, so only "all above" and "all below" can occur,
    while ``a = [2, ..., 2, 0, ..., 0]`` gives "first half above, second half below" with
    probability ``P(-1 <= rho < 1) > 0``.
    """

    registry_name = "svt_threshold_noise_only"
    citation = "Lyu, Su & Li 2017, Algorithm 5; Stoddard, Chen & Machanavajjhala 2014"
    default_threshold = 1.0

    def epsilon_bounds(self) -> tuple[float, float]:
        return (math.inf, math.inf)

    def _sample(self, a, size, rng):
        codes, _ = _sparse_vector(
            a,
            size,
            rng,
            threshold=self.threshold,
            rho_scale=1.0 / self.eps1,
            nu_scale=None,
            cutoff=None,
        )
        return codes

    def worst_case_pair(self) -> NeighbouringPair:
        """``[2, ..., 2, 0, ..., 0]`` vs ``[1, ..., 1]``."""
        h = self.k // 2
        return self._pair(
            [2.0] * h + [0.0] * (self.k - h), [1.0] * self.k, "answers split vs all equal"
        )


class SparseVectorNoCutoff(SparseVector):
    """Lyu et al. 2017, Algorithm 6 (Chen et al. 2015): ``rho ~ Lap(1/eps1)``,
    ``nu_i ~ Lap(1/eps2)`` and no cutoff: every comparison is released. Not ``eps'``-DP for any
    ``eps'`` uniformly in ``k`` (Lyu et al. 2017). For fixed ``k``: given ``rho`` every comparison
    is ``eps2``-DP, so the mechanism is ``k eps2``-DP (upper bound). Lower bound for ``k = 10``,
    ``threshold = 1``, ``eps = 0.1`` on the default pair: the output "first half below, second
    half above" has probabilities ``4.4295e-4`` and ``2.9265e-4`` (quadrature over ``rho``; the
    largest ratio of all ``2^10`` outputs), ratio ``e^0.41448``: the true ``eps`` lies in
    ``[0.4144, 0.5]``.
    """

    registry_name = "svt_no_cutoff"
    citation = "Lyu, Su & Li 2017, Algorithm 6; Chen, Machanavajjhala, Hay & Miklau 2015"
    default_threshold = 1.0
    #: Proven lower bounds (quadrature) for ``(k, threshold, eps)`` on the default pair.
    proven_lower = {(10, 1.0, 0.1): 0.4144}

    def epsilon_bounds(self) -> tuple[float, float]:
        lower = self.proven_lower.get((self.k, self.threshold, self.eps), 0.0)
        return (lower, self.k * self.eps2)

    def _sample(self, a, size, rng):
        codes, _ = _sparse_vector(
            a,
            size,
            rng,
            threshold=self.threshold,
            rho_scale=1.0 / self.eps1,
            nu_scale=1.0 / self.eps2,
            cutoff=None,
        )
        return codes


class SparseVectorNoThresholdNoise(SparseVector):
    """Algorithm 1 of Lyu et al. 2017 with the threshold left unperturbed and the whole budget
    spent on the queries (``rho = 0``, query noise ``Lap(b)`` with ``b = 2c/eps``). True ``eps``
    exactly ``k/b = k eps/(2c)`` (``0.5`` for ``k = 10``, ``c = 1``, ``eps = 0.1``):

    - upper: an output is decided by at most ``k`` independent comparisons, and a Laplace CDF
      satisfies ``F(x) <= e^(1/b) F(x - 1)`` (likewise ``1 - F``), so every output's probability
      changes by at most ``e^(k/b)``;
    - lower: with ``a = [t, ..., t]`` and ``a' = [t+1, ..., t+1]`` (``t`` the threshold), "all
      below" has probability ``F(0)^k = 2^-k`` and ``F(-1)^k = e^(-k/b) 2^-k``.
    """

    registry_name = "svt_no_threshold_noise"
    citation = "Lyu, Su & Li 2017, Algorithm 1 (threshold noise removed)"
    default_threshold = 1.0

    def epsilon_bounds(self) -> tuple[float, float]:
        value = self.k * self.eps / (2.0 * self.c)
        return (value, value)

    def _sample(self, a, size, rng):
        codes, _ = _sparse_vector(
            a,
            size,
            rng,
            threshold=self.threshold,
            rho_scale=None,
            nu_scale=2.0 * self.c / self.eps,
            cutoff=self.c,
        )
        return codes

    def worst_case_pair(self) -> NeighbouringPair:
        """Every answer at the threshold vs one above it."""
        t = self.threshold
        return self._pair([t] * self.k, [t + 1.0] * self.k, "answers at the threshold vs one above")


# ------------------------------------------------------------------------------- prefix sums


class PrefixSum(FlawedMechanism):
    """Prefix sums of a noisy histogram: ``cumsum(a + Lap(1/eps))`` (Wang et al. 2019, PLDI,
    "PrefixSum"). Correct for histogram neighbours (one count moves by one): the noisy counts are
    the Laplace mechanism and the prefix sums a bijection of them, so the true ``eps`` is exactly
    ``eps``. (DP-Sniper audits it with every answer moving, where it is ``k eps``-DP.)
    """

    registry_name = "prefix_sum"
    citation = "Wang, Ding, Wang, Kifer & Zhang 2019 (PLDI), PrefixSum"
    adjacency = "l1"
    default_k = 10

    def epsilon_bounds(self) -> tuple[float, float]:
        return (self.eps, self.eps)

    def _sample(self, a, size, rng):
        return np.cumsum(a + rng.laplace(0.0, 1.0 / self.eps, (size, self.k)), axis=1)

    def worst_case_pair(self) -> NeighbouringPair:
        """``[1, ..., 1]`` vs ``[2, 1, ..., 1]``: the first count moves every prefix sum."""
        d = [1.0] * self.k
        return self._pair(d, [2.0] + d[1:], "first count 1 vs 2")


class NoisyPrefixSums(PrefixSum):
    """Noise added to every prefix sum instead of every count: ``cumsum(a) + Lap(1/eps)`` per
    entry. Changing the first count moves all ``k`` sums, so this is the Laplace mechanism with
    ``l1`` sensitivity ``k``: true ``eps`` exactly ``k eps`` (the ratio ``e^(k eps)`` is attained
    where every output lies below both sums).
    """

    registry_name = "noisy_prefix_sums"
    citation = "the classic continual-counting mistake (cf. Chan, Shi & Song 2011)"

    def epsilon_bounds(self) -> tuple[float, float]:
        return (self.k * self.eps, self.k * self.eps)

    def _sample(self, a, size, rng):
        return np.cumsum(a) + rng.laplace(0.0, 1.0 / self.eps, (size, self.k))


# ----------------------------------------------------------------------- Laplace variants

_TWO52 = 2.0**52
_INV53 = 2.0**-53


def _naive_laplace(x: float, u: np.ndarray, scale: float) -> np.ndarray:
    """``x + noise`` with the textbook inverse-CDF sampler on a 53-bit uniform ``u`` in [0, 1)
    (numpy's ``laplace`` uses the same algorithm): ``scale log(2u)`` below 1/2,
    ``-scale log(2 - 2u)`` above."""
    with np.errstate(divide="ignore"):
        noise = np.where(u < 0.5, scale * np.log(u + u), -scale * np.log(2.0 - u - u))
    return x + noise


class LaplaceFloat(FlawedMechanism):
    """The Laplace mechanism implemented naively in double precision (Mironov 2012).

    ``y = a + noise`` with the inverse-CDF sampler on a 53-bit uniform. The set of doubles the
    sampler can produce is sparse and depends on ``a``: most doubles near ``1 + n`` cannot be
    written ``n'`` for any producible noise ``n'``. Outputs on ``a' = 1`` that ``a = 0`` can never
    produce have positive probability, so the true ``eps`` is infinite (Mironov 2012's attack on
    the textbook sampler).
    :meth:`in_support` decides exactly whether an output can occur on a given answer (it redoes
    the sampler's arithmetic for the few uniforms near the inverse), and :meth:`features` turns it
    into the distinguishing statistic ``1[y producible on a'] - 1[y producible on a]``.
    """

    registry_name = "laplace_float"
    citation = "Mironov 2012, On significance of the least significant bits for DP"
    default_k = 1
    #: Uniforms checked on each side of the inverse (the inverse is accurate to a few units).
    window = 8

    @property
    def scale(self) -> float:
        """Laplace scale ``1/eps`` (sensitivity one)."""
        return 1.0 / self.eps

    def epsilon_bounds(self) -> tuple[float, float]:
        return (math.inf, math.inf)

    def _uniforms(self, size: int, rng: np.random.Generator) -> np.ndarray:
        u = rng.random(size)
        zero = u == 0.0
        while zero.any():  # u = 0 (probability 2^-53) is rejected, as numpy does
            u[zero] = rng.random(int(zero.sum()))
            zero = u == 0.0
        return u

    def _sample(self, a, size, rng):
        return _naive_laplace(float(a[0]), self._uniforms(size, rng), self.scale)

    def in_support(self, answer: float, outputs: np.ndarray) -> np.ndarray:
        """Whether each output can be produced on the query answer ``answer``.

        The sampler's arithmetic is redone for the ``2 * window + 1`` uniforms nearest to the
        inverse of each output (branch ``u < 1/2`` for outputs at or below the answer,
        ``u >= 1/2`` at or above it). For the default parameters every output sampled on
        ``answer`` is recognised (tested); a miss could only weaken an attack, never a bound.
        """
        y = np.asarray(outputs, dtype=float).reshape(-1)
        x = float(answer)
        b = self.scale
        offsets = np.arange(-self.window, self.window + 1, dtype=np.float64)
        hit = np.zeros(y.size, dtype=bool)
        for low in (True, False):
            sel = np.flatnonzero(y <= x) if low else np.flatnonzero(y >= x)
            # u < 1/2: y = x + b log(2u), 2u = k 2^-52, k in [1, 2^52);
            # u >= 1/2: y = x - b log(2 - 2u), 2 - 2u = m 2^-52, m in [1, 2^52].
            exponent = (y[sel] - x) / b if low else (x - y[sel]) / b
            base = np.floor(np.exp(np.minimum(exponent, 0.0)) * _TWO52)
            cand = np.clip(base[:, None] + offsets, 1.0, _TWO52 - 1.0 if low else _TWO52)
            u = cand * _INV53 if low else (2.0**53 - cand) * _INV53
            hit[sel] |= (_naive_laplace(x, u, b) == y[sel, None]).any(axis=1)
        return hit

    def features(self, pair: NeighbouringPair) -> Callable[[np.ndarray], np.ndarray]:
        """``1[y producible on d_prime] - 1[y producible on d]`` for every output."""
        a0, a1 = float(np.asarray(pair.d).ravel()[0]), float(np.asarray(pair.d_prime).ravel()[0])

        def support_difference(outputs: np.ndarray) -> np.ndarray:
            y = np.asarray(outputs, dtype=float).reshape(-1)
            return self.in_support(a1, y).astype(float) - self.in_support(a0, y).astype(float)

        return support_difference

    def worst_case_pair(self) -> NeighbouringPair:
        """``[0]`` vs ``[1]``."""
        return self._pair([0.0], [1.0], "answer 0 vs 1")


class LaplaceSkippedNoise(FlawedMechanism):
    """A Laplace mechanism whose noise is skipped with probability ``leak`` (a rare code path,
    e.g. a cache or an error handler, returning the exact answer). True ``eps`` infinite in exact
    arithmetic: the atom at the exact answer ``a`` has probability at least ``leak`` under ``a`` and
    zero under ``a' != a``. (In double precision the atom has probability of order ``2^-53`` under
    ``a'``, when the noise happens to equal ``a - a'`` exactly; the leak is still enormous.)
    """

    registry_name = "laplace_skipped_noise"
    citation = "rare-event leak; cf. the noise-free code paths found by Ding et al. 2018"
    default_k = 1

    def __init__(self, eps: float = 0.1, k: int | None = None, leak: float = 1e-3) -> None:
        super().__init__(eps, k)
        self.leak = check_probability("leak", leak, low_open=True)

    def params(self) -> dict[str, Any]:
        """Registry name, ``eps``, ``k`` and ``leak``."""
        return {**super().params(), "leak": self.leak}

    def epsilon_bounds(self) -> tuple[float, float]:
        return (math.inf, math.inf)

    def _sample(self, a, size, rng):
        noise = rng.laplace(0.0, 1.0 / self.eps, size)
        skipped = rng.random(size) < self.leak
        return a[0] + np.where(skipped, 0.0, noise)

    def worst_case_pair(self) -> NeighbouringPair:
        """``[0]`` vs ``[1]``."""
        return self._pair([0.0], [1.0], "answer 0 vs 1")


# ------------------------------------------------------------------- randomized response


class RandomizedResponseBinary(FlawedMechanism):
    """Binary randomized response (Warner 1965): report the bit with probability
    ``e^eps/(1 + e^eps)``, else its complement. Correct; true ``eps`` exactly ``eps``. The dataset
    is one category in ``{0, ..., m - 1}`` (``m = 2`` here).
    """

    registry_name = "randomized_response"
    citation = "Warner 1965"
    default_k = 1
    categories = 2

    def _keep(self) -> float:
        return math.exp(self.eps) / (1.0 + math.exp(self.eps))

    def epsilon_bounds(self) -> tuple[float, float]:
        # keep / (other / (m - 1)) = e^eps (m - 1)
        value = self.eps + math.log(self.categories - 1)
        return (value, value)

    def _answers(self, dataset: object) -> np.ndarray:
        a = super()._answers(dataset)
        ok = (a == np.round(a)) & (a >= 0) & (a < self.categories)
        if not ok.all():
            raise ValueError(
                f"dataset must hold one category in [0, {self.categories - 1}], got {a.tolist()}"
            )
        return a

    def _sample(self, a, size, rng):
        x = int(a[0])
        keep = rng.random(size) < self._keep()
        other = (x + rng.integers(1, self.categories, size)) % self.categories
        return np.where(keep, x, other)

    def worst_case_pair(self) -> NeighbouringPair:
        """Category 0 vs category 1."""
        return self._pair([0.0], [1.0], "category 0 vs 1")


class RandomizedResponseBinaryFormula(RandomizedResponseBinary):
    """``m``-ary randomized response that keeps the truth with the *binary* probability
    ``e^eps/(1 + e^eps)`` and otherwise reports one of the ``m - 1`` other categories. The ratio
    of "truth" to "a given other category" is ``e^eps (m - 1)``: true ``eps`` exactly
    ``eps + log(m - 1)`` (the correct probability is ``e^eps/(e^eps + m - 1)``; Kairouz, Oh &
    Viswanath 2016).
    """

    registry_name = "randomized_response_binary_formula"
    citation = "Kairouz, Oh & Viswanath 2016 (correct k-ary form)"

    def __init__(self, eps: float = 0.1, k: int | None = None, m: int = 4) -> None:
        super().__init__(eps, k)
        self.categories = check_integer("m", m, minimum=2)

    def params(self) -> dict[str, Any]:
        """Registry name, ``eps``, ``k`` and the number of categories ``m``."""
        return {**super().params(), "m": self.categories}


# --------------------------------------------------------------------------- delta leaks
# Mechanisms that claim (eps, delta)-DP with a small delta and leak through exact output events
# that a smooth score cannot see (the events the delta-leak attack looks for).


class DeltaLeakMechanism(FlawedMechanism):
    """Base class of mechanisms that claim ``(eps, claimed_delta)``-DP and leak through an exact
    output event. Their true privacy is not ``(eps', claimed_delta)`` for any ``eps'``: an event
    ``E`` with ``P_D(E) = 0`` and ``P_D'(E) > claimed_delta`` exists (proved per class), so
    :meth:`epsilon_bounds` is ``(inf, inf)`` at ``delta = claimed_delta``."""

    default_k = 1
    #: The ``delta`` of the claim.
    claimed_delta: float = 1e-6

    def epsilon_bounds(self) -> tuple[float, float]:
        """``(inf, inf)``: no ``eps`` makes the mechanism ``(eps, claimed_delta)``-DP."""
        return (math.inf, math.inf)

    def _theories(self) -> dict[str, Callable[[], PrivacyProfile]]:
        """``claim``: the claimed ``(eps, claimed_delta)``-DP (not a proven bound)."""
        curve = approx_dp(self.eps, self.claimed_delta)
        return {"claim": lambda: _DeltaClaimProfile(curve, self.eps, self.claimed_delta)}

    def claimed_curve(self) -> TradeoffCurve:
        """The claim as a trade-off curve."""
        return approx_dp(self.eps, self.claimed_delta)

    def worst_case_pair(self) -> NeighbouringPair:
        """``[0]`` vs ``[1]``."""
        return self._pair([0.0], [1.0], "answer 0 vs 1")


class _DeltaClaimProfile:
    """A claimed ``(eps, delta)``-DP guarantee as a privacy profile."""

    def __init__(self, curve: TradeoffCurve, eps: float, delta: float) -> None:
        self.curve, self.eps, self.delta0 = curve, eps, delta

    def delta(self, eps: float | np.ndarray) -> np.ndarray | float:
        return self.curve.delta(eps)

    def epsilon(self, delta: float) -> float:
        return self.eps if delta >= self.delta0 else math.inf

    def tradeoff(self) -> TradeoffCurve:
        return self.curve


class LaplaceRareExactAnswer(DeltaLeakMechanism):
    """Laplace mechanism ``a + Lap(1/eps)`` that, with probability ``leak`` (default ``1e-4``),
    publishes the exact answer ``a`` (a cache hit or an error path skipping the noise).

    On the pair ``a = 0`` vs ``a' = 1`` the event ``E = {y = 1}`` has ``P_a'(E) >= leak`` and
    ``P_a(E) = P(Lap = 1) = 0`` in exact arithmetic (in double precision at most ``2^-53``
    times the noise density bound, far below ``1e-12``), so with ``leak > claimed_delta`` the
    claim fails for every ``eps``.
    """

    registry_name = "laplace_rare_exact_answer"
    citation = "rare noise-free code path; cf. Ding et al. 2018 and Lokna et al. 2023"
    default_leak = 1e-4

    def __init__(self, eps: float = 0.1, k: int | None = None, leak: float | None = None) -> None:
        super().__init__(eps, k)
        value = self.default_leak if leak is None else leak
        self.leak = check_probability("leak", value, low_open=True)

    def params(self) -> dict[str, Any]:
        """Registry name, ``eps``, ``k`` and ``leak``."""
        return {**super().params(), "leak": self.leak}

    def _sample(self, a, size, rng):
        noise = rng.laplace(0.0, 1.0 / self.eps, size)
        exact = rng.random(size) < self.leak
        return a[0] + np.where(exact, 0.0, noise)


class LaplacePairExactCoordinate(LaplaceRareExactAnswer):
    """Two-coordinate release ``(a + Lap, a + Lap)`` (independent noise, ``eps/2`` each) whose
    second coordinate is, with probability ``leak`` (default ``1e-3``), the exact answer ``a``.

    On ``a = 0`` vs ``a' = 1`` the event ``E = {y_2 = 1}`` has ``P_a'(E) >= leak`` and
    ``P_a(E) = 0`` (exact arithmetic), so the ``(eps, claimed_delta)`` claim fails for every
    ``eps`` when ``leak > claimed_delta``. Whole output rows never repeat (the first
    coordinate is continuous): only the per-coordinate event shows the leak.
    """

    registry_name = "laplace_pair_exact_coordinate"
    citation = "exact value in one coordinate of a vector release"
    default_leak = 1e-3

    def _sample(self, a, size, rng):
        scale = 2.0 / self.eps
        first = a[0] + rng.laplace(0.0, scale, size)
        second = a[0] + rng.laplace(0.0, scale, size)
        exact = rng.random(size) < self.leak
        return np.column_stack([first, np.where(exact, a[0], second)])


class NoisyHistZeroBinUnnoised(DeltaLeakMechanism):
    """Noisy histogram ``a + Lap(1/eps)`` per count that releases a count of zero as an exact
    ``0`` (an "empty bins stay empty" shortcut).

    On ``[1, 0, 1, ...]`` vs ``[1, 1, 1, ...]`` (one count moves by one) the event
    ``E = {y_2 = 0}`` has ``P_D(E) = 1`` and ``P_D'(E) = P(1 + Lap = 0) = 0``: not
    ``(eps', delta)``-DP for any ``eps'`` and ``delta < 1``.
    """

    registry_name = "noisy_hist_zero_bin_unnoised"
    citation = "empty-bin shortcut in a noisy histogram"
    adjacency = "l1"
    default_k = 5

    def _sample(self, a, size, rng):
        noisy = a + rng.laplace(0.0, 1.0 / self.eps, (size, self.k))
        return np.where(a == 0.0, 0.0, noisy)

    def worst_case_pair(self) -> NeighbouringPair:
        """``[1, 0, 1, ...]`` vs ``[1, 1, 1, ...]``."""
        d_prime = [1.0] * self.k
        d = list(d_prime)
        d[min(1, self.k - 1)] = 0.0
        return self._pair(d, d_prime, "second count 0 vs 1")


# ------------------------------------------------------------------ DP-Auditorium test material
#
# Mechanisms re-implemented from the test material of Google's DP-Auditorium
# (github.com/google/differential-privacy, python/dp_auditorium/dp_auditorium/mechanisms/),
# audited there as black boxes. Each class names its source file and the flaw it has.


class DPAuditoriumMeanNoisyScale(FlawedMechanism):
    """Mean of records clipped to ``[0, 1]`` whose noise scale is computed from a *noisy count*
    and clipped below at ``1e-12`` (DP-Auditorium, ``mechanisms/mean.py``, ``MeanMechanism`` with
    noised counts for the noise scale). Half the budget buys ``n~ = n + Lap(2/eps)``, the other
    half ``Lap(s)`` with ``s = max(1e-12, 2 / (eps n~))`` added to ``sum / n``.

    Flaw: when ``n~ <= 0`` the scale becomes ``1e-12`` and the exact mean is released. With
    ``D = [1]`` and ``D' = [1, 0]`` (add one record): ``P_D(|y - 1| <= w) >= P(Lap(2/eps) <= -1)
    = e^(-eps/2) / 2`` (the ``Lap(1e-12)`` noise exceeds ``w = 1e-9`` with probability
    ``e^-1000``), while under ``D'`` the output is ``1/2 + Lap(s)`` and a Laplace density at
    distance ``1/2 - w`` is at most ``1 / (2 e (1/2 - w))`` whatever ``s``, so
    ``P_D'(|y - 1| <= w) <= w / (e (1/2 - w))``. The ratio proves ``eps >= log(e^(1 - eps/2)
    (1/2 - w) / (2 w))`` (``19.8`` at ``eps = 1``); no finite upper bound is known.
    Dataset: the records (any length); neighbours add or remove one record.
    """

    registry_name = "dpa_mean_noisy_scale"
    citation = "DP-Auditorium, python/dp_auditorium/dp_auditorium/mechanisms/mean.py"
    adjacency = "add_remove"
    relation = "add_remove"
    default_k = 1
    #: The clipped noise scale of the source.
    floor = 1e-12

    def epsilon_bounds(self) -> tuple[float, float]:
        w = 1e-9
        lower = 1.0 - self.eps / 2.0 + math.log((0.5 - w) / (2.0 * w))
        return (lower, math.inf)

    def _answers(self, dataset: object) -> np.ndarray:
        try:
            x = np.asarray(dataset, dtype=float)
        except (TypeError, ValueError) as exc:
            kind = type(dataset).__name__
            raise ValueError(f"dataset must be a vector of records, got {kind}") from exc
        if x.ndim != 1 or x.size < 1 or not np.isfinite(x).all():
            raise ValueError(
                f"dataset must be a non-empty vector of finite records for {self.name}"
            )
        return np.clip(x, 0.0, 1.0)

    def _sample(self, a, size, rng):
        n = a.size
        noisy_count = n + rng.laplace(0.0, 2.0 / self.eps, size)
        with np.errstate(divide="ignore"):
            scale = np.maximum(self.floor, 2.0 / (self.eps * noisy_count))
        return a.sum() / n + rng.laplace(0.0, 1.0, size) * scale

    def worst_case_pair(self) -> NeighbouringPair:
        """``[1]`` vs ``[1, 0]``: a second record, and a count small enough to go negative."""
        return NeighbouringPair(
            np.array([1.0]), np.array([1.0, 0.0]), "add_remove", "one record vs one added"
        )


class DPAuditoriumSVTRevealRecords(SparseVectorLeeClifton):
    """Sparse vector with binary answers, threshold noise ``Lap(4/eps)`` and query noise
    ``Lap(4/(3 eps))`` whatever the cutoff ``c`` (DP-Auditorium,
    ``mechanisms/sparse_vector_technique.py``, ``SVT4``; Lyu et al. 2017, Algorithm 4), on
    DP-Auditorium's "reveal records" query: the first ``k - 1`` queries answer the last record,
    the last query the record before it, so the records ``[0, 1]`` and ``[0, 1, 0]`` (one record
    added) give the answers ``[1, ..., 1, 0]`` and ``[0, ..., 0, 1]``.

    Flaw: the stated ``eps`` guarantee does not hold, not even for ``c = 1``: Lyu et al. 2017
    prove ``((1 + 6c)/4) eps`` (``1.75 eps`` for ``c = 1``), the upper bound used here. No lower
    bound is proved here; audits certify more than ``eps``.
    """

    registry_name = "dpa_svt_reveal_records"
    citation = (
        "DP-Auditorium, python/dp_auditorium/dp_auditorium/mechanisms/sparse_vector_technique.py"
    )
    default_threshold = 0.5
    proven_lower: dict = {}

    def worst_case_pair(self) -> NeighbouringPair:
        """``[1, ..., 1, 0]`` vs ``[0, ..., 0, 1]`` (the reveal-records query on ``[0, 1]`` and
        ``[0, 1, 0]``)."""
        k = self.k
        return self._pair(
            [1.0] * (k - 1) + [0.0], [0.0] * (k - 1) + [1.0], "reveal-records query, one added"
        )


class DPAuditoriumNoisyMaxGumbel(FlawedMechanism):
    """Noisy max with Gumbel noise: the index of the largest ``count_i + Gumbel(2/eps)``
    (DP-Auditorium, ``mechanisms/noisy_max.py``, ``NoisyMaxMechanism``). Correct: it samples
    index ``i`` with probability proportional to ``exp(eps count_i / 2)`` (the exponential
    mechanism); one record raises one count by one, which multiplies one weight by ``e^(eps/2)``
    and the normaliser by at most that, so every probability changes by at most ``e^(eps/2)``:
    the true ``eps`` is at most ``eps/2``. Counts as the dataset, histogram neighbours.
    """

    registry_name = "dpa_noisy_max_gumbel"
    citation = "DP-Auditorium, python/dp_auditorium/dp_auditorium/mechanisms/noisy_max.py"
    adjacency = "l1"

    def epsilon_bounds(self) -> tuple[float, float]:
        return (0.0, self.eps / 2.0)

    def _sample(self, a, size, rng):
        noisy = a + rng.gumbel(0.0, 2.0 / self.eps, (size, a.size))
        return np.argmax(noisy, axis=1)

    def worst_case_pair(self) -> NeighbouringPair:
        """All counts zero vs the first count one."""
        d_prime = [1.0] + [0.0] * (self.k - 1)
        return self._pair([0.0] * self.k, d_prime, "one record added to the first count")


#: The mechanisms of the block above (DP-Auditorium's test material).
DP_AUDITORIUM = (
    DPAuditoriumMeanNoisyScale,
    DPAuditoriumSVTRevealRecords,
    DPAuditoriumNoisyMaxGumbel,
)


# ------------------------------------------------------------------------------ registry

#: Registry name -> class (spec kind ``flawed``, ``dpaudit list``).
FLAWED: dict[str, type[FlawedMechanism]] = {
    cls.registry_name: cls
    for cls in (
        NoisyHist,
        NoisyHistWrongScale,
        ReportNoisyMax,
        ReportNoisyMaxExponential,
        ReportNoisyMaxValue,
        ReportNoisyMaxExponentialValue,
        SparseVector,
        SparseVectorDworkRoth,
        SparseVectorOutputsNoisyValue,
        SparseVectorLeeClifton,
        SparseVectorThresholdNoiseOnly,
        SparseVectorNoCutoff,
        SparseVectorNoThresholdNoise,
        PrefixSum,
        NoisyPrefixSums,
        LaplaceFloat,
        LaplaceSkippedNoise,
        RandomizedResponseBinary,
        RandomizedResponseBinaryFormula,
        LaplaceRareExactAnswer,
        LaplacePairExactCoordinate,
        NoisyHistZeroBinUnnoised,
        *DP_AUDITORIUM,
    )
}

#: Best published lower bounds on ``eps`` at claimed ``eps = 0.1`` and the default sizes, with
#: their source: the reference results released with Bichsel et al. 2021 (DP-Sniper,
#: ``eval_sp2021/reference-results``: DD-Search with logistic regression and with a neural
#: network, and StatDP-Fixed run by the same authors), best of the three. ``None``: not audited
#: there (or audited under another neighbouring notion).
PUBLISHED: dict[str, tuple[float, str] | None] = {
    "noisy_hist": (0.0978, "DP-Sniper (logistic regression)"),
    "noisy_hist_wrong_scale": (9.717, "StatDP-Fixed, run in the DP-Sniper evaluation"),
    "report_noisy_max": (0.0925, "DP-Sniper (neural network)"),
    "report_noisy_max_exponential": (0.0996, "StatDP-Fixed, run in the DP-Sniper evaluation"),
    "report_noisy_max_value": (0.2488, "DP-Sniper (neural network)"),
    "report_noisy_max_exponential_value": (0.3534, "DP-Sniper (neural network)"),
    "svt": (0.0858, "DP-Sniper (logistic regression)"),
    "svt_dwork_roth": None,
    "svt_outputs_noisy_value": (0.1822, "DP-Sniper (neural network)"),
    "svt_lee_clifton": (0.1709, "StatDP-Fixed, run in the DP-Sniper evaluation"),
    "svt_threshold_noise_only": (14.31, "StatDP-Fixed, run in the DP-Sniper evaluation"),
    "svt_no_cutoff": (0.3220, "StatDP-Fixed, run in the DP-Sniper evaluation"),
    "svt_no_threshold_noise": None,
    "prefix_sum": None,
    "noisy_prefix_sums": None,
    "laplace_float": (0.2521, "DP-Sniper (neural network on bit patterns)"),
    "laplace_skipped_noise": None,
    "randomized_response": None,
    "randomized_response_binary_formula": None,
    "laplace_rare_exact_answer": None,
    "laplace_pair_exact_coordinate": None,
    "noisy_hist_zero_bin_unnoised": None,
    "dpa_mean_noisy_scale": None,
    "dpa_svt_reveal_records": None,
    "dpa_noisy_max_gumbel": None,
}


def flawed(name: str, eps: float = 0.1, **params: Any) -> FlawedMechanism:
    """Build the flawed mechanism registered as ``name`` (see :data:`FLAWED`)."""
    if name not in FLAWED:
        raise ValueError(f"name must be one of {', '.join(map(repr, FLAWED))}; got {name!r}")
    try:
        return FLAWED[name](eps, **params)
    except TypeError as exc:
        raise ValueError(
            f"flawed mechanism {name!r} does not take {sorted(params)}: {exc}"
        ) from None
