"""``[[accountant_audit]]`` tables of a spec file and how they run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dpaudit._core.jsonvalues import to_json_value
from dpaudit.audit.accountant.result import AccountantAudit, _verdict_sentence
from dpaudit.audit.accountant.runner import audit_accountant
from dpaudit.mechanisms.base import NeighbouringPair

__all__ = ["AccountantAuditSpec", "run_accountant_spec"]


# --------------------------------------------------------------------------------------- specs
@dataclass(frozen=True)
class AccountantAuditSpec:
    """One ``[[accountant_audit]]`` of a spec file: a mechanism and the accountants to audit.

    ``accountants`` are names of :mod:`dpaudit.accountants` (``dpaudit.accountants.NAMES``).
    """

    name: str
    mechanism: Any
    accountants: tuple[str, ...]
    trials: int
    epsilons: tuple[float, ...] | None = None
    pair: NeighbouringPair | None = None
    seed: int = 0
    confidence: float = 0.95
    importance: bool | str = "auto"
    n_jobs: int = 1
    description: str = ""
    table: dict[str, Any] = field(default_factory=dict, compare=False)

    def run(self, *, progress: bool | None = None) -> AccountantAudit:
        """Run :func:`audit_accountant` with this spec's settings."""
        return audit_accountant(
            self.mechanism,
            list(self.accountants),
            trials=self.trials,
            seed=self.seed,
            confidence=self.confidence,
            epsilons=self.epsilons,
            pair=self.pair,
            n_jobs=self.n_jobs,
            importance=self.importance,
            progress=progress,
        )


def run_accountant_spec(spec: AccountantAuditSpec, *, progress: bool | None = None) -> dict:
    """Run one accountant audit and return its JSON-ready record: the result's
    :meth:`AccountantAudit.to_dict` plus ``name``, ``description``, ``spec`` (the table as
    written) and ``summary`` (one sentence per accountant)."""
    result = spec.run(progress=progress)
    record = result.to_dict()
    record.update(
        name=spec.name,
        description=spec.description,
        spec=to_json_value(spec.table),
        summary={name: _verdict_sentence(c, result) for name, c in result.claims.items()},
    )
    return record
