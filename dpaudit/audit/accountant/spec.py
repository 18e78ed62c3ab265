"""``[[accountant_audit]]`` tables of a spec file and how they run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dpaudit._core.jsonvalues import to_json_value
from dpaudit.audit.accountant.result import AccountantAudit, ClaimCheck, _verdict_sentence
from dpaudit.audit.accountant.runner import audit_accountant
from dpaudit.mechanisms.base import NeighbouringPair

__all__ = ["AccountantAuditSpec", "run_accountant_spec"]


# --------------------------------------------------------------------------------------- specs
@dataclass(frozen=True)
class AccountantAuditSpec:
    """One ``[[accountant_audit]]`` of a spec file: a mechanism and the accountants to audit.

    ``accountants`` are names of :mod:`dpaudit.accountants` (``dpaudit.accountants.NAMES``).
    ``expect`` maps some of them to ``{"verdict": ..., "reason": ...}``: the verdict
    (``"consistent"`` or ``"violated"``) the accountant is meant to get, and why; every other
    accountant is expected to be consistent. ``origin`` says where it came from
    (``file.toml: accountant_audit 2 (name)``).
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
    expect: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    description: str = ""
    table: dict[str, Any] = field(default_factory=dict, compare=False)
    origin: str = ""

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


def _sentence(spec: AccountantAuditSpec, check: ClaimCheck, result: AccountantAudit) -> str:
    """The verdict sentence, with the spec's reason where it expects a verdict other than
    consistent."""
    text = _verdict_sentence(check, result)
    expected = spec.expect.get(check.name)
    if expected is None or check.claimed is None:  # no verdict: the claim was not evaluated
        return text
    if check.status == expected["verdict"]:
        return f"{text}. As expected: {expected['reason']}"
    return f"{text}. Not as expected: the spec expects {expected['verdict']}: {expected['reason']}"


def run_accountant_spec(spec: AccountantAuditSpec, *, progress: bool | None = None) -> dict:
    """Run one accountant audit and return its JSON-ready record: the result's
    :meth:`AccountantAudit.to_dict` plus ``name``, ``description``, ``spec`` (the table as
    written), ``expect`` (accountant -> verdict and reason, as the spec states them) and
    ``summary`` (one sentence per accountant, with the reason of an expected verdict)."""
    result = spec.run(progress=progress)
    record = result.to_dict()
    record.update(
        name=spec.name,
        description=spec.description,
        spec=to_json_value(spec.table),
        expect={name: dict(e) for name, e in spec.expect.items()},
        summary={name: _sentence(spec, c, result) for name, c in result.claims.items()},
    )
    return record
