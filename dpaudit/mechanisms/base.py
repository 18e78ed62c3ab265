"""What every audited mechanism offers: sampling, a worst-case neighbouring pair, and its theory.

A mechanism ``M`` is audited on a :class:`NeighbouringPair` ``(D, D_prime)``: the engine draws
``M(D)`` and ``M(D_prime)`` many times. Reference mechanisms also know their densities
(``log_density``, used by the Neyman-Pearson attack) and their theoretical privacy, exposed in one
vocabulary: ``delta(eps, method=...)``, ``epsilon(delta, method=...)``, ``tradeoff(method=...)``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dpaudit.bounds.tradeoff import TradeoffCurve
from dpaudit.bounds.validation import check_choice, check_integer, check_probability

__all__ = [
    "RELATIONS",
    "METHOD_KINDS",
    "NeighbouringPair",
    "PrivacyProfile",
    "Mechanism",
    "check_size",
]

#: ``add_remove``: ``D_prime = D + {target}``; ``replace_one``: one record of ``D`` replaced.
RELATIONS = ("add_remove", "replace_one")

#: Every theory method and what kind of statement it makes about the mechanism.
METHOD_KINDS: dict[str, str] = {
    "exact": "exact",
    "pld": "bound",
    "rdp": "bound",
    "gdp_clt": "approximation",
    "berry_esseen": "bound",
    "advanced": "bound",
    "kov": "bound",
}


@dataclass(frozen=True)
class NeighbouringPair:
    """Two neighbouring datasets ``d`` (``D``) and ``d_prime`` (``D_prime``) and their relation.

    ``P = M(d)`` and ``Q = M(d_prime)``; attack scores are "larger means ``d_prime``".
    """

    d: np.ndarray
    d_prime: np.ndarray
    relation: str = "add_remove"
    description: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "d", np.asarray(self.d))
        object.__setattr__(self, "d_prime", np.asarray(self.d_prime))
        check_choice("relation", self.relation, RELATIONS)
        nd, ndp = self.d.shape[0] if self.d.ndim else 1, self.d_prime.shape[0] if self.d_prime.ndim else 1
        if self.relation == "add_remove" and abs(nd - ndp) != 1:
            raise ValueError(
                f"relation 'add_remove' needs datasets whose sizes differ by one, got {nd} and {ndp}"
            )
        if self.relation == "replace_one" and nd != ndp:
            raise ValueError(
                f"relation 'replace_one' needs datasets of equal size, got {nd} and {ndp}"
            )

    def swapped(self) -> NeighbouringPair:
        """The same pair in the other order (``D_prime`` first): f-DP is checked in both orders."""
        return NeighbouringPair(self.d_prime, self.d, self.relation, self.description)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready description of the pair."""
        return {
            "d": self.d.tolist(),
            "d_prime": self.d_prime.tolist(),
            "relation": self.relation,
            "description": self.description,
        }


@runtime_checkable
class PrivacyProfile(Protocol):
    """Anything that states a privacy guarantee in the three comparable forms."""

    def delta(self, eps: float | np.ndarray) -> np.ndarray | float:
        """delta(eps) for eps >= 0."""

    def epsilon(self, delta: float) -> float:
        """Smallest eps with delta(eps) <= delta."""

    def tradeoff(self) -> TradeoffCurve:
        """The trade-off curve implied by the guarantee."""


class Mechanism(ABC):
    """Base class of every mechanism dpaudit can audit.

    Subclasses implement :meth:`sample` and :meth:`worst_case_pair`, and where theory exists
    :meth:`_theories` (method name -> zero-argument factory of a :class:`PrivacyProfile`).
    """

    #: Neighbouring relation the mechanism's guarantee refers to.
    relation: str = "add_remove"

    @abstractmethod
    def sample(self, dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        """Draw ``size`` independent outputs of the mechanism on ``dataset`` (axis 0 = trials)."""

    @abstractmethod
    def worst_case_pair(self) -> NeighbouringPair:
        """The neighbouring pair on which the mechanism's privacy loss is largest."""

    def log_density(self, dataset: np.ndarray, outputs: np.ndarray) -> np.ndarray:
        """Log density (or log probability mass) of each output on ``dataset``, shape ``(size,)``."""
        raise NotImplementedError(f"{type(self).__name__} does not know its density")

    def params(self) -> dict[str, Any]:
        """The constructor parameters, JSON-ready (used in results and reports)."""
        return {}

    @property
    def name(self) -> str:
        """Short label, e.g. ``Gaussian(sigma=1.0)``."""
        inner = ", ".join(f"{k}={v}" for k, v in self.params().items() if not isinstance(v, dict))
        return f"{type(self).__name__}({inner})"

    def _theories(self) -> dict[str, Callable[[], PrivacyProfile]]:
        """Method name -> factory of the corresponding privacy profile. Override."""
        return {}

    @property
    def theory_methods(self) -> tuple[str, ...]:
        """The theory methods that apply to this mechanism."""
        return tuple(self._theories())

    def theory(self, method: str | None = None) -> PrivacyProfile:
        """The privacy profile computed by ``method`` (one of :attr:`theory_methods`).

        ``None`` selects the first (tightest) method the mechanism offers.
        """
        factories = self._theories()
        if method is None and factories:
            method = next(iter(factories))
        if method not in factories:
            valid = ", ".join(map(repr, factories)) or "none"
            raise ValueError(
                f"method {method!r} does not apply to {self.name}; valid methods: {valid}"
            )
        return factories[method]()

    def delta(self, eps: float | np.ndarray, method: str | None = None) -> np.ndarray | float:
        """Theoretical delta(eps) by ``method``."""
        return self.theory(method).delta(eps)

    def epsilon(self, delta: float, method: str | None = None) -> float:
        """Theoretical eps at ``delta`` by ``method``."""
        check_probability("delta", delta)
        return self.theory(method).epsilon(delta)

    def tradeoff(self, method: str | None = None) -> TradeoffCurve:
        """Theoretical trade-off curve by ``method``."""
        return self.theory(method).tradeoff()


def check_size(size: object) -> int:
    """Validate the ``size`` argument of :meth:`Mechanism.sample`."""
    return check_integer("size", size, minimum=0)
