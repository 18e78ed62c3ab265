"""The base class of the flawed-mechanism catalogue: a mechanism on a vector of query answers that
claims ``(eps, claimed_delta)``-DP, with proven bounds on its true ``eps``.

Conventions (as in Ding et al. 2018 and Lyu, Su & Li 2017): the *dataset* is the vector of true
query answers ``a`` (one entry per query, sensitivity one). For query mechanisms (report noisy
max, sparse vector) neighbouring vectors differ by at most one in every entry (``|a_i - a'_i| <=
1``); for histograms and prefix sums one count changes by one (``||a - a'||_1 <= 1``). Pairs have
the same length, so their relation is ``replace_one``. Each mechanism's
:meth:`~FlawedMechanism.worst_case_pair` is the pair on which its leak is largest (or the pair
StatDP and DP-Sniper report).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from dpaudit._core.validation import as_float_array, check_integer, check_positive
from dpaudit.bounds.tradeoff import TradeoffCurve, approx_dp
from dpaudit.mechanisms.base import (
    Mechanism,
    NeighbouringPair,
    PrivacyProfile,
    check_rng,
    check_size,
)

__all__ = ["FlawedMechanism", "claimed_curve"]


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
    """A claimed ``(eps, delta)``-DP guarantee as a privacy profile (``curve``: the claim as a
    trade-off curve)."""

    def __init__(self, curve: TradeoffCurve, eps: float, delta: float) -> None:
        self.curve, self.eps, self.delta0 = curve, eps, delta

    def delta(self, eps: float | np.ndarray) -> np.ndarray | float:
        return self.curve.delta(eps)

    def epsilon(self, delta: float) -> float:
        return self.eps if delta >= self.delta0 else math.inf

    def tradeoff(self) -> TradeoffCurve:
        return self.curve


class FlawedMechanism(Mechanism):
    """Base class: a mechanism on a vector of query answers that claims ``(eps, 0)``-DP (or
    ``(eps, claimed_delta)``-DP when a subclass sets :attr:`claimed_delta`).

    Subclasses set :attr:`registry_name`, :attr:`citation`, implement :meth:`_sample`,
    :meth:`epsilon_bounds` and :meth:`worst_case_pair`. ``k`` is the number of queries (the
    length of every dataset).
    """

    relation = "replace_one"
    #: Name in :data:`~dpaudit.mechanisms.flawed.FLAWED` and in specs
    #: (``mechanism = { kind = "flawed", name = ... }``).
    registry_name: str = ""
    #: Where the mechanism (and its analysis) comes from.
    citation: str = ""
    #: Neighbouring notion: ``"linf"`` (every answer moves by at most one) or ``"l1"`` (one
    #: count moves by one).
    adjacency: str = "linf"
    #: Default number of queries.
    default_k: int = 5
    #: Smallest number of extra training outputs per dataset
    #: :func:`~dpaudit.audit.benchmark.run_benchmark` gives the learned attack on this mechanism
    #: (its ``train_trials`` when that is smaller).
    benchmark_train_trials: int = 0
    #: The ``delta`` of the claim.
    claimed_delta: float = 0.0

    #: Most queries ``k``: the datasets and every output hold ``k`` numbers in memory.
    max_k: int = 2**20

    def __init__(self, eps: float = 0.1, k: int | None = None) -> None:
        self.eps = check_positive("eps", eps)
        self.k = check_integer(
            "k", self.default_k if k is None else k, minimum=1, maximum=self.max_k
        )

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

    def _claim_curve(self) -> TradeoffCurve:
        """The claim as a trade-off curve (:func:`claimed_curve`)."""
        return claimed_curve(self.eps)

    def _theories(self) -> dict[str, Callable[[], PrivacyProfile]]:
        """``claim``: the claimed ``(eps, claimed_delta)``-DP (not a proven bound unless
        :attr:`correct`)."""
        return {"claim": lambda: _ClaimProfile(self._claim_curve(), self.eps, self.claimed_delta)}

    def features(self, pair: NeighbouringPair) -> Callable[[np.ndarray], np.ndarray] | None:
        """A distinguishing statistic for a learned attack when the flaw needs one (``None``:
        the outputs themselves suffice)."""
        return None

    def _answers(self, dataset: object) -> np.ndarray:
        a = as_float_array("dataset", dataset, "a vector of query answers")
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
