"""The battery: every covered function of a library, on every relation and pair generator.

A :class:`Library` lists its :class:`Function` entries. Each function knows how to call the
library (a release function ``fn(dataset, size, rng)`` built once per audit), the library's own
claim for each neighbouring relation it could mean (:class:`Claimed`, in the library's own
privacy measure), and its candidate pairs, grouped by generator
(:mod:`dpaudit.mechanisms.pairs`). :func:`plan` lays out one :class:`Row` per
``(function, relation, generator)``; :func:`run` audits every row.

Statistics. A battery of ``K`` rows makes ``K`` claims, and refuting any of them is what the
battery reports, so every row's audit runs at confidence ``1 - gamma / K`` (Bonferroni): the
probability that *some* row of a battery of correct functions is called "violated" is at most
``gamma = 1 - confidence``. Inside a row, the verdict is the engine's
(:meth:`dpaudit.audit.result.AuditResult.verdict`), with its own split of the row's level over
its tests. A row with several candidate pairs chooses one by pilot audits on independent streams
(:func:`dpaudit.audit.pair_search.search_pairs`), which keeps the final bound valid.

Which claims are refuted. A function that states its relation (or states a claim for each
relation, as OpenDP's input metrics do) is refuted when one of its rows is. A library that is
silent about its relation may mean any of those tried: its function is refuted when it is
refuted under every relation it could mean, and the library's silent functions together are
refuted when no one relation makes all their claims hold (under each relation, some other
function is refuted). Each of these conclusions needs a row refuted under a relation the claim
could mean, so the battery's family-wise level covers them all (:meth:`Battery.findings`). A row
refuted only under an assumed relation is shown, and not counted as a refutation on its own.

Cost. An audit with ``T`` trials and ``S = T // 2`` selection trials draws at most
``2 * (T + S + max(4, floor((T + S) / 2))) + 2`` outputs
(:func:`dpaudit.audit.engine.most_outputs`: :data:`dpaudit.audit.engine.OVERHEAD` and the shape
probe); a pilot of ``P`` trials likewise with ``P // 2`` selection trials (a pilot only ranks
the candidates). :attr:`Plan.draws` adds these up before anything runs. Rows are independent
audits with their own seeds, so :func:`run` may audit several at once (``n_jobs``) with
results identical to one at a time (for a seeded library).
"""

from __future__ import annotations

import importlib
import re
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np
from joblib import delayed

from dpaudit._core.numbers import format_number
from dpaudit._core.provenance import versions
from dpaudit._core.validation import check_integer, check_n_jobs, check_probability, check_seed
from dpaudit.audit.backends import worker_pool
from dpaudit.audit.engine import audit_mechanism, most_outputs
from dpaudit.audit.limits import check_trials
from dpaudit.audit.pair_search import search_pairs
from dpaudit.bounds.tradeoff import TradeoffCurve
from dpaudit.mechanisms.base import NeighbouringPair
from dpaudit.mechanisms.blackbox import BlackBox, describe_outputs
from dpaudit.mechanisms.pairs import subsample
from dpaudit.reports.records import build_record, results_document
from dpaudit.reports.writer import write

__all__ = [
    "Battery",
    "Claimed",
    "Function",
    "Library",
    "Plan",
    "Row",
    "audit_draws",
    "plan",
    "run",
]

#: ``fn(dataset, size, rng) -> size outputs``: how a function of a library is called.
Release = Callable[[np.ndarray, int, np.random.Generator], Any]


@dataclass(frozen=True)
class Claimed:
    """A library's claim for one relation, in its own privacy measure.

    ``curve`` is the trade-off curve the verdict tests; ``table`` states the claim as the library
    does (e.g. ``{"kind": "zcdp", "rho": 0.5, "d_in": 1}``); ``deltas`` are the ``delta`` at
    which ``eps`` lower bounds are reported; ``text`` is the claim in words.
    """

    curve: TradeoffCurve
    table: Mapping[str, Any]
    deltas: tuple[float, ...]
    text: str


