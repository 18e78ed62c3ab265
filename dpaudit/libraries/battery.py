"""The battery: every covered function of a library, searched over what it accepts.

A :class:`Library` lists its :class:`Function` entries. Each function knows how to call the
library (a release function ``fn(dataset, size, rng)`` built once per audit), the library's own
claim for each neighbouring relation it could mean (:class:`Claimed`, in the library's own
privacy measure), its candidate pairs at its default setting, grouped by generator
(:mod:`dpaudit.mechanisms.pairs`), and, where the library module declares it, its **input
space** (:class:`~dpaudit.mechanisms.inputs.InputSpace`: the bounds, sizes, dtypes, ``epsilon``
and special values it accepts) with ``at(setting)``, the function at another setting.
:func:`plan` lays out one :class:`Row` per ``(function, relation, generator)``; a row's
candidates are the generator's pairs over every setting of the space
(:func:`~dpaudit.mechanisms.pairs.space_candidates`), or its pairs at the default setting for a
function without a space. :func:`run` audits every row with
:func:`dpaudit.audit.pair_search.search_inputs`: a screen of many candidates with few outputs
each, then the best confirmed on fresh outputs.

Statistics. A battery of ``K`` rows makes ``K`` claims, and refuting any of them is what the
battery reports, so every row runs at confidence ``1 - gamma / K`` (Bonferroni): the
probability that *some* row of a battery of correct functions is called "violated" is at most
``gamma = 1 - confidence``. Inside a row, the screen spends none of that level (its numbers are
only a ranking); each of the at most ``finalists`` confirmed candidates is audited on fresh
outputs at ``1 - gamma / (K * finalists)``, and the row is violated when one of them is (its
verdict is the engine's, :meth:`dpaudit.audit.result.AuditResult.verdict`, with its own split of
that level over its tests).

Which claims are refuted. A function that states its relation (or states a claim for each
relation, as OpenDP's input metrics do) is refuted when one of its rows is. A library that is
silent about its relation may mean any of those tried: its function is refuted when it is
refuted under every relation it could mean, and the library's silent functions together are
refuted when no one relation makes all their claims hold (under each relation, some other
function is refuted). Each of these conclusions needs a row refuted under a relation the claim
could mean, so the battery's family-wise level covers them all (:meth:`Battery.findings`). A row
refuted only under an assumed relation is shown, and not counted as a refutation on its own.

Cost. The battery's :class:`~dpaudit.audit.pair_search.SearchBudget` (outputs, each weighted by
what it costs at its setting, and seconds) is shared equally by its rows. An audit with ``T``
trials and ``S = T // 2`` selection trials draws at most
``2 * (T + S + max(4, floor((T + S) / 2))) + 2`` outputs
(:func:`dpaudit.audit.engine.most_outputs`); :attr:`Plan.draws` adds up, before anything runs,
the most a row's screen and confirmations can draw. Rows are independent audits with their own
seeds, so :func:`run` may audit several at once (``n_jobs``) with results identical to one at a
time (for a seeded library, and a seconds budget that does not bind).

Seeds. A library whose randomness cannot follow the audit's seed (``Library.seeded`` false:
OpenDP, python-dp, pipeline-dp, smartnoise-sql) gives valid audits, every trial a fresh
independent draw, that a rerun does not reproduce; its records say so
(:data:`NOT_REPRODUCIBLE`) where a seed would stand, in each row's record and in the battery's
provenance, instead of a seed that would not reproduce them.
"""

from __future__ import annotations

import contextlib
import importlib
import itertools
import math
import re
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np
from joblib import delayed, effective_n_jobs

from dpaudit._core.numbers import format_number
from dpaudit._core.provenance import versions
from dpaudit._core.validation import (
    check_integer,
    check_n_jobs,
    check_positive,
    check_probability,
    check_seed,
)
from dpaudit.audit.backends import worker_pool
from dpaudit.audit.engine import FIRST_PHASE_TRIALS, audit_sequential, most_outputs, phase_trials
from dpaudit.audit.limits import check_trials
from dpaudit.audit.pair_search import SearchBudget, search_cost, search_inputs
from dpaudit.bounds.tradeoff import TradeoffCurve, approx_dp
from dpaudit.mechanisms.base import RELATIONS, NeighbouringPair
from dpaudit.mechanisms.blackbox import BlackBox, describe_outputs
from dpaudit.mechanisms.inputs import Candidate, InputSpace, Setting, powers_of_two, shown_number
from dpaudit.mechanisms.pairs import (
    boundary_pairs,
    random_pairs,
    rounding_pairs,
    space_candidates,
    subsample,
)
from dpaudit.reports.batteries import battery_markdown, row_evidence
from dpaudit.reports.records import build_record, results_document
from dpaudit.reports.writer import write

