"""The result of an accountant audit: the bounds on the true ``delta(eps)`` and the verdict on
each claim.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpaudit._core.jsonvalues import to_json_value
from dpaudit._core.numbers import format_number
from dpaudit._core.validation import check_array_in_unit_interval
from dpaudit.accountants.convert import as_claim
from dpaudit.accountants.libraries import AccountantUnavailable
from dpaudit.audit.accountant.estimators import (
    _PLAIN_WEIGHT,
    ORDERS,
    DeltaBounds,
    _bernstein,
    _combine_estimators,
    _combine_orders,
    _floats,
    _order_bounds,
    _Plan,
)
from dpaudit.mechanisms.base import NeighbouringPair

__all__ = ["ClaimCheck", "AccountantAudit", "P_VALUE_FLOOR"]

#: The smallest p-value an accountant audit reports; a refutation clearer than that reads
#: "p-value < 1e-300".
P_VALUE_FLOOR = 1e-300


# --------------------------------------------------------------------------------------- claims
@dataclass(frozen=True)
class ClaimCheck:
    """The verdict on one claim.

    ``status`` is ``"violated"`` (the lower confidence bound on the true ``delta`` exceeds the
    claim at some ``eps``), ``"consistent"`` (nowhere), or, when the claim could not be
    evaluated, ``"not installed"``, ``"unsupported"`` or ``"error"`` (``reason`` says why).

    Per ``eps``: ``claimed``; ``violated``; ``ratio`` = lower bound / claim (how many times the
    true ``delta`` at least exceeds the claim); ``p_value``, the smallest family-wise error
    probability at which the violation is still detected (the violation holds at confidence
    ``1 - p_value``); ``epsilon_understatement``: the claim reaches ``delta = lower`` at an
    ``eps`` this much smaller than ``eps`` itself, while the true ``eps`` there is at least ``eps``.
    """

    name: str
    status: str
    kind: str = "claim"
    claimed: np.ndarray | None = None
    violated: np.ndarray | None = None
    ratio: np.ndarray | None = None
    p_value: np.ndarray | None = None
    epsilon_understatement: np.ndarray | None = None
    reason: str = ""

    @property
    def is_violated(self) -> bool:
        """True when the claim is refuted at some ``eps`` of the grid."""
        return self.status == "violated"

    @property
    def worst(self) -> int | None:
        """Index of the ``eps`` with the smallest p-value among the violations (or ``None``)."""
        if self.violated is None or not self.violated.any():
            return None
        p = np.where(self.violated, self.p_value, np.inf)
        return int(np.argmin(p))

    def __repr__(self) -> str:
        status = self.status
        if self.is_violated:
            status += f" at {int(self.violated.sum())} of {self.violated.size} eps"
        return f"<ClaimCheck {self.name}: {status}>"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary and per-``eps`` values."""
        out: dict[str, Any] = {"name": self.name, "status": self.status, "kind": self.kind}
        if self.reason:
            out["reason"] = self.reason
        if self.claimed is not None:
            out["claimed"] = _floats(self.claimed)
            out["violated"] = [bool(v) for v in self.violated]
            out["ratio"] = _floats(self.ratio)
            out["p_value"] = _floats(self.p_value)
            out["epsilon_understatement"] = _floats(self.epsilon_understatement)
            w = self.worst
            out["min_p_value"] = None if w is None else float(self.p_value[w])
            out["max_ratio"] = (
                _floats([np.nanmax(np.where(self.violated, self.ratio, np.nan))])[0]
                if w is not None
                else None
            )
        return out


def _unavailable(name: str, exc: Exception) -> ClaimCheck:
    status = str(getattr(exc, "status", "unsupported"))
    return ClaimCheck(name=name, status=status, kind="", reason=" ".join(str(exc).split()))