@dataclass(frozen=True)
class Function:
    """One covered function of a library.

    Parameters
    ----------
    name:
        The function as the library names it, with the settings audited.
    release:
        Builds the release function ``fn(dataset, size, rng)`` (called once per audit, so a
        mechanism or measurement is built once, and once per chunk inside ``fn``).
    claims:
        The library's claim for each relation tried: ``{"replace_one": ..., "add_remove": ...}``.
    pairs:
        ``pairs(relation) -> {generator name: candidate pairs}``.
    stated:
        Whether the library states which relation it means (``False``: it is silent, and every
        relation in ``claims`` is tried).
    """

    name: str
    release: Callable[[], Release]
    claims: Mapping[str, Claimed]
    pairs: Callable[[str], Mapping[str, Sequence[NeighbouringPair]]]
    stated: bool = True


@dataclass(frozen=True)
class Library:
    """A library the battery covers: ``module`` is imported, ``package`` is what pip installs,
    ``functions()`` lists the covered functions, ``seeded`` says whether its randomness follows
    the audit's seed (audits are then reproducible bit for bit), ``one_call_per_output`` whether
    every output costs one call into the library (else one call per chunk of outputs)."""

    name: str
    module: str
    package: str
    functions: Callable[[], list[Function]]
    seeded: bool
    one_call_per_output: bool

    def cost(self, draws: int) -> str:
        """``draws`` outputs in words: how many calls into the library they take."""
        return describe_outputs(self.name, draws, self.one_call_per_output)

    def require(self) -> None:
        """Import the library; ``ValueError`` in one line naming it and the pip command (or,
        when one of its own dependencies fails to import, saying so)."""
        try:
            importlib.import_module(self.module)
        except ImportError as exc:
            if exc.name in (None, self.module):
                raise ValueError(
                    f"library {self.name!r} is not installed: pip install {self.package}"
                ) from None
            raise ValueError(
                f"library {self.name!r} is installed but cannot be imported ({exc}); "
                'pip install "dpaudit[libraries]" installs versions that work together'
            ) from None

    def version(self) -> str:
        """The installed version of the library's package."""
        try:
            return version(self.package)
        except PackageNotFoundError:
            return "unknown"


@dataclass(frozen=True)
class Row:
    """One audit of the battery: a function, a relation, a generator and its candidates."""

    function: Function
    relation: str
    generator: str
    candidates: tuple[NeighbouringPair, ...]

    @property
    def claim(self) -> Claimed:
        """The library's claim for this row's relation."""
        return self.function.claims[self.relation]

    @property
    def name(self) -> str:
        """``function [relation, generator]``."""
        return f"{self.function.name} [{self.relation}, {self.generator}]"


def audit_draws(trials: int, selection: int | None = None) -> int:
    """The most outputs one audit of ``trials`` trials and ``selection`` selection trials
    (default ``trials // 2``) draws from the audited function, both datasets and the shape probe
    together."""
    return most_outputs(trials, _selection(trials) if selection is None else selection)


