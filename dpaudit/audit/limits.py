"""What this machine can do: limits a run is checked against before it starts.

An audit that cannot finish should say so at once, in one line, rather than hang for years or
die of ``MemoryError`` after hours. Four checks, each derived from the machine it runs on:

- :func:`check_trials` (before anything is drawn): the number of trials per dataset must fit in
  :data:`LONGEST_RUN_DAYS` on this machine's cores even at :data:`FASTEST_VALUES_PER_SECOND`, a
  rate no mechanism reaches. It refuses only what is out of reach on any account
  (``trials = 1e19``).
- :func:`check_output_size` (before anything is drawn): a chunk of :data:`SMALLEST_CHUNK` trials
  on both datasets, as float64, must fit in a quarter of the machine's memory (a composition
  nested 30 deep has 2^30 values per output).
- :func:`check_learning_sample` (before a learning attack's fit sample is drawn): that sample,
  as float64, must fit in a quarter of the machine's memory as well.
- :func:`check_duration` (before the fit and the pilot when the mechanism's probe is slow, at
  the speed of the engine's timing draws; after the pilot, before selection, at the pilot's
  speed): with every worker busy, the run must fit in :data:`LONGEST_RUN_DAYS`.

Every refusal is a ``ValueError`` whose message says the limit and where it comes from.
"""

from __future__ import annotations

import math
import os
from typing import Any

from dpaudit.bounds.validation import check_integer
from dpaudit.mechanisms.base import NeighbouringPair

__all__ = [
    "LONGEST_RUN_DAYS",
    "FASTEST_VALUES_PER_SECOND",
    "SMALLEST_CHUNK",
    "max_trials",
    "check_trials",
    "check_output_size",
    "check_learning_sample",
    "check_duration",
]

#: The longest run an audit may plan; a longer one is refused before it starts.
LONGEST_RUN_DAYS = 30

#: More output values than any mechanism produces per second on one core (numpy draws about
#: 10^8 normal values per second per core): the ceiling behind :func:`max_trials`.
FASTEST_VALUES_PER_SECOND = 10**9

#: Fewest trials in a chunk of the engine (:func:`dpaudit.audit.engine.default_chunk_size`).
SMALLEST_CHUNK = 64

_SECONDS = LONGEST_RUN_DAYS * 86_400


def _cores() -> int:
    return max(1, os.cpu_count() or 1)


def _physical_memory() -> int | None:
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):  # not a POSIX system: not checked
        return None


def max_trials() -> int:
    """Most trials per dataset this machine could run in :data:`LONGEST_RUN_DAYS` at
    :data:`FASTEST_VALUES_PER_SECOND` on each of its cores, one value per trial on each of the
    two datasets."""
    return FASTEST_VALUES_PER_SECOND * _SECONDS * _cores() // 2


def check_trials(name: str, trials: object, *, minimum: int = 1) -> int:
    """``trials`` as an integer in ``[minimum, max_trials()]``; otherwise ``ValueError`` naming
    ``name`` and the limit."""
    trials = check_integer(name, trials, minimum=minimum)
    limit = max_trials()
    if trials > limit:
        raise ValueError(
            f"{name} = {trials:,} is more than this machine can run: at most {limit:,} trials "
            f"per dataset fit in {LONGEST_RUN_DAYS} days on its {_cores()} cores"
        )
    return trials


def check_output_size(mechanism: Any, pair: NeighbouringPair) -> None:
    """Refuse (``ValueError``) a mechanism whose outputs do not fit this machine's memory: a
    chunk of :data:`SMALLEST_CHUNK` trials on both datasets, as float64, must fit in a quarter
    of it. A mechanism without ``output_shape``, one whose shape is only known by calling foreign
    code (``calls_foreign_code``: its first draw, the engine's probe, checks it), or whose
    ``output_shape`` fails (the engine's first draw then names the problem), is not checked here."""
    shape_of = getattr(mechanism, "output_shape", None)
    memory = _physical_memory()
    if not callable(shape_of) or memory is None or getattr(mechanism, "calls_foreign_code", False):
        return
    try:
        shape = tuple(int(n) for n in shape_of(pair.d))
    except (Exception, SystemExit):  # foreign code may call sys.exit
        return
    values = math.prod(shape)
    beyond = _beyond_memory(SMALLEST_CHUNK * values, memory)
    if beyond:
        name = str(getattr(mechanism, "name", type(mechanism).__name__))
        raise ValueError(
            f"mechanism {name[:80]} has {values:,} output values per trial: a chunk of "
            f"{SMALLEST_CHUNK} trials on both datasets needs {beyond}"
        )


def check_learning_sample(attack: str, outputs: int, values: int) -> None:
    """Refuse (``ValueError``) the fit sample of the learning attack named ``attack``,
    ``outputs`` per dataset of ``values`` values each, when on both datasets, as float64, it
    does not fit in a quarter of this machine's memory (the outputs of a wide mechanism)."""
    memory = _physical_memory()
    beyond = None if memory is None else _beyond_memory(outputs * values, memory)
    if beyond:
        raise ValueError(
            f"attack {attack[:80]} learns from {outputs:,} outputs per dataset of {values:,} "
            f"values each: on both datasets they need {beyond}; use an attack that does not "
            "learn"
        )


def _beyond_memory(values: int, memory: int) -> str | None:
    """``"X GiB, more than a quarter of this machine's Y GiB of memory"`` when ``values``
    float64 values per dataset, on both datasets, need more than a quarter of ``memory``."""
    need = 2 * 8 * values
    if need <= memory // 4:
        return None
    return (
        f"{need / 2**30:,.1f} GiB, more than a quarter of this machine's "
        f"{memory / 2**30:,.1f} GiB of memory"
    )


def check_duration(name: str, trials: int, drawn: int, seconds: float, n_jobs: int) -> None:
    """Refuse (``ValueError``) ``trials`` per dataset of mechanism ``name`` when ``drawn`` trials
    (on both datasets) took ``seconds`` and the whole run would take longer than
    :data:`LONGEST_RUN_DAYS` even with its ``n_jobs`` workers (joblib's convention: ``-1`` one
    per core, ``-2`` all cores but one) busy all the time."""
    if drawn <= 0 or seconds <= 0:
        return
    workers = max(1, _cores() + 1 + n_jobs if n_jobs < 0 else n_jobs)
    per_trial = seconds / drawn
    planned = trials * per_trial / workers
    if planned > _SECONDS:
        fits = int(_SECONDS * workers / per_trial)
        raise ValueError(
            f"{trials:,} selection and evaluation trials per dataset of {name[:80]} would take "
            f"about {planned / 86_400:,.0f} days here (a trial on both datasets took "
            f"{per_trial:.2g} s; {workers} worker{'s' if workers > 1 else ''}): at most "
            f"about {fits:,} fit in {LONGEST_RUN_DAYS} days; lower trials or add workers"
        )