# --------------------------------------------------------------------------------------- result
class AccountantAudit:
    """Result of :func:`audit_accountant`: ``delta(eps)`` bounds and the claims' verdicts.

    Attributes
    ----------
    epsilons:
        The ``eps`` grid.
    delta:
        :class:`DeltaBounds` of the mechanism's ``delta(eps)`` (the larger of the two orders),
        simultaneous over the grid at ``confidence``.
    orders:
        :class:`DeltaBounds` of each order (:data:`ORDERS`).
    estimators:
        Order -> estimator -> ``(estimate, lower, upper)`` arrays (:data:`ESTIMATORS`).
    claims:
        Claim name -> :class:`ClaimCheck`.
    weight_check:
        Order -> ``(mean, lower, upper)`` of the importance weights, whose true mean is 1: a
        check of the tilted samplers (``None`` for an order sampled plainly).
    """

    def __init__(
        self,
        *,
        mechanism: Any,
        pair: NeighbouringPair,
        epsilons: np.ndarray,
        trials: int,
        seed: int,
        confidence: float,
        chunk_size: int,
        plans: tuple[_Plan, _Plan],
        tallies: tuple[dict, dict],
        elapsed_seconds: float,
    ) -> None:
        self.mechanism_name = str(getattr(mechanism, "name", type(mechanism).__name__))
        params = getattr(mechanism, "params", None)
        self.mechanism_params = params() if callable(params) else {}
        self.pair = pair
        self.epsilons = np.asarray(epsilons, dtype=float)
        self.trials = trials
        self.seed = seed
        self.confidence = confidence
        self.chunk_size = chunk_size
        self.plans = plans
        self.tallies = tallies
        self.elapsed_seconds = elapsed_seconds
        self.estimators, self.orders, self.delta = self._bounds(1.0 - confidence)
        self.weight_check: dict[str, tuple[float, float, float] | None] = {}
        for name, plan, tally in zip(ORDERS, plans, tallies, strict=True):
            if not plan.tilted:
                self.weight_check[name] = None
                continue
            g = np.array([(1.0 - confidence) / 2.0])
            mean, low, up = _bernstein(
                tally["weight_sum"], tally["weight_sum_sq"], float(tally["n"][0]), g
            )
            self.weight_check[name] = (
                float(mean[0] / _PLAIN_WEIGHT),
                float(low[0] / _PLAIN_WEIGHT),
                float(up[0] / _PLAIN_WEIGHT),
            )
        self.claims: dict[str, ClaimCheck] = {}

    def _bounds(
        self, gamma: np.ndarray | float
    ) -> tuple[dict[str, dict[str, tuple]], dict[str, DeltaBounds], DeltaBounds]:
        k = self.epsilons.size
        gamma_side = np.broadcast_to(np.asarray(gamma, dtype=float), (k,)) / (4.0 * k)
        estimators = {
            name: _order_bounds(tally, plan, k, gamma_side)
            for name, plan, tally in zip(ORDERS, self.plans, self.tallies, strict=True)
        }
        orders = {name: _combine_estimators(per) for name, per in estimators.items()}
        return estimators, orders, _combine_orders(orders)

    def lower_bound(self, confidence: float | np.ndarray) -> np.ndarray:
        """Lower bounds on ``delta`` at every ``eps`` at another (family-wise) ``confidence``
        (a number, or one per ``eps``)."""
        level = check_array_in_unit_interval(
            "confidence", confidence, low_open=True, high_open=True
        )
        return self._bounds(1.0 - level)[2].lower

    def _p_values(self, claimed: np.ndarray) -> np.ndarray:
        """Per ``eps``: the smallest family-wise error probability at which lower > claimed
        (bisection on ``log gamma``; the lower bound decreases as ``gamma`` decreases)."""
        k = self.epsilons.size
        lo = np.full(k, math.log(P_VALUE_FLOOR))
        hi = np.full(k, math.log(1.0 - 1e-12))
        detected_hi = self._bounds(np.exp(hi))[2].lower > claimed
        if not detected_hi.any():
            return np.ones(k)
        detected_lo = self._bounds(np.exp(lo))[2].lower > claimed
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            hit = self._bounds(np.exp(mid))[2].lower > claimed
            hi = np.where(hit, mid, hi)
            lo = np.where(hit, lo, mid)
        p = np.exp(hi)
        p = np.where(detected_lo, P_VALUE_FLOOR, p)
        return np.where(detected_hi, p, 1.0)

    def check(self, claimed: Any, name: str | None = None, mechanism: Any = None) -> ClaimCheck:
        """Check another claim against the same samples and store its verdict in
        :attr:`claims` (the intervals are simultaneous, so every verdict holds at once)."""

        try:
            claim = as_claim(claimed, mechanism, name=name)
        except AccountantUnavailable as exc:
            check = _unavailable(name or str(claimed), exc)
            self.claims[check.name] = check
            return check
        label = name or claim.name
        try:
            values = claim.delta(self.epsilons)
        except Exception as exc:  # noqa: BLE001 - a failing accountant is a finding, not a crash
            check = ClaimCheck(label, "error", claim.kind, reason=" ".join(str(exc).split()))
            self.claims[label] = check
            return check
        lower = self.delta.lower
        violated = lower > values
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(values > 0, lower / values, np.where(lower > 0, np.inf, 1.0))
        p_value = self._p_values(values)
        understated = np.full(values.size, np.nan)
        for i in np.flatnonzero(violated):
            try:
                eps_claim = claim.epsilon(float(lower[i]))
            except Exception:  # noqa: BLE001, S112 - cannot invert the claim: no gap reported
                continue
            understated[i] = max(float(self.epsilons[i]) - eps_claim, 0.0)
        check = ClaimCheck(
            name=label,
            status="violated" if violated.any() else "consistent",
            kind=claim.kind,
            claimed=values,
            violated=violated,
            ratio=ratio,
            p_value=p_value,
            epsilon_understatement=understated,
        )
        self.claims[label] = check
        return check

    @property
    def violated(self) -> bool:
        """True when some claim is refuted."""
        return any(c.is_violated for c in self.claims.values())

    def summary(self) -> str:
        """One line per claim, in plain words."""
        lines = []
        for check in self.claims.values():
            lines.append(f"{check.name}: {_verdict_sentence(check, self)}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        verdicts = ", ".join(f"{c.name} {c.status}" for c in self.claims.values()) or "none"
        return (
            f"<AccountantAudit {self.mechanism_name}: {self.epsilons.size} eps, "
            f"{self.trials:,} samples per order; claims: {verdicts}>"
        )

    def __str__(self) -> str:
        """What was audited, the bounds on the true ``delta`` and every claim per ``eps`` (``*``
        marks a refuted one), then :meth:`summary`."""
        checked = [c for c in self.claims.values() if c.claimed is not None]
        columns = [
            ["eps", *(format_number(e) for e in self.epsilons)],
            ["true delta >=", *(format_number(x, rounding="down") for x in self.delta.lower)],
            ["true delta <=", *(format_number(x, rounding="up") for x in self.delta.upper)],
        ]
        for check in checked:
            cells = [
                format_number(v) + ("*" if bad else "")
                for v, bad in zip(check.claimed, check.violated, strict=True)
            ]
            columns.append([check.name, *cells])
        widths = [max(len(cell) for cell in column) for column in columns]
        rows = [
            "  ".join(column[i].rjust(w) for column, w in zip(columns, widths, strict=True))
            for i in range(self.epsilons.size + 1)
        ]
        lines = [
            f"Accountant audit of {self.mechanism_name}",
            f"{self.trials:,} privacy-loss samples per order, seed {self.seed}, "
            f"{self.elapsed_seconds:.1f} s; bounds at {self.confidence:.0%} confidence, "
            "simultaneous over the eps grid",
            *rows,
        ]
        if any(c.is_violated for c in checked):
            lines.append("* refuted: the true delta is certainly larger than the claim")
        return "\n".join([*lines, self.summary()])

    def to_frame(self) -> Any:
        """A pandas DataFrame: one row per ``eps`` with the bounds and every claim."""
        import pandas as pd

        cols: dict[str, Any] = {
            "eps": self.epsilons,
            "delta": self.delta.estimate,
            "lower": self.delta.lower,
            "upper": self.delta.upper,
            "lower_source": self.delta.lower_source,
        }
        for name, check in self.claims.items():
            if check.claimed is not None:
                cols[f"claim[{name}]"] = check.claimed
                cols[f"violated[{name}]"] = check.violated
        return pd.DataFrame(cols)

    def to_dict(self) -> dict[str, Any]:
        """Every number of the audit, JSON-ready."""
        estimators = {
            order: {
                est: {"estimate": _floats(v[0]), "lower": _floats(v[1]), "upper": _floats(v[2])}
                for est, v in per.items()
            }
            for order, per in self.estimators.items()
        }
        return {
            "kind": "accountant_audit",
            "mechanism": {
                "name": self.mechanism_name,
                "params": to_json_value(self.mechanism_params),
            },
            "pair": self.pair.to_dict(),
            "trials": self.trials,
            "seed": self.seed,
            "confidence": self.confidence,
            "chunk_size": self.chunk_size,
            "elapsed_seconds": self.elapsed_seconds,
            "epsilons": self.epsilons.tolist(),
            "delta": self.delta.to_dict(),
            "orders": {name: b.to_dict() for name, b in self.orders.items()},
            "estimators": estimators,
            "importance": {
                name: (plan.to_dict() if plan.tilted else None)
                for name, plan in zip(ORDERS, self.plans, strict=True)
            },
            "weight_check": {
                k: (None if v is None else list(v)) for k, v in self.weight_check.items()
            },
            "method": (
                "privacy-loss Monte Carlo; intervals simultaneous over the eps grid, both "
                "orders and both sides (Bonferroni); estimators: empirical Bernstein "
                "(Maurer-Pontil 2009) on plain and on importance-weighted samples, "
                "Clopper-Pearson on event staircases"
            ),
            "claims": {name: c.to_dict() for name, c in self.claims.items()},
        }


def _refutation(claimed: float, lower: float) -> tuple[str, str]:
    """A refuted claim (rounded up) and the lower bound that refutes it (rounded down), with as
    many significant digits as it takes for the shown bound to stay above the shown claim."""
    for digits in range(4, 17):
        shown_claim = format_number(claimed, digits, rounding="up")
        shown_lower = format_number(lower, digits, rounding="down")
        if float(shown_claim) < float(shown_lower):
            break
    return shown_claim, shown_lower


def _above_one(ratio: float) -> str:
    """A ratio above 1, rounded down with as many significant digits (3 at least) as it takes to
    stay above 1: ``1.0004`` reads ``1.0004``, not ``1``."""
    for digits in range(3, 17):
        shown = format_number(ratio, digits, rounding="down")
        if float(shown) > 1.0:
            return shown
    return shown


def _verdict_sentence(check: ClaimCheck, result: AccountantAudit) -> str:
    if check.status in ("not installed", "unsupported", "error"):
        return f"{check.status} ({check.reason})" if check.reason else check.status
    if not check.is_violated:
        return (
            f"consistent: the claim is at or above the {result.confidence:.0%} lower bound on "
            f"the true delta at every eps of the grid"
        )
    i = check.worst
    eps = result.epsilons[i]
    ratio = check.ratio[i]
    times = f"{_above_one(ratio)} times the claim" if math.isfinite(ratio) else "the claim is 0"
    p = float(check.p_value[i])
    p_text = (
        f"p-value < {P_VALUE_FLOOR:g}"
        if p <= P_VALUE_FLOOR
        else f"p-value {format_number(p, 2, rounding='up')}"
    )
    claimed, lower = _refutation(float(check.claimed[i]), float(result.delta.lower[i]))
    text = (
        f"VIOLATED at eps = {format_number(eps)}: claims delta = {claimed}, but the true "
        f"delta is at least {lower} ({times}; family-wise {p_text})"
    )
    if check.kind == "approximation":
        text += " [the claimant calls this an approximation, not a guarantee]"
    gap = check.epsilon_understatement[i]
    if math.isfinite(gap) and gap > 0:
        text += f"; eps understated by at least {format_number(gap, 3, rounding='down')}"
    n = int(check.violated.sum())
    if n > 1:
        text += f"; violated at {n} of {check.violated.size} eps values"
    return text
