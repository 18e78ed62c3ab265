"""The self-contained HTML report: one file, figures embedded as base64 PNG, no network.

Every piece of user text (audit names, descriptions, spec values) goes through
:func:`html.escape`; the page loads nothing from outside.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dpaudit._core.numbers import format_number
from dpaudit.reports.batteries import battery_summary, refuted_lines, unrefuted_lines
from dpaudit.reports.tables import (
    ATTACK_CONFIGURATION,
    bounds_table,
    format_cell,
    index_table,
    parameters_table,
)
from dpaudit.reports.text import (
    BOUNDS_TABLE_NOTE,
    NO_CLAIM,
    reach_note,
    report_summary,
    verdict_label,
    verdict_sentence,
)

if TYPE_CHECKING:  # pandas is imported where a table is built
    import pandas as pd

__all__ = ["frame_html", "html_figure", "html_page", "render_html"]

_CSS = """
:root { --ink: #1f2328; --muted: #59636e; --line: #d1d9e0; --ok: #1a7f37; --bad: #cf222e;
        --neutral: #6e7781; }
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink);
       margin: 0 auto; max-width: 1180px; padding: 24px 28px 60px; line-height: 1.45; }
h1 { font-size: 1.6rem; margin: 0 0 4px; }
h2 { font-size: 1.3rem; margin: 40px 0 6px; padding-top: 14px; border-top: 1px solid var(--line);
     overflow-wrap: anywhere; }