__all__ = [
    "Battery",
    "Claimed",
    "Function",
    "Library",
    "EPSILONS",
    "NOT_REPRODUCIBLE",
    "OFFSETS",
    "Plan",
    "Row",
    "RANDOM_BUDGET",
    "SQUARED_OFFSETS",
    "WIDTHS",
    "WIDTH_ULPS",
    "approx_dp_claim",
    "audit_draws",
    "bounded_pairs",
    "plan",
    "run",
]

#: What a record of an unseedable library holds where a seed would stand.
NOT_REPRODUCIBLE = "not reproducible by seed"

#: ``fn(dataset, size, rng) -> size outputs``: how a function of a library is called.
Release = Callable[[np.ndarray, int, np.random.Generator], Any]

#: Pairs the ``random`` generator draws for a function of a library module.
RANDOM_BUDGET = 8

#: The grid the input spaces of the library batteries search. Offsets of the bounds: zero and
#: powers of two up to the float's range, both signs (integer records keep those within their
#: range).
OFFSETS = (0.0, *powers_of_two((10, 30, 52, 62, 100, 1000), signed=True))
#: The offsets of a statistic that squares its bounds or records (a variance): they stop at
#: ``2**100``, where the squares still fit in a float.
SQUARED_OFFSETS = (0.0, *powers_of_two((10, 30, 52, 62, 100), signed=True))
#: Widths of the bounds: absolute, and in ulps of the offset.
WIDTHS = (1.0, 2.0**20)
WIDTH_ULPS = (4, 2**10)
#: The ``epsilon`` values the search tries.
EPSILONS = (0.1, 1.0, 5.0)


def bounded_pairs(
    n: int,
    low: float,
    high: float,
    relation: str,
    *,
    rounding: bool,
    integer: bool = False,
    accumulate: Callable[[np.ndarray], Any] = np.sum,
) -> dict[str, Sequence[NeighbouringPair]]:
    """The pairs of a statistic of ``n`` records in ``[low, high]`` (integers with ``integer``)
    under ``relation``: the ``boundary`` generator's, the ``rounding`` generator's when the
    statistic sums floats (``rounding``; summed as ``accumulate`` sums), and
    :data:`RANDOM_BUDGET` of the ``random`` generator's."""
    out: dict[str, Sequence[NeighbouringPair]] = {
        "boundary": boundary_pairs(n, low, high, relation=relation, integer=integer)
    }
    if rounding:
        out["rounding"] = rounding_pairs(n, low, high, relation=relation, accumulate=accumulate)
    out["random"] = random_pairs(
        n, low, high, relation=relation, budget=RANDOM_BUDGET, integer=integer
    )
    return out


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


