"""Reports of accountant audits: the delta(eps) figure, tables and a report directory.

An accountant audit (:func:`dpaudit.audit_accountant`) bounds the true ``delta(eps)`` of a
mechanism from its sampled privacy loss and checks each accountant's claim against the bounds.
Everything here takes an :class:`~dpaudit.audit.accountant.AccountantAudit` or its JSON-ready
record (``to_dict()``, or an entry of ``results.json``), so stored results are drawn exactly as
fresh ones.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from dpaudit.reports.figures import figure_png

# The page style and table writers of the audit reports (shared, so both reports look alike).
from dpaudit.reports.html import _CSS as CSS
from dpaudit.reports.html import frame_html
from dpaudit.reports.html import html_figure as figure_html
from dpaudit.reports.markdown import frame_markdown
from dpaudit.reports.text import format_number
from dpaudit.reports.writer import atomic_directory, check_output_directory

__all__ = [
    "accountant_record",
    "expected_verdict",
    "plot_accountant_audit",
    "accountant_table",
    "delta_table",
    "write_accountant_report",
]

#: Verdicts an accountant can get, in the order tables list them.
STATUSES = ("violated", "consistent", "not installed", "unsupported", "error")

_COLORS = ["#d6191b", "#1b7837", "#e08214", "#542788", "#8073ac", "#b35806", "#01665e", "#c51b7d"]
_BAND = "#92c5de"
_MEASURED = "#2166ac"

#: Columns of the accountant tables that hold words, aligned left.
_TEXT_COLUMNS = ("accountant", "kind", "verdict", "expected", "note", "lower bound from")


def accountant_record(result: Any) -> dict[str, Any]:
    """The JSON-ready record of an accountant audit (a record passes through unchanged)."""
    if isinstance(result, Mapping):
        return dict(result)
    return result.to_dict()


def expected_verdict(result: Any, accountant: str) -> str:
    """The verdict the audit's spec expects of ``accountant`` (its ``expect`` table): consistent
    unless it says otherwise."""
    expect = accountant_record(result).get("expect") or {}
    return str(expect.get(accountant, {}).get("verdict", "consistent"))


def _array(values: Sequence[Any] | None) -> np.ndarray:
    if values is None:
        return np.array([])
    return np.array([np.nan if v is None else float(v) for v in values], dtype=float)


def plot_accountant_audit(result: Any, ax: Axes | None = None, *, legend: bool = True) -> Axes:
    """``delta(eps)`` on a log scale: the simultaneous confidence band of the true ``delta`` from
    the sampled privacy loss, its estimate, every accountant's claim (dashed when the claimant
    calls it an approximation) and a cross where a claim is refuted. The axis starts a decade
    below the smallest positive bound (not below 1e-300); smaller claims (and 0) are drawn on
    its bottom edge."""
    record = accountant_record(result)
    if ax is None:
        fig = Figure(figsize=(6.4, 4.8), layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
    eps = _array(record["epsilons"])
    lower = _array(record["delta"]["lower"])
    upper = _array(record["delta"]["upper"])
    estimate = _array(record["delta"]["estimate"])
    positive = np.concatenate([lower[lower > 0], upper[upper > 0], estimate[estimate > 0]])
    # Not below 1e-300: a tenth of a subnormal bound rounds to 0, which a log axis refuses.
    floor = max(float(np.min(positive)) / 10.0, 1e-300) if positive.size else 1e-12
    level = float(record.get("confidence", 0.95))
    ax.fill_between(
        eps,
        np.maximum(lower, floor),
        np.maximum(upper, floor),
        color=_BAND,
        alpha=0.6,
        label=f"true delta, {level:.0%} simultaneous band",
    )
    ax.vlines(eps, np.maximum(lower, floor), np.maximum(upper, floor), color=_MEASURED, lw=3)
    ax.plot(eps, np.maximum(estimate, floor), "o", color=_MEASURED, ms=3.5, label="estimate")
    checks = record.get("claims", {})
    shown = 0
    for name, check in checks.items():
        claimed = check.get("claimed")
        if claimed is None:
            continue
        color = _COLORS[shown % len(_COLORS)]
        shown += 1
        values = _array(claimed)
        style = (0, (5, 2)) if check.get("kind") == "approximation" else "-"
        ax.plot(
            eps,
            np.maximum(values, floor),
            linestyle=style,
            marker=".",
            color=color,
            lw=1.4,
            label=f"{name} ({check['status']})",
        )
        bad = np.asarray(check.get("violated", []), dtype=bool)
        if bad.any():
            ax.plot(eps[bad], np.maximum(values[bad], floor), "x", color=color, ms=9, mew=2.2)
    ax.set_yscale("log")
    ax.set_xlabel("eps")
    ax.set_ylabel("delta(eps)")
    ax.set_ylim(bottom=floor)
    ax.set_title(str(record.get("name", record.get("mechanism", {}).get("name", ""))), fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    if legend:
        ax.legend(fontsize=7, loc="lower left")
    return ax


def accountant_table(result: Any) -> pd.DataFrame:
    """One row per accountant: verdict, the verdict the spec expects (``expect``; consistent
    unless it says otherwise), and at its most significant violation the ``eps``, the claimed
    ``delta``, the lower bound on the true ``delta``, their ratio, the p-value and how much
    ``eps`` the claim understates."""
    record = accountant_record(result)
    eps = _array(record["epsilons"])
    lower = _array(record["delta"]["lower"])
    out = []
    for name, check in record.get("claims", {}).items():
        row: dict[str, Any] = {
            "accountant": name,
            "kind": check.get("kind", ""),
            "verdict": check["status"],
            "expected": expected_verdict(record, name),
            "eps": None,
            "claimed delta": None,
            "true delta >=": None,
            "ratio": None,
            "p-value": None,
            "eps understated by": None,
            "note": check.get("reason", ""),
        }
        violated = check.get("violated")
        if violated and any(violated):
            p = _array(check["p_value"])
            i = int(np.nanargmin(np.where(np.asarray(violated), p, np.nan)))
            row.update(
                {
                    "eps": eps[i],
                    "claimed delta": check["claimed"][i],
                    "true delta >=": lower[i],
                    "ratio": check["ratio"][i] if check["claimed"][i] > 0 else math.inf,
                    "p-value": p[i],
                    "eps understated by": check["epsilon_understatement"][i],
                }
            )
        out.append(row)
    return pd.DataFrame(out)


def delta_table(result: Any) -> pd.DataFrame:
    """One row per ``eps``: the bounds on the true ``delta``, which estimator gave the lower
    bound, and every accountant's claim (``*`` marks a refuted claim)."""
    record = accountant_record(result)
    cols: dict[str, Any] = {
        "eps": record["epsilons"],
        "delta (estimate)": record["delta"]["estimate"],
        "lower": record["delta"]["lower"],
        "upper": record["delta"]["upper"],
        "lower bound from": record["delta"]["lower_source"],
    }
    for name, check in record.get("claims", {}).items():
        if check.get("claimed") is None:
            continue
        cols[name] = [
            format_number(v) + ("*" if bad else "")
            for v, bad in zip(check["claimed"], check["violated"], strict=True)
        ]
    return pd.DataFrame(cols)


