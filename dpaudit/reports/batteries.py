"""The words of a library battery's verdict, the same in the terminal and in every report.

A battery's section of ``results.json`` (``document["battery"]``, written by
:meth:`dpaudit.libraries.Battery.document`) holds its rows (one per function, relation and pair
generator), its findings (the library's claims, each ``{"claim", "verdict", "relation",
"reason"}``) and its unrefuted violations (violated rows that refute no claim, each with the
reason). From it alone:

- :func:`refuted_lines`: one ``REFUTED:`` line per refuted claim, with its relation and reason:
  what ``dpaudit library`` prints and the report's headline;
- :func:`unrefuted_lines`: one line per function whose violated rows refute no claim, saying
  under which relation they failed and why that is no refutation on its own;
- :func:`battery_summary`: the report's first sentence;
- :func:`battery_markdown`: the table of rows, a relation the library does not state marked
  "(assumed)".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dpaudit._core.numbers import format_number

__all__ = [
    "REFUTED",
    "UNREFUTED",
    "battery_markdown",
    "battery_summary",
    "finding_text",
    "refuted_lines",
    "row_evidence",
    "unrefuted_lines",
]

#: How a refuted claim's line starts, in the terminal and in the report.
REFUTED = "REFUTED: "
#: How a line naming violated rows that refute no claim starts.
UNREFUTED = "VIOLATED, NO REFUTATION ON ITS OWN: "


def row_evidence(row: Mapping[str, Any]) -> str:
    """What a row measured, in a few words: ``boundary pairs: eps >= 6.24 against 1 claimed``
    (the certified lower bound rounded down, at the claim's ``delta`` when it is not 0)."""
    bound = format_number(row.get("epsilon_lower_bound"), 4, rounding="down")
    claimed = format_number(row.get("claimed_epsilon"))
    delta = row.get("delta") or 0.0
    at = f" at delta = {delta:g}" if delta else ""
    return f"{row['generator']} pairs: eps >= {bound} against {claimed} claimed{at}"


def finding_text(finding: Mapping[str, Any]) -> str:
    """A claim with its relation and reason, as a ``REFUTED:`` line writes it (the claim alone
    from a ``results.json`` written before findings had reasons)."""
    reason = finding.get("reason")
    return f"{finding['claim']} — {reason}" if reason else str(finding["claim"])


def refuted_lines(section: Mapping[str, Any]) -> list[str]:
    """One ``REFUTED:`` line per refuted claim of the battery ``section``, in its order."""
    return [
        REFUTED + finding_text(f)
        for f in section.get("findings", [])
        if f.get("verdict") == "violated"
    ]


def unrefuted_lines(section: Mapping[str, Any]) -> list[str]:
    """One line per function whose violated rows refute no claim, with the reason."""
    return [UNREFUTED + entry["text"] for entry in section.get("unrefuted", [])]


def battery_summary(section: Mapping[str, Any]) -> str:
    """The first sentence of a battery's report: the library and version, the claims refuted
    and at what confidence, and the rows audited, violated and failed."""
    library = section.get("library", "the library")
    version = (section.get("versions") or {}).get(section.get("package", library), "")
    rows = section.get("rows", [])
    findings = section.get("findings", [])
    refuted = sum(f.get("verdict") == "violated" for f in findings)
    violated = sum(r.get("verdict") == "violated" for r in rows)
    errors = sum(r.get("verdict") == "error" for r in rows)
    confidence = section.get("confidence")
    level = f" (family-wise at {100 * confidence:g}% confidence)" if confidence else ""
    name = f"{library} {version}".strip()
    text = (
        f"{name}: {refuted} of {len(findings)} claim{'s' if len(findings) != 1 else ''} "
        f"refuted{level}; {len(rows)} audit{'s' if len(rows) != 1 else ''}, {violated} "
        f"violated"
    )
    return text + (f", {errors} raised an error" if errors else "")


def battery_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """The rows in Markdown: function, relation ("(assumed)" where the library does not state
    it), pair generator and the setting its search found, claim, certified ``eps`` lower bound
    at the claim's ``delta`` against the claim's ``eps``, verdict, seconds."""
    lines = [
        "| function | relation | pairs | claim | eps >= (at delta) | claimed eps | verdict | s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        relation = r["relation"] + ("" if r["relation_stated"] else " (assumed)")
        verdict = r["verdict"] if "error" not in r else f"error: {r['error'][:160]}"
        pairs = r["generator"] + (f" at {r['setting']}" if r.get("setting") else "")
        lines.append(
            f"| `{r['function']}` | {relation} | {pairs} | {r['claim']} | "
            f"{format_number(r['epsilon_lower_bound'])} ({r['delta']:g}) | "
            f"{format_number(r['claimed_epsilon'])} | {verdict} | {r['seconds']:.1f} |"
        )
    return "\n".join(lines)
