"""Audit the DP libraries people ship, in one call: a battery per library.

``run_battery("diffprivlib")`` audits every covered function of the library
(:mod:`dpaudit.libraries.diffprivlib`, :mod:`dpaudit.libraries.opendp`) against the library's own
claim, on every neighbouring relation it could mean, searched over the input space the library
module declares for it (bounds, sizes, dtypes, ``epsilon``, special values) with the pair
generators of :mod:`dpaudit.mechanisms.pairs` and the screen-then-confirm search of
:func:`dpaudit.audit.pair_search.search_inputs`; :mod:`dpaudit.libraries.battery` says how the
rows are laid out and why a "violated" row is a test at the battery's level.
``dpaudit library NAME -o DIR`` is the same from the command line.

The libraries are optional (``pip install "dpaudit[libraries]"``); a missing one is named in a
one-line error with its pip command.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

from dpaudit._core.validation import check_choice
from dpaudit.audit.pair_search import SearchBudget
from dpaudit.libraries.battery import Battery, Claimed, Function, Library, Plan, Row, plan, run

__all__ = [
    "LIBRARIES",
    "Battery",
    "Claimed",
    "Function",
    "Library",
    "Plan",
    "Row",
    "library",
    "plan_battery",
    "run_battery",
]

#: The libraries the battery covers: name -> module of dpaudit that describes it.
LIBRARIES = {"diffprivlib": "dpaudit.libraries.diffprivlib", "opendp": "dpaudit.libraries.opendp"}


def library(name: str) -> Library:
    """The :class:`Library` called ``name`` (one of :data:`LIBRARIES`)."""
    check_choice("library", name, tuple(LIBRARIES))
    return importlib.import_module(LIBRARIES[name]).LIBRARY


def plan_battery(
    name: str,
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
    """The battery of library ``name``, laid out but not run (:func:`~.battery.plan`, whose
    arguments these are); ``plan.draws`` is the most outputs it will draw from the library."""
    return plan(
        library(name),
        trials=trials,
        quick=quick,
        functions=functions,
        relations=relations,
        bounds=bounds,
        sizes=sizes,
        epsilons=epsilons,
        candidates=candidates,
        budget=budget,
        finalists=finalists,
        screen_trials=screen_trials,
        confidence=confidence,
        seed=seed,
        until_decided=until_decided,
    )


def run_battery(
    name: str | Plan,
    *,
    progress: Callable[[str], None] | None = None,
    n_jobs: int = 1,
    **options: Any,
) -> Battery:
    """Audit every covered function of library ``name``, searching each over its input space;
    ``options`` are the keyword arguments of :func:`plan_battery`, ``progress(line)`` hears of
    each finished row, and ``n_jobs`` rows run at once (``-1``: all cores; the results are the
    same). ``name`` may also be a :class:`Plan` from :func:`plan_battery` (``options`` are then
    not used).

    Returns
    -------
    Battery
        ``battery.table`` (one row per function, relation and pair generator, with the setting
        the search found), ``battery.refuted`` (some claim refuted, family-wise at
        ``confidence``) and ``battery.write(path)`` (``results.json`` and the report).
    """
    if isinstance(name, Plan):
        return run(name, progress=progress, n_jobs=n_jobs)
    return run(plan_battery(name, **options), progress=progress, n_jobs=n_jobs)
