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

from dpaudit._core.heartbeat import doing
from dpaudit._core.provenance import __version__
from dpaudit._core.validation import check_text
from dpaudit.reports.figures import figure_png, one_run_figure
from dpaudit.reports.html import frame_html, html_figure, html_page
from dpaudit.reports.markdown import frame_markdown, inline_markdown
from dpaudit.reports.writer import atomic_directory, slug

__all__ = ["ONE_RUN_NOTE", "one_run_rows", "write_one_run"]

#: What the columns of a one-run report mean, under its table in every format.
ONE_RUN_NOTE = (
    "Each bound holds at its confidence on its own; the ε ceiling is what every guess being "
    "correct would certify with the same canaries. An ε labelled with an assumption holds only "
    "for a mechanism of that family; μ (no assumption) is the largest Gaussian-DP μ the run "
    "refutes."
)


def one_run_rows(results: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per audit: name, method, canaries, guesses "in" + "out", correct, δ, ε lower
    bound, μ lower bound (the largest refuted GDP ``mu`` of an f-DP audit), ε ceiling,
    confidence, label (with what the ``eps`` assumes of the mechanism, if anything). The
    numbers are those of the result; tables round the bounds down and the ceiling up, as the
    command's summary line does."""
    rows = []
    for name, r in results.items():
        rows.append(
            {
                "audit": name,
                "method": r.method,
                "canaries": r.m,
                "guesses (in + out)": f"{r.guesses_in} + {r.guesses_out}",
                "correct": r.correct,
                "δ": r.delta,
                "ε lower bound": r.epsilon_lower_bound(),
                "μ lower bound": r.mu,
                "ε ceiling": r.epsilon_ceiling(),
                "confidence": f"{r.confidence:.0%}",
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
    dpi: int = 110,
) -> Path:
    """Write the report of one or more one-run audits (``name -> OneRunResult``) to ``path``:
    ``index.html`` (in the style of every dpaudit report, figures embedded), ``README.md``
    with ``figures/``, and ``results.json``, each with the same table, note and figures."""
    import pandas as pd

    title = check_text("title", title)
    notes = [check_text("notes", n) for n in notes]
    frame = pd.DataFrame(one_run_rows(results))
    document = {
        "dpaudit_version": __version__,
        "kind": "one_run",
        "one_run": {name: r.to_dict() for name, r in results.items()},
        "notes": notes,
    }
    pngs = {}
    for index, (name, r) in enumerate(results.items(), 1):
        with doing(f"drawing the report's figures: audit {index:,} of {len(results):,}"):
            pngs[name] = figure_png(one_run_figure(name, r), dpi=dpi)
    taken: set[str] = set()
    files = {name: f"figures/{slug(name, taken)}-guesses.png" for name in results}
    md = [f"# {inline_markdown(title)}", ""]
    md += [f"- {inline_markdown(n)}" for n in notes] + ([""] if notes else [])
    md += [frame_markdown(frame), "", inline_markdown(ONE_RUN_NOTE), ""]
    md += [f"![guesses of {inline_markdown(name)}]({files[name]})" for name in results] + [""]
    body = "".join(f"<li>{html.escape(n)}</li>" for n in notes)
    body = (f"<ul>{body}</ul>" if body else "") + frame_html(
        frame, text_columns=("audit", "method", "guesses (in + out)", "label")
    )
    body += f'<p class="sub">{html.escape(ONE_RUN_NOTE)}</p>'
    body += "".join(html_figure(pngs[name], f"guesses of {name}") for name in results)
    audits = len(results)
    page = html_page(
        title, f"{audits} one-run audit{'s' if audits != 1 else ''}.", body, version=__version__
    )
    with atomic_directory(path) as tmp:
        (tmp / "figures").mkdir()
        for name, rel in files.items():
            (tmp / rel).write_bytes(pngs[name])
        (tmp / "results.json").write_text(
            json.dumps(document, indent=2, allow_nan=False), encoding="utf-8"
        )
        (tmp / "README.md").write_text("\n".join(md), encoding="utf-8")
        (tmp / "index.html").write_text(page, encoding="utf-8")
    return Path(path)
