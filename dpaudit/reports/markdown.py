"""The Markdown report: the same content as the HTML page, with figures as PNG files beside it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dpaudit.reports.tables import bounds_table, format_cell, index_table, parameters_table
from dpaudit.reports.text import BOUNDS_TABLE_NOTE, report_summary, verdict_label, verdict_sentence

if TYPE_CHECKING:  # pandas is imported where a table is built
    import pandas as pd

__all__ = ["frame_markdown", "inline_markdown", "render_markdown"]


#: Characters that could start Markdown markup, escaped with a backslash in user text.
_MARKUP = "\\`*_[]#|~!"

#: Characters that could start raw HTML, written as entities (a renderer shows the character).
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def inline_markdown(text: Any) -> str:
    """User text in running Markdown or in a table cell: one line, no markup, no raw HTML.

    Line breaks become spaces; ``&``, ``<`` and ``>`` become HTML entities, so that a name such
    as ``<script>`` or ``"><svg onload=...>`` is shown as text and never reaches a renderer as
    HTML; characters that start Markdown markup (emphasis, links, images, code, headings, table
    pipes) are escaped with a backslash.
    """
    out = " ".join(str(text).splitlines())
    for ch in _MARKUP:
        out = out.replace(ch, "\\" + ch)
    return "".join(_ENTITIES.get(ch, ch) for ch in out)


def frame_markdown(frame: pd.DataFrame) -> str:
    """``frame`` as a Markdown table, cells formatted by
    :func:`~dpaudit.reports.tables.format_cell` and escaped by :func:`inline_markdown`."""
    header = "| " + " | ".join(inline_markdown(str(c)) for c in frame.columns) + " |"
    rule = "|" + "|".join(" --- " for _ in frame.columns) + "|"
    lines = [header, rule]
    for _, row in frame.iterrows():
        cells = [inline_markdown(format_cell(c, row[c])) for c in frame.columns]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _section(record: Mapping[str, Any], figures: Mapping[str, str]) -> str:
    name = inline_markdown(record.get("name", "audit"))
    lines = [f"## {name} — {inline_markdown(verdict_label(record))}", ""]
    if record.get("description"):
        lines += [inline_markdown(record["description"]), ""]
    lines += [f"**{inline_markdown(verdict_sentence(record))}**", ""]
    for key, caption in (
        ("tradeoff", "trade-off plane"),
        ("profile", "privacy profile"),
        ("histogram", "score distribution"),
    ):
        if key in figures:
            lines += [f"![{caption} of {name}]({figures[key]})", ""]
    lines += ["### Lower bounds against theory", "", frame_markdown(bounds_table(record)), ""]
    lines += [
        BOUNDS_TABLE_NOTE,
        "",
        "### Parameters",
        "",
        "| parameter | value |",
        "| --- | --- |",
    ]
    rows = parameters_table(record)
    lines += [f"| {inline_markdown(k)} | {inline_markdown(v)} |" for k, v in rows]
    return "\n".join(lines) + "\n"


def render_markdown(
    records: Sequence[Mapping[str, Any]],
    figures: Sequence[Mapping[str, str]],
    *,
    title: str = "dpaudit report",
) -> str:
    """The Markdown report; ``figures[i]`` maps figure keys of ``records[i]`` to relative paths."""
    summary = report_summary(records)
    lines = [
        f"# {inline_markdown(title)}",
        "",
        f"{summary}. Every bound holds at the confidence stated in its audit.",
        "",
        frame_markdown(index_table(records)),
        "",
    ]
    sections = [_section(r, f) for r, f in zip(records, figures, strict=True)]
    return "\n".join(lines) + "\n" + "\n".join(sections)
