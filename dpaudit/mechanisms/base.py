"""What every audited mechanism offers: sampling, a worst-case neighbouring pair, and its theory.

A mechanism ``M`` is audited on a :class:`NeighbouringPair` ``(D, D_prime)``: the engine draws
``M(D)`` and ``M(D_prime)`` many times. Reference mechanisms also know their densities
(``log_density``, used by the Neyman-Pearson attack) and their theoretical privacy, exposed in one
vocabulary: ``delta(eps, method=...)``, ``epsilon(delta, method=...)``, ``tradeoff(method=...)``.
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dpaudit._core.device import has_twin
from dpaudit._core.validation import (
    as_float_array,
    check_choice,
    check_integer,
    check_positive,
    check_probability,
)
from dpaudit.bounds.tradeoff import TradeoffCurve

__all__ = [
    "RELATIONS",
    "Relation",
    "METHOD_KINDS",
    "NeighbouringPair",
    "PrivacyProfile",
    "CurveProfile",
    "Mechanism",
    "AdditiveNoiseMechanism",
    "check_size",
    "check_rng",
    "as_records",
    "check_outputs",
    "mechanism_spec",
]


class Relation(str, Enum):
    """The neighbouring relation of a pair: ``add_remove`` (``D_prime = D + {target}``) or
    ``replace_one`` (one record of ``D`` replaced).

    A string enum: a relation equals its value (``Relation.ADD_REMOVE == "add_remove"``), prints as
    its value and is written to JSON as its value, so specs and ``results.json`` keep their format.
    """

    ADD_REMOVE = "add_remove"
    REPLACE_ONE = "replace_one"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


#: The values of :class:`Relation`, as accepted wherever a relation is named.
RELATIONS = tuple(r.value for r in Relation)

#: Every theory method and what kind of statement it makes about the mechanism. A
#: ``prediction`` is exact for one canary and threat model and neither a bound nor a claim
#: otherwise (DP-SGD's ``last_iterate``: the final model with a Dirac canary).
METHOD_KINDS: dict[str, str] = {
    "exact": "exact",
    "pld": "bound",
    "rdp": "bound",
    "gdp_clt": "approximation",
    "berry_esseen": "bound",
    "advanced": "bound",
    "kov": "bound",
    "last_iterate": "prediction",
    "claim": "claim",
}


@dataclass(frozen=True)
class NeighbouringPair:
    """Two neighbouring datasets ``d`` (``D``) and ``d_prime`` (``D_prime``) and their relation.

    ``P = M(d)`` and ``Q = M(d_prime)``; attack scores are "larger means ``d_prime``".
    """

    d: np.ndarray
    d_prime: np.ndarray
    relation: Relation | str = Relation.ADD_REMOVE
    description: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        for side in ("d", "d_prime"):
            try:
                object.__setattr__(self, side, np.asarray(getattr(self, side)))
            except ValueError:  # a ragged nesting such as [[1, 2], [3]]
                raise ValueError(
                    f"{side} must be a dataset (an array of records of one shape), got a "
                    "ragged nesting"
                ) from None
        relation = Relation(check_choice("relation", self.relation, RELATIONS))
        object.__setattr__(self, "relation", relation)
        nd = self.d.shape[0] if self.d.ndim else 1
        ndp = self.d_prime.shape[0] if self.d_prime.ndim else 1
        if self.relation == "add_remove" and abs(nd - ndp) != 1:
            raise ValueError(
                "relation 'add_remove' needs datasets whose sizes differ by one, "
                f"got {nd} and {ndp}"
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
            "relation": self.relation.value,
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


class CurveProfile:
    """A trade-off curve seen as a :class:`PrivacyProfile`.

    ``f``-DP for a symmetric ``f`` is the same statement as ``(eps, delta(eps))``-DP for every
    ``eps >= 0`` with ``delta(eps) = 1 + f*(-e^eps)`` (Dong, Roth & Su 2022, Propositions 5 and 6);
    the curve computes that dual itself.
    """

    def __init__(self, curve: TradeoffCurve) -> None:
        self.curve = curve

    def __repr__(self) -> str:
        return f"<CurveProfile {self.curve.name} ({self.kind})>"

    @property
    def kind(self) -> str:
        """The curve's kind (exact, bound or approximation)."""
        return self.curve.kind

    def delta(self, eps: float | np.ndarray) -> np.ndarray | float:
        """delta(eps) of the curve, for eps >= 0."""
        return self.curve.delta(eps)

    def epsilon(self, delta: float) -> float:
        """Smallest eps >= 0 with delta(eps) <= delta."""
        return self.curve.epsilon(delta)

    def tradeoff(self) -> TradeoffCurve:
        """The curve itself."""
        return self.curve


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
        """Log density (or log mass) of each output on ``dataset``, shape ``(size,)``."""
        raise NotImplementedError(f"{type(self).__name__} does not know its density")

    def log_density_ratio(
        self, d: np.ndarray, d_prime: np.ndarray, outputs: np.ndarray
    ) -> np.ndarray:
        """``log q(y) - log p(y)`` with ``p`` the density on ``d`` and ``q`` on ``d_prime``.

        The default subtracts the two log densities. Mechanisms whose privacy loss has point
        masses override it with a closed form that is exact in floating point, so that the
        masses stay single values: a difference of nearly equal logs scatters them over
        neighbouring floats, and a threshold among those floats would test rounding noise.
        """
        with np.errstate(invalid="ignore"):
            log_q = np.asarray(self.log_density(d_prime, outputs), dtype=float)
            return log_q - np.asarray(self.log_density(d, outputs), dtype=float)

    def torch_log_density_ratio(self, d: np.ndarray, d_prime: np.ndarray, outputs: Any) -> Any:
        """The device twin of the default :meth:`log_density_ratio`: the difference of the two
        ``torch_log_density`` (the device twin of :meth:`log_density`), as a float64 tensor."""
        return self.torch_log_density(d_prime, outputs) - self.torch_log_density(d, outputs)

    def ratio_on_device(self) -> bool:
        """Whether :meth:`torch_log_density_ratio` is the device twin of the
        :meth:`log_density_ratio` in use (and, for the default one, ``torch_log_density`` of
        :meth:`log_density`): what the likelihood-ratio attack needs to score on a device."""
        if not has_twin(self, "log_density_ratio", "torch_log_density_ratio"):
            return False
        default = type(self).log_density_ratio is Mechanism.log_density_ratio
        return not default or has_twin(self, "log_density", "torch_log_density")

    def output_shape(self, dataset: np.ndarray) -> tuple[int, ...]:
        """Shape of one output on ``dataset`` (``sample`` returns ``(size,) + output_shape``).

        The default draws zero outputs; mechanisms that know their shape override it.
        """
        return tuple(self.sample(dataset, 0, np.random.default_rng(0)).shape[1:])

    def params(self) -> dict[str, Any]:
        """The constructor parameters, JSON-ready (used in results and reports)."""
        return {}

    def runs_on_device(self) -> bool:
        """Whether the mechanism samples on a torch device: a ``torch_sample(dataset, sizes,
        generators)`` defined in the class that defines :meth:`sample` (its device twin)."""
        return has_twin(self, "sample", "torch_sample")

    @property
    def name(self) -> str:
        """Short label, e.g. ``Gaussian(sigma=1.0)``."""
        inner = ", ".join(f"{k}={v}" for k, v in self.params().items() if not isinstance(v, dict))
        return f"{type(self).__name__}({inner})"

    def __repr__(self) -> str:
        return f"<{self.name}>"

    def __getstate__(self) -> dict[str, Any]:
        """Pickle without the cached theory (workers rebuild it on demand; PLDs can be large)."""
        state = self.__dict__.copy()
        state.pop("_theory_cache", None)
        return state

    def _theories(self) -> dict[str, Callable[[], PrivacyProfile]]:
        """Method name -> factory of the corresponding privacy profile. Override."""
        return {}

    @property
    def theory_methods(self) -> tuple[str, ...]:
        """The theory methods that apply to this mechanism."""
        return tuple(self._theories())

    def theory(self, method: str | None = None) -> PrivacyProfile:
        """The privacy profile computed by ``method`` (one of :attr:`theory_methods`).

        ``None`` selects the first (tightest) method the mechanism offers. Profiles are built
        on first use and kept: the same mechanism object returns the same profile object.
        """
        factories = self._theories()
        if method is None and factories:
            method = next(iter(factories))
        if method not in factories:
            valid = ", ".join(map(repr, factories)) or "none"
            raise ValueError(
                f"method {method!r} does not apply to {self.name}; valid methods: {valid}"
            )
        cache = self.__dict__.setdefault("_theory_cache", {})
        if method not in cache:
            cache[method] = factories[method]()
        return cache[method]

    def delta(self, eps: float | np.ndarray, method: str | None = None) -> np.ndarray | float:
        """Theoretical delta(eps) by ``method``: a float for a scalar ``eps``, else an array."""
        out = self.theory(method).delta(eps)
        return float(out) if np.ndim(out) == 0 else np.asarray(out, dtype=float)

    def epsilon(self, delta: float, method: str | None = None) -> float:
        """Theoretical eps at ``delta`` by ``method``."""
        check_probability("delta", delta)
        return float(self.theory(method).epsilon(delta))

    def tradeoff(self, method: str | None = None) -> TradeoffCurve:
        """Theoretical trade-off curve by ``method``."""
        return self.theory(method).tradeoff()