def approx_dp_claim(epsilon: float, delta: float = 0.0, note: str = "") -> Claimed:
    """A library's ``(epsilon, delta)``-DP claim: ``approx_dp(epsilon, delta)``, with ``eps``
    lower bounds reported at ``delta`` (``note`` follows the claim in words)."""
    return Claimed(
        approx_dp(epsilon, delta),
        {"kind": "approx_dp", "eps": epsilon, "delta": delta},
        (delta,),
        f"({epsilon:g}, {delta:g})-DP" + (f" ({note})" if note else ""),
    )


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
    space:
        What the function accepts (:class:`~dpaudit.mechanisms.inputs.InputSpace`), searched by
        the battery; ``None``: only the pairs of ``pairs``, at the function's own setting.
    at:
        ``at(setting) -> Function``: the function at another setting of ``space`` (its
        ``release`` and ``claims`` there); given with ``space`` and only with it.
    """

    name: str
    release: Callable[[], Release]
    claims: Mapping[str, Claimed]
    pairs: Callable[[str], Mapping[str, Sequence[NeighbouringPair]]]
    stated: bool = True
    space: InputSpace | None = None
    at: Callable[[Setting], Function] | None = None

    def __post_init__(self) -> None:
        if (self.space is None) != (self.at is None):
            raise ValueError(f"function {self.name!r}: space and at are given together or not")


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
    """One search of the battery: a function, a relation, a generator and its candidates (a
    setting of the function and a pair each; made on demand)."""

    function: Function
    relation: str
    generator: str
    candidates: tuple[Candidate, ...]

    @property
    def claim(self) -> Claimed:
        """The library's claim for this row's relation."""
        return self.function.claims[self.relation]

    @property
    def name(self) -> str:
        """``function [relation, generator]``; ``relation (assumed relation)`` when the library
        does not state which neighbours it means."""
        assumed = "" if self.function.stated else " (assumed relation)"
        return f"{self.function.name} [{self.relation}{assumed}, {self.generator}]"


def audit_draws(trials: int, selection: int | None = None) -> int:
    """The most outputs one audit of ``trials`` trials and ``selection`` selection trials
    (default ``trials // 2``) draws from the audited function, both datasets and the shape probe
    together."""
    return most_outputs(trials, _selection(trials) if selection is None else selection)


def _selection(trials: int) -> int:
    return max(trials // 2, 2)


#: The battery's default budget, for each of its rows: weighted outputs (enough for two
#: confirmations of 10,000 trials and a screen of the rest), and seconds for the whole library,
#: shared equally by its rows. The outputs bind first on a machine of ordinary speed, so the
#: default run does not depend on how fast the machine is.
DEFAULT_ROW_OUTPUTS = 120_000
DEFAULT_SECONDS = 25 * 60

#: Most candidates of a row (the first of its generator's, in the order of the settings).
DEFAULT_CANDIDATES = 32


@dataclass(frozen=True)
class Plan:
    """The rows of a battery and its settings, laid out before anything runs."""

    library: Library
    rows: tuple[Row, ...]
    trials: int
    screen_trials: int
    finalists: int
    confidence: float
    seed: int
    budget: SearchBudget = SearchBudget(seconds=DEFAULT_SECONDS)
    until_decided: bool = False

    @property
    def row_confidence(self) -> float:
        """Confidence of each row: ``1 - gamma / K`` over the ``K`` rows (each confirmation of
        a row runs at ``1 - gamma / (K * finalists)``)."""
        return 1.0 - (1.0 - self.confidence) / max(len(self.rows), 1)

    def row_finalists(self, row: Row) -> int:
        """How many of ``row``'s candidates may be confirmed."""
        return min(self.finalists, len(row.candidates))

    def row_budget(self, workers: int = 1) -> SearchBudget:
        """Each row's share of :attr:`budget` when ``workers`` rows run at once."""
        return self.budget.share(max(len(self.rows), 1), max(1, min(workers, len(self.rows))))

    def row_draws(self, row: Row) -> int:
        """The most outputs ``row`` draws from the library (its screen and confirmations; run
        until decided, every phase of every candidate)."""
        if self.until_decided:
            phases = phase_trials(min(FIRST_PHASE_TRIALS, self.trials), 4, self.trials)
            return len(row.candidates) * sum(most_outputs(t, max(t // 4, 2)) for t in phases)
        weights = [c.weight for c in row.candidates]
        drawn = search_cost(weights, self.trials, self.screen_trials, self.row_finalists(row))[2]
        limit = self.row_budget().outputs
        return drawn if limit is None else min(drawn, int(limit))

    @property
    def draws(self) -> int:
        """The most outputs the whole battery draws from the library."""
        return sum(self.row_draws(r) for r in self.rows)


def _pinned(space: InputSpace | None, pins: Mapping[str, Any]) -> tuple[InputSpace | None, bool]:
    """``space`` with ``pins`` (bounds, sizes, epsilons, relations) applied, and whether the
    function keeps any setting under them."""
    if space is None or not pins:
        return space, True
    pinned = space.pinned(**pins)
    return pinned, pinned is not None


def _row_candidates(
    function: Function,
    space: InputSpace | None,
    relation: str,
    most: int,
    seed: int,
) -> dict[str, list[Candidate]]:
    """A function's candidates under ``relation``, by generator: over its space where it has
    one (the generators the space does not run keep their pairs at the default setting), at
    most ``most`` each."""
    out: dict[str, list[Candidate]] = {}
    searched = space_candidates(space, relation, seed=seed) if space is not None else {}
    given = function.pairs(relation)
    for generator in dict.fromkeys([*given, *searched]):
        if space is not None and generator in space.generators:
            chosen = searched.get(generator, [])[:most]
        else:
            pairs = list(given.get(generator, []))
            chosen = (
                [Candidate.given(p, generator) for p in subsample(pairs, most, seed=seed)]
                if pairs
                else []
            )
        if chosen:
            out[generator] = chosen
    return out


def plan(
    library: Library,
    *,
    trials: int = 10_000,
    quick: bool = False,
    functions: Sequence[str] | None = None,
    relations: Sequence[str] | None = None,
    bounds: Sequence[tuple[float, float]] | None = None,
    sizes: Sequence[int] | None = None,
    epsilons: Sequence[float] | None = None,
    candidates: int | None = None,
    budget: SearchBudget | str | None = None,
    finalists: int = 2,
    screen_trials: int = 64,
    confidence: float = 0.95,
    seed: int = 0,
    until_decided: bool = False,
) -> Plan:
    """Lay out the battery of ``library``.

    Parameters
    ----------
    library:
        The library (:func:`dpaudit.libraries.library`).
    trials:
        Evaluation trials per dataset of each confirmation (fewer for costly candidates:
        :func:`~dpaudit.audit.pair_search.search_inputs`).
    quick:
        One candidate per row, at the default setting, confirmed without a screen.
    functions:
        Names of the functions to audit (default: all); an unknown name is refused.
    relations:
        Audit only these neighbouring relations.
    bounds, sizes, epsilons:
        Pin these axes of every input space to the values given (``(lower, upper)`` pairs,
        record counts, ``epsilon`` values); functions without the axis keep their own setting,
        and a function that accepts none of the pinned bounds is left out.
    candidates:
        Most candidates per row (default :data:`DEFAULT_CANDIDATES`, 1 with ``quick``).
    budget:
        The battery's :class:`~dpaudit.audit.pair_search.SearchBudget` (or its words, e.g.
        ``"2e6,20m"``), shared equally by the rows (default: :data:`DEFAULT_ROW_OUTPUTS` weighted
        outputs a row and :data:`DEFAULT_SECONDS` in all).
    finalists:
        Most candidates of a row confirmed.
    screen_trials:
        Trials per dataset of each screen audit (fewer for costly candidates).
    confidence:
        Family-wise confidence of the battery's verdicts.
    seed:
        Root seed of the audits and of the candidates.
    until_decided:
        Test each row's candidates at the function's default setting (no search) together and
        sequentially (:func:`~dpaudit.audit.engine.audit_sequential`), stopping each row as soon
        as it is decided; ``trials`` is then the cap (the last phase's trials per dataset).
    """
    library.require()
    trials = check_trials("trials", trials, minimum=2)
    screen_trials = check_trials("screen_trials", screen_trials, minimum=2)
    confidence = check_probability("confidence", confidence, low_open=True, high_open=True)
    seed = check_seed("seed", seed)
    finalists = check_integer("finalists", finalists)
    most = check_integer(
        "candidates", candidates if candidates is not None else 1 if quick else DEFAULT_CANDIDATES
    )
    if isinstance(budget, str):
        budget = SearchBudget.parse(budget)
    elif budget is not None and not isinstance(budget, SearchBudget):
        raise ValueError(f"budget must be a SearchBudget or its words, got {budget!r}")
    pins = _checked_pins(relations, bounds, sizes, epsilons)
    if until_decided and set(pins) - {"relations"}:
        raise ValueError(
            "until_decided tests each function at its default setting; pinning bounds, sizes "
            "or epsilons needs the search (leave until_decided off)"
        )
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
    space_pins = {k: v for k, v in pins.items() if k != "relations"}
    for function in covered:
        space, kept = _pinned(function.space, space_pins)
        if not kept:
            continue
        if until_decided:
            space = None  # its pairs at the default setting
        for relation in function.claims:
            if relations is not None and relation not in relations:
                continue
            found = _row_candidates(function, space, relation, most, seed)
            for generator, chosen in found.items():
                rows.append(Row(function, relation, generator, tuple(chosen)))
    if not rows:
        raise ValueError(
            f"nothing to audit: no function of {library.name} takes the settings pinned "
            f"({', '.join(f'{k}={v}' for k, v in pins.items())})"
        )
    if budget is None:
        budget = SearchBudget(DEFAULT_ROW_OUTPUTS * len(rows), DEFAULT_SECONDS)
    laid_out = Plan(
        library,
        tuple(rows),
        trials,
        screen_trials,
        finalists,
        confidence,
        seed,
        budget,
        bool(until_decided),
    )
    if not until_decided:
        _check_budget(laid_out)
    return laid_out


def _checked_pins(
    relations: Sequence[str] | None,
    bounds: Sequence[tuple[float, float]] | None,
    sizes: Sequence[int] | None,
    epsilons: Sequence[float] | None,
) -> dict[str, Any]:
    """The pins, checked: each a non-empty list of valid values (``ValueError`` naming it)."""
    pins: dict[str, Any] = {}
    for name, values in (
        ("relations", relations),
        ("bounds", bounds),
        ("sizes", sizes),
        ("epsilons", epsilons),
    ):
        if values is None:
            continue
        if isinstance(values, str) or not isinstance(values, Sequence) or not values:
            raise ValueError(f"{name} must be a non-empty list, got {values!r}")
        pins[name] = list(values)
    for relation in pins.get("relations", []):
        if relation not in RELATIONS:
            raise ValueError(f"relations must be among {', '.join(RELATIONS)}; got {relation!r}")
    for b in pins.get("bounds", []):
        Setting(bounds=tuple(b))  # type: ignore[arg-type]
    for n in pins.get("sizes", []):
        check_integer("sizes", n, minimum=1, maximum=MAX_SIZE)
    for eps in pins.get("epsilons", []):
        check_positive("epsilons", eps)
    return pins


#: Largest dataset size a battery may be pinned to.
MAX_SIZE = 10**7


def _check_budget(laid_out: Plan) -> None:
    """``ValueError`` when a row's share of the budget cannot pay for its confirmations."""
    share = laid_out.row_budget().outputs
    if share is None:
        return
    for row in laid_out.rows:
        weights = [c.weight for c in row.candidates]
        least = min(
            search_cost([w], laid_out.trials, laid_out.screen_trials, 1)[1] for w in weights
        )
        need = least * laid_out.row_finalists(row)
        if need > share:
            raise ValueError(
                f"budget of {laid_out.budget.outputs:,.0f} outputs gives each of the "
                f"{len(laid_out.rows)} rows {share:,.0f}, less than the {need:,.0f} the "
                f"confirmations of {row.name} need; raise the budget (--budget) or lower "
                "--trials"
            )


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
        hold at the battery's family-wise confidence. :meth:`explained` gives each with its
        relation and reason.
        """
        return [(f["claim"], f["verdict"]) for f in self.explained()[0]]

    def explained(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """:meth:`findings` with their reasons, and the violated rows that refute no claim.

        Returns ``(findings, unrefuted)``. Each finding is ``{"claim", "verdict", "relation",
        "reason"}``: the relation under which it was judged and, for a refuted claim, the rows
        that refute it. Each unrefuted entry is ``{"function", "relations", "rows", "text"}``:
        a function whose violated rows (``rows``, under ``relations``) support no refuted
        claim, because the library is silent about its relation and the claim may hold under
        another one; ``text`` says so in one line.
        """
        library = self.plan.library.name
        by_key: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for r in self.table:
            if r["verdict"] == "violated":
                by_key.setdefault((r["function"], r["relation"]), []).append(r)
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

        def evidence(name: str, relation: str) -> str:
            return ", ".join(row_evidence(r) for r in by_key[(name, relation)])

        out: list[dict[str, Any]] = []
        used: set[tuple[str, str]] = set()
        silent: dict[str, list[str]] = {}
        for name, (function, relations) in ran.items():
            hit = [rel for rel in relations if (name, rel) in by_key]
            refuted = bool(hit) and (function.stated or len(hit) == len(relations))
            claim = f"{library}: {name}"
            if function.stated:
                relation = ", ".join(hit if refuted else relations) + " (stated)"
                reason = "; ".join(f"under {rel}, {evidence(name, rel)}" for rel in hit)
            else:
                claim += f" under one of {', '.join(relations)}"
                relation = "every relation it could mean: " + ", ".join(relations)
                reason = "refuted whichever relation it means: " + "; ".join(
                    f"under {rel}, {evidence(name, rel)}" for rel in hit
                )
            if refuted:
                used.update((name, rel) for rel in hit)
            else:
                reason = "no row refutes it under a relation it may mean"
            out.append(
                {
                    "claim": claim,
                    "verdict": "violated" if refuted else "consistent",
                    "relation": relation,
                    "reason": reason,
                }
            )
            if not function.stated and not refuted:
                silent[name] = relations
        common = sorted({rel for rels in silent.values() for rel in rels})
        if len(silent) > 1 and len(common) > 1:
            culprits = {rel: [name for name in silent if (name, rel) in by_key] for rel in common}
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
                used.update((name, rel) for rel, names in culprits.items() for name in names)
                reason = "no one relation makes all their claims hold: " + "; ".join(
                    f"under {rel}, {name} ({evidence(name, rel)})"
                    for rel, names in culprits.items()
                    for name in names
                )
            else:
                reason = "some one relation leaves all of their claims unrefuted"
            out.append(
                {
                    "claim": claim,
                    "verdict": "violated" if refuted else "consistent",
                    "relation": "one common relation: " + ", ".join(common),
                    "reason": reason,
                }
            )
        return out, self._unrefuted(ran, by_key, used)

    def _unrefuted(
        self,
        ran: Mapping[str, tuple[Function, list[str]]],
        by_key: Mapping[tuple[str, str], list[dict[str, Any]]],
        used: set[tuple[str, str]],
    ) -> list[dict[str, Any]]:
        """The violated rows of :meth:`explained` that support no refuted claim, per function."""
        library = self.plan.library.name
        out = []
        for name, (_, relations) in ran.items():
            hit = [rel for rel in relations if (name, rel) in by_key and (name, rel) not in used]
            if not hit:
                continue
            others = [rel for rel in relations if rel not in hit]
            rows = [r for rel in hit for r in by_key[(name, rel)]]
            failed = "; ".join(
                f"under {rel} (assumed relation), "
                + ", ".join(row_evidence(r) for r in by_key[(name, rel)])
                for rel in hit
            )
            held = (
                f"the claim may hold under {', '.join(others)}, where no row refutes it"
                if others
                else "it is refuted under no other relation"
            )
            text = (
                f"{library}: {name}: violated {failed}. {library} does not say which neighbours "
                f"it means, and {held}; a claim silent about its relation is refuted only under "
                "every relation it could mean, or together with other silent functions when no "
                "one relation makes all their claims hold"
            )
            out.append(
                {
                    "function": name,
                    "relations": hit,
                    "rows": [f"{name} [{r['relation']}, {r['generator']}]" for r in rows],
                    "text": text,
                }
            )
        return out

    def to_frame(self) -> Any:
        """The summary table as a ``pandas.DataFrame``."""
        import pandas as pd

        return pd.DataFrame(self.table)

    def markdown(self) -> str:
        """The summary table in Markdown: function, relation, pair generator and the setting the
        search found, claim, certified ``eps`` lower bound at the claim's ``delta`` against the
        claim's ``eps``, verdict, time (:func:`dpaudit.reports.batteries.battery_markdown`, as
        the report shows it)."""
        return battery_markdown(self.table)

    def document(self) -> dict[str, Any]:
        """The content of ``results.json``: the audit records and a ``battery`` section (its
        provenance, rows, findings with their relations and reasons, and the violated rows
        that refute no claim; :mod:`dpaudit.reports.batteries` reads it)."""
        done = [r for r in self.records if r.get("verdict") != "error"]
        findings, unrefuted = self.explained()
        battery = {**self.provenance, "rows": self.table, "findings": findings}
        battery["unrefuted"] = unrefuted
        return {**results_document(done), "battery": battery}

    def write(
        self,
        path: str | Path,
        *,
        figures: str = "violated",
        progress: Callable[[str], None] | None = None,
    ) -> Path:
        """Write ``results.json`` and the report to the directory ``path`` (atomically). A
        battery whose every function raised has nothing to report: ``ValueError`` naming the
        first error, and nothing is written.

        The report opens with the refuted claims (the ``REFUTED:`` lines of ``dpaudit library``),
        the violated rows that refute no claim, a summary figure and the table of rows.
        ``figures="violated"`` (the default) draws the figures of the violated rows only;
        ``"all"`` draws every row's (larger and slower: three figures per row).
        ``progress(line)`` hears of each figure drawn and of each file written.
        """
        if not any(r.get("verdict") != "error" for r in self.records):
            first = next((r["error"] for r in self.table if "error" in r), "no rows")
            raise ValueError(
                f"no function of the {self.plan.library.name} battery ran, so there is no report "
                f"to write; the first error: {first}"
            )
        return write(self.document(), path, figures=figures, progress=progress)


#: Records of a dataset a record keeps in full; a longer one is kept as its runs of equal
#: values (or its size and first records), so ``results.json`` stays small.
RECORDS_KEPT = 1000


def _compact(values: Any) -> Any:
    """A dataset of ``results.json``: as it is up to :data:`RECORDS_KEPT` records, else in
    words: its runs of equal values when they are few, else its size and first records."""
    if not isinstance(values, list) or len(values) <= RECORDS_KEPT:
        return values
    runs = [(v, len(list(g))) for v, g in itertools.groupby(values)]
    if len(runs) <= 8:
        shown = ", ".join(f"{k:,} x {shown_number(v)}" for v, k in runs)
        return f"{len(values):,} records: {shown}"
    head = ", ".join(shown_number(v) for v in values[:5])
    return f"{len(values):,} records: {head}, ... (not kept: more than {RECORDS_KEPT:,})"


def _outputs(release: Release, setting: Setting | None, coded: bool) -> Release:
    """The library's outputs as the engine takes them. Far from zero (bounds beyond ``2**64``)
    they are divided by the power of two nearest below the bounds' magnitude, which is exact
    and keeps the attacks' arithmetic in range; with ``coded``, each value ``v`` becomes two,
    ``v`` (0 where it is not finite) and a code (0 finite, 1 NaN, 2 ``+inf``, 3 ``-inf``), so
    NaN and infinite outputs are outputs like any other. Both maps are fixed before any output
    is drawn, so they are post-processing: a bound on the mapped outputs is a bound on the
    library's."""
    scale = 1.0
    if setting is not None and setting.magnitude > 2.0**64:
        scale = 2.0 ** -(math.frexp(setting.magnitude)[1] - 1)

    def mapped(dataset: np.ndarray, size: int, rng: np.random.Generator) -> Any:
        out = release(dataset, size, rng)
        if scale == 1.0 and not coded:
            return out
        values = np.asarray(out, dtype=float).reshape(size, -1) * scale
        if not coded:
            return values
        code = np.select(
            [np.isnan(values), values == np.inf, values == -np.inf], [1.0, 2.0, 3.0], 0.0
        )
        return np.hstack([np.where(np.isfinite(values), values, 0.0), code])

    return mapped


def _run_row(
    plan: Plan, index: int, library_version: str, workers: int = 1
) -> tuple[dict[str, Any], float]:
    """Search row ``index`` of ``plan``: its report record (an ``"error"`` one when the
    library's own code raised on every candidate) and the seconds it took."""
    library = plan.library
    row = plan.rows[index]
    start = time.perf_counter()
    built: dict[tuple[Setting | None, bool], tuple[BlackBox, Claimed]] = {}

    def at(candidate: Candidate) -> tuple[BlackBox, Claimed]:
        key = (candidate.setting, candidate.generator == "special")
        if key not in built:
            function = row.function
            if candidate.setting is not None and function.at is not None:
                function = function.at(candidate.setting)
            claimed = function.claims[row.relation]
            box = BlackBox(
                _outputs(function.release(), candidate.setting, key[1]),
                claimed.curve,
                vectorised=True,
                name=row.function.name,
                calls_per_output=bool(library.one_call_per_output),
            )
            built[key] = (box, claimed)
        return built[key]

    def audited(candidate: Candidate) -> tuple[BlackBox, TradeoffCurve]:
        box, claimed = at(candidate)
        return box, claimed.curve

    if plan.until_decided:
        return _decided_row(plan, index, library_version, at(row.candidates[0]), start)
    try:
        with _quiet(library):
            found = search_inputs(
                audited,
                row.candidates,
                trials=plan.trials,
                screen_trials=plan.screen_trials,
                finalists=plan.row_finalists(row),
                delta=row.claim.deltas[0],
                confidence=plan.row_confidence,
                budget=plan.row_budget(workers),
                seed=plan.seed + 1000 * index,
                n_jobs=1,
            )
    except Exception as exc:  # the library's own code failed: a row, not a crash
        return _error_record(row, exc), time.perf_counter() - start
    candidate = found.candidate
    box, claimed = at(candidate)
    setting = "" if candidate.setting is None else f" at {candidate.setting.describe()}"
    screened = int(np.isfinite(found.screen_epsilon).sum())
    searched = (
        f" (the search screened {screened} of {len(found.candidates)} candidates, "
        f"{len(found.errors)} refused by the library, and confirmed {len(found.finals)})"
        if len(found.candidates) > 1
        else ""
    )
    how = f"pair from the {row.generator} generator{setting}{searched}"
    record = _record(found.best, row, library, library_version, box, claimed, how)
    pair = record.get("pair") or {}
    for side in ("d", "d_prime"):
        if side in pair:
            pair[side] = _compact(pair[side])
    record["search"] = {
        "generator": row.generator,
        "setting": None if candidate.setting is None else candidate.setting.to_dict(),
        "setting_text": candidate.setting.describe() if candidate.setting is not None else "",
        "claim": claimed.text,
        "claimed_epsilon": float(claimed.curve.epsilon(row.claim.deltas[0])),
        "candidates": len(found.candidates),
        "screened": screened,
        "refused": len(found.errors),
        "confirmed": len(found.finals),
        "levels": found.levels,
        **{k: v for k, v in found.settings.items() if k in ("stopped", "trials_cut_by_seconds")},
    }
    return record, time.perf_counter() - start


def _bends(points: Mapping[str, Any]) -> dict[str, Any]:
    """A stored curve ``{"alpha", "beta"}`` by the points where it bends: an (eps, delta) claim
    is a few straight pieces sampled at hundreds of points. Walking along the curve, a point is
    dropped when the chord from the last point kept to the next point passes within ``1e-13``
    of it; the result is kept only when linear interpolation between the points kept gives back
    every stored point to within ``1e-12`` (else the curve is returned as it was)."""
    alpha = np.asarray(points["alpha"], dtype=float)
    beta = np.asarray(points["beta"], dtype=float)
    if alpha.size < 3 or np.any(np.diff(alpha) <= 0):
        return dict(points)
    kept = [0]
    for i in range(1, alpha.size - 1):
        j = kept[-1]
        chord = beta[j] + (beta[i + 1] - beta[j]) * (alpha[i] - alpha[j]) / (
            alpha[i + 1] - alpha[j]
        )
        if abs(chord - beta[i]) > 1e-13:
            kept.append(i)
    kept.append(alpha.size - 1)
    if np.max(np.abs(np.interp(alpha, alpha[kept], beta[kept]) - beta)) > 1e-12:
        return dict(points)
    return {"alpha": alpha[kept].tolist(), "beta": beta[kept].tolist()}


def _decided_row(
    plan: Plan,
    index: int,
    library_version: str,
    built: tuple[BlackBox, Claimed],
    start: float,
) -> tuple[dict[str, Any], float]:
    """Row ``index`` run until decided: its candidates (all at the default setting, so one
    release function) tested together by :func:`~dpaudit.audit.engine.audit_sequential` at the
    row's level."""
    library, row = plan.library, plan.rows[index]
    box, claimed = built
    try:
        with _quiet(library):
            audit = audit_sequential(
                box,
                claimed.curve,
                [c.pair() for c in row.candidates],
                level=1.0 - plan.row_confidence,
                trials=min(FIRST_PHASE_TRIALS, plan.trials),
                max_trials=plan.trials,
                seed=plan.seed + 1000 * index,
                deltas=claimed.deltas,
            )
    except Exception as exc:  # the library's own code failed: a row, not a crash
        return _error_record(row, exc), time.perf_counter() - start
    how = f"pairs from the {row.generator} generator, run until decided"
    record = _record(audit.results[audit.pair], row, library, library_version, box, claimed, how)
    return record, time.perf_counter() - start


@contextlib.contextmanager
def _quiet(library: Library) -> Iterator[None]:
    """Without the library's own notices (once per call) and numpy's on its overflows."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.filterwarnings("ignore", module=re.escape(library.module))
        yield


def _error_record(row: Row, exc: BaseException) -> dict[str, Any]:
    """The record of a row whose function raised: its error in one line."""
    message = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
    return {"name": row.name, "verdict": "error", "error": message}


def _record(
    result: Any,
    row: Row,
    library: Library,
    library_version: str,
    box: BlackBox,
    claimed: Claimed,
    how: str,
) -> dict[str, Any]:
    """The report record of a row's audit, ``how`` saying where its pair came from."""
    record = build_record(
        result,
        name=row.name,
        mechanism=box,
        claim=claimed.curve,
        claim_table=dict(claimed.table),
        deltas=claimed.deltas,
        description=f"{library.name} {library_version}: {row.function.name}, "
        f"{row.relation} neighbours, {how}; claim: {claimed.text}",
    )
    record["versions"] = {**record.get("versions", {}), library.package: library_version}
    # The black box's only theory is the claim it is audited against: the record holds that
    # curve once, as the claim, not again as a theory column of its own.
    (record.get("theory") or {}).pop("claim", None)
    claim_record = record.get("claim") or {}
    if "tradeoff" in claim_record:
        claim_record["tradeoff"] = _bends(claim_record["tradeoff"])
    if not library.seeded:
        record["seed"] = NOT_REPRODUCIBLE
    return record


def _table_row(row: Row, record: Mapping[str, Any], seconds: float) -> dict[str, Any]:
    delta = row.claim.deltas[0]
    bound = record.get("epsilon_lower_bounds", {})
    certified = next(iter(bound.values()), None) if bound else None
    pair = record.get("pair", {}) or {}
    search = record.get("search", {})
    return {
        "function": row.function.name,
        "relation": row.relation,
        "relation_stated": row.function.stated,
        "generator": row.generator,
        "setting": search.get("setting_text", ""),
        "pair": pair.get("description", ""),
        "claim": search.get("claim", row.claim.text),
        "claimed_epsilon": search.get("claimed_epsilon", float(row.claim.curve.epsilon(delta))),
        "delta": delta,
        "epsilon_lower_bound": certified,
        "verdict": record["verdict"],
        "candidates": search.get("candidates", len(row.candidates)),
        "screened": search.get("screened", 0),
        "seconds": round(seconds, 2),
        **_stop(record),
    }


def _stop(record: Mapping[str, Any]) -> dict[str, Any]:
    """When and why a row run until decided stopped (nothing for a searched row)."""
    sequential = record.get("sequential")
    if not sequential:
        return {}
    return {
        "stopped": sequential["stopped"],
        "outputs_per_dataset": max(sequential["outputs_per_dataset"]),
    }


def run(plan: Plan, *, progress: Callable[[str], None] | None = None, n_jobs: int = 1) -> Battery:
    """Audit every row of ``plan``; ``progress(line)`` hears of each finished row, in the
    plan's order. ``n_jobs`` rows are audited at once (joblib's convention: ``-1`` all cores),
    each in its own process, with the same results as one at a time."""
    n_jobs = check_n_jobs("n_jobs", n_jobs)
    library = plan.library
    library_version = library.version()
    indices = range(len(plan.rows))
    workers = min(effective_n_jobs(n_jobs), len(plan.rows))
    if n_jobs == 1 or len(plan.rows) < 2:
        results: Iterable[tuple[dict[str, Any], float]] = (
            _run_row(plan, i, library_version) for i in indices
        )
    else:
        parallel = worker_pool(n_jobs)
        results = parallel(delayed(_run_row)(plan, i, library_version, workers) for i in indices)
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
        "package": library.package,
        "versions": {**versions(), library.package: library_version},
        "seeded": library.seeded,
        "trials": plan.trials,
        "screen_trials": plan.screen_trials,
        "finalists": plan.finalists,
        "budget": {"outputs": plan.budget.outputs, "seconds": plan.budget.seconds},
        "confidence": plan.confidence,
        "row_confidence": plan.row_confidence,
        "seed": plan.seed if library.seeded else NOT_REPRODUCIBLE,
        "draws_at_most": plan.draws,
        "until_decided": plan.until_decided,
    }
    return Battery(plan, records, table, provenance)
