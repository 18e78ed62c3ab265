"""Tables of an audit's numbers: its summary frame and its comparison with the theory.

Functions of an :class:`~dpaudit.audit.result.AuditResult` that return pandas frames, kept out
of the result so that the result holds only the counts and the numbers read off them. The result's
own :meth:`~dpaudit.audit.result.AuditResult.to_frame`,
:meth:`~dpaudit.audit.result.AuditResult.theory_comparison` and
:meth:`~dpaudit.audit.result.AuditResult.tightness` call these; :mod:`dpaudit.reports` re-exports
them. ``result`` is an :class:`~dpaudit.audit.result.AuditResult` (typed ``Any`` here: the
result module imports this one, not the other way round). They live in ``audit`` rather than
``reports`` because the result answers them itself and ``audit`` does not import the layer above.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import special

from dpaudit._core.validation import check_deltas
from dpaudit.mechanisms.base import METHOD_KINDS

if TYPE_CHECKING:  # pandas is imported where a table is built
    import pandas as pd

__all__ = ["result_frame", "theory_comparison", "tightness", "tightness_ratio"]


def result_frame(result: Any, deltas: Sequence[float]) -> pd.DataFrame:
    """One row per reported number: quantity, query, value, kind (lower bound / estimate),
    threshold, strategy, confidence and trials (the GDP estimate only when there is one)."""
    import pandas as pd

    rows = []
    for d in check_deltas("deltas", deltas):
        w = result.epsilon_witness(d)
        rows.append(("epsilon", f"delta={d:g}", w["epsilon"], "lower bound", w["threshold"]))
    w = result.mu_witness()
    rows.append(("mu", "", w["mu"], "lower bound", w["threshold"]))
    gdp_mu = result.gdp_estimate()["mu"]
    if gdp_mu is not None:
        rows.append(("mu", "GDP fit", gdp_mu, "estimate", np.nan))
    frame = pd.DataFrame(rows, columns=["quantity", "query", "value", "kind", "threshold"])
    frame["strategy"] = result.strategy
    frame["confidence"] = result.confidence
    frame["trials"] = result.trials
    return frame


def tightness_ratio(lower_bound: float, theory: float) -> float:
    """``lower_bound / theory``: ``NaN`` without a theory value, 0 against an infinite one, and
    at a theory of 0 either 1 (the bound is 0 too) or infinity."""
    if np.isnan(theory):
        return np.nan
    if np.isinf(theory):
        return 0.0
    if theory > 0:
        return lower_bound / theory
    return 1.0 if lower_bound == 0 else np.inf


def _row(
    result: Any,
    quantity: str,
    query: str,
    method: str,
    lower_bound: float,
    theory: float,
    note: str = "",
) -> dict[str, Any]:
    return {
        "quantity": quantity,
        "query": query,
        "method": method,
        "kind": METHOD_KINDS.get(method, "bound"),
        "lower_bound": lower_bound,
        "theory": theory,
        "tightness": tightness_ratio(lower_bound, theory),
        "strategy": result.strategy,
        "confidence": result.confidence,
        "note": note,
    }


def theory_comparison(
    result: Any, methods: Sequence[str] | None, deltas: Sequence[float]
) -> pd.DataFrame:
    """Lower bounds beside the mechanism's theoretical values, one row per method and number.

    For every theory ``method`` (default: all of ``mechanism.theory_methods``): ``eps`` at each
    ``delta`` (theory ``mechanism.epsilon(delta, method)``), and ``mu`` (theory: the ``mu`` of
    the method's trade-off curve ``f`` read at the witness point,
    ``Phi^{-1}(1 - alpha+) - Phi^{-1}(f(alpha+))``; for an exact ``G_mu`` this is ``mu``).
    ``tightness = lower_bound / theory`` (:func:`tightness_ratio`). A method that cannot answer at
    some ``delta`` gets ``NaN`` there and says why in the ``note`` column.
    """
    import pandas as pd

    mechanism = result.mechanism
    if mechanism is None:
        raise ValueError("theory_comparison needs the mechanism object (not kept in JSON)")
    if methods is None:
        methods = tuple(mechanism.theory_methods)
    deltas = check_deltas("deltas", deltas)
    eps_lb = {d: result.epsilon_lower_bound(d) for d in deltas}
    mu_w = result.mu_witness()
    rows = []
    for method in methods:
        for d in deltas:
            query = f"delta={d:g}"
            try:
                theory = float(mechanism.epsilon(d, method=method))
            except ValueError as exc:
                note = f"theory unavailable: {exc}"
                rows.append(_row(result, "epsilon", query, method, eps_lb[d], np.nan, note))
                continue
            rows.append(_row(result, "epsilon", query, method, eps_lb[d], theory))
        a = mu_w["alpha_upper"]
        beta = float(mechanism.tradeoff(method=method)(a))
        theory = float(-special.ndtri(a) - special.ndtri(beta)) if beta > 0 else np.inf
        rows.append(_row(result, "mu", f"alpha={a:.6g}", method, mu_w["mu"], theory))
    return pd.DataFrame(rows)


def tightness(result: Any, deltas: Sequence[float], method: str | None = None) -> dict[str, float]:
    """``lower bound / theoretical value`` for ``eps`` at each ``delta`` (keys
    ``"epsilon@delta=<d>"``) and for ``mu`` (key ``"mu"``), by ``method`` (default: the
    mechanism's first, tightest theory method)."""
    if result.mechanism is None:
        raise ValueError("tightness needs the mechanism object (not kept in JSON)")
    if method is None:
        method = result.mechanism.theory_methods[0]
    frame = theory_comparison(result, [method], deltas)
    out: dict[str, float] = {}
    for row in frame.itertuples():
        key = "mu" if row.quantity == "mu" else f"epsilon@{row.query}"
        out[key] = float(row.tightness)
    return out
