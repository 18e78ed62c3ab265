"""Claims: what someone says ``delta(eps)`` of a mechanism is, as a frozen value object.

A :class:`Claim` is built from a library's accountant (:mod:`dpaudit.accountants.libraries`), from
any theory with ``.delta(eps)``, from a callable ``eps -> delta`` or from a table of
``(eps, delta)`` statements (:func:`dpaudit.accountants.convert.as_claim`);
:func:`dpaudit.audit_accountant` checks it against the Monte Carlo privacy loss.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from dpaudit._core.validation import check_probability

__all__ = ["Claim"]


@dataclass(frozen=True, eq=False)
class Claim:
    """A claimed privacy profile ``eps -> delta(eps)`` (vectorised), with a name and a kind.

    A frozen value object: ``Claim(delta_fn, name=..., kind=..., epsilon_fn=...)``. ``kind`` is
    what the claimant states: ``"bound"`` (a guarantee), ``"exact"``, ``"approximation"`` (e.g. a
    central-limit estimate, not a guarantee) or ``"claim"``. ``table_epsilons`` are the ``eps`` of
    a claim made as a table of ``(eps, delta)`` statements (else ``None``). Claims compare by
    identity: two claims with equal functions are not decidably equal.
    """

    delta_fn: Callable[[np.ndarray], np.ndarray]
    name: str = field(kw_only=True)
    kind: str = field(default="claim", kw_only=True)
    epsilon_fn: Callable[[float], float] | None = field(default=None, kw_only=True)
    table_epsilons: np.ndarray | None = field(default=None, kw_only=True, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", str(self.name))
        object.__setattr__(self, "kind", str(self.kind))

    def __repr__(self) -> str:
        return f"<Claim {self.name} ({self.kind})>"

    def delta(self, eps: float | np.ndarray) -> np.ndarray:
        """Claimed ``delta`` at each ``eps``; ``ValueError`` if it is not in ``[0, 1]``."""
        eps_arr = np.asarray(eps, dtype=float)
        out = np.asarray(self.delta_fn(eps_arr), dtype=float)
        if out.shape != eps_arr.shape:
            out = np.broadcast_to(out, eps_arr.shape).astype(float)
        if np.isnan(out).any() or (out < 0).any() or (out > 1).any():
            raise ValueError(f"claim {self.name} returned delta outside [0, 1] (or NaN)")
        return out

    def epsilon(self, delta: float) -> float:
        """Smallest ``eps >= 0`` with claimed ``delta(eps) <= delta`` (native when the claimant
        computes it, else bisection on :meth:`delta`; ``inf`` if none below ``1e4``)."""
        delta = check_probability("delta", delta)
        if self.epsilon_fn is not None:
            return float(self.epsilon_fn(delta))
        if self.delta(0.0) <= delta:
            return 0.0
        hi = 1.0
        while self.delta(hi) > delta:
            hi *= 2.0
            if hi > 1e4:
                return math.inf
        lo = 0.0
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            if self.delta(mid) <= delta:
                hi = mid
            else:
                lo = mid
        return hi
