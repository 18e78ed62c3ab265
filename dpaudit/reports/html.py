"""The self-contained HTML report: one file, figures embedded as base64 PNG, no network.

Every piece of user text (audit names, descriptions, spec values) goes through
:func:`html.escape`; the page loads nothing from outside.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from dpaudit.reports.tables import (
    bounds_table,
    format_cell,
    index_table,
    parameters_table,
)
from dpaudit.reports.text import verdict_sentence

__all__ = ["render_html"]

_CSS = """
:root { --ink: #1f2328; --muted: #59636e; --line: #d1d9e0; --ok: #1a7f37; --bad: #cf222e; }
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink);
       margin: 0 auto; max-width: 1180px; padding: 24px 28px 60px; line-height: 1.45; }
h1 { font-size: 1.6rem; margin: 0 0 4px; }
h2 { font-size: 1.3rem; margin: 40px 0 6px; padding-top: 14px; border-top: 1px solid var(--line); }
h3 { font-size: 1.02rem; margin: 18px 0 6px; }
p.sub { color: var(--muted); margin: 0 0 18px; }
table { border-collapse: collapse; font-size: 0.88rem; margin: 6px 0 14px; }
th, td { border: 1px solid var(--line); padding: 4px 9px; text-align: right; }
th { background: #f6f8fa; font-weight: 600; }
td.text, th.text { text-align: left; }
td.num { white-space: nowrap; }
.badge { display: inline-block; padding: 1px 9px; border-radius: 10px; font-weight: 600;
         font-size: 0.85rem; color: white; }
.badge.consistent { background: var(--ok); }
.badge.violated { background: var(--bad); }
.unexpected { color: var(--bad); font-weight: 600; }
.verdict { font-size: 1.02rem; padding: 10px 14px; border-left: 5px solid var(--ok);
           background: #f0fff4; margin: 8px 0 14px; }
.verdict.violated { border-left-color: var(--bad); background: #fff5f5; }
figure { margin: 8px 0; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--line); }
.row { display: flex; gap: 14px; flex-wrap: wrap; }
.row figure { flex: 1 1 460px; }
.params td:first-child { text-align: left; color: var(--muted); }
.params td:last-child { text-align: left; font-family: ui-monospace, monospace; font-size: 0.8rem;
                        word-break: break-all; }
footer { margin-top: 40px; color: var(--muted); font-size: 0.8rem; }
"""


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _frame_html(
    frame: pd.DataFrame, *, text_columns: Sequence[str] = (), anchors: bool = False
) -> str:
    head = "".join(
        f'<th class="{"text" if c in text_columns else ""}">{_esc(c)}</th>' for c in frame.columns
    )
    body = []
    for _, row in frame.iterrows():
        cells = []
        for column in frame.columns:
            value = row[column]
            text = _esc(format_cell(column, value))
            css = "text" if column in text_columns else "num"
            if column == "verdict":
                text = f'<span class="badge {_esc(value)}">{text}</span>'
            elif column == "expected" and value != row.get("verdict", value):
                text = f'<span class="unexpected">{text}</span>'
            elif anchors and column == "audit":
                text = f'<a href="#{_esc(_anchor(value))}">{text}</a>'
            cells.append(f'<td class="{css}">{text}</td>')
        body.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _anchor(name: Any) -> str:
    return "audit-" + "".join(c if c.isalnum() or c in "-_" else "-" for c in str(name))


def _img(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<figure><img alt="{_esc(alt)}" src="data:image/png;base64,{data}"></figure>'


def _section(record: Mapping[str, Any], pngs: Mapping[str, bytes]) -> str:
    name = record.get("name", "audit")
    verdict = str(record.get("verdict"))
    parts = [
        f'<h2 id="{_esc(_anchor(name))}">{_esc(name)} '
        f'<span class="badge {_esc(verdict)}">{_esc(verdict)}</span></h2>'
    ]
    if record.get("description"):
        parts.append(f'<p class="sub">{_esc(record["description"])}</p>')
    parts.append(f'<p class="verdict {_esc(verdict)}">{_esc(verdict_sentence(record))}</p>')
    if "tradeoff" in pngs:
        parts.append(_img(pngs["tradeoff"], f"trade-off plane of {name}"))
    row = [_img(pngs[k], f"{k} of {name}") for k in ("profile", "histogram") if k in pngs]
    if row:
        parts.append(f'<div class="row">{"".join(row)}</div>')
    parts.append("<h3>Lower bounds against theory</h3>")
    parts.append(_frame_html(bounds_table(record)))
    parts.append(
        '<p class="sub">ε lower bounds hold at the stated confidence; tightness = lower bound / '
        "theoretical ε (1 = the audit meets the theory; above 1 against a valid bound = a "
        "violation).</p>"
    )
    parts.append("<h3>Parameters</h3>")
    rows = "".join(
        f"<tr><td>{_esc(k)}</td><td>{_esc(v)}</td></tr>" for k, v in parameters_table(record)
    )
    parts.append(f'<table class="params"><tbody>{rows}</tbody></table>')
    return "\n".join(parts)


def render_html(
    records: Sequence[Mapping[str, Any]],
    pngs: Sequence[Mapping[str, bytes]],
    *,
    title: str = "dpaudit report",
    version: str = "",
) -> str:
    """The HTML page of a report: an index of the audits, then one section per audit.

    ``pngs[i]`` holds the PNG bytes of the figures of ``records[i]`` (keys ``tradeoff``,
    ``profile``, ``histogram``).
    """
    violated = sum(1 for r in records if r.get("verdict") == "violated")
    unexpected = sum(1 for r in records if r.get("verdict") != r.get("expect", "consistent"))
    summary = f"{len(records)} audit{'s' if len(records) != 1 else ''}, {violated} violated"
    if unexpected:
        summary += f", {unexpected} not as expected"
    index = _frame_html(
        index_table(records),
        text_columns=("audit", "mechanism", "claim", "verdict", "expected"),
        anchors=True,
    )
    sections = "\n".join(_section(r, p) for r, p in zip(records, pngs, strict=True))
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_esc(title)}</title>
<style>{_CSS}</style>
</head>
<body>
<h1>{_esc(title)}</h1>
<p class="sub">{_esc(summary)}. Every bound holds at the confidence stated in its audit.</p>
{index}
{sections}
<footer>Generated by dpaudit {_esc(version)}.</footer>
</body>
</html>
"""