def _selection(trials: int) -> int:
    return max(trials // 2, 2)


@dataclass(frozen=True)
class Plan:
    """The rows of a battery and its settings, laid out before anything runs."""

    library: Library
    rows: tuple[Row, ...]
    trials: int
    pilot_trials: int
    confidence: float
    seed: int

    @property
    def row_confidence(self) -> float:
        """Confidence of each row's audit: ``1 - gamma / K`` over the ``K`` rows."""
        return 1.0 - (1.0 - self.confidence) / max(len(self.rows), 1)

    def row_draws(self, row: Row) -> int:
        """The most outputs ``row`` draws from the library (pilots included)."""
        pilots = len(row.candidates) * audit_draws(self.pilot_trials)
        return audit_draws(self.trials) + (pilots if len(row.candidates) > 1 else 0)

    @property
    def draws(self) -> int:
        """The most outputs the whole battery draws from the library."""
        return sum(self.row_draws(r) for r in self.rows)


def plan(
    library: Library,
    *,
    trials: int = 10_000,
    quick: bool = False,
    functions: Sequence[str] | None = None,
    budget: int | None = None,
    confidence: float = 0.95,
    seed: int = 0,
) -> Plan:
    """Lay out the battery of ``library``.

    Parameters
    ----------
    library:
        The library (:func:`dpaudit.libraries.library`).
    trials:
        Evaluation trials per dataset of each row's final audit.
    quick:
        At most one candidate pair per row (no pilots) instead of ``budget``.
    functions:
        Names of the functions to audit (default: all); an unknown name is refused.
    budget:
        Most candidate pairs per row, subsampled from the generator's (default 4, or 1 with
        ``quick``); pilots of ``max(trials // 8, 200)`` trials (at most ``trials``) choose
        among them.
    confidence:
        Family-wise confidence of the battery's verdicts.
    seed:
        Root seed of the audits and of the subsampling.
    """
    library.require()
    trials = check_trials("trials", trials, minimum=2)
    confidence = check_probability("confidence", confidence, low_open=True, high_open=True)
    seed = check_seed("seed", seed)
    budget = check_integer("budget", budget if budget is not None else 1 if quick else 4)
    covered = library.functions()
    if functions is not None:
        if isinstance(functions, str) or not all(isinstance(f, str) for f in functions):
            raise ValueError(f"functions must be a list of function names, got {functions!r}")
        names = [f.name for f in covered]
        unknown = [n for n in functions if n not in names]
        if unknown:
            raise ValueError(
                f"functions: {library.name} has no covered function {unknown[0]!r}; "
                f"covered: {', '.join(names)}"
            )
        covered = [f for f in covered if f.name in functions]
    rows = []
    for function in covered:
        for relation in function.claims:
            for generator, candidates in function.pairs(relation).items():
                chosen = subsample(candidates, budget, seed=seed) if candidates else []
                if chosen:
                    rows.append(Row(function, relation, generator, tuple(chosen)))
    pilot_trials = min(trials, max(trials // 8, 200))
    return Plan(library, tuple(rows), trials, pilot_trials, confidence, seed)


@dataclass
class Battery:
    """The audits of a battery: one report record per row and a summary table.

    ``records`` are :func:`dpaudit.reports.build_record` records (an ``"error"`` verdict for a
    row whose function raised); ``table`` has one dictionary per row.
    """

    plan: Plan
    records: list[dict[str, Any]]
    table: list[dict[str, Any]]
    provenance: dict[str, Any] = field(default_factory=dict)

    @property
    def refuted(self) -> bool:
        """Whether some claim of :meth:`findings` was refuted (family-wise at the plan's
        confidence)."""
        return any(verdict == "violated" for _, verdict in self.findings())

    def findings(self) -> list[tuple[str, str]]:
        """The library's claims and their verdicts, ``(claim, "violated" | "consistent")``.

        One per function that ran: a function that states its relation is refuted when one of
        its rows is; one whose library is silent, when it is refuted under every relation tried.
        Then, when two or more silent functions were tried under two or more relations, one
        for them together: that some one relation makes all their claims hold, refuted when
        under each relation some silent function not refuted on its own is. Every conclusion
        rests on a row refuted under a relation the claim may mean, so all of them together
        hold at the battery's family-wise confidence.
        """
        library = self.plan.library.name
        violated = {
            (r["function"], r["relation"]) for r in self.table if r["verdict"] == "violated"
        }
        # Every relation planned for a function counts, also one whose rows all raised: a
        # function is refuted under every relation only if each was audited and refuted.
        planned: dict[str, tuple[Function, list[str]]] = {}
        for row in self.plan.rows:
            entry = planned.setdefault(row.function.name, (row.function, []))
            if row.relation not in entry[1]:
                entry[1].append(row.relation)
        audited = {
            row.function.name
            for row, r in zip(self.plan.rows, self.table, strict=True)
            if r["verdict"] in ("violated", "consistent")
        }
        ran = {name: entry for name, entry in planned.items() if name in audited}
        out: list[tuple[str, str]] = []
        silent: dict[str, list[str]] = {}
        for name, (function, relations) in ran.items():
            hit = [rel for rel in relations if (name, rel) in violated]
            refuted = bool(hit) and (function.stated or len(hit) == len(relations))
            claim = f"{library}: {name}"
            if not function.stated:
                claim += f" under one of {', '.join(relations)}"
            out.append((claim, "violated" if refuted else "consistent"))
            if not function.stated and not refuted:
                silent[name] = relations
        common = sorted({rel for rels in silent.values() for rel in rels})
        if len(silent) > 1 and len(common) > 1:
            culprits = {rel: [name for name in silent if (name, rel) in violated] for rel in common}
            refuted = all(culprits.values())
            claim = (
                f"{library}: {len(silent)} functions silent about their relation and not refuted "
                "on their own, under one common relation"
            )
            if refuted:
                claim += (
                    " ("
                    + "; ".join(
                        f"under {rel}: {', '.join(names)} refuted"
                        for rel, names in culprits.items()
                    )
                    + ")"
                )
            out.append((claim, "violated" if refuted else "consistent"))
        return out

    def to_frame(self) -> Any:
        """The summary table as a ``pandas.DataFrame``."""
        import pandas as pd

        return pd.DataFrame(self.table)

    def markdown(self) -> str:
        """The summary table in Markdown: function, relation, pair generator, claim, certified
        ``eps`` lower bound at the claim's ``delta`` against the claim's ``eps``, verdict, time."""
        lines = [
            "| function | relation | pairs | claim | eps >= (at delta) | claimed eps | verdict "
            "| s |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in self.table:
            relation = r["relation"] + ("" if r["relation_stated"] else " (assumed)")
            verdict = r["verdict"] if "error" not in r else f"error: {r['error'][:160]}"
            lines.append(
                f"| `{r['function']}` | {relation} | {r['generator']} | {r['claim']} | "
                f"{format_number(r['epsilon_lower_bound'])} ({r['delta']:g}) | "
                f"{format_number(r['claimed_epsilon'])} | {verdict} | {r['seconds']:.1f} |"
            )
        return "\n".join(lines)

    def document(self) -> dict[str, Any]:
        """The content of ``results.json``: the audit records and a ``battery`` section."""
        done = [r for r in self.records if r.get("verdict") != "error"]
        findings = [{"claim": c, "verdict": v} for c, v in self.findings()]
        battery = {**self.provenance, "rows": self.table, "findings": findings}
        return {**results_document(done), "battery": battery}

    def write(self, path: str | Path) -> Path:
        """Write ``results.json`` and the report to the directory ``path`` (atomically). A
        battery whose every function raised has nothing to report: ``ValueError`` naming the
        first error, and nothing is written."""
        if not any(r.get("verdict") != "error" for r in self.records):
            first = next((r["error"] for r in self.table if "error" in r), "no rows")
            raise ValueError(
                f"no function of the {self.plan.library.name} battery ran, so there is no report "
                f"to write; the first error: {first}"
            )
        return write(self.document(), path, title=f"dpaudit: the {self.plan.library.name} battery")


def _audit_row(plan: Plan, row: Row, index: int, mechanism: BlackBox) -> Any:
    """The row's audit: of its one pair, or of the pair its pilots choose."""
    options = {
        "trials": plan.trials,
        "selection_trials": _selection(plan.trials),
        "seed": plan.seed + 1000 * index,
        "confidence": plan.row_confidence,
        "n_jobs": 1,
    }
    if len(row.candidates) == 1:
        return audit_mechanism(mechanism, row.candidates[0], **options)
    return search_pairs(
        mechanism,
        row.candidates,
        pilot_trials=plan.pilot_trials,
        pilot_selection_trials=_selection(plan.pilot_trials),
        delta=row.claim.deltas[0],
        **options,
    ).best


def _run_row(plan: Plan, index: int, library_version: str) -> tuple[dict[str, Any], float]:
    """Audit row ``index`` of ``plan``: its report record (an ``"error"`` one when the library's
    own code raised) and the seconds it took."""
    library = plan.library
    row = plan.rows[index]
    start = time.perf_counter()
    mechanism = BlackBox(
        row.function.release(),
        row.claim.curve,
        vectorised=True,
        name=row.function.name,
        calls_per_output=bool(library.one_call_per_output),
    )
    try:
        with warnings.catch_warnings():  # the library's own notices, once per call
            warnings.filterwarnings("ignore", module=re.escape(library.module))
            result = _audit_row(plan, row, index, mechanism)
    except Exception as exc:  # the library's own code failed: a row, not a crash
        message = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
        record: dict[str, Any] = {"name": row.name, "verdict": "error", "error": message}
    else:
        record = build_record(
            result,
            name=row.name,
            mechanism=mechanism,
            claim=row.claim.curve,
            claim_table=dict(row.claim.table),
            deltas=row.claim.deltas,
            description=f"{library.name} {library_version}: {row.function.name}, "
            f"{row.relation} neighbours, pair from the {row.generator} generator; "
            f"claim: {row.claim.text}",
        )
        record["versions"] = {**record.get("versions", {}), library.package: library_version}
    return record, time.perf_counter() - start


def _table_row(row: Row, record: Mapping[str, Any], seconds: float) -> dict[str, Any]:
    delta = row.claim.deltas[0]
    bound = record.get("epsilon_lower_bounds", {})
    certified = next(iter(bound.values()), None) if bound else None
    pair = record.get("pair", {}) or {}
    return {
        "function": row.function.name,
        "relation": row.relation,
        "relation_stated": row.function.stated,
        "generator": row.generator,
        "pair": pair.get("description", ""),
        "claim": row.claim.text,
        "claimed_epsilon": float(row.claim.curve.epsilon(delta)),
        "delta": delta,
        "epsilon_lower_bound": certified,
        "verdict": record["verdict"],
        "seconds": round(seconds, 2),
    }


def run(plan: Plan, *, progress: Callable[[str], None] | None = None, n_jobs: int = 1) -> Battery:
    """Audit every row of ``plan``; ``progress(line)`` hears of each finished row, in the
    plan's order. ``n_jobs`` rows are audited at once (joblib's convention: ``-1`` all cores),
    each in its own process, with the same results as one at a time."""
    n_jobs = check_n_jobs("n_jobs", n_jobs)
    library = plan.library
    library_version = library.version()
    indices = range(len(plan.rows))
    if n_jobs == 1 or len(plan.rows) < 2:
        results: Iterable[tuple[dict[str, Any], float]] = (
            _run_row(plan, i, library_version) for i in indices
        )
    else:
        parallel = worker_pool(n_jobs)
        results = parallel(delayed(_run_row)(plan, i, library_version) for i in indices)
    records: list[dict[str, Any]] = []
    table: list[dict[str, Any]] = []
    for row, (record, seconds) in zip(plan.rows, results, strict=True):
        records.append(record)
        table.append(_table_row(row, record, seconds))
        if "error" in record:
            table[-1]["error"] = record["error"]
        if progress is not None:
            bound = table[-1]["epsilon_lower_bound"]
            shown = "-" if bound is None else format_number(bound, 3, rounding="down")
            progress(
                f"{row.name}: {record['verdict']} (eps >= {shown} vs claimed "
                f"{table[-1]['claimed_epsilon']:.3g}, {seconds:.1f} s)"
            )
    provenance = {
        "library": library.name,
        "versions": {**versions(), library.package: library_version},
        "seeded": library.seeded,
        "trials": plan.trials,
        "pilot_trials": plan.pilot_trials,
        "confidence": plan.confidence,
        "row_confidence": plan.row_confidence,
        "seed": plan.seed,
        "draws_at_most": plan.draws,
    }
    return Battery(plan, records, table, provenance)
