"""Anything that states a privacy profile, as a :class:`~dpaudit.accountants.claims.Claim`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dpaudit.accountants.claims import Claim
from dpaudit.accountants.libraries import claim

__all__ = ["as_claim"]


def _table_claim(table: np.ndarray, name: str) -> Claim:
    """``(eps_i, delta_i)`` pairs: each says ``(eps_i, delta_i)``-DP, which implies
    ``delta(eps) <= min{delta_i : eps_i <= eps}`` (``delta`` is non-increasing in ``eps``)."""
    eps_i, delta_i = table[:, 0], table[:, 1]
    order = np.argsort(eps_i, kind="stable")
    eps_i = eps_i[order]
    best = np.minimum.accumulate(delta_i[order])

    def delta(eps: np.ndarray) -> np.ndarray:
        idx = np.searchsorted(eps_i, eps, side="right") - 1
        return np.where(idx >= 0, best[np.clip(idx, 0, None)], 1.0)

    return Claim(delta, name=name, kind="claim", table_epsilons=eps_i)


def _callable_claim(fn: Callable[..., Any], name: str, kind: str) -> Claim:
    def delta(eps: np.ndarray) -> np.ndarray:
        try:
            out = np.asarray(fn(eps), dtype=float)
            if out.shape == eps.shape:
                return out
        except (TypeError, ValueError):
            pass
        flat = [float(fn(float(e))) for e in eps.ravel()]
        return np.asarray(flat, dtype=float).reshape(eps.shape)

    return Claim(delta, name=name, kind=kind)


def as_claim(claimed: Any, mechanism: Any = None, *, name: str | None = None) -> Claim:
    """Turn what :func:`audit_accountant` accepts into a :class:`Claim`.

    Accepted: a :class:`Claim`; the name of an accountant of :mod:`dpaudit.accountants` (e.g.
    ``"dp_accounting:pld"``, needs ``mechanism``); anything with ``.delta(eps)`` (a
    :class:`~dpaudit.bounds.tradeoff.TradeoffCurve`, a PLD, an RDP curve, a mechanism's theory);
    a callable ``eps -> delta``; a table of ``(eps, delta)`` pairs (an ``(n, 2)`` array or a
    sequence of pairs), read as the statements ``(eps_i, delta_i)``-DP.
    """
    if isinstance(claimed, Claim):
        return claimed
    if isinstance(claimed, str):
        if mechanism is None:
            raise ValueError(f"the accountant {claimed!r} needs the mechanism it accounts for")
        return claim(claimed, mechanism)
    label = name or str(getattr(claimed, "name", "") or "claim")
    if hasattr(claimed, "delta") and callable(claimed.delta):
        kind = str(getattr(claimed, "kind", "claim"))
        epsilon = getattr(claimed, "epsilon", None)
        return Claim(
            lambda eps: np.asarray(claimed.delta(eps), dtype=float),
            name=label,
            kind=kind,
            epsilon_fn=epsilon if callable(epsilon) else None,
        )
    if callable(claimed):
        return _callable_claim(claimed, name or getattr(claimed, "__name__", "claim"), "claim")
    try:
        table = np.asarray(claimed, dtype=float)
    except (TypeError, ValueError):
        table = None
    if table is None or table.ndim != 2 or table.shape[1] != 2 or table.shape[0] < 1:
        raise ValueError(
            "claimed must be a callable eps -> delta, an object with .delta(eps), an accountant "
            f"name, or a table of (eps, delta) pairs; got {type(claimed).__name__}"
        )
    if (
        not np.isfinite(table).all()
        or (table[:, 0] < 0).any()
        or (table[:, 1] < 0).any()
        or (table[:, 1] > 1).any()
    ):
        raise ValueError("a table of (eps, delta) pairs needs eps >= 0 and delta in [0, 1]")
    return _table_claim(table, name or "claim")
