"""Reports of one-run audits: ``README.md``, ``index.html`` and ``results.json``.

A one-run audit has no trade-off curve to draw; its report states, per audit, the guesses made
and correct, the bound (or, for an uncorrected sweep, the estimate), the ceiling a perfect
attack could reach with the same number of canaries, and any notes (e.g. the accountant's
``eps`` of the same training run).
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dpaudit._core.provenance import __version__
from dpaudit.reports.markdown import inline_markdown
from dpaudit.reports.writer import atomic_directory

__all__ = ["one_run_rows", "write_one_run"]


def one_run_rows(results: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per audit: name, method, canaries, guesses "in" + "out", correct, eps, mu (the
    largest refuted GDP ``mu`` of an f-DP audit), ceiling, confidence, label (with what the
    ``eps`` assumes of the mechanism, if anything)."""
    rows = []
    for name, r in results.items():
        rows.append(
            {
                "audit": name,
                "method": r.method,
                "canaries": r.m,
                "guesses (in + out)": f"{r.guesses_in} + {r.guesses_out}",
                "correct": r.correct,
                "delta": r.delta,
                "eps": round(r.epsilon_lower_bound(), 4),
                "mu": "" if r.mu is None else round(r.mu, 4),
                "ceiling": round(r.epsilon_ceiling(), 4),
                "confidence": r.confidence,
                "label": r.label,
            }
        )
    return rows


def write_one_run(
    results: Mapping[str, Any],
    path: str | Path,
    *,
    title: str = "dpaudit one-run audit",
    notes: Sequence[str] = (),
) -> Path:
    """Write the report of one or more one-run audits (``name -> OneRunResult``) to ``path``."""
    rows = one_run_rows(results)
    document = {
        "dpaudit_version": __version__,
        "kind": "one_run",
        "one_run": {name: r.to_dict() for name, r in results.items()},
        "notes": list(notes),
    }
    header = list(rows[0]) if rows else []
    md = [f"# {inline_markdown(title)}", ""]
    md += [f"- {inline_markdown(n)}" for n in notes] + ([""] if notes else [])
    md.append("| " + " | ".join(inline_markdown(h) for h in header) + " |")
    md.append("|" + "---|" * len(header))
    md += ["| " + " | ".join(inline_markdown(row[h]) for h in header) + " |" for row in rows]
    md += [
        "",
        "Each bound holds at its confidence on its own; `ceiling` is what every guess being "
        "correct would certify with the same canaries. An eps labelled with an assumption holds "
        "only for a mechanism of that family; `mu` (no assumption) is the largest Gaussian-DP "
        "mu the run refutes.",
        "",
    ]
    cells = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(row[h]))}</td>" for h in header) + "</tr>"
        for row in rows
    )
    notes_html = "".join(f"<li>{html.escape(n)}</li>" for n in notes)
    page = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"</head><body><h1>{html.escape(title)}</h1><ul>{notes_html}</ul>"
        f"<table border='1'><tr>{cells}</tr>{body}</table></body></html>\n"
    )
    with atomic_directory(path) as tmp:
        (tmp / "results.json").write_text(
            json.dumps(document, indent=2, allow_nan=False), encoding="utf-8"
        )
        (tmp / "README.md").write_text("\n".join(md), encoding="utf-8")
        (tmp / "index.html").write_text(page, encoding="utf-8")
    return Path(path)
