"""Tables of an audit as pandas DataFrames: lower bounds against theory, parameters, the index.

The frames hold numbers (``inf`` where a theoretical epsilon is infinite, ``NaN`` where a method
gives no value); the HTML and Markdown writers format them with
:func:`dpaudit.reports.text.format_number`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from dpaudit._core.validation import check_deltas, check_nonnegative
from dpaudit.audit.accountant.result import P_VALUE_FLOOR
from dpaudit.audit.benchmark import summarize_benchmark
from dpaudit.mechanisms.base import METHOD_KINDS, Mechanism
from dpaudit.reports.records import as_record, from_json_value, optional_tightness
from dpaudit.reports.text import (
    attack_label,
    claim_label,
    format_delta,
    format_number,
    method_title,
    verdict_label,
)

if TYPE_CHECKING:  # pandas is imported where a table is built
    import pandas as pd

__all__ = [
    "ATTACK_CONFIGURATION",
    "bounds_table",
    "format_benchmark",
    "parameters_table",
    "index_table",
    "theory_table",
    "method_title",
    "BOUND_COLUMNS",
    "format_cell",
    "format_frame",
    "toml_inline",
]


def _value(x: Any) -> float:
    out = from_json_value(x)
    return np.nan if out is None else out


def bounds_table(result: Any) -> pd.DataFrame:
    """Lower bounds against the claim and every theory: one row per quantity.

    Rows: epsilon at each reported delta, then mu (GDP). Columns: ``quantity``, ``lower bound``,
    ``ceiling`` (the most a perfect attack could certify with these sample sizes, when the
    record has it), then for the claim and for every theory method its value and
    ``tightness <method>`` (lower bound / value: 1 means the audit meets the theory; above 1
    against a valid bound is a violation). The theoretical mu of a method is read at the mu
    witness's type I error (:meth:`dpaudit.AuditResult.theory_comparison`); a claim states a mu
    only when it is a GDP claim.
    """
    import pandas as pd

    record = as_record(result)
    lower = record.get("epsilon_lower_bounds") or {}
    keys = list(lower)
    mu_lb = _value(record.get("mu_lower_bound"))
    columns: dict[str, list[Any]] = {
        "quantity": [f"ε at δ = {format_delta(k)}" for k in keys] + ["μ (GDP)"],
        "lower bound": [_value(lower[k]) for k in keys] + [mu_lb],
    }
    ceilings = record.get("epsilon_ceilings")
    if ceilings is not None:
        columns["ceiling"] = [_value(ceilings.get(k)) for k in keys] + [
            _value(record.get("mu_ceiling"))
        ]
    claim = record.get("claim")
    if claim:
        table = claim.get("table") or {}
        claimed_mu = _value(table.get("mu")) if table.get("kind") == "gdp" else np.nan
        tight_mu = optional_tightness(mu_lb, None if np.isnan(claimed_mu) else claimed_mu)
        eps, tight = claim.get("epsilon") or {}, claim.get("tightness") or {}
        columns["claim"] = [_value(eps.get(k)) for k in keys] + [claimed_mu]
        columns["tightness claim"] = [_value(tight.get(k)) for k in keys] + [_value(tight_mu)]
    for method, entry in (record.get("theory") or {}).items():
        title = method_title(method)
        eps, tight = entry.get("epsilon") or {}, entry.get("tightness") or {}
        mu = entry.get("mu") or {}
        columns[title] = [_value(eps.get(k)) for k in keys] + [_value(mu.get("theory"))]
        columns[f"tightness {title}"] = [_value(tight.get(k)) for k in keys] + [
            _value(mu.get("tightness"))
        ]
    return pd.DataFrame(columns)


#: A key that TOML takes without quotes.
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def toml_inline(value: Any) -> str:
    """A spec value written as TOML (inline tables and arrays), as a user would type it.

    TOML has no null: a key whose value is ``None`` is left out of its table, as a spec leaves
    out a key it does not set, and a ``None`` that is no key's value is written ``—``, as a
    report writes every missing value. A key that TOML does not take bare is quoted.
    """
    if value is None:
        return "—"
    if isinstance(value, Mapping):
        inner = ", ".join(
            f"{_toml_key(str(k))} = {toml_inline(v)}" for k, v in value.items() if v is not None
        )
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_inline(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key, ensure_ascii=False)


def _count(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else format_number(value)


def _records_text(records: Any, shown: int = 6) -> str:
    """A dataset for display; a long one by its size, first records and last record."""
    if isinstance(records, list) and len(records) > shown:
        head = ", ".join(toml_inline(r) for r in records[: shown - 1])
        return f"{len(records)} records [{head}, …, {toml_inline(records[-1])}]"
    return toml_inline(records)


def _pair_text(pair: Mapping[str, Any]) -> str:
    text = f"D = {_records_text(pair.get('d'))}, D′ = {_records_text(pair.get('d_prime'))}"
    text += f" ({pair.get('relation', '')})"
    if pair.get("description"):
        text += f": {pair['description']}"
    return text


#: The row of :func:`parameters_table` that holds the attack's full configuration (its
#: settings and what it learned), below the ``attack`` row that names it in a few words.
ATTACK_CONFIGURATION = "attack configuration"


def parameters_table(result: Any) -> list[tuple[str, str]]:
    """``(parameter, value)`` rows: what was audited, how, with which seed, and the versions."""
    record = as_record(result)
    spec = record.get("spec") or {}
    rows = [("mechanism", str(record.get("mechanism_name") or "—"))]
    if spec.get("mechanism"):
        rows.append(("mechanism spec", toml_inline(spec["mechanism"])))
    attack = record.get("attack") or {}
    given = attack.get("class") == "scores"  # an audit of scores computed elsewhere
    if given:
        rows.append(("neighbouring pair", "the pair of the runs that gave the scores (not known)"))
    elif record.get("pair"):
        rows.append(("neighbouring pair", _pair_text(record["pair"])))
    if attack:
        rows.append(("attack", attack_label(attack)))
        # The mechanism and the pair an attack was built on are shown on their own rows; the
        # sizes of given scores on the rows of counts below. A setting left unset (None) is left
        # out, as toml_inline leaves it out of any table.
        params = {
            k: v
            for k, v in (attack.get("params") or {}).items()
            if k not in ("mechanism", "pair") and v is not None
        }
        if params and not given:
            rows.append((ATTACK_CONFIGURATION, toml_inline(params)))
    gdp = record.get("gdp_estimate") or {}
    if given:
        sizes = attack.get("params") or {}
        counted = [
            ("scores on D (non-members)", _count(sizes.get("n_d"))),
            ("scores on D′ (members)", _count(sizes.get("n_d_prime"))),
            ("of which evaluate (smaller side)", _count(record.get("trials"))),
            ("of which select (smaller side)", _count(record.get("selection_trials"))),
        ]
    else:
        counted = [
            ("trials per dataset", _count(record.get("trials"))),
            ("selection trials per dataset", _count(record.get("selection_trials"))),
        ]
    rows += [
        ("claim", claim_label(record)),
        ("expected verdict", str(record.get("expect", "consistent"))),
        *counted,
        ("seed", str(record.get("seed"))),
        ("confidence", format_number(record.get("confidence"))),
        ("strategy", str(record.get("strategy"))),
        ("GDP estimate μ (assumes a Gaussian curve; not a bound)", format_number(gdp.get("mu"))),
        ("elapsed", f"{format_number(record.get('elapsed_seconds'), 3)} s"),
    ]
    for name, version in (record.get("versions") or {}).items():
        rows.append((f"version: {name}", str(version)))
    for method, entry in (record.get("theory") or {}).items():
        if entry.get("error"):
            rows.append((f"theory {method_title(method)}: not available", str(entry["error"])))
    return rows


def index_table(results: Sequence[Any]) -> pd.DataFrame:
    """One row per audit: name, mechanism, claim, verdict, expectation and headline numbers.

    The verdict is shown as :func:`~dpaudit.reports.text.verdict_label` words it (``"no claim
    tested"`` for an audit without a claim). The headline numbers are taken at the first
    reported delta: the epsilon lower bound, the claimed epsilon and their ratio.
    """
    import pandas as pd

    rows = []
    for result in results:
        record = as_record(result)
        lower = record.get("epsilon_lower_bounds") or {}
        key = next(iter(lower), None)
        claim = record.get("claim") or {}
        claimed = (claim.get("epsilon") or {}).get(key) if key is not None else None
        tight = (claim.get("tightness") or {}).get(key) if key is not None else None
        rows.append(
            {
                "audit": record.get("name"),
                "mechanism": record.get("mechanism_name"),
                "claim": claim_label(record),
                "verdict": verdict_label(record),
                "expected": record.get("expect", "consistent"),
                "δ": np.nan if key is None else float(key),
                "ε lower bound": np.nan if key is None else _value(lower[key]),
                "ε claimed": _value(claimed),
                "tightness": _value(tight),
                "μ lower bound": _value(record.get("mu_lower_bound")),
            }
        )
    return pd.DataFrame(rows)


#: Columns of the report tables that hold bounds, and the side their cells round to
#: (:func:`~dpaudit.reports.text.format_number`): a lower bound down, an upper bound up, so that
#: no cell claims more than the audit showed. Every other number rounds to the nearest.
BOUND_COLUMNS = {
    "lower bound": "down",
    "ε lower bound": "down",
    "μ lower bound": "down",
    "ε ceiling": "up",
    "lower": "down",
    "true delta >=": "down",
    "ratio": "down",
    "eps understated by": "down",
    "upper": "up",
    "p-value": "up",
}


def format_cell(column: str, value: Any) -> str:
    """A cell of a table for display (:data:`BOUND_COLUMNS` round towards their safe side)."""
    if column in ("delta", "δ"):
        return format_delta(value)
    if column == "p-value" and isinstance(value, float | np.floating) and value <= P_VALUE_FLOOR:
        return f"< {P_VALUE_FLOOR:g}"
    if isinstance(value, float | np.floating):
        rounding = BOUND_COLUMNS.get(column, "nearest")
        return format_number(None if np.isnan(value) else float(value), rounding=rounding)
    return "—" if value is None else str(value)


def theory_table(
    mechanism: Mechanism,
    *,
    deltas: Sequence[float] = (1e-5,),
    eps: Sequence[float] = (1.0,),
) -> pd.DataFrame:
    """The mechanism's theory by every method that applies: one row per method, with columns
    ``method``, ``kind`` (exact / bound / approximation), ``eps at delta=<d>`` for each delta
    and ``delta at eps=<e>`` for each eps. A method that cannot answer gets NaN and its reason
    in ``note``."""
    import pandas as pd

    deltas = check_deltas("deltas", deltas, high_open=False)
    eps = [check_nonnegative("eps", e) for e in eps]
    rows = []
    for method in mechanism.theory_methods:
        row: dict[str, Any] = {"method": method, "kind": METHOD_KINDS.get(method, "bound")}
        notes = []
        for d in deltas:
            try:
                row[f"eps at delta={d:g}"] = float(mechanism.epsilon(d, method))
            except (ValueError, NotImplementedError, ArithmeticError) as exc:
                row[f"eps at delta={d:g}"] = np.nan
                notes.append(str(exc))
        for e in eps:
            try:
                row[f"delta at eps={e:g}"] = float(np.asarray(mechanism.delta(e, method)))
            except (ValueError, NotImplementedError, ArithmeticError) as exc:
                row[f"delta at eps={e:g}"] = np.nan
                notes.append(str(exc))
        row["note"] = "; ".join(dict.fromkeys(notes))
        rows.append(row)
    return pd.DataFrame(rows)


def format_frame(frame: pd.DataFrame) -> str:
    """A frame as aligned plain text, numbers formatted like the reports."""
    import pandas as pd

    shown = pd.DataFrame({c: [format_cell(c, v) for v in frame[c].tolist()] for c in frame.columns})
    return shown.to_string(index=False)


def format_benchmark(frame: Any) -> str:
    """A :func:`~dpaudit.audit.benchmark.run_benchmark` frame as a Markdown table plus the
    :func:`~dpaudit.audit.benchmark.summarize_benchmark` counts (what ``dpaudit bench-flawed``
    prints); numbers as everywhere in reports (:func:`~dpaudit.reports.text.format_number`, no
    value as an em dash)."""

    def number(x: Any) -> str:
        return format_number(None if isinstance(x, float) and math.isnan(x) else x)

    lines = [
        "| mechanism | claimed | true eps | certified (95%) | verdict | best published | trials |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in frame.itertuples():
        true = number(row.true_lower)
        if row.true_lower != row.true_upper:
            true = f"[{number(row.true_lower)}, {number(row.true_upper)}]"
        verdict = "violated" if row.flagged else "consistent"
        lines.append(
            f"| {row.name} | {number(row.claimed_epsilon)} | {true} | {number(row.certified)} "
            f"| {verdict} | {number(row.published)} | {row.trials:,} |"
        )
    s = summarize_benchmark(frame)
    lines.append("")
    lines.append(
        f"broken flagged: {s['broken_flagged']}/{s['broken']}; correct flagged: "
        f"{s['correct_flagged']}/{s['correct']}; above the best published bound: "
        f"{s['above_published']}/{s['with_published']}; above the true eps: "
        f"{s['above_true_upper']}"
    )
    return "\n".join(lines)
