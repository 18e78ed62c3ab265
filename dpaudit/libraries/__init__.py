"""Audit the DP libraries people ship, in one call: a battery per library.

``run_battery("diffprivlib")`` audits every covered function of the library
(:mod:`dpaudit.libraries.diffprivlib`, :mod:`dpaudit.libraries.opendp`) against the library's own
claim, on every neighbouring relation it could mean and on pairs made by the generators of
:mod:`dpaudit.mechanisms.pairs`; :mod:`dpaudit.libraries.battery` says how the rows are laid
out and why a "violated" row is a test at the battery's level. ``dpaudit library NAME -o DIR``
is the same from the command line.

The libraries are optional (``pip install "dpaudit[libraries]"``); a missing one is named in a
one-line error with its pip command.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence

from dpaudit._core.validation import check_choice
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
    budget: int | None = None,
    confidence: float = 0.95,
    seed: int = 0,
    until_decided: bool = False,
) -> Plan:
    """The battery of library ``name``, laid out but not run (:func:`~.battery.plan`);
    ``plan.draws`` is the most outputs it will draw from the library."""
    return plan(
        library(name),
        trials=trials,
        quick=quick,
        functions=functions,
        budget=budget,
        confidence=confidence,
        seed=seed,
        until_decided=until_decided,
    )


def run_battery(
    name: str | Plan,
    *,
    trials: int = 10_000,
    quick: bool = False,
    functions: Sequence[str] | None = None,
    budget: int | None = None,
    confidence: float = 0.95,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
    n_jobs: int = 1,
    until_decided: bool = False,
) -> Battery:
    """Audit every covered function of library ``name``; the arguments are those of
    :func:`plan_battery`, ``progress(line)`` hears of each finished row, and ``n_jobs`` audits
    run at once (``-1``: all cores; the results are the same). ``name`` may also be a
    :class:`Plan` from :func:`plan_battery` (the planning arguments are then not used).

    Returns
    -------
    Battery
        ``battery.table`` (one row per function, relation and pair generator),
        ``battery.refuted`` (some claim refuted, family-wise at ``confidence``) and
        ``battery.write(path)`` (``results.json`` and the report).
    """
    if isinstance(name, Plan):
        return run(name, progress=progress, n_jobs=n_jobs)
    laid_out = plan_battery(
        name,
        trials=trials,
        quick=quick,
        functions=functions,
        budget=budget,
        confidence=confidence,
        seed=seed,
        until_decided=until_decided,
    )
    return run(laid_out, progress=progress, n_jobs=n_jobs)
