"""Audit records: every number a report shows, as one JSON-ready dict per audit.

A record is what ``results.json`` holds for an audit (``{"dpaudit_version", "audits": [...]}``).
It joins the engine's own :meth:`AuditResult.to_dict` with what the report reads off it: the
verdict against the claim and its witness, epsilon lower bounds at the requested deltas, the
mu-GDP lower bound, and the theory of the mechanism by every method that applies (epsilon at each
delta, its trade-off curve and its delta(eps) curve), so that a report can be drawn again from
the file alone, without the mechanism and without running a trial.

Every bound of a record and its verdict are one family of tests
(:meth:`dpaudit.AuditResult.verdict`): the eps bound at each requested delta, the mu bound and
the claim's own test, with the confidence split between them by Bonferroni (``record["family"]``
says how). A certified bound beyond the claim therefore always comes with the verdict
``"violated"``, and all of a record's bounds hold together at the stated confidence.

Conventions of the file: deltas used as keys are written with ``repr(float(delta))`` (``"0.0"``,
``"1e-05"``); an infinite value (e.g. the theoretical epsilon of a Gaussian at delta = 0) is the
string ``"inf"``, so the file is strict JSON.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit._core.jsonvalues import from_json_value, to_json_value
from dpaudit._core.provenance import __version__, versions
from dpaudit._core.validation import check_choice, check_deltas, check_input_file, check_text
from dpaudit.audit import frames
from dpaudit.bounds.tradeoff import TradeoffCurve
from dpaudit.mechanisms.base import METHOD_KINDS, Mechanism

__all__ = [
    "RESULT_KEYS",
    "build_record",
    "as_record",
    "check_audits",
    "delta_key",
    "to_json_value",
    "from_json_value",
    "results_document",
    "load_results",
    "versions",
    "optional_tightness",
]

#: Keys every audit record has (``results.json`` contract); the engine's keys come on top.
RESULT_KEYS = (
    "name",
    "verdict",
    "witness",
    "epsilon_lower_bounds",
    "mu_lower_bound",
    "theory",
    "trials",
    "seed",
    "confidence",
    "strategy",
    "elapsed_seconds",
)

#: Deltas at which the measured privacy profile (epsilon lower bound against delta) is drawn.
PROFILE_DELTAS = np.geomspace(1e-8, 0.5, 49)

#: Type I errors at which theoretical trade-off curves are stored: log-spaced near both ends
#: (small alpha is where epsilon bounds live) and linear in between.
CURVE_ALPHA = np.unique(
    np.concatenate(
        [
            np.geomspace(1e-10, 0.05, 200),
            np.linspace(0.0, 1.0, 201),
            1.0 - np.geomspace(1e-10, 0.05, 60),
        ]
    )
)

#: Number of points of each theoretical delta(eps) curve stored in a record.
PROFILE_POINTS = 121


def delta_key(delta: float) -> str:
    """How a delta is written as a key of ``results.json``: ``repr(float(delta))``."""
    return repr(float(delta))


def _curve_points(curve: TradeoffCurve) -> dict[str, list[float]]:
    """A theoretical curve on :data:`CURVE_ALPHA` (a fixed grid keeps the file small whatever
    the curve's own resolution, e.g. a PLD curve with a vertex per loss atom)."""
    return {"alpha": CURVE_ALPHA.tolist(), "beta": np.asarray(curve(CURVE_ALPHA), float).tolist()}


def _vertices(curve: TradeoffCurve) -> dict[str, list[float]]:
    """A measured curve by its own vertices (the convex hull of the achieved points)."""
    alpha, beta = curve.points()
    return {"alpha": np.asarray(alpha, float).tolist(), "beta": np.asarray(beta, float).tolist()}


def _finite_max(values: Iterable[float | None]) -> float:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return max(finite) if finite else 0.0


def _safe(fn: Any, *args: Any) -> tuple[Any, str | None]:
    """Call a theory function; a method that cannot answer is recorded with its reason."""
    try:
        with np.errstate(over="ignore", under="ignore"):
            return fn(*args), None
    except (ValueError, NotImplementedError, ArithmeticError) as exc:
        return None, f"{type(exc).__name__}: {exc}"


def optional_tightness(lower: float, theory: float | None) -> float | None:
    """Tightness ``lower / theory`` (``None`` without a theoretical value), by
    :func:`dpaudit.audit.frames.tightness_ratio` (0 against an infinite theory)."""
    if theory is None or math.isnan(theory):
        return None
    return frames.tightness_ratio(lower, theory)


def _curves(entry: dict[str, Any], tradeoff: Any, delta_at: Any, eps_grid: np.ndarray) -> list[str]:
    """Add the name, trade-off points and delta(eps) curve of one theory to ``entry``; return
    the reasons of what could not be computed."""
    errors = []
    curve, error = _safe(tradeoff)
    if error:
        errors.append(error)
    else:
        entry["name"] = curve.name
        points, error = _safe(_curve_points, curve)
        if error:
            errors.append(error)
        else:
            entry["tradeoff"] = points
    values, error = _safe(delta_at, eps_grid)
    if error:
        errors.append(error)
    else:
        delta = np.broadcast_to(np.asarray(values, float), eps_grid.shape)
        entry["delta_curve"] = {"eps": eps_grid.tolist(), "delta": delta.tolist()}
    return errors


def _nan_to_none(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def _theory(
    result: Any,
    mechanism: Mechanism,
    deltas: Sequence[float],
    eps_grid: np.ndarray,
    lower_bounds: Mapping[str, float],
    mu_lower: float,
) -> dict[str, Any]:
    """Theory of every method beside the lower bounds, read from the engine's
    :func:`~dpaudit.audit.frames.theory_comparison`, plus each method's curves. A method that
    fails is recorded with its reason instead of failing the record."""
    if getattr(result, "mechanism", None) is not mechanism:
        result = dataclasses.replace(result, mechanism=mechanism)
    theory: dict[str, Any] = {}
    for method in mechanism.theory_methods:
        entry: dict[str, Any] = {"kind": METHOD_KINDS.get(method, "bound")}
        rows, error = _safe(frames.theory_comparison, result, [method], deltas)
        notes = [error] if error else []
        if rows is not None:
            eps = rows[rows["quantity"] == "epsilon"]
            entry["epsilon"] = {
                delta_key(d): _nan_to_none(v) for d, v in zip(deltas, eps["theory"], strict=True)
            }
            # Tightness of the record's own (family) bounds, not of lone-test bounds.
            entry["tightness"] = {
                key: optional_tightness(lower_bounds[key], value)
                for key, value in entry["epsilon"].items()
            }
            mu = rows[rows["quantity"] == "mu"].iloc[0]
            mu_theory = _nan_to_none(mu["theory"])
            entry["mu"] = {
                "theory": mu_theory,
                "tightness": optional_tightness(mu_lower, mu_theory),
            }
            notes += [n for n in rows["note"] if n]
        notes += _curves(
            entry,
            lambda m=method: mechanism.tradeoff(m),
            lambda e, m=method: mechanism.delta(e, m),
            eps_grid,
        )
        if notes:
            entry["error"] = "; ".join(dict.fromkeys(notes))
        theory[method] = entry
    return theory


def _claim(
    claim: TradeoffCurve,
    table: Mapping[str, Any] | None,
    deltas: Sequence[float],
    lower_bounds: Mapping[str, float],
    eps_grid: np.ndarray,
) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": claim.name, "kind": "claim", "table": None}
    if table is not None:
        entry["table"] = dict(table)
    epsilon: dict[str, float | None] = {}
    errors = []
    for delta in deltas:
        value, error = _safe(claim.epsilon, delta)
        if error:
            errors.append(error)
        epsilon[delta_key(delta)] = None if value is None else float(value)
    entry["epsilon"] = epsilon
    entry["tightness"] = {k: optional_tightness(lower_bounds[k], v) for k, v in epsilon.items()}
    errors += _curves(entry, lambda: claim, claim.delta, eps_grid)
    if errors:
        entry["error"] = "; ".join(dict.fromkeys(errors))
    return entry


def _eps_grid(
    lower_bounds: Mapping[str, float],
    mechanism: Mechanism | None,
    claim: TradeoffCurve | None,
    deltas: Sequence[float],
) -> np.ndarray:
    """The eps axis of the delta(eps) plane: far enough right to show every curve reach the
    smallest reported delta (and the measured bounds)."""
    smallest = min([d for d in deltas if d > 0] + [1e-6])
    top = [_finite_max(lower_bounds.values())]
    if mechanism is not None:
        for method in mechanism.theory_methods:
            top.append(_finite_max([_safe(mechanism.epsilon, smallest, method)[0]]))
    if claim is not None:
        top.append(_finite_max([_safe(claim.epsilon, smallest)[0]]))
    return np.linspace(0.0, max(1.0, 1.25 * max(top)), PROFILE_POINTS)


def build_record(
    result: Any,
    *,
    name: str | None = None,
    mechanism: Mechanism | None = None,
    claim: TradeoffCurve | None = None,
    claim_table: Mapping[str, Any] | None = None,
    deltas: Sequence[float] = (1e-5,),
    expect: str = "consistent",
    description: str = "",
    spec: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON-ready record of one audit: the engine's result plus everything a report shows.

    Parameters
    ----------
    result:
        The :class:`~dpaudit.AuditResult` of :func:`dpaudit.audit`.
    name:
        Label of the audit (default: the mechanism's name).
    mechanism:
        The mechanism audited (default: ``result.mechanism``); its theory by every method in
        ``mechanism.theory_methods`` goes into ``record["theory"]``. ``None`` (e.g. a result
        loaded from JSON) leaves the theory out.
    claim:
        The claimed trade-off curve tested for violation. ``None``: the mechanism's own stated
        claim (theory method ``"claim"``, e.g. a ``BlackBox(..., claim=...)``) when it has one,
        else no claim (the verdict is then ``"consistent"``: there is nothing to refute).
    claim_table:
        How the claim was stated (e.g. ``{"kind": "approx_dp", "eps": 1.0, "delta": 0.0}``).
    deltas:
        The deltas at which epsilon lower bounds and theoretical epsilons are reported.
    expect:
        The verdict the audit is meant to reach (``"violated"`` for a deliberately wrong claim).
    description:
        Free text shown under the audit's heading.
    spec:
        The spec table the audit was run from, kept verbatim.
    """
    mechanism = mechanism if mechanism is not None else getattr(result, "mechanism", None)
    deltas = list(dict.fromkeys(check_deltas("deltas", deltas)))
    if name is not None:
        name = check_text("name", name)
    record: dict[str, Any] = dict(result.to_dict())
    described = record.get("mechanism")
    if claim is not None and isinstance(described, Mapping):
        params = dict(described.get("params") or {})
        if params.get("claim") is None:
            params["claim"] = claim.name
        record["mechanism"] = {**described, "params": params}

    if claim is None and mechanism is not None and "claim" in mechanism.theory_methods:
        claim = mechanism.tradeoff("claim")
    family = result.verdict(claim, deltas)
    member = dataclasses.replace(
        result, confidence=family["family"]["confidence_per_test"], gamma_share=1.0
    )
    lower_bounds = family["epsilon_lower_bounds"]
    witnesses = family["epsilon_witnesses"]
    violation = family["witness"]
    eps_grid = _eps_grid(lower_bounds, mechanism, claim, deltas)
    theory = (
        {}
        if mechanism is None
        else _theory(
            result, mechanism, deltas, eps_grid, lower_bounds, float(family["mu_lower_bound"])
        )
    )
    claim_entry = (
        None if claim is None else _claim(claim, claim_table, deltas, lower_bounds, eps_grid)
    )

    tradeoff = result.tradeoff
    # The profile is read at the family's level per test, like the eps bounds drawn on it: at
    # a requested delta its step is that bound. Between them each step is a test on its own.
    profile_eps = [float(member.epsilon_lower_bound(float(d))) for d in PROFILE_DELTAS]
    empirical = {
        "curve": _vertices(tradeoff.curve()),
        "upper_band": _vertices(tradeoff.upper_band_curve()),
        "lower_band": _vertices(tradeoff.lower_band_curve()),
        "profile": {
            "delta": PROFILE_DELTAS.tolist(),
            "epsilon": profile_eps,
            "confidence": member.confidence,
        },
    }

    # A sequential audit (``record["sequential"]``) is refuted by its anytime-valid test too;
    # its family above was read at the per-look level, which holds at whatever look it stopped.
    sequential = record.get("sequential")
    refuted = violation is not None or bool(sequential and sequential.get("refuted"))
    record.update(
        {
            "name": name or (mechanism.name if mechanism is not None else record.get("name")),
            "description": description,
            "verdict": "violated" if refuted else "consistent",
            "expect": check_choice("expect", expect, ("consistent", "violated")),
            "witness": violation,
            "claim": claim_entry,
            "deltas": deltas,
            "epsilon_lower_bounds": lower_bounds,
            "epsilon_witnesses": witnesses,
            "mu_lower_bound": float(family["mu_lower_bound"]),
            "mu_witness": family["mu_witness"],
            "refuted_by": family["refuted_by"],
            "family": family["family"],
            "summary": {
                **record.get("summary", {}),
                "epsilon_lower_bound": dict(lower_bounds),
                "mu_lower_bound": float(family["mu_lower_bound"]),
            },
            # Ceilings at the family's level per test, like the bounds beside them.
            "epsilon_ceilings": {delta_key(d): float(member.epsilon_ceiling(d)) for d in deltas},
            "mu_ceiling": float(member.mu_ceiling()),
            "gdp_estimate": result.gdp_estimate(),
            "theory": theory,
            "empirical": empirical,
            "mechanism_name": mechanism.name if mechanism is not None else None,
            # What a DP-SGD mechanism releases ("final", "updates", ...): reach_note reads it.
            "observe": getattr(mechanism, "observe", None),
            "spec": dict(spec) if spec is not None else None,
            "versions": {**record.get("versions", {}), **versions()},
        }
    )
    return to_json_value(record)


def as_record(result: Any) -> dict[str, Any]:
    """A record of ``result``: records (dicts) pass through, ``AuditResult`` objects are built
    with :func:`build_record` and its defaults."""
    if isinstance(result, Mapping):
        return dict(result)
    if not (
        callable(getattr(result, "verdict", None)) and callable(getattr(result, "to_dict", None))
    ):
        raise ValueError(
            "results must be AuditResult objects or their records (dpaudit.reports.build_record), "
            f"got {type(result).__name__}"
        )
    return build_record(result)


def check_audits(audits: object, source: str) -> None:
    """Refuse (``ValueError`` starting with ``source``) ``audits`` that are not a non-empty list
    of records holding every key of :data:`RESULT_KEYS`: a report of nothing is no report."""
    if not isinstance(audits, list):
        raise ValueError(f"{source}: not a dpaudit results file (expected an 'audits' list)")
    if not audits:
        raise ValueError(f"{source}: no audit to report (the 'audits' list is empty)")
    for i, audit in enumerate(audits):
        missing = [k for k in RESULT_KEYS if not isinstance(audit, Mapping) or k not in audit]
        if missing:
            raise ValueError(f"{source}: audit {i + 1} lacks {', '.join(missing)}")


def results_document(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The content of ``results.json``: ``{"dpaudit_version": ..., "audits": [...]}``."""
    return {"dpaudit_version": __version__, "audits": [dict(r) for r in records]}


def load_results(path: str | Path) -> dict[str, Any]:
    """Read a ``results.json`` (or a directory holding one) and check its shape."""
    if not isinstance(path, str | os.PathLike):
        raise ValueError(f"path must be the path of a results.json, got {path!r}"[:300])
    path = Path(path)
    if path.is_dir():
        path = path / "results.json"
    check_input_file(path, "results file")
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not a readable results file ({exc})") from None
    except RecursionError:
        raise ValueError(f"{path}: not a results file (its JSON is nested too deeply)") from None
    check_audits(document.get("audits") if isinstance(document, dict) else None, str(path))
    return document
