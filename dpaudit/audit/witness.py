"""The witness of a bound: the threshold an audit read a bound at, and the numbers there.

A :class:`Witness` is a frozen value object that also reads as a mapping (``w["epsilon"]``,
``dict(w)``, ``w.get("order")``) with exactly the keys of the dictionaries earlier releases
returned, so code that reads witnesses and the ``witness`` entries of ``results.json`` keep
working. A key is present when its field was given (even as ``None``, e.g. a claim without an
``eps`` at that ``delta``) and absent otherwise, as before.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from dpaudit._core.validation import check_choice

__all__ = ["Witness"]

_ORDERS = ("d_d_prime", "d_prime_d")


@dataclass(frozen=True)
class Witness(Mapping[str, Any]):
    """One threshold test and what it certifies.

    ``threshold`` and ``rule`` define the test; ``alpha``/``beta`` are its error estimates on the
    evaluation sample and ``alpha_upper``/``beta_upper`` their upper confidence bounds at
    ``gamma_per_bound`` each (``candidates`` thresholds competed, by ``strategy``). The bound read
    there: ``epsilon`` at ``delta``, ``mu``, or a violation of ``claim`` (``claimed_beta`` is the
    claimed curve at the other error, ``margin`` how far below it the certified point lies,
    ``claimed_epsilon`` and ``claimed_mu`` the claim's own ``eps`` and ``mu``, ``test`` which test
    of the verdict's family refutes it); ``order`` says which ratio or role attains it
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
    margin: float | None = None
    claimed_epsilon: float | None = None
    claimed_mu: float | None = None
    test: str | None = None
    given: frozenset[str] = field(default=frozenset(), repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.order is not None:
            check_choice("order", self.order, _ORDERS)

    def with_(self, **changes: Any) -> Witness:
        """A copy with ``changes`` (the object itself never changes)."""
        return dataclasses.replace(self, **changes, given=self.given | frozenset(changes))

    def to_dict(self) -> dict[str, Any]:
        """The witness as the plain dictionary of ``results.json``."""
        return dict(self)

    def __getitem__(self, key: str) -> Any:
        if key not in self._fields() or not self._present(key):
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return (name for name in self._fields() if self._present(name))

    def _present(self, name: str) -> bool:
        return getattr(self, name) is not None or name in self.given

    def __len__(self) -> int:
        return sum(1 for _ in self)

    @classmethod
    def _fields(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls) if f.name != "given")
