"""The Markdown report: the same content as the HTML page, with figures as PNG files beside it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dpaudit.reports.batteries import (
    battery_markdown,
    battery_summary,
    refuted_lines,
    unrefuted_lines,
)
from dpaudit.reports.tables import bounds_table, format_cell, index_table, parameters_table
from dpaudit.reports.text import (
    BOUNDS_TABLE_NOTE,
    reach_note,
    report_summary,
    verdict_label,
    verdict_sentence,
)

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
    reach = reach_note(record)
    lines += [BOUNDS_TABLE_NOTE, ""] + ([inline_markdown(reach), ""] if reach else [])
    lines += [
        "### Parameters",
        "",
        "| parameter | value |",
        "| --- | --- |",
    ]
    rows = parameters_table(record)
    lines += [f"| {inline_markdown(k)} | {inline_markdown(v)} |" for k, v in rows]
    return "\n".join(lines) + "\n"


def _battery_head(battery: Mapping[str, Any], summary_path: str | None) -> list[str]:
    """The verdict of a library battery, first: its refuted claims (the ``REFUTED:`` lines of
    the terminal), its violated rows that refute no claim, the summary figure and the rows."""
    library = inline_markdown(battery.get("library", "the library"))
    refuted = refuted_lines(battery)
    lines = [f"- **{inline_markdown(line)}**" for line in refuted] or [
        f"No claim of {library} was refuted."
    ]
    lines.append("")
    unrefuted = unrefuted_lines(battery)
    if unrefuted:
        lines += [f"- {inline_markdown(line)}" for line in unrefuted] + [""]
    if summary_path is not None:
        lines += [f"![every row of the {library} battery]({summary_path})", ""]
    return [*lines, battery_markdown(battery.get("rows", [])), ""]


def render_markdown(
    records: Sequence[Mapping[str, Any]],
    figures: Sequence[Mapping[str, str]],
    *,
    title: str = "dpaudit report",
    battery: Mapping[str, Any] | None = None,
    summary_path: str | None = None,
) -> str:
    """The Markdown report; ``figures[i]`` maps figure keys of ``records[i]`` to relative paths.
    A library battery's report (``battery``: the ``"battery"`` section of its
    ``results.json``) opens with its verdict instead of the index: the refuted claims, the
    violated rows that refute no claim, the summary figure at ``summary_path`` and the rows."""
    summary = battery_summary(battery) if battery is not None else report_summary(records)
    lines = [
        f"# {inline_markdown(title)}",
        "",
        f"{summary}. Every bound holds at the confidence stated in its audit.",
        "",
        *(
            _battery_head(battery, summary_path)
            if battery is not None
            else [frame_markdown(index_table(records)), ""]
        ),
    ]
    sections = [_section(r, f) for r, f in zip(records, figures, strict=True)]
    return "\n".join(lines) + "\n" + "\n".join(sections)
