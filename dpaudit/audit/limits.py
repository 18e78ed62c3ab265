"""What this machine can do: limits a run is checked against before it starts.

An audit that cannot finish should say so at once, in one line, rather than hang for years or
die of ``MemoryError`` after hours. Five checks, each derived from the machine it runs on:

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
- :func:`check_extra_draws` (at the same moment): draws the defaults add to a small audit
  (a selection sample of at least 10,000 trials for an audit of 400) must not take more than
  :data:`LONGEST_EXTRA_SECONDS`; the refusal offers the choice of ``selection_trials``.

Every refusal is a ``ValueError`` whose message says the limit and where it comes from.
"""

from __future__ import annotations

import math
import os
from typing import Any

from dpaudit._core.heartbeat import doing
from dpaudit._core.validation import available_memory, beyond_memory, check_integer
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
    "check_extra_draws",
    "EXTRA_FACTOR",
    "NOTICE_SECONDS",
    "LONGEST_EXTRA_SECONDS",
]

#: The longest run an audit may plan; a longer one is refused before it starts.
LONGEST_RUN_DAYS = 30

#: More output values than any mechanism produces per second on one core (numpy draws about
#: 10^8 normal values per second per core): the ceiling behind :func:`max_trials`.
FASTEST_VALUES_PER_SECOND = 10**9

#: Fewest trials in a chunk of the engine (:func:`dpaudit.audit.engine.default_chunk_size`).
SMALLEST_CHUNK = 64

#: Draws that an audit adds by default to the trials asked for (its default selection sample,
#: fit and pilot) are said (:func:`check_extra_draws`) when they are more than this many times
#: those trials; they never are from 10,000 trials on, nor for foreign code.
EXTRA_FACTOR = 2

#: Such additions are said when they take at least this many seconds...
NOTICE_SECONDS = 10

#: ...and refused, with the choice of a smaller selection sample, beyond this many seconds.
LONGEST_EXTRA_SECONDS = 600

_SECONDS = LONGEST_RUN_DAYS * 86_400


def _cores() -> int:
    return max(1, os.cpu_count() or 1)


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
    if (
        not callable(shape_of)
        or available_memory() is None
        or getattr(mechanism, "calls_foreign_code", False)
    ):
        return
    name = str(getattr(mechanism, "name", type(mechanism).__name__))
    try:
        with doing(f"checking that the outputs of {name[:40]} fit in memory"):
            shape = tuple(int(n) for n in shape_of(pair.d))
    except (Exception, SystemExit):  # foreign code may call sys.exit
        return
    values = math.prod(shape)
    beyond = _beyond_memory(SMALLEST_CHUNK * values)
    if beyond:
        raise ValueError(
            f"mechanism {name[:80]} has {values:,} output values per trial: a chunk of "
            f"{SMALLEST_CHUNK} trials on both datasets needs {beyond}"
        )


def check_learning_sample(attack: str, outputs: int, values: int) -> None:
    """Refuse (``ValueError``) the fit sample of the learning attack named ``attack``,
    ``outputs`` per dataset of ``values`` values each, when on both datasets, as float64, it
    does not fit in a quarter of this machine's memory (the outputs of a wide mechanism)."""
    beyond = _beyond_memory(outputs * values)
    if beyond:
        raise ValueError(
            f"attack {attack[:80]} learns from {outputs:,} outputs per dataset of {values:,} "
            f"values each: on both datasets they need {beyond}; use an attack that does not "
            "learn"
        )


def _beyond_memory(values: int) -> str | None:
    """What ``values`` float64 values per dataset, on both datasets, need when that is more
    than a quarter of the memory this process may use (:func:`beyond_memory`)."""
    return beyond_memory(2 * 8 * values)


def check_extra_draws(
    name: str,
    trials: int,
    selection_trials: int,
    overhead: int,
    alternative: int,
    per_trial: float,
) -> str | None:
    """Say, or refuse, the draws that the default selection sample (``selection_trials``) and
    the fit, pilot and training draws (``overhead``) add to the ``trials`` per dataset asked
    for, when they are more than :data:`EXTRA_FACTOR` times those trials (the default selection
    sample never has fewer than 10,000) and a trial on both datasets of mechanism ``name`` takes
    ``per_trial`` seconds. ``alternative`` is what ``selection_trials = trials`` would add.

    Returns ``None`` when they take less than :data:`NOTICE_SECONDS`, else the line that says
    so and offers the choice; raises ``ValueError`` with that choice when they would take more
    than :data:`LONGEST_EXTRA_SECONDS`."""
    added = selection_trials + overhead
    seconds = added * per_trial
    if seconds < NOTICE_SECONDS:
        return None
    what = (
        f"{name}: {trials:,} trials per dataset were asked for; the default selection sample "
        f"({selection_trials:,}) and the fit and pilot ({overhead:,}) add {added:,} more, "
        f"about {seconds:,.0f} s of drawing here"
    )
    choice = (
        f"give selection_trials to choose: selection_trials = {trials} adds {alternative:,} "
        f"(about {alternative * per_trial:,.0f} s), selection_trials = {selection_trials} "
        "keeps the default"
    )
    if seconds > LONGEST_EXTRA_SECONDS:
        raise ValueError(
            f"{what}, beyond the {LONGEST_EXTRA_SECONDS} s that default additions may take; "
            f"{choice}"
        )
    return f"{what}; {choice}"


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
