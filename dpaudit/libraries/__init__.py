"""Audit the DP libraries people ship, in one call: a battery per library.

``run_battery("diffprivlib")`` audits every covered function of the library
(:mod:`dpaudit.libraries.diffprivlib`, :mod:`dpaudit.libraries.opendp`,
:mod:`dpaudit.libraries.pydp`, :mod:`dpaudit.libraries.pipeline_dp`,
:mod:`dpaudit.libraries.smartnoise_sql`) against the library's own claim, on every neighbouring
relation it could mean, searched over the input space the library module declares for it (bounds,
sizes, dtypes, ``epsilon``, special values) with the pair generators of
:mod:`dpaudit.mechanisms.pairs` and the screen-then-confirm search of
:func:`dpaudit.audit.pair_search.search_inputs`; :mod:`dpaudit.libraries.battery` says how the
rows are laid out and why a "violated" row is a test at the battery's level.
``dpaudit library NAME -o DIR`` is the same from the command line.

Plugins. A library is found through the entry-point group :data:`ENTRY_POINT_GROUP`
(``dpaudit.libraries``): each entry point is named after the library and names a module that
exports ``LIBRARY``, a :class:`Library` of that name (or names the :class:`Library` itself,
``module:attribute``). dpaudit's own libraries register the same way, in its
``pyproject.toml``, so a package that ships its own battery is found exactly as they are.

The libraries are optional (``pip install "dpaudit[libraries]"`` and one extra per library); a
missing one is named in a one-line error with its pip command.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from dpaudit._core.validation import check_choice
from dpaudit.audit.pair_search import SearchBudget
from dpaudit.libraries.battery import (
    NOT_REPRODUCIBLE,
    Battery,
    Claimed,
    Function,
    Library,
    Plan,
    Row,
    plan,
    run,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "LIBRARIES",
    "Battery",
    "Claimed",
    "Function",
    "Library",
    "NOT_REPRODUCIBLE",
    "Plan",
    "Row",
    "library",
    "plan_battery",
    "run_battery",
]

#: The entry-point group through which a package registers the battery of a library.
ENTRY_POINT_GROUP = "dpaudit.libraries"


def _registered() -> dict[str, list[EntryPoint]]:
    """The entry points of :data:`ENTRY_POINT_GROUP`, by name (read anew on every call, so a
    package installed while Python runs is found)."""
    found: dict[str, list[EntryPoint]] = {}
    for point in entry_points(group=ENTRY_POINT_GROUP):
        if all(p.value != point.value for p in found.get(point.name, [])):
            found.setdefault(point.name, []).append(point)
    return dict(sorted(found.items()))


class _Registry(Mapping[str, str]):
    """The libraries the battery covers, name -> what its entry point names (a module, or
    ``module:attribute``), as installed now."""

    def __getitem__(self, name: str) -> str:
        return _registered()[name][0].value

    def __iter__(self) -> Iterator[str]:
        return iter(_registered())

    def __len__(self) -> int:
        return len(_registered())

    def __repr__(self) -> str:
        return repr(dict(self))


#: The libraries the battery covers, name -> entry-point value, found through
#: :data:`ENTRY_POINT_GROUP` (dpaudit's own and every installed plugin's).
LIBRARIES: Mapping[str, str] = _Registry()


def _where(point: EntryPoint) -> str:
    dist = point.dist
    package = f" of {dist.name} {dist.version}" if dist is not None else ""
    return f"entry point {point.name} = {point.value!r}{package}"


def library(name: str) -> Library:
    """The :class:`Library` called ``name`` (one of :data:`LIBRARIES`), loaded through its entry
    point; ``ValueError`` in one line when the name is unknown, claimed by two packages, or its
    plugin fails to load or does not export a :class:`Library` of that name."""
    registered = _registered()
    check_choice("library", name, tuple(registered))
    points = registered[name]
    if len(points) > 1:
        raise ValueError(
            f"library {name!r} is registered twice: {'; '.join(_where(p) for p in points)}"
        )
    point = points[0]
    try:
        loaded = point.load()
    except Exception as exc:  # a broken plugin: one line, never a traceback
        message = " ".join(f"{type(exc).__name__}: {exc}".split())
        raise ValueError(
            f"library {name!r}: its {_where(point)} failed to load ({message})"
        ) from None
    found = loaded if isinstance(loaded, Library) else getattr(loaded, "LIBRARY", None)
    if not isinstance(found, Library):
        raise ValueError(
            f"library {name!r}: its {_where(point)} exports no LIBRARY "
            "(a dpaudit.libraries.Library)"
        )
    if found.name != name:
        raise ValueError(
            f"library {name!r}: its {_where(point)} exports the library {found.name!r}; "
            "the entry point and the Library must have one name"
        )
    return found


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