def check_size(size: object) -> int:
    """Validate the ``size`` argument of :meth:`Mechanism.sample`."""
    return check_integer("size", size, minimum=0)


def check_rng(rng: object) -> np.random.Generator:
    """Validate the ``rng`` argument of :meth:`Mechanism.sample` (a ``numpy.random.Generator``)."""
    if not isinstance(rng, np.random.Generator):
        raise ValueError(
            f"rng must be a numpy.random.Generator (e.g. numpy.random.default_rng(seed)), "
            f"got {type(rng).__name__}"
        )
    return rng


def as_records(dataset: object, name: str = "dataset") -> np.ndarray:
    """Return ``dataset`` as a float array of records: shape ``(n,)`` (scalar records) or
    ``(n, d)`` (vector records), every entry finite. Anything else raises ``ValueError``."""
    records = as_float_array(name, dataset)
    if records.ndim not in (1, 2):
        raise ValueError(
            f"{name} must have shape (n,) or (n, d) (axis 0 = records), got shape {records.shape}"
        )
    if not np.isfinite(records).all():
        raise ValueError(f"{name} must contain only finite numbers, got NaN or inf")
    return records


def _snake_case(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def mechanism_spec(mechanism: Mechanism) -> dict[str, Any]:
    """``{"kind": <class name in snake case>, **params}``: how a mechanism nested inside another
    one (a subsampled or composed mechanism) appears in :meth:`Mechanism.params`."""
    return {"kind": _snake_case(type(mechanism).__name__), **mechanism.params()}


class AdditiveNoiseMechanism(Mechanism):
    """A noisy sum query: each record is clipped to norm ``sensitivity``, the clipped records are
    summed, and independent noise is added to every coordinate.

    Clipping makes the claimed sensitivity hold by construction: adding or removing one record
    moves the sum by at most ``sensitivity`` in the mechanism's norm (``norm_order``: 1 for
    Laplace, 2 for Gaussian; the absolute value for scalar records). Datasets are arrays of shape
    ``(n,)`` (outputs of shape ``(size,)``) or ``(n, d)`` (outputs of shape ``(size, d)``).

    Subclasses set ``norm_order`` and implement :meth:`noise` and :meth:`noise_logpdf`; the
    subsampled mechanisms reuse :meth:`clip` and the noise of their base.
    """

    relation = "add_remove"

    #: Norm in which records are clipped (1 or 2).
    norm_order: int = 2

    def __init__(self, sensitivity: float) -> None:
        self.sensitivity = check_positive("sensitivity", sensitivity)

    @abstractmethod
    def noise(self, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        """Independent noise of the given shape."""

    @abstractmethod
    def noise_logpdf(self, z: np.ndarray) -> np.ndarray:
        """Elementwise log density of one noise coordinate at ``z``."""

    def clip(self, dataset: object) -> np.ndarray:
        """The validated records, each scaled down to norm at most ``sensitivity``."""
        records = as_records(dataset)
        if records.ndim == 1:
            return np.clip(records, -self.sensitivity, self.sensitivity)
        norms = np.linalg.norm(records, ord=self.norm_order, axis=1)
        scale = np.minimum(1.0, self.sensitivity / np.maximum(norms, np.finfo(float).tiny))
        return records * scale[:, None]

    def query(self, dataset: object) -> np.ndarray:
        """The sum of the clipped records: shape ``()`` or ``(d,)``."""
        return self.clip(dataset).sum(axis=0)

    def output_shape(self, dataset: np.ndarray) -> tuple[int, ...]:
        """``()`` for scalar records, ``(d,)`` for records of dimension ``d``."""
        return as_records(dataset).shape[1:]

    def sample(self, dataset: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` draws of ``query(dataset) + noise``: float64, ``(size,) + output_shape``."""
        size = check_size(size)
        rng = check_rng(rng)
        total = self.query(dataset)
        return total + self.noise((size, *total.shape), rng)

    def runs_on_device(self) -> bool:
        """Whether :meth:`torch_sample` applies: the noise has its device twin ``torch_noise``
        in the class that defines :meth:`noise`."""
        return super().runs_on_device() and has_twin(self, "noise", "torch_noise")

    def torch_sample(
        self, dataset: np.ndarray, sizes: Sequence[int], generators: Sequence[Any]
    ) -> Any:
        """The device twin of :meth:`sample`: ``sum(sizes)`` outputs as one float64 tensor on the
        generators' device, block ``i`` (``sizes[i]`` outputs) drawn from ``generators[i]``
        alone, so that a block's values never depend on the blocks drawn with it."""
        import torch

        total = self.query(dataset)
        device = generators[0].device
        out = torch.empty((sum(sizes), *total.shape), dtype=torch.float64, device=device)
        start = 0
        for size, generator in zip(sizes, generators, strict=True):
            self.torch_noise(out[start : start + size], generator)
            start += size
        return out.add_(torch.as_tensor(total, dtype=torch.float64, device=device))

    def log_density(self, dataset: np.ndarray, outputs: np.ndarray) -> np.ndarray:
        """Exact log density of each output: the noise log density at ``output - query``,
        summed over coordinates. Shape ``(size,)``."""
        total = self.query(dataset)
        y = check_outputs(outputs, total.shape)
        logpdf = self.noise_logpdf(y - total)
        if y.ndim == 1:
            return logpdf
        return logpdf.reshape(y.shape[0], math.prod(y.shape[1:])).sum(axis=1)

    def worst_case_pair(self) -> NeighbouringPair:
        """``D`` empty, ``D_prime`` one record of norm ``sensitivity`` (relation ``add_remove``):
        the sums differ by exactly the sensitivity, the largest shift clipping allows."""
        return NeighbouringPair(
            np.zeros(0),
            np.array([self.sensitivity]),
            "add_remove",
            description="empty dataset vs one record whose norm is the sensitivity",
        )


def check_outputs(outputs: object, shape: tuple[int, ...], name: str = "outputs") -> np.ndarray:
    """Return ``outputs`` as a float array of shape ``(size,) + shape`` without NaN."""
    y = np.asarray(outputs, dtype=float)
    if y.ndim != len(shape) + 1 or y.shape[1:] != shape:
        expected = "(size" + "".join(f", {n}" for n in shape) + ("," if not shape else "") + ")"
        raise ValueError(f"{name} must have shape {expected} on this dataset, got {y.shape}")
    if np.isnan(y).any():
        raise ValueError(f"{name} must not contain NaN")
    return y