def _about(record: Mapping[str, Any]) -> str:
    mech = record.get("mechanism", {}).get("name", "")
    return (
        f"{mech}; {record.get('trials', 0):,} privacy-loss samples per order, seed "
        f"{record.get('seed')}, {float(record.get('confidence', 0.95)):.0%} confidence "
        "(simultaneous over the eps grid, both orders and both sides)."
    )


def write_accountant_report(
    results: Sequence[Any],
    path: str | Path,
    *,
    title: str = "dpaudit accountant audit",
    dpi: int = 110,
) -> Path:
    """Write ``index.html`` (figures embedded), ``README.md`` with ``figures/*.png`` and
    ``results.json`` (``{"accountant_audits": [records]}``) to the directory ``path``,
    atomically; returns the path."""
    records = [accountant_record(r) for r in results]
    check_output_directory(path)
    document = {"accountant_audits": records}
    text = json.dumps(document, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    md = [f"# {title}", ""]
    page = [f"<!doctype html><meta charset='utf-8'><title>{html.escape(title)}</title>"]
    page += [f"<style>{CSS}</style><h1>{html.escape(title)}</h1>"]
    with atomic_directory(path) as tmp:
        (tmp / "figures").mkdir()
        for i, record in enumerate(records):
            name = str(record.get("name", f"audit-{i + 1}"))
            slug = "".join(c if c.isalnum() or c in "-_" else "-" for c in name) or f"audit-{i}"
            ax = plot_accountant_audit(record)
            png = figure_png(ax.figure, dpi=dpi)
            (tmp / "figures" / f"{slug}-delta.png").write_bytes(png)
            verdicts = accountant_table(record)
            deltas = delta_table(record)
            summary = record.get("summary", {})
            md += [f"## {name}", "", _about(record), ""]
            if record.get("description"):
                md += [str(record["description"]), ""]
            md += [f"- **{k}**: {v}" for k, v in summary.items()] + [""]
            md += [frame_markdown(verdicts), "", f"![delta(eps)](figures/{slug}-delta.png)", ""]
            md += [frame_markdown(deltas), ""]
            page += [f"<h2>{html.escape(name)}</h2><p>{html.escape(_about(record))}</p>"]
            if record.get("description"):
                page += [f"<p>{html.escape(str(record['description']))}</p>"]
            items = "".join(
                f"<li><b>{html.escape(k)}</b>: "
                f"<span class='{'violated' if v.startswith('VIOLATED') else ''}'>"
                f"{html.escape(v)}</span></li>"
                for k, v in summary.items()
            )
            page += [f"<ul>{items}</ul>", frame_html(verdicts, text_columns=_TEXT_COLUMNS)]
            page += [figure_html(png, f"delta(eps) of {name}")]
            page += [frame_html(deltas, text_columns=_TEXT_COLUMNS)]
        (tmp / "README.md").write_text("\n".join(md) + "\n", encoding="utf-8")
        (tmp / "index.html").write_text("\n".join(page) + "\n", encoding="utf-8")
        (tmp / "results.json").write_text(text + "\n", encoding="utf-8")
    return Path(path)
