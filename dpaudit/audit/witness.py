"""The witness of a bound: the threshold an audit read a bound at, and the numbers there.

A :class:`Witness` is a frozen value object that also reads as a mapping (``w["epsilon"]``,
``dict(w)``, ``w.get("order")``) with exactly the keys of the dictionaries earlier releases
returned, so code that reads witnesses and the ``witness`` entries of ``results.json`` keep
working. Keys whose field is unset (``None``) are absent, as before.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Witness"]

_ORDERS = ("d_d_prime", "d_prime_d")


@dataclass(frozen=True)
class Witness(Mapping[str, Any]):
    """One threshold test and what it certifies.

    ``threshold`` and ``rule`` define the test; ``alpha``/``beta`` are its error estimates on the
    evaluation sample and ``alpha_upper``/``beta_upper`` their upper confidence bounds at
    ``gamma_per_bound`` each (``candidates`` thresholds competed, by ``strategy``). The bound read
    there: ``epsilon`` at ``delta``, ``mu``, or a violation of ``claim`` (``claimed_beta`` is the
    claimed curve at the other error); ``order`` says which ratio or role attains it
    (``"d_d_prime"``, or ``"d_prime_d"`` for the swapped roles).
    """

    threshold: float
    rule: str
    alpha: float
    beta: float
    alpha_upper: float
    beta_upper: float
    strategy: str
    candidates: int
    gamma_per_bound: float
    confidence: float
    delta: float | None = None
    epsilon: float | None = None
    mu: float | None = None
    order: str | None = None
    claimed_beta: float | None = None
    claim: str | None = None

    def __post_init__(self) -> None:
        if self.order is not None and self.order not in _ORDERS:
            raise ValueError(f"order must be one of {', '.join(_ORDERS)}; got {self.order!r}")

    def with_(self, **changes: Any) -> Witness:
        """A copy with ``changes`` (the object itself never changes)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The witness as the plain dictionary of ``results.json``."""
        return dict(self)

    def __getitem__(self, key: str) -> Any:
        value = getattr(self, key, None) if key in self._fields() else None
        if value is None:
            raise KeyError(key)
        return value

    def __iter__(self) -> Iterator[str]:
        return (name for name in self._fields() if getattr(self, name) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    @classmethod
    def _fields(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))