h3 { font-size: 1.02rem; margin: 18px 0 6px; }
p.sub { color: var(--muted); margin: 0 0 18px; }
table { border-collapse: collapse; font-size: 0.88rem; margin: 6px 0 14px; }
th, td { border: 1px solid var(--line); padding: 4px 9px; text-align: right; }
th { background: #f6f8fa; font-weight: 600; }
td.text, th.text { text-align: left; }
td.name { min-width: 10em; }
td.name + td.name { min-width: 17em; }
td { overflow-wrap: break-word; }
.nw { white-space: nowrap; }
td.num { white-space: nowrap; }
.badge { display: inline-block; padding: 1px 9px; border-radius: 10px; font-weight: 600;
         white-space: nowrap;
         font-size: 0.85rem; color: white; }
.badge.consistent { background: var(--ok); }
.badge.violated { background: var(--bad); }
.badge.noclaim { background: var(--neutral); }
.unexpected { color: var(--bad); font-weight: 600; }
.verdict { font-size: 1.02rem; padding: 10px 14px; border-left: 5px solid var(--ok);
           background: #f0fff4; margin: 8px 0 14px; }
.verdict.violated { border-left-color: var(--bad); background: #fff5f5; }
.verdict.noclaim { border-left-color: var(--neutral); background: #f6f8fa; }
.wide { overflow-x: auto; }
p.sub, .verdict { overflow-wrap: anywhere; }
figure { margin: 8px 0; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--line); }
.row { display: flex; gap: 14px; flex-wrap: wrap; }
.row figure { flex: 1 1 460px; }
.params td:first-child { text-align: left; color: var(--muted); }
.params td:last-child { text-align: left; font-family: ui-monospace, monospace; font-size: 0.8rem; }
.params summary { cursor: pointer; color: var(--muted); font-family: system-ui, sans-serif; }
footer { margin-top: 40px; color: var(--muted); font-size: 0.8rem; }
"""


#: Longest text shown in a cell of the summary table; longer names are cut there (the full
#: name is in the cell's tooltip and in the audit's own section).
SHORT_TEXT = 90


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _css(label: str) -> str:
    """CSS class of a verdict label: ``consistent``, ``violated`` or ``noclaim``."""
    return {"consistent": "consistent", "violated": "violated"}.get(label, "noclaim")


def _verdict_of(label: Any) -> str:
    """The verdict behind a label (an audit with no claim tested is ``"consistent"``)."""
    return "consistent" if label == NO_CLAIM else str(label)


#: Where a line may break inside a cell besides at spaces: after a comma; after an opening
#: parenthesis, a slash or a colon before a letter; after ``-`` between two letters
#: (``poisson-subsampled-gaussian``, not ``1e-06``); and after the dots of a dotted path before
#: its last name (``dpaudit.mechanisms.adapters:``, not ``scores.csv`` or ``0.5``).
_BREAK_AFTER = re.compile(
    r"(?<=,)(?=\S)|(?<=[(/:])(?=[A-Za-z])|(?<=[A-Za-z]-)(?=[A-Za-z])"
    r"|(?<=[A-Za-z]\.)(?=[A-Za-z]\w*[.:(])"
)


def _breakable(text: str) -> str:
    """``text`` as HTML that wraps only at spaces and at :data:`_BREAK_AFTER`, never inside a
    word or a number: a ``<wbr>`` marks each break point, and a piece between break points that
    holds a hyphen (where a browser would break on its own) is kept on one line."""
    pieces = []
    for word in re.split(r"(\s+)", text):
        parts = [
            f'<span class="nw">{_esc(part)}</span>' if "-" in part else _esc(part)
            for part in _BREAK_AFTER.split(word)
        ]
        pieces.append("<wbr>".join(parts))
    return "".join(pieces)


def _short(text: str) -> str:
    """A text cell, cut to :data:`SHORT_TEXT` characters with the full text as its tooltip."""
    if len(text) <= SHORT_TEXT:
        return _breakable(text)
    return f'<span title="{_esc(text)}">{_breakable(text[: SHORT_TEXT - 1])}…</span>'


def frame_html(
    frame: pd.DataFrame, *, text_columns: Sequence[str] = (), anchors: bool = False
) -> str:
    """``frame`` as a table of the report: cells formatted by
    :func:`~dpaudit.reports.tables.format_cell` (bounds rounded towards their safe side),
    ``text_columns`` left-aligned, and with ``anchors`` the audit names linked to their
    sections."""
    head = "".join(
        f'<th class="{"text" if c in text_columns else ""}">{_esc(c)}</th>' for c in frame.columns
    )
    body = []
    for _, row in frame.iterrows():
        cells = []
        for column in frame.columns:
            value = row[column]
            css = "text" if column in text_columns else "num"
            cell = format_cell(column, value)
            text = _short(cell) if css == "text" else _esc(cell)
            if column in ("audit", "mechanism"):
                css += " name"
            if column == "verdict":
                text = f'<span class="badge {_css(str(value))}">{text}</span>'
            elif column == "expected" and value != _verdict_of(row.get("verdict", value)):
                text = f'<span class="unexpected">{text}</span>'
            elif anchors and column == "audit":
                text = f'<a href="#{_esc(_anchor(value))}">{text}</a>'
            cells.append(f'<td class="{css}">{text}</td>')
        body.append(f"<tr>{''.join(cells)}</tr>")
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    return f'<div class="wide">{table}</div>'


def _anchor(name: Any) -> str:
    return "audit-" + "".join(c if c.isalnum() or c in "-_" else "-" for c in str(name))


def html_figure(png: bytes, alt: str) -> str:
    """A figure of the report, embedded as base64 PNG."""
    data = base64.b64encode(png).decode("ascii")
    return f'<figure><img alt="{_esc(alt)}" src="data:image/png;base64,{data}"></figure>'


def _parameter(key: str, value: str) -> str:
    """A value of the parameters table; the attack's configuration folded away until asked
    for, so that its settings do not crowd the rows around it."""
    if key == ATTACK_CONFIGURATION:
        return f"<details><summary>show all settings</summary>{_breakable(value)}</details>"
    return _breakable(value)


def _section(record: Mapping[str, Any], pngs: Mapping[str, bytes]) -> str:
    name = record.get("name", "audit")
    label = verdict_label(record)
    parts = [
        f'<h2 id="{_esc(_anchor(name))}">{_esc(name)} '
        f'<span class="badge {_css(label)}">{_esc(label)}</span></h2>'
    ]
    if record.get("description"):
        parts.append(f'<p class="sub">{_esc(record["description"])}</p>')
    parts.append(f'<p class="verdict {_css(label)}">{_esc(verdict_sentence(record))}</p>')
    if "tradeoff" in pngs:
        parts.append(html_figure(pngs["tradeoff"], f"trade-off plane of {name}"))
    row = [html_figure(pngs[k], f"{k} of {name}") for k in ("profile", "histogram") if k in pngs]
    if row:
        parts.append(f'<div class="row">{"".join(row)}</div>')
    parts.append("<h3>Lower bounds against theory</h3>")
    parts.append(frame_html(bounds_table(record)))
    parts.append(f'<p class="sub">{_esc(BOUNDS_TABLE_NOTE)}</p>')
    reach = reach_note(record)
    if reach:
        parts.append(f"<p>{_esc(reach)}</p>")
    parts.append("<h3>Parameters</h3>")
    rows = "".join(
        f"<tr><td>{_esc(k)}</td><td>{_parameter(k, v)}</td></tr>"
        for k, v in parameters_table(record)
    )
    parts.append(f'<div class="wide"><table class="params"><tbody>{rows}</tbody></table></div>')
    return "\n".join(parts)


def _battery_rows(rows: Sequence[Mapping[str, Any]], linked: set[str]) -> str:
    """The battery's table of rows; a row with a section of its own links to it."""
    head = "".join(
        f'<th class="{"text" if c in ("row", "claim", "verdict") else ""}">{c}</th>'
        for c in ("row", "claim", "eps ≥ (at δ)", "claimed eps", "verdict", "s")
    )
    body = []
    for r in rows:
        assumed = "" if r.get("relation_stated", True) else " (assumed relation)"
        name = f"{r['function']} [{r['relation']}{assumed}, {r['generator']}]"
        cell = _short(name)
        if name in linked:
            cell = f'<a href="#{_esc(_anchor(name))}">{cell}</a>'
        verdict = str(r.get("verdict"))
        badge = f'<span class="badge {_css(verdict)}">{_esc(verdict)}</span>'
        if "error" in r:
            badge += f" {_short(str(r['error']))}"
        bound = format_number(r.get("epsilon_lower_bound"), rounding="down")
        body.append(
            f'<tr><td class="text name">{cell}</td><td class="text">{_short(str(r["claim"]))}</td>'
            f'<td class="num">{_esc(bound)} ({r.get("delta", 0.0):g})</td>'
            f'<td class="num">{_esc(format_number(r.get("claimed_epsilon")))}</td>'
            f'<td class="text">{badge}</td><td class="num">{r.get("seconds", 0.0):.1f}</td></tr>'
        )
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    return f'<div class="wide">{table}</div>'


def _battery_head(
    battery: Mapping[str, Any], records: Sequence[Mapping[str, Any]], summary_png: bytes | None
) -> str:
    """The verdict of a library battery, first: its refuted claims (the ``REFUTED:`` lines of
    the terminal), its violated rows that refute no claim, the summary figure and the rows."""
    refuted, unrefuted = refuted_lines(battery), unrefuted_lines(battery)
    library = battery.get("library", "the library")
    parts = []
    if refuted:
        lines = "".join(f"<p>{_esc(line)}</p>" for line in refuted)
        parts.append(f'<div class="verdict violated">{lines}</div>')
    else:
        parts.append(f'<p class="verdict consistent">No claim of {_esc(library)} was refuted.</p>')
    if unrefuted:
        lines = "".join(f"<p>{_esc(line)}</p>" for line in unrefuted)
        parts.append(f'<div class="verdict noclaim">{lines}</div>')
    if summary_png is not None:
        parts.append(html_figure(summary_png, f"every row of the {library} battery"))
    linked = {str(r.get("name")) for r in records}
    parts.append(_battery_rows(battery.get("rows", []), linked))
    return "\n".join(parts)


def render_html(
    records: Sequence[Mapping[str, Any]],
    pngs: Sequence[Mapping[str, bytes]],
    *,
    title: str = "dpaudit report",
    version: str = "",
    battery: Mapping[str, Any] | None = None,
    summary_png: bytes | None = None,
) -> str:
    """The HTML page of a report: an index of the audits, then one section per audit.

    ``pngs[i]`` holds the PNG bytes of the figures of ``records[i]`` (keys ``tradeoff``,
    ``profile``, ``histogram``; none for an audit drawn without figures). A library battery's
    page (``battery``: the ``"battery"`` section of its ``results.json``) opens with its verdict
    instead of the index: the refuted claims, the violated rows that refute no claim, the
    summary figure ``summary_png`` and the table of rows.
    """
    if battery is not None:
        summary = battery_summary(battery)
        index = _battery_head(battery, records, summary_png)
    else:
        summary = report_summary(records)
        index = frame_html(
            index_table(records),
            text_columns=("audit", "mechanism", "claim", "verdict", "expected"),
            anchors=True,
        )
    sections = "\n".join(_section(r, p) for r, p in zip(records, pngs, strict=True))
    subtitle = f"{summary}. Every bound holds at the confidence stated in its audit."
    return html_page(title, subtitle, f"{index}\n{sections}", version=version)


def html_page(title: str, subtitle: str, body: str, *, version: str = "") -> str:
    """A self-contained page in the style of every dpaudit report: ``title`` as its heading,
    ``subtitle`` under it (both escaped), then ``body`` (HTML), then the dpaudit version."""
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
<p class="sub">{_esc(subtitle)}</p>
{body}
<footer>Generated by dpaudit {_esc(version)}.</footer>
</body>
</html>
"""
