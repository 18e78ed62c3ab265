"""The Monte Carlo engine: run a mechanism on two neighbouring datasets, score, count.

The way data flows (docs/architecture.md#data-flow):

1. **Fit** (learning attacks only): a fit sample from its own stream; ``attack.fit`` sees it.
2. **Pilot**: a pilot sample from its own stream is scored and fixes the score grid
   (:class:`~dpaudit.audit.grid.ScoreGrid`) before any selection or evaluation trial exists;
   with ``n_jobs`` given (not 1) its chunks are drawn by the workers.
3. **Selection** and **evaluation**: trials are cut into chunks; chunk ``i`` of stream ``k`` draws
   from ``numpy.random.default_rng(SeedSequence(seed, spawn_key=(k, i)))``, samples under ``D`` and
   under ``D_prime`` (one ``sample`` call each), scores both (one ``score`` call each) and keeps
   only counts per grid bin, plus, when asked for (``privacy_loss=True``) and the score is the
   exact privacy loss, the per-bin sums of :mod:`dpaudit.audit.privacy_loss`. Memory is
   O(bins), never O(trials).
4. Chunks are grouped into batches of a fixed size that depends only on the chunk size, the
   output size and whether floating-point sums or a store are kept (audits that keep counts
   only are cut finer), never on the number of workers; batches run through ``joblib.Parallel`` (the
   backend is whatever ``joblib.parallel_config`` selects) and are summed in batch order. The
   result is therefore bit-identical for any ``n_jobs`` and any execution order.

Streams: ``0`` fit, ``1`` pilot, ``2`` selection, ``3`` evaluation, ``4`` a two-trial probe of
the output shape, ``5`` timing draws (only when the probe is slow; they never enter the result).
The selection sample is drawn *in addition* to the ``trials`` evaluation runs.

Long runs: with ``store=DIR`` every finished pilot chunk and batch is saved atomically
(:class:`~dpaudit.audit.store.ChunkStore`) and a restarted audit draws only what is not yet
stored; batches whose worker process died are run again (at most ``WORKER_RETRIES`` times).
On a PyTorch device (``device="cuda"``, ``"cpu"``; :mod:`dpaudit.audit.device`) the pilot,
selection and evaluation streams are drawn, scored and counted there, in larger chunks, from
torch generators seeded per ``(stream, chunk)`` the same way; the counts feed the same
statistics.

Runs beyond what the machine can do (:mod:`dpaudit.audit.limits`) are refused: trial counts and
output sizes before anything is drawn; a run too slow for the longest run within seconds, before
the fit and the pilot when the probe is slow (after a few timing draws: at most
:data:`PRE_CHECK_SECONDS` of drawing come before a check), else after the pilot.
A mechanism that raises, or returns outputs of the wrong shape or NaN/infinite values, stops the
audit with a ``ValueError`` naming the mechanism, the stream, the chunk and the problem.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dpaudit._core.device import check_device, torch_device
from dpaudit._core.heartbeat import beating, doing
from dpaudit._core.provenance import audit_metadata, versions
from dpaudit._core.streams import STREAMS as _ALL_STREAMS
from dpaudit._core.streams import chunk_generator, derived_seed
from dpaudit._core.validation import (
    check_choice,
    check_integer,
    check_n_jobs,
    check_positive,
    check_probability,
    check_seed,
)
from dpaudit.attacks.base import Attack
from dpaudit.attacks.delta_leak import DeltaLeak
from dpaudit.attacks.likelihood_ratio import LikelihoodRatio
from dpaudit.audit import device as _device
from dpaudit.audit.backends import on_dask, single_threaded, worker_pool
from dpaudit.audit.grid import MAX_BINS, ScoreGrid
from dpaudit.audit.limits import (
    EXTRA_FACTOR,
    SMALLEST_CHUNK,
    check_duration,
    check_extra_draws,
    check_learning_sample,
    check_output_size,
    check_trials,
)
from dpaudit.audit.privacy_loss import PrivacyLossStatistics
from dpaudit.audit.result import DEFAULT_DELTAS, AuditResult, claim_curve
from dpaudit.audit.sequential import SequentialAudit, SequentialTest
from dpaudit.audit.store import ChunkStore
from dpaudit.audit.strategies import STRATEGIES, default_selection_trials
from dpaudit.mechanisms.base import NeighbouringPair

if TYPE_CHECKING:  # joblib and tqdm are imported when trials run, not with dpaudit
    from tqdm import tqdm

__all__ = [
    "audit_mechanism",
    "audit_sequential",
    "look_chunks",
    "phase_trials",
    "FIRST_PHASE_TRIALS",
    "PHASE_CHUNKS",
    "LOOKS_PER_PHASE",
    "default_bins",
    "default_chunk_size",
    "chunk_generator",
    "STREAMS",
    "PILOT_TRIALS",
    "FIT_TRIALS",
    "WORKER_RETRIES",
    "OVERHEAD",
    "overhead_budget",
    "most_outputs",
    "selection_trials_for",
    "AUTO_PARALLEL_SECONDS",
    "auto_n_jobs",
    "PRE_CHECK_SECONDS",
    "TIMED_SECONDS",
]

#: The engine's random streams: ``SeedSequence(seed, spawn_key=(STREAMS[name], chunk))`` (the
#: table of every stream is :data:`dpaudit._core.streams.STREAMS`).
STREAMS = {
    name: _ALL_STREAMS[name]
    for name in ("fit", "pilot", "selection", "evaluation", "probe", "timing")
}

#: Largest pilot sample per dataset (it fixes the score grid); never more than the selection.
PILOT_TRIALS = 2**16

#: Largest fit sample per dataset for attacks that learn; never more than the selection.
FIT_TRIALS = 2**15

#: Scalar output values per chunk (chunk size = this / values per output, within bounds).
_CHUNK_VALUES = 2**15
_MIN_CHUNK, _MAX_CHUNK = SMALLEST_CHUNK, 2**15

#: Most scalar output values per batch (a batch is a fixed group of consecutive chunks), and the
#: number of batches a stream is cut into when it is smaller than that allows.
_BATCH_VALUES = 2**21
_BATCHES_PER_STREAM = 8

#: Audits that keep counts only, and no store, cut a stream into about this many batches of at
#: least ``_FINE_BATCH_VALUES`` values each (never larger than the batches above): enough
#: batches that 16 workers finish a stream together, rather than a few of them running its last
#: large batches alone. Integer counts do not depend on where batches are cut; the privacy-loss
#: sums (floating point) and a store's files do, so those audits keep the batches above.
_FINE_BATCHES_PER_STREAM = 256
_FINE_BATCH_VALUES = 2**18

#: The outputs an audit draws besides its selection and evaluation trials (shape probe, fit,
#: pilot and a learning attack's extra training outputs) are at most this fraction of the
#: selection + evaluation trials, per dataset: a mechanism is run at most
#: ``(1 + OVERHEAD) * (trials + selection_trials)`` times per dataset, plus a two-output shape
#: probe (and, when the probe is slow, the timing draws of :data:`PRE_CHECK_SECONDS`), which
#: matters when every output is a call into foreign code.
OVERHEAD = 0.5

#: How often the batches of an audit are started again after a worker process died.
WORKER_RETRIES = 3

#: ``n_jobs=None`` runs an audit on all cores when its pilot predicts at least this many seconds
#: in one process, else in this process. Starting workers (each imports numpy, scipy and dpaudit)
#: costs about a second on a quiet 2-core machine, so shorter audits gain nothing from them.
AUTO_PARALLEL_SECONDS = 2.0

#: The most seconds the fit and the pilot may take before the run's duration is checked
#: (:func:`~dpaudit.audit.limits.check_duration`): when the probe cannot rule out that they take
#: longer, the mechanism is timed first, on stream ``"timing"``.
PRE_CHECK_SECONDS = 10.0

#: A timing draw that takes this long measures the cost of a trial (the fixed cost of a call
#: no longer counts much): the run's duration is checked at that speed.
TIMED_SECONDS = 0.1

#: Runs at least this long (selection + evaluation trials) show a progress bar by default.
_AUTO_PROGRESS_TRIALS = 10**7


def default_bins(trials: int) -> int:
    """Bins of a continuous score grid: ``trials / 64`` rounded up to a power of two, clipped to
    ``[2^10, 2^14]``: fine enough that the grid never limits the bounds, small enough that the
    confidence bounds at every threshold stay cheap."""
    trials = check_integer("trials", trials, minimum=1)
    return int(min(2**14, max(2**10, 2 ** math.ceil(math.log2(max(trials / 64, 1.0))))))


def default_chunk_size(values_per_output: int) -> int:
    """Trials per chunk: about ``2^15`` scalar values per dataset (cache-friendly), as a power of
    two in ``[64, 2^15]``."""
    values = check_integer("values_per_output", values_per_output, minimum=1)
    target = max(_CHUNK_VALUES // values, 1)
    return int(min(_MAX_CHUNK, max(_MIN_CHUNK, 2 ** int(math.floor(math.log2(target))))))


def auto_n_jobs(predicted_seconds: float, cores: int | None = None) -> int:
    """Workers for ``n_jobs=None``: ``1`` (this process) when an audit is predicted to take less
    than :data:`AUTO_PARALLEL_SECONDS` in one process, else every core. Results never depend on
    the choice (batches and their summation order do not depend on the workers)."""
    cores = (os.cpu_count() or 1) if cores is None else cores
    return cores if cores > 1 and predicted_seconds >= AUTO_PARALLEL_SECONDS else 1


@dataclass(frozen=True)
class _Job:
    """Everything a worker needs, sent with every batch."""

    mechanism: Any
    pair: NeighbouringPair
    attack: Attack
    grid: ScoreGrid
    seed: int
    chunk_size: int
    privacy_loss: bool
    fixed_thresholds: np.ndarray | None
    output_shape: tuple[int, ...]


@dataclass
class _Tally:
    """Sums over the chunks of one batch (or of a whole stream)."""

    counts: np.ndarray
    loss: np.ndarray | None
    fixed: np.ndarray | None

    def add(self, other: _Tally) -> None:
        self.counts += other.counts
        if self.loss is not None:
            self.loss += other.loss
        if self.fixed is not None:
            self.fixed += other.fixed


def _scores(attack: Attack, outputs: np.ndarray, size: int) -> np.ndarray:
    s = np.asarray(attack.score(outputs), dtype=float)
    if s.shape != (size,):
        raise ValueError(
            f"attack {attack.name} must return one score per output, shape ({size},), got {s.shape}"
        )
    if np.isnan(s).any():
        raise ValueError(f"attack {attack.name} returned NaN scores")
    return s


def _sample(
    mechanism: Any,
    pair: NeighbouringPair,
    seed: int,
    output_shape: tuple[int, ...],
    stream: str,
    chunk: int,
    size: int,
) -> tuple:
    """Outputs of chunk ``chunk`` of ``stream`` under ``D`` and ``D_prime``, checked: ``size``
    of them, of the probe's ``output_shape``, finite."""
    rng = chunk_generator(seed, stream, chunk)
    outputs = []
    for label, dataset in (("D", pair.d), ("D_prime", pair.d_prime)):
        where = f"({stream} chunk {chunk}, dataset {label})"
        name = getattr(mechanism, "name", type(mechanism).__name__)
        try:
            y = np.asarray(mechanism.sample(dataset, size, rng))
        except (Exception, SystemExit) as exc:  # foreign code may call sys.exit
            message = " ".join(str(exc).split())
            raise ValueError(
                f"mechanism {name} raised {type(exc).__name__}: {message} {where}"
            ) from exc
        if y.shape != (size, *output_shape):
            raise ValueError(
                f"mechanism {name} returned {y.shape[0] if y.ndim else 0} outputs, expected "
                f"{size} {where}"
                if y.ndim == 0 or y.shape[0] != size
                else f"mechanism {name} returned outputs of shape {y.shape[1:]}, expected "
                f"{output_shape} as in its first outputs {where}"
            )
        if y.dtype.kind in "fc" and not np.isfinite(y).all():
            raise ValueError(f"mechanism {name} returned NaN or infinite outputs {where}")
        outputs.append(y)
    return tuple(outputs)


def _draw(job: _Job, stream: str, chunk: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    y0, y1 = _sample(job.mechanism, job.pair, job.seed, job.output_shape, stream, chunk, size)
    try:
        return _scores(job.attack, y0, size), _scores(job.attack, y1, size)
    except (Exception, SystemExit) as exc:
        message = " ".join(str(exc).split())
        if not isinstance(exc, ValueError):
            message = f"attack {job.attack.name} raised {type(exc).__name__}: {message}"
        raise ValueError(f"{message} ({stream} chunk {chunk})") from exc


def _run_batch(job: _Job, stream: str, first: int, n_chunks: int, total: int) -> _Tally:
    """Chunks ``first .. first + n_chunks - 1`` of a stream of ``total`` trials per dataset."""
    n_bins = job.grid.n_bins
    with_loss = job.privacy_loss and stream == "evaluation"
    with_fixed = job.fixed_thresholds is not None and stream == "evaluation"
    tally = _Tally(
        np.zeros((2, n_bins), dtype=np.int64),
        np.zeros((4, n_bins)) if with_loss else None,
        np.zeros((2, job.fixed_thresholds.size + 1), dtype=np.int64) if with_fixed else None,
    )
    for chunk in range(first, first + n_chunks):
        start = chunk * job.chunk_size
        size = min(job.chunk_size, total - start)
        s0, s1 = _draw(job, stream, chunk, size)
        for side, s in enumerate((s0, s1)):
            # Order P||Q needs D's scores against upper edges, Q||P D_prime's against lower edges.
            index, w = job.grid.locate(s, ("upper", "lower")[side] if with_loss else None)
            tally.counts[side] += np.bincount(index, minlength=n_bins)
            if with_loss:
                tally.loss[2 * side] += np.bincount(index, weights=w, minlength=n_bins)
                np.square(w, out=w)
                tally.loss[2 * side + 1] += np.bincount(index, weights=w, minlength=n_bins)
            if with_fixed:
                below = np.searchsorted(job.fixed_thresholds, s, side="left")
                tally.fixed[side] += np.bincount(below, minlength=job.fixed_thresholds.size + 1)
    return tally


def _batches(
    stream: str, total: int, chunk_size: int, values_per_output: int, fine: bool = False
) -> list[tuple]:
    """Cut a stream into batches of consecutive chunks: about ``_BATCHES_PER_STREAM`` of them,
    each at most ``_BATCH_VALUES`` scalar values per dataset; ``fine``: about
    ``_FINE_BATCHES_PER_STREAM``, each at least ``_FINE_BATCH_VALUES`` values too. Depends only
    on the stream's size, the chunk size, the output size and ``fine``, so the summation order
    never depends on the workers."""
    n_chunks = -(-total // chunk_size)
    chunk_values = chunk_size * values_per_output
    largest = max(1, _BATCH_VALUES // chunk_values)
    per_batch = max(1, min(n_chunks // _BATCHES_PER_STREAM, largest))
    if fine:
        smallest = max(1, _FINE_BATCH_VALUES // chunk_values)
        per_batch = min(max(n_chunks // _FINE_BATCHES_PER_STREAM, smallest), per_batch)
    return [
        (stream, first, min(per_batch, n_chunks - first), total)
        for first in range(0, n_chunks, per_batch)
    ]


def _batch_trials(batch: tuple, chunk_size: int) -> int:
    """The trials per dataset of a batch of :func:`_batches`."""
    _, first, n_chunks, total = batch
    return min(total, (first + n_chunks) * chunk_size) - first * chunk_size


def _is_exact(attack: Any, mechanism: Any, pair: NeighbouringPair) -> bool:
    """Whether the attack's score is the exact privacy loss of ``mechanism`` on ``pair``."""
    return (
        bool(getattr(attack, "exact_privacy_loss", False))
        and getattr(attack, "mechanism", mechanism) is mechanism
        and _same_pair(getattr(attack, "pair", pair), pair)
    )


def _check_exact(attack: Any, mechanism: Any, pair: NeighbouringPair) -> None:
    """``privacy_loss=True`` needs an attack whose score is the exact privacy loss."""
    if not _is_exact(attack, mechanism, pair):
        name = getattr(attack, "name", type(attack).__name__)
        raise ValueError(
            "privacy_loss=True needs an attack whose score is the exact privacy loss of the "
            f"mechanism on this pair (LikelihoodRatio), got {name}"
        )


def _fingerprint(
    job: _Job,
    *,
    exact: bool,
    trials: int,
    selection_trials: int,
    pilot_trials: int,
    bins: int,
    strategy: str,
    confidence: float,
) -> dict[str, Any]:
    """What the stored pilot scores and sums of an audit depend on (see
    :class:`~dpaudit.audit.store.ChunkStore`). The score grid is not part of it: it is computed
    from the pilot scores (stored too) and ``bins``, so the store can be opened before the pilot
    and keep it. The privacy-loss sums are named only when they are kept, so that stores of
    audits without them keep their fingerprint."""
    fixed = job.fixed_thresholds
    sums = {"privacy_loss": True} if job.privacy_loss else {}
    return {
        **audit_metadata(job.mechanism, job.pair, job.attack, exact),
        **sums,
        "seed": job.seed,
        "trials": trials,
        "selection_trials": selection_trials,
        "pilot_trials": pilot_trials,
        "chunk_size": job.chunk_size,
        "bins": bins,
        "strategy": strategy,
        "confidence": confidence,
        "threshold": None if fixed is None else fixed.tolist(),
    }


def _timed_draw(job: _Job, stream: str, chunk: int, size: int) -> tuple[np.ndarray, float]:
    """The scores of one chunk under both datasets, stacked, and the seconds they took."""
    started = time.perf_counter()
    scores = np.stack(_draw(job, stream, chunk, size))
    return scores, time.perf_counter() - started


def _pilot(
    job: _Job, trials: int, store: ChunkStore | None, n_jobs: int | None = None
) -> tuple[np.ndarray, int, float]:
    """The pilot scores under both datasets, chunk by chunk; with a store every finished chunk
    is saved at once and loaded on a rerun, so an interrupted pilot is never drawn again. With
    ``n_jobs`` workers (not ``None`` or 1) the chunks not stored are drawn by the workers: each
    chunk's scores are the same wherever it is drawn.

    Returns the scores, the trials per dataset drawn now (not loaded) and the seconds they took
    in one process (summed over the chunks).
    """
    sizes = [
        min(job.chunk_size, trials - chunk * job.chunk_size)
        for chunk in range(-(-trials // job.chunk_size))
    ]
    scores: list[np.ndarray | None] = [
        None if store is None else store.load_scores("pilot", chunk, (2, size))
        for chunk, size in enumerate(sizes)
    ]
    drawn, seconds, deaths = 0, 0.0, 0
    while True:
        missing = [chunk for chunk, stored in enumerate(scores) if stored is None]
        try:
            for chunk, (stored, took) in zip(
                missing, _pilot_chunks(job, missing, sizes, n_jobs), strict=True
            ):
                scores[chunk] = stored
                seconds += took
                drawn += sizes[chunk]
                if store is not None:
                    store.save_scores("pilot", chunk, stored)
            break
        except _worker_deaths() as exc:
            # The chunks drawn so far are kept; draw the others again.
            deaths = _one_more_death(deaths, exc)
    return np.concatenate([s.ravel() for s in scores]), drawn, seconds


def _pilot_chunks(
    job: _Job, chunks: list[int], sizes: list[int], n_jobs: int | None
) -> Iterator[tuple[np.ndarray, float]]:
    """The timed scores of the pilot's ``chunks`` in order: in this process, or by ``n_jobs``
    workers (not ``None`` or 1) when there are at least two chunks."""
    from joblib import delayed

    if n_jobs is None or n_jobs == 1 or len(chunks) < 2:
        return (_timed_draw(job, "pilot", chunk, sizes[chunk]) for chunk in chunks)
    run = single_threaded(_timed_draw) if on_dask() else _timed_draw
    parallel = worker_pool(n_jobs)
    return parallel(delayed(run)(job, "pilot", chunk, sizes[chunk]) for chunk in chunks)


def _one_more_death(deaths: int, exc: BaseException) -> int:
    """``deaths + 1``, or ``ValueError`` once that is more than ``WORKER_RETRIES``."""
    deaths += 1
    if deaths > WORKER_RETRIES:
        reason = " ".join(str(exc).split())
        raise ValueError(f"worker processes died {deaths} times; giving up ({reason})") from exc
    return deaths


def _worker_deaths() -> tuple[type[BaseException], ...]:
    """Errors that mean a worker process died (a Dask cluster's only when Dask is in use)."""
    from joblib.externals.loky.process_executor import TerminatedWorkerError

    distributed = sys.modules.get("distributed")
    killed = getattr(distributed, "KilledWorker", None)
    return (TerminatedWorkerError,) if killed is None else (TerminatedWorkerError, killed)


def _tallies(
    job: _Job,
    batches: list[tuple],
    start: int,
    store: ChunkStore | None,
    finished: set[tuple[str, int]],
    n_jobs: int,
) -> Iterator[tuple[int, _Tally]]:
    """The tallies of ``batches[start:]`` in batch order: stored ones loaded, the others run
    (and stored as soon as they are finished)."""
    from joblib import delayed

    pending = [b for b in batches[start:] if (b[0], b[1]) not in finished]
    run = single_threaded(_run_batch) if on_dask() else _run_batch
    with contextlib.ExitStack() as stack:
        # A resume with every batch stored starts no pool (whose shutdown would warn that it
        # cancelled nothing).
        results: Iterator[_Tally] = iter(())
        if pending:
            parallel = stack.enter_context(worker_pool(n_jobs))
            results = parallel(delayed(run)(job, *batch) for batch in pending)
        for index in range(start, len(batches)):
            stream, first = batches[index][:2]
            if (stream, first) in finished:
                stored = store.load(stream, first, _batch_trials(batches[index], job.chunk_size))
                if stored is not None:
                    yield index, _Tally(**stored)
                    continue
                # Damaged since the store was opened (the store said so): run it here.
                tally = _run_batch(job, *batches[index])
            else:
                tally = next(results)
            if store is not None:
                store.save(stream, first, vars(tally))
            yield index, tally


def _check_pair(pair: object) -> NeighbouringPair:
    if not isinstance(pair, NeighbouringPair):
        raise ValueError(f"pair must be a NeighbouringPair, got {type(pair).__name__}")
    return pair


def _same_pair(a: NeighbouringPair, b: NeighbouringPair) -> bool:
    return (
        a.relation == b.relation
        and a.d.shape == b.d.shape
        and a.d_prime.shape == b.d_prime.shape
        and bool(np.array_equal(a.d, b.d))
        and bool(np.array_equal(a.d_prime, b.d_prime))
    )


def overhead_budget(trials: int, selection_trials: int, learns: bool = True) -> dict[str, int]:
    """Outputs per dataset an audit draws besides its trials, together at most
    ``OVERHEAD * (trials + selection_trials)`` (plus the two-output shape probe): ``fit``
    (learning attacks only; at most half of that), ``pilot`` (the score grid; a quarter for
    learning attacks, else all of it) and ``training`` (the rest: the most extra training
    outputs a learning attack may draw). Each is also at most the selection sample, and
    ``fit``/``pilot`` at most ``FIT_TRIALS`` / ``PILOT_TRIALS``."""
    total = max(4, int(OVERHEAD * (trials + selection_trials)))
    if not learns:
        return {"fit": 0, "pilot": min(selection_trials, PILOT_TRIALS, total), "training": 0}
    fit = min(selection_trials, FIT_TRIALS, max(2, total // 2))
    pilot = min(selection_trials, PILOT_TRIALS, max(2, total // 4))
    return {"fit": fit, "pilot": pilot, "training": max(0, total - fit - pilot)}


def most_outputs(trials: int, selection_trials: int) -> int:
    """The most outputs an audit of ``trials`` evaluation and ``selection_trials`` selection
    trials per dataset draws from its mechanism, both datasets and the two-output shape probe
    together: ``2 * (T + S + max(4, floor(OVERHEAD * (T + S)))) + 2``
    (:func:`overhead_budget`). For a black box called once per output it is the most calls
    into its function; ``result.metadata["random"]["outputs_drawn"]`` says how many it took."""
    trials = check_integer("trials", trials, minimum=1)
    selection_trials = check_integer("selection_trials", selection_trials, minimum=2)
    both = trials + selection_trials
    return 2 * (both + max(4, int(OVERHEAD * both))) + 2


def selection_trials_for(mechanism: Any, trials: int) -> int:
    """The default selection sample of an audit of ``mechanism`` with ``trials`` trials:
    :func:`~dpaudit.audit.strategies.default_selection_trials`, at most ``trials`` when the
    mechanism runs foreign code (``calls_foreign_code``, e.g. a
    :class:`~dpaudit.mechanisms.blackbox.BlackBox`), so that its calls grow with ``trials``."""
    foreign = bool(getattr(mechanism, "calls_foreign_code", False))
    return default_selection_trials(trials, foreign_code=foreign)


def _default_attack(
    mechanism: Any, pair: NeighbouringPair, probe: np.ndarray, training: int
) -> Attack:
    """Likelihood ratio when the mechanism knows the density of its outputs on both datasets
    of the pair, else the strongest generic attack: :class:`~dpaudit.attacks.DeltaLeak` (a
    learned score plus exact-output events), trained on the fit sample and at most ``training``
    extra outputs per dataset. Specs without an attack table get the same choice."""
    for dataset in (pair.d, pair.d_prime):
        try:
            mechanism.log_density(dataset, probe)
        except (NotImplementedError, AttributeError):
            return DeltaLeak(mechanism=mechanism, pair=pair, train_trials=min(training, 2**17))
        except ValueError:
            if dataset is pair.d:
                raise
            # A D_prime the mechanism refuses is reported where it is first drawn from.
    return LikelihoodRatio(mechanism, pair)


def _fixed_thresholds(threshold: object) -> np.ndarray:
    t = np.atleast_1d(np.asarray(threshold, dtype=float))
    if t.ndim != 1 or t.size == 0 or not np.isfinite(t).all():
        raise ValueError(
            f"threshold must be a finite number or a non-empty 1-d sequence of them, "
            f"got {threshold!r}"
        )
    if np.unique(t).size != t.size:
        raise ValueError(f"threshold must not repeat values, got {threshold!r}")
    return t


def _checked_thresholds(strategy: str, threshold: object) -> np.ndarray | None:
    """The user's thresholds for strategy ``"fixed"`` (required there, refused elsewhere)."""
    if strategy == "fixed":
        if threshold is None:
            raise ValueError("strategy 'fixed' needs threshold= (a number or a sequence)")
        return _fixed_thresholds(threshold)
    if threshold is not None:
        raise ValueError(
            f"threshold= is only used with strategy 'fixed', got strategy {strategy!r}"
        )
    return None


def _check_run_options(n_jobs: object, progress: object, store: object) -> None:
    """Check the options that change how the audit runs, never what it finds."""
    if n_jobs is not None:
        check_n_jobs("n_jobs", n_jobs)
    if progress is not None and not isinstance(progress, bool):
        raise ValueError(f"progress must be None, True or False, got {progress!r}")
    if store is not None and not isinstance(store, str | os.PathLike):
        raise ValueError(f"store must be None or a directory path, got {store!r}")


def _resolve_pair(mechanism: Any, pair: object, attack: object) -> NeighbouringPair:
    """The pair audited: the given one, else the attack's own, else the mechanism's worst case."""
    if pair is None:
        # An attack built for a pair (LikelihoodRatio, a tracing game) defines what is audited.
        own = getattr(attack, "pair", None)
        pair = own if isinstance(own, NeighbouringPair) else mechanism.worst_case_pair()
    return _check_pair(pair)


def _probe(mechanism: Any, pair: NeighbouringPair, seed: int) -> tuple[np.ndarray, float]:
    """Two outputs under ``D`` (stream ``"probe"``) and the seconds they took: the shape of an
    output, and a check of the ``sample`` contract; foreign code that fails here fails with one
    line."""
    check_output_size(mechanism, pair)
    started = time.perf_counter()
    try:
        with doing(f"drawing two outputs of {_progress_name(mechanism)} to learn their shape"):
            probe = np.asarray(mechanism.sample(pair.d, 2, chunk_generator(seed, "probe", 0)))
    except (Exception, SystemExit) as exc:  # foreign code may call sys.exit
        name = getattr(mechanism, "name", type(mechanism).__name__)
        message = " ".join(str(exc).split())
        raise ValueError(
            f"mechanism {name} raised {type(exc).__name__}: {message} (probe chunk 0, dataset D)"
        ) from exc
    seconds = time.perf_counter() - started
    if probe.ndim == 0 or probe.shape[0] != 2:
        raise ValueError("mechanism.sample(dataset, size, rng) must return size outputs on axis 0")
    return probe, seconds


def _check_speed(
    mechanism: Any,
    pair: NeighbouringPair,
    seed: int,
    output_shape: tuple[int, ...],
    chunk_size: int,
    probe_seconds: float,
    before: int,
    total_trials: int,
    n_jobs: int | None,
) -> float | None:
    """Refuse (``ValueError``, :func:`~dpaudit.audit.limits.check_duration`) a run of
    ``total_trials`` per dataset whose drawing alone would outlast the longest run, before the
    fit and the pilot draw their ``before`` outputs per dataset; return the seconds per trial
    measured (``None`` when nothing was drawn).

    Nothing is drawn when the probe (two outputs in ``probe_seconds``) shows that those take
    at most :data:`PRE_CHECK_SECONDS` even if every output cost as much as a call. Otherwise
    stream ``"timing"`` draws 1, 2, 4, ... trials on both datasets (chunk ``i`` holds ``2^i``,
    at most ``chunk_size``) until a draw takes :data:`TIMED_SECONDS` or is a whole chunk (its
    speed is then the run's: checked) or shows the fit and the pilot to be short. These draws
    are not part of the result."""
    if before * probe_seconds <= PRE_CHECK_SECONDS:
        return None
    name = getattr(mechanism, "name", type(mechanism).__name__)
    chunk, size = 0, 1
    while True:
        started = time.perf_counter()
        with doing(f"timing {_progress_name(mechanism)} on {size:,} trials"):
            _sample(mechanism, pair, seed, output_shape, "timing", chunk, size)
        seconds = time.perf_counter() - started
        if seconds >= TIMED_SECONDS or size >= chunk_size:
            check_duration(name, total_trials, size, seconds, -1 if n_jobs is None else n_jobs)
            return seconds / size
        if before * seconds / size <= PRE_CHECK_SECONDS:
            return seconds / size
        chunk, size = chunk + 1, min(2 * size, chunk_size)


def _chosen_attack(
    mechanism: Any,
    pair: NeighbouringPair,
    attack: Attack | None,
    probe: np.ndarray,
    budget: dict[str, int],
    device: str | None,
) -> Attack:
    """The attack (the default one when ``None``, with the ``training`` outputs of the overhead
    ``budget``), checked. With a torch ``device`` an attack without a device score is refused
    before it learns anything."""
    if attack is None:
        attack = _default_attack(mechanism, pair, probe, budget["training"])
    if not isinstance(attack, Attack):
        raise ValueError(f"attack must be a dpaudit Attack, got {type(attack).__name__}")
    if device is not None:
        _device.check_support(mechanism, attack, device)
    return attack


def _fitted_attack(
    mechanism: Any,
    pair: NeighbouringPair,
    attack: Attack,
    seed: int,
    output_shape: tuple[int, ...],
    budget: dict[str, int],
) -> Attack:
    """The attack fitted on chunk 0 of stream ``"fit"`` (``budget["fit"]`` outputs per dataset,
    checked as every chunk is) when it learns, limited to the budget's ``training`` outputs. A
    fit sample beyond the machine's memory is refused before it is drawn."""
    if not attack.learns:
        return attack
    size = budget["fit"]
    check_learning_sample(attack.name, size, math.prod(output_shape))
    attack.limit_training(budget["training"])
    with doing(f"fitting the attack {attack.name[:40]} on {size:,} outputs per dataset"):
        fitted = attack.fit(*_sample(mechanism, pair, seed, output_shape, "fit", 0, size))
    return attack if fitted is None else fitted


def _fix_grid(
    job: _Job,
    pilot_trials: int,
    bins: int,
    chunk_store: ChunkStore | None,
    n_jobs: int | None,
    total_trials: int,
) -> tuple[_Job, int]:
    """The job with the score grid fixed by the pilot (before any trial used for a bound
    exists), and the number of workers: the given one, else as the pilot's speed predicts."""
    what = f"drawing the pilot ({pilot_trials:,} trials per dataset) that fixes the score grid"
    with doing(what):
        pilot, drawn, seconds = _pilot(job, pilot_trials, chunk_store, n_jobs)
    if n_jobs is None:
        # A pilot loaded from a store was part of a run long enough to be stored: every core.
        per_trial = seconds / drawn if drawn else math.inf
        n_jobs = auto_n_jobs(per_trial * total_trials)
    name = getattr(job.mechanism, "name", type(job.mechanism).__name__)
    check_duration(name, total_trials, drawn, seconds, int(n_jobs))
    return dataclasses.replace(job, grid=ScoreGrid.from_scores(pilot, bins=bins)), int(n_jobs)


def _shows_progress(progress: bool | None, total: int) -> bool:
    """Whether the run shows progress on stderr: as told, or, with ``None``, for runs of
    :data:`_AUTO_PROGRESS_TRIALS` trials or more when stderr is a terminal."""
    if progress is None:
        return total >= _AUTO_PROGRESS_TRIALS and sys.stderr.isatty()
    return progress


def _progress_name(mechanism: Any) -> str:
    """The mechanism as progress output names it (at most 40 characters)."""
    return getattr(mechanism, "name", type(mechanism).__name__)[:40]


def _progress_bar(progress: bool | None, total: int, mechanism: Any) -> tqdm:
    """The progress bar on stderr (:func:`_shows_progress`)."""
    from tqdm import tqdm

    # The bar counts the selection trials too, and says so.
    return tqdm(
        total=total,
        unit="trial",
        unit_scale=True,
        file=sys.stderr,
        disable=not _shows_progress(progress, total),
        desc=f"{_progress_name(mechanism)} (selection + evaluation trials per dataset)",
    )


def _run_streams(
    job: _Job,
    selection_trials: int,
    trials: int,
    values_per_output: int,
    chunk_store: ChunkStore | None,
    n_jobs: int,
    bar: tqdm,
) -> dict[str, _Tally]:
    """Tally the selection and evaluation streams, batch by batch in order, resuming from the
    store and running again what dead workers left (at most ``WORKER_RETRIES`` times)."""
    chunk_size, grid, fixed = job.chunk_size, job.grid, job.fixed_thresholds
    fine = not job.privacy_loss and chunk_store is None
    batches = _batches("selection", selection_trials, chunk_size, values_per_output, fine)
    batches += _batches("evaluation", trials, chunk_size, values_per_output, fine)
    totals = {
        "selection": _Tally(np.zeros((2, grid.n_bins), dtype=np.int64), None, None),
        "evaluation": _Tally(
            np.zeros((2, grid.n_bins), dtype=np.int64),
            np.zeros((4, grid.n_bins)) if job.privacy_loss else None,
            None if fixed is None else np.zeros((2, fixed.size + 1), dtype=np.int64),
        ),
    }
    finished = set() if chunk_store is None else chunk_store.finished()
    position, deaths = 0, 0

    def done() -> str:
        drawn = sum(_batch_trials(batch, chunk_size) for batch in batches[:position])
        return (
            f"drawing the selection and evaluation trials ({drawn:,} of "
            f"{selection_trials + trials:,} per dataset done)"
        )

    with bar, doing(done):
        while position < len(batches):
            try:
                for index, tally in _tallies(job, batches, position, chunk_store, finished, n_jobs):
                    totals[batches[index][0]].add(tally)
                    bar.update(_batch_trials(batches[index], chunk_size))
                    position = index + 1
            except _worker_deaths() as exc:
                # Summed so far: batches[:position], in order; run the rest again.
                deaths = _one_more_death(deaths, exc)
    return totals


def _privacy_loss(evaluation: _Tally, grid: ScoreGrid) -> PrivacyLossStatistics:
    """Per-bin privacy-loss sums of the evaluation stream, for ``delta(eps)`` estimates."""
    # The overflow bin without an edge on the relevant side carries no weight.
    evaluation.loss[:2, -1] = 0.0
    evaluation.loss[2:, 0] = 0.0
    c = evaluation.counts
    return PrivacyLossStatistics(grid.edges, c[0], *evaluation.loss[:2], c[1], *evaluation.loss[2:])


def _fixed_counts(evaluation: _Tally, fixed: np.ndarray) -> np.ndarray:
    """False positives ``#{s > t}`` under ``D`` and false negatives ``#{s <= t}`` under
    ``D_prime`` at each user threshold ``t``, in the user's order."""
    # Histograms over "number of sorted thresholds below the score" -> FP(s > t), FN(s <= t).
    h0, h1 = evaluation.fixed
    fp_sorted = np.cumsum(h0[::-1])[::-1][1:]
    fn_sorted = np.cumsum(h1)[:-1]
    rank = np.argsort(np.argsort(fixed))
    return np.stack([fp_sorted[rank], fn_sorted[rank]])


def _open_device(
    device: str, mechanism: Any, privacy_loss: bool, store: object, n_jobs: object
) -> Any:
    """The torch device of ``device``, once the options it cannot honour and a mechanism
    without a device sampler are refused (one ``ValueError`` naming ``device`` each)."""
    for name, used in (("privacy_loss=True", privacy_loss), ("store=", store is not None)):
        if used:
            raise ValueError(f"device={device!r} does not keep {name}; use device=None for it")
    if n_jobs is not None:
        raise ValueError(f"device={device!r} runs in this process: leave n_jobs=None")
    _device.check_support(mechanism, None, device)
    return torch_device(device)


def _device_streams(
    job: _Job,
    target: Any,
    selection_trials: int,
    trials: int,
    values_per_output: int,
    bar: tqdm,
) -> dict[str, _Tally]:
    """Tally the selection and evaluation streams on a torch device."""
    per_batch = _device.batch_chunks(target, job.chunk_size, values_per_output)
    totals = {}
    with bar:
        for stream, total in (("selection", selection_trials), ("evaluation", trials)):
            counts, fixed = _device.tally(job, target, stream, total, per_batch, bar)
            totals[stream] = _Tally(counts, None, fixed)
    return totals


def _heartbeat_when_shown(audit: Callable[..., AuditResult]) -> Callable[..., AuditResult]:
    """``audit`` with a heartbeat (:func:`~dpaudit._core.heartbeat.beating`) on stderr while it
    runs with ``progress=True``, or ``progress=None`` when stderr is a terminal: a step that
    counts nothing for long (a slow probe, a pilot chunk, one batch) still says what it does."""

    @functools.wraps(audit)
    def run(*args: Any, **kwargs: Any) -> AuditResult:
        progress = kwargs.get("progress")
        shown = progress is True or (progress is None and sys.stderr.isatty())
        with beating() if shown else contextlib.nullcontext():
            return audit(*args, **kwargs)

    return run


@_heartbeat_when_shown
def audit_mechanism(
    mechanism: Any,
    pair: NeighbouringPair | None = None,
    attack: Attack | None = None,
    *,
    trials: int,
    seed: int = 0,
    confidence: float = 0.95,
    strategy: str = "holdout",
    threshold: float | list[float] | np.ndarray | None = None,
    selection_trials: int | None = None,
    n_jobs: int | None = None,
    chunk_size: int | None = None,
    bins: int | None = None,
    progress: bool | None = None,
    store: str | os.PathLike[str] | None = None,
    privacy_loss: bool = False,
    device: str | None = None,
) -> AuditResult:
    """Audit ``mechanism`` on a neighbouring pair by Monte Carlo.

    Parameters
    ----------
    mechanism:
        Anything with ``sample(dataset, size, rng)`` and ``worst_case_pair()`` (and
        ``log_density`` for the default attack).
    pair:
        The neighbouring pair; defaults to the attack's own ``pair`` when it was built for one
        (e.g. :class:`~dpaudit.attacks.LikelihoodRatio`), else ``mechanism.worst_case_pair()``.
    attack:
        The score; defaults to :class:`~dpaudit.attacks.LikelihoodRatio` when the mechanism knows
        its density, else :class:`~dpaudit.attacks.DeltaLeak` (a learned score plus tests on
        exact output events, for outputs of any shape); ``result.metadata["attack"]["default"]``
        says whether the default was used.
    trials:
        Evaluation runs on **each** dataset.
    seed:
        Seed of every random stream (see the module docstring).
    confidence:
        Level of every bound, in ``(0, 1)``.
    strategy:
        ``"holdout"``, ``"bonferroni"``, ``"fixed"`` or ``"holdout+band"``
        (:mod:`dpaudit.audit.strategies`).
    threshold:
        The threshold(s) for ``strategy="fixed"`` (test "D_prime iff score > threshold").
    selection_trials:
        Selection runs per dataset, drawn in addition to ``trials``; default
        ``max(trials // 4, 10_000)``, and never more than ``trials`` for a mechanism that runs
        foreign code (a black box: :func:`selection_trials_for`). The pilot (grid) and fit
        samples and a learning attack's extra training outputs are more, together at most
        ``OVERHEAD = 0.5`` times ``trials + selection_trials`` (:func:`overhead_budget`);
        ``result.metadata["random"]["outputs_per_dataset"]`` says how many outputs per dataset
        went where (``probe``: under ``D`` only), ``["outputs_drawn"]`` how many in all
        (at most :func:`most_outputs`).
    n_jobs:
        Workers for ``joblib.Parallel`` (``-1``: all cores, ``-2``: all but one); given (not
        1), they draw the pilot too. ``None`` (default): the pilot in this process, then this
        process for audits the pilot predicts to be short, every core otherwise
        (:func:`auto_n_jobs`). Results do not depend on it.
    chunk_size:
        Trials per random-stream chunk; default about ``2^15`` scalar values per chunk. Results
        depend on it (it defines the streams), so it is recorded in the result.
    bins:
        Bins of a continuous score grid, at most :data:`~dpaudit.audit.grid.MAX_BINS`;
        default :func:`default_bins`.
    progress:
        Show a progress bar on stderr; ``None`` shows it for runs of ``10^7`` trials or more
        when stderr is a terminal.
    store:
        Directory of a :class:`~dpaudit.audit.store.ChunkStore`: the finished pilot chunks and
        batches are saved there, and an audit restarted with the same arguments and directory
        resumes from them with an identical result. A directory written by another audit is
        refused; a damaged file in it is reported (a ``RuntimeWarning``) and drawn again.
    privacy_loss:
        Also keep the per-bin sums of the privacy loss that
        :meth:`~dpaudit.audit.result.AuditResult.delta_estimate` reads (an estimate, never a
        bound). Needs an attack whose score is the exact privacy loss of ``mechanism`` on
        ``pair`` (:class:`~dpaudit.attacks.LikelihoodRatio`). Off by default: the sums cost an
        exponential and two weighted counts per output (a Gaussian audit takes about a fifth
        longer with them, ``bench/bench_engine.py``) for a number no bound uses.
    device:
        Where the trials are drawn, scored and counted: ``None`` or ``"numpy"`` (default) on
        this machine's cores with numpy; ``"cpu"``, ``"cuda"`` or ``"cuda:N"`` on that PyTorch
        device (:mod:`dpaudit.audit.device`; needs the ``torch`` extra). A device runs only
        mechanisms and attacks with a device path (Gaussian, Laplace, randomized response,
        Poisson-subsampled Gaussian and Laplace, DP-SGD with Poisson batches, with the
        likelihood-ratio, threshold or plain membership attack), without ``privacy_loss``,
        ``store`` or ``n_jobs``; anything else is refused with a ``ValueError``. Results on a
        device are reproducible on that device and independent of its memory, but are not the
        numbers of the numpy engine (other generators; the same law).
    """
    started = time.perf_counter()
    trials = check_trials("trials", trials)
    seed = check_seed("seed", seed)
    confidence = check_probability("confidence", confidence, low_open=True, high_open=True)
    strategy = check_choice("strategy", strategy, STRATEGIES)
    fixed = _checked_thresholds(strategy, threshold)
    chosen_selection = selection_trials is not None
    if selection_trials is None:
        selection_trials = selection_trials_for(mechanism, trials)
    selection_trials = check_trials("selection_trials", selection_trials, minimum=2)
    setup = _setup(
        mechanism,
        pair,
        attack,
        trials=trials,
        selection_trials=selection_trials,
        seed=seed,
        confidence=confidence,
        strategy=strategy,
        fixed=fixed,
        bins=bins,
        chunk_size=chunk_size,
        n_jobs=n_jobs,
        progress=progress,
        store=store,
        privacy_loss=privacy_loss,
        device=device,
        chosen_selection=chosen_selection,
    )
    job = setup.job
    bar = _progress_bar(progress, selection_trials + trials, mechanism)
    if setup.target is None:
        totals = _run_streams(
            job,
            selection_trials,
            trials,
            setup.values_per_output,
            setup.chunk_store,
            setup.n_jobs,
            bar,
        )
    else:
        totals = _device_streams(
            job, setup.target, selection_trials, trials, setup.values_per_output, bar
        )
    return _result(
        setup,
        totals["selection"].counts,
        totals["evaluation"],
        trials=trials,
        selection_trials=selection_trials,
        confidence=confidence,
        strategy=strategy,
        fixed=fixed,
        started=started,
    )


@dataclass
class _Setup:
    """An audit ready to draw its selection and evaluation trials: the job (attack fitted, grid
    fixed by the pilot), the workers, and what its record says about how it got there."""

    job: _Job
    n_jobs: int
    default: bool
    exact: bool
    probe_outputs: int
    fit_trials: int
    training_outputs: int
    pilot_trials: int
    values_per_output: int
    target: Any
    chunk_store: ChunkStore | None


def _setup(
    mechanism: Any,
    pair: NeighbouringPair | None,
    attack: Attack | None,
    *,
    trials: int,
    selection_trials: int,
    seed: int,
    confidence: float,
    strategy: str,
    fixed: np.ndarray | None,
    bins: int | None,
    chunk_size: int | None,
    n_jobs: int | None,
    progress: bool | None,
    store: str | os.PathLike[str] | None,
    privacy_loss: bool,
    device: str | None,
    chunks_at_least: int = 1,
    fit: bool = True,
    chosen_selection: bool = True,
) -> _Setup:
    """Check the run's options, probe the output, choose and fit the attack and fix the grid by
    the pilot (:func:`audit_mechanism`, steps 1 and 2). With ``chunk_size=None`` the default
    chunk size is halved until the evaluation stream has at least ``chunks_at_least`` chunks
    (never below ``SMALLEST_CHUNK``). ``fit=False``: ``attack`` is already fitted (on outputs
    independent of this audit's streams) and is used as it is. ``chosen_selection=False``:
    ``selection_trials`` is the default, and a default that dwarfs a small audit is said."""
    bins = (
        default_bins(trials)
        if bins is None
        else check_integer("bins", bins, minimum=2, maximum=MAX_BINS)
    )
    _check_run_options(n_jobs, progress, store)
    if not isinstance(privacy_loss, bool):
        raise ValueError(f"privacy_loss must be True or False, got {privacy_loss!r}")
    if not callable(getattr(mechanism, "sample", None)):
        raise ValueError(
            f"mechanism must offer sample(dataset, size, rng), got {type(mechanism).__name__}"
        )
    device = check_device("device", device)
    target = None
    if device is not None:
        target = _open_device(device, mechanism, privacy_loss, store, n_jobs)
    pair = _resolve_pair(mechanism, pair, attack)

    probe, probe_seconds = _probe(mechanism, pair, seed)
    output_shape = tuple(int(n) for n in probe.shape[1:])
    values_per_output = max(1, int(np.prod(output_shape, dtype=np.int64)))
    if chunk_size is None:
        chunk_size = (
            default_chunk_size(values_per_output)
            if device is None
            else _device.default_chunk_size(values_per_output)
        )
        while chunk_size > SMALLEST_CHUNK and -(-trials // chunk_size) < chunks_at_least:
            chunk_size //= 2
    chunk_size = check_integer("chunk_size", chunk_size, minimum=1)
    if device is not None:
        _device.check_chunks(chunk_size, max(trials, selection_trials))
    default = attack is None
    if privacy_loss and attack is not None:
        _check_exact(attack, mechanism, pair)  # before fitting anything
    attack = _chosen_attack(
        mechanism, pair, attack, probe, overhead_budget(trials, selection_trials), device
    )
    budget = overhead_budget(trials, selection_trials, attack.learns and fit)
    fit_trials, pilot_trials = budget["fit"], budget["pilot"]
    if target is None:
        overhead = sum(budget.values())
        # The default selection sample (at least MIN_SELECTION_TRIALS) can dwarf a small audit.
        added = selection_trials + overhead
        disproportionate = not chosen_selection and added > EXTRA_FACTOR * trials
        per_trial = _check_speed(
            mechanism,
            pair,
            seed,
            output_shape,
            chunk_size,
            probe_seconds,
            added if disproportionate else overhead,
            selection_trials + trials,
            n_jobs,
        )
        name = _progress_name(mechanism)
        shown = _shows_progress(progress, selection_trials + trials)
        extra = None
        if disproportionate and per_trial is not None:
            alternative = trials + sum(overhead_budget(trials, trials, attack.learns).values())
            extra = check_extra_draws(
                name, trials, selection_trials, overhead, alternative, per_trial
            )
        if shown and extra:
            print(extra, file=sys.stderr, flush=True)
        elif shown and overhead * (per_trial or 0.0) >= PRE_CHECK_SECONDS:
            # The bar starts after the fit and the pilot: say why nothing moves until then.
            print(
                f"{name}: {overhead:,} trials per dataset to fit the attack and fix the grid "
                f"first (about {overhead * per_trial:.0f} s)",
                file=sys.stderr,
                flush=True,
            )
    if fit:
        attack = _fitted_attack(mechanism, pair, attack, seed, output_shape, budget)
    exact = _is_exact(attack, mechanism, pair)
    if privacy_loss:
        _check_exact(attack, mechanism, pair)

    sorted_fixed = None if fixed is None else np.sort(fixed)
    # The pilot's job: a placeholder grid, replaced by the one the pilot fixes.
    job = _Job(
        mechanism,
        pair,
        attack,
        ScoreGrid("discrete", np.zeros(1)),
        seed,
        chunk_size,
        privacy_loss,
        sorted_fixed,
        output_shape,
    )
    chunk_store = None
    if store is not None:
        fingerprint = _fingerprint(
            job,
            exact=exact,
            trials=trials,
            selection_trials=selection_trials,
            pilot_trials=pilot_trials,
            bins=bins,
            strategy=strategy,
            confidence=confidence,
        )
        chunk_store = ChunkStore(store, fingerprint)
    if target is None:
        job, n_jobs = _fix_grid(
            job, pilot_trials, bins, chunk_store, n_jobs, selection_trials + trials
        )
    else:
        pilot = _device.pilot_scores(job, target, pilot_trials)
        job = dataclasses.replace(job, grid=ScoreGrid.from_scores(pilot, bins=bins))
    return _Setup(
        job,
        int(n_jobs) if n_jobs is not None else 1,
        default,
        exact,
        int(probe.shape[0]),
        fit_trials,
        int(attack.extra_outputs) if fit else 0,
        pilot_trials,
        values_per_output,
        target,
        chunk_store,
    )


def _result(
    setup: _Setup,
    selection_counts: np.ndarray,
    evaluation: _Tally,
    *,
    trials: int,
    selection_trials: int,
    confidence: float,
    strategy: str,
    fixed: np.ndarray | None,
    started: float,
    gamma_share: float = 1.0,
) -> AuditResult:
    """The :class:`AuditResult` of ``setup``'s audit from its stream totals (step 4)."""
    job, target = setup.job, setup.target
    mechanism, pair, attack, grid = job.mechanism, job.pair, job.attack, job.grid
    metadata = audit_metadata(mechanism, pair, attack, setup.exact)
    metadata["attack"]["default"] = setup.default
    if target is not None:
        metadata["versions"] = versions(libraries=("numpy", "torch"))
        metadata["random"]["bit_generator"] = (
            "torch Philox" if target.type == "cuda" else "torch Mersenne Twister"
        )
        metadata["random"]["streams"] += "; torch generators seeded by chunk_seeds"
        metadata["random"]["device"] = str(target)
    metadata["random"]["outputs_per_dataset"] = {
        "probe": setup.probe_outputs,
        "fit": setup.fit_trials,
        "training": setup.training_outputs,
        "pilot": setup.pilot_trials,
        "selection": selection_trials,
        "evaluation": trials,
    }
    per_dataset = metadata["random"]["outputs_per_dataset"]
    # Every stream draws under both datasets, the probe under D only.
    metadata["random"]["outputs_drawn"] = 2 * sum(per_dataset.values()) - per_dataset["probe"]
    return AuditResult(
        mechanism=mechanism,
        pair=pair,
        attack=attack,
        name=f"{getattr(mechanism, 'name', type(mechanism).__name__)} / {attack.name}",
        trials=trials,
        selection_trials=selection_trials,
        pilot_trials=setup.pilot_trials,
        fit_trials=setup.fit_trials,
        seed=job.seed,
        confidence=confidence,
        strategy=strategy,
        elapsed_seconds=time.perf_counter() - started,
        grid=grid,
        counts=evaluation.counts,
        selection_counts=selection_counts,
        privacy_loss=_privacy_loss(evaluation, grid) if job.privacy_loss else None,
        fixed_thresholds=fixed,
        fixed_counts=None if fixed is None else _fixed_counts(evaluation, fixed),
        chunk_size=job.chunk_size,
        gamma_share=gamma_share,
        metadata=metadata,
    )


#: Evaluation trials per dataset of the first phase of a sequential audit, by default.
FIRST_PHASE_TRIALS = 4096

#: A sequential phase's evaluation stream has at least this many chunks (its looks fall on them).
PHASE_CHUNKS = 16

#: Most looks per phase: at ``ceil(M 2^(-j/2))`` of its ``M`` evaluation chunks, ``j = 8 .. 0``.
LOOKS_PER_PHASE = 9


def phase_trials(trials: int, growth: int, max_trials: int) -> list[int]:
    """Evaluation trials per dataset of each phase of a sequential audit: ``trials``, then
    ``growth`` times more each phase, the last one ``max_trials``."""
    trials = check_integer("trials", trials, minimum=2)
    growth = check_integer("growth", growth, minimum=2)
    max_trials = check_integer("max_trials", max_trials, minimum=trials)
    sizes = [trials]
    while sizes[-1] < max_trials:
        sizes.append(min(sizes[-1] * growth, max_trials))
    return sizes


def look_chunks(n_chunks: int) -> list[int]:
    """The evaluation chunks a phase of ``n_chunks`` has drawn at each of its looks, in order:
    ``ceil(n_chunks 2^(-j/2))`` for ``j = LOOKS_PER_PHASE - 1, ..., 0`` (distinct values)."""
    return sorted({math.ceil(n_chunks * 2.0 ** (-j / 2)) for j in range(LOOKS_PER_PHASE)})


def _chunk_tally(job: _Job, stream: str, first: int, stop: int, total: int, n_jobs: int) -> _Tally:
    """The tally of chunks ``first .. stop - 1`` of a stream of ``total`` trials per dataset: in
    this process, or cut into batches for ``n_jobs`` workers (integer counts do not depend on
    where they are cut)."""
    from joblib import Parallel, delayed

    count = stop - first
    if n_jobs == 1 or count < 2:
        return _run_batch(job, stream, first, count, total)
    per = max(1, -(-count // (4 * (os.cpu_count() or 1))))
    parts = [(start, min(per, stop - start)) for start in range(first, stop, per)]
    run = single_threaded(_run_batch) if on_dask() else _run_batch
    tallies = Parallel(n_jobs=n_jobs)(delayed(run)(job, stream, a, n, total) for a, n in parts)
    out = tallies[0]
    for tally in tallies[1:]:
        out.add(tally)
    return out


@dataclass
class _Phase:
    """One pair's phase of a sequential audit: its setup, its looks and its counts so far."""

    setup: _Setup
    trials: int
    selection_trials: int
    looks: list[int]
    made: int
    selection: _Tally
    evaluation: _Tally

    @property
    def n_chunks(self) -> int:
        return self.looks[-1]

    def chunks(self, look: int) -> tuple[int, int]:
        """Evaluation and selection chunks drawn once look ``look`` (0-based) is made."""
        size = self.setup.job.chunk_size
        evaluation = self.looks[look]
        selection_chunks = -(-self.selection_trials // size)
        return evaluation, math.ceil(evaluation * selection_chunks / self.n_chunks)

    def drawn(self) -> tuple[int, int]:
        """Evaluation and selection trials per dataset drawn so far."""
        if self.made == 0:
            return 0, 0
        size = self.setup.job.chunk_size
        evaluation, selection = self.chunks(self.made - 1)
        return (
            min(evaluation * size, self.trials),
            min(selection * size, self.selection_trials),
        )

    def outputs(self) -> int:
        """Outputs per dataset this phase drew so far (probe, fit, training, pilot and trials)."""
        setup = self.setup
        overhead = setup.probe_outputs + setup.fit_trials + setup.training_outputs
        return overhead + setup.pilot_trials + sum(self.drawn())


def _saturated(previous: _Phase | None, trials: int, selection: int) -> bool:
    """Whether a phase of ``trials`` and ``selection`` trials would fit its attack no better
    than ``previous`` did: a learning attack whose fit sample is as large as this phase's would
    be, and whose extra training outputs were limited by the attack itself, not by the engine."""
    if previous is None or not previous.setup.job.attack.learns:
        return False
    budget = overhead_budget(trials, selection, True)
    old = overhead_budget(previous.trials, previous.selection_trials, True)
    return (
        previous.setup.fit_trials == budget["fit"]
        and previous.setup.training_outputs < old["training"]
    )


def _open_phase(
    mechanism: Any,
    pair: NeighbouringPair,
    attack: Attack | None,
    trials: int,
    seed: int,
    confidence: float,
    n_jobs: int,
    previous: _Phase | None = None,
) -> _Phase:
    """Set up a phase of ``trials`` evaluation trials (and a quarter as many selection trials)
    on ``pair``: a fresh copy of ``attack`` fitted on the phase's own fit stream (or, when a
    refit could not do better, :func:`_saturated`, the previous phase's fitted attack), and a
    grid from its own pilot."""
    selection = max(trials // 4, 2)
    reuse = _saturated(previous, trials, selection)
    if reuse:
        attack = previous.setup.job.attack
    elif attack is not None:
        attack = copy.deepcopy(attack)
    setup = _setup(
        mechanism,
        pair,
        attack,
        trials=trials,
        selection_trials=selection,
        seed=seed,
        confidence=confidence,
        strategy="holdout",
        fixed=None,
        bins=None,
        chunk_size=None,
        n_jobs=n_jobs,
        progress=False,
        store=None,
        privacy_loss=False,
        device=None,
        chunks_at_least=PHASE_CHUNKS,
        fit=not reuse,
    )
    n_bins = setup.job.grid.n_bins
    return _Phase(
        setup,
        trials,
        selection,
        look_chunks(-(-trials // setup.job.chunk_size)),
        0,
        _Tally(np.zeros((2, n_bins), dtype=np.int64), None, None),
        _Tally(np.zeros((2, n_bins), dtype=np.int64), None, None),
    )


def _look(phase: _Phase, n_jobs: int) -> np.ndarray:
    """Make the phase's next look: draw its new selection and evaluation chunks, add them to the
    phase's counts and return the new counts of both streams together."""
    before = phase.chunks(phase.made - 1) if phase.made else (0, 0)
    after = phase.chunks(phase.made)
    job = phase.setup.job
    evaluation = _chunk_tally(job, "evaluation", before[0], after[0], phase.trials, n_jobs)
    selection = _chunk_tally(job, "selection", before[1], after[1], phase.selection_trials, n_jobs)
    phase.evaluation.add(evaluation)
    phase.selection.add(selection)
    phase.made += 1
    return evaluation.counts + selection.counts


def _pairs_of(mechanism: Any, pairs: Any, attack: Any) -> list[NeighbouringPair]:
    """The pairs of a sequential audit: one pair, a non-empty list of them, or ``None`` (the
    attack's own pair, else the mechanism's worst case)."""
    if pairs is None or isinstance(pairs, NeighbouringPair):
        return [_resolve_pair(mechanism, pairs, attack)]
    if isinstance(pairs, str | bytes) or not hasattr(pairs, "__len__") or not len(pairs):
        raise ValueError(
            f"pairs must be a NeighbouringPair or a non-empty list of them, got {pairs!r}"
        )
    return [_check_pair(p) for p in pairs]


def audit_sequential(
    mechanism: Any,
    claim: Any,
    pairs: NeighbouringPair | list[NeighbouringPair] | None = None,
    attack: Attack | None = None,
    *,
    level: float = 0.05,
    trials: int = FIRST_PHASE_TRIALS,
    growth: int = 4,
    max_trials: int = 2**22,
    max_seconds: float | None = None,
    seed: int = 0,
    deltas: tuple[float, ...] | list[float] = DEFAULT_DELTAS,
    delta: float | None = None,
    n_jobs: int = 1,
    progress: bool = False,
) -> SequentialAudit:
    """Audit ``claim`` until the evidence decides: an anytime-valid sequential audit.

    The trials arrive in **phases** on every pair: phase ``r`` is an audit of
    ``trials * growth^r`` evaluation trials per dataset (the last one ``max_trials``, at most;
    :func:`phase_trials`) and a quarter as many selection trials, on its own root seed
    (:func:`~dpaudit._core.streams.derived_seed` of ``seed``, the phase and the pair), with its own
    attack fit and pilot grid, as :func:`audit_mechanism` makes them. A phase's streams are cut
    into at least :data:`PHASE_CHUNKS` chunks and drawn a few chunks at a time: at each **look**
    (:func:`look_chunks`, at most :data:`LOOKS_PER_PHASE` a phase) the new counts of every pair go
    to the :class:`~dpaudit.audit.sequential.SequentialTest`. The audit stops at the first look
    where the test refutes the claim, after the last phase, or (``max_seconds``) before a look or
    a phase that the time measured so far predicts would end after the budget (the first look
    always runs). At the stop, each pair's fixed-sample verdict family is read on its last
    phase's counts at the per-look level (its results and bounds); it refutes the claim too when
    it finds a violation. Whenever it stops, the verdict and every bound it reports hold together
    with probability at least ``1 - level`` (:mod:`dpaudit.audit.sequential`).

    Parameters
    ----------
    mechanism, attack:
        As for :func:`audit_mechanism` (the attack is copied for each pair and phase, and
        fitted on each phase's fit sample when it learns).
    claim:
        The claim tested: a trade-off curve or a guarantee with ``.tradeoff()``.
    pairs:
        A pair, a list of pairs tested together, or ``None`` (the attack's own pair, else the
        mechanism's worst case).
    level:
        Probability, at most, that a mechanism satisfying the claim is found in violation, or
        that a reported bound is wrong, whenever the audit stops.
    trials, growth, max_trials:
        The phases (:func:`phase_trials`).
    max_seconds:
        Time budget (``None``: none).
    seed:
        Root seed of every phase.
    deltas:
        ``delta`` values of the families' ``eps`` bounds.
    delta:
        The ``delta`` of the certified ``eps`` (default: the claim's,
        :func:`~dpaudit.audit.sequential.claim_delta`).
    n_jobs:
        Workers drawing each look's chunks (results do not depend on them).
    progress:
        Print a line on stderr at the end of each phase and at a refutation.
    """
    started = time.perf_counter()
    curve = claim_curve(claim)
    level = check_probability("level", level, low_open=True, high_open=True)
    sizes = phase_trials(trials, growth, max_trials)
    if max_seconds is not None:
        max_seconds = check_positive("max_seconds", max_seconds)
    seed = check_seed("seed", seed)
    n_jobs = check_n_jobs("n_jobs", n_jobs)
    if not callable(getattr(mechanism, "sample", None)):
        raise ValueError(
            f"mechanism must offer sample(dataset, size, rng), got {type(mechanism).__name__}"
        )
    tested = _pairs_of(mechanism, pairs, attack)
    test = SequentialTest(
        curve, level, pairs=len(tested), looks=LOOKS_PER_PHASE * len(sizes), delta=delta
    )
    asked = tuple(dict.fromkeys(float(d) for d in deltas))
    name = getattr(mechanism, "name", type(mechanism).__name__)
    outputs = [0] * len(tested)
    seconds_per_output = 0.0
    looks = 0
    stopped, reason = "max_trials", ""
    phase_index = 0
    phases: list[_Phase] = []
    last: list[_Phase] = []
    for phase_index, size in enumerate(sizes):
        if phase_index and max_seconds is not None:
            predicted = seconds_per_output * len(tested) * 1.5 * (size + size // 4) / 8
            if time.perf_counter() - started + predicted > max_seconds:
                stopped = "max_seconds"
                reason = (
                    f"the time budget of {max_seconds:g} s would end during phase "
                    f"{phase_index + 1} ({size:,} trials per dataset)"
                )
                break
        previous = phases
        phases = []
        for index, pair in enumerate(tested):
            phase_seed = derived_seed(seed, "sequential_phase", phase_index, index)
            phases.append(
                _open_phase(
                    mechanism,
                    pair,
                    attack,
                    size,
                    phase_seed,
                    1.0 - level,
                    n_jobs,
                    previous[index] if previous else None,
                )
            )
            test.restart(index)
        for look in range(len(phases[0].looks)):
            if looks and max_seconds is not None:
                grow = (
                    sum(
                        p.chunks(look)[0] - p.chunks(look - 1)[0] if look else p.chunks(0)[0]
                        for p in phases
                    )
                    * phases[0].setup.job.chunk_size
                    * 1.25
                )
                if time.perf_counter() - started + seconds_per_output * grow > max_seconds:
                    stopped = "max_seconds"
                    reason = f"the time budget of {max_seconds:g} s would end during the next look"
                    break
            drawn_before = sum(p.outputs() for p in phases)
            look_started = time.perf_counter()
            for index, phase in enumerate(phases):
                test.update(index, _look(phase, n_jobs))
            looks += 1
            drawn = max(sum(p.outputs() for p in phases) - drawn_before, 1)
            seconds_per_output = (time.perf_counter() - look_started) / drawn
            totals = [outputs[i] + phases[i].outputs() for i in range(len(tested))]
            test.close_look(
                look=looks,
                phase=phase_index + 1,
                trials=sum(phases[0].drawn()),
                outputs_per_dataset=max(totals),
            )
            if progress and (look == len(phases[0].looks) - 1 or test.refuted):
                print(
                    f"{name[:40]}: look {looks}, phase {phase_index + 1}, "
                    f"{max(totals):,} outputs per dataset, e-value "
                    f"{math.exp(min(test.claim_log_e_value, 700.0)):.3g} "
                    f"(refutes at {test.e_threshold:.3g})",
                    file=sys.stderr,
                    flush=True,
                )
            if test.refuted:
                stopped = "refuted"
                break
        for index, phase in enumerate(phases):
            outputs[index] += phase.outputs()
        if phases[0].made:
            last = phases
        if stopped != "max_trials":
            break
    else:
        reason = (
            f"the last phase ({sizes[-1]:,} trials per dataset, the cap) ended without a refutation"
        )
    # Each pair's fixed-sample family at the stop, read at the per-look level: it is defined at
    # every look, so the union over the looks covers the one the evidence stopped at; the last
    # look the schedule can make (the cap) has a larger share of its own.
    at_cap = (
        bool(last)
        and last[0].trials == sizes[-1]
        and last[0].made == len(last[0].looks)
        and last is phases
        and phase_index == len(sizes) - 1
    )
    results, verdicts = [], []
    for index, phase in enumerate(last):
        evaluation, selection = phase.drawn()
        result = _result(
            phase.setup,
            phase.selection.counts,
            phase.evaluation,
            trials=evaluation,
            selection_trials=selection,
            confidence=1.0 - level,
            strategy="holdout",
            fixed=None,
            started=started,
            gamma_share=(test.final_look_gamma if at_cap else test.look_gamma) / level,
        )
        results.append(result)
        verdicts.append(result.verdict(curve, asked))
        test.family(index, verdicts[-1]["verdict"])
    if stopped == "refuted":
        reason = {
            "e-value": f"the claim's e-value reached {test.e_threshold:.4g}",
            "ladder": "the certified eps at the claim's delta exceeds the claimed eps",
        }[str(test.decided_by)]
    audit = SequentialAudit(
        test=test,
        results=tuple(results),
        verdicts=tuple(verdicts),
        stopped=stopped,
        reason=reason,
        looks=looks,
        phases=phase_index + 1,
        outputs_per_dataset=tuple(outputs),
        seconds=time.perf_counter() - started,
        schedule={
            "trials": sizes[0],
            "growth": growth,
            "max_trials": sizes[-1],
            "phases_at_most": len(sizes),
            "looks_per_phase_at_most": LOOKS_PER_PHASE,
            "seed": seed,
        },
    )
    record = audit.record()
    for result in results:
        result.metadata["sequential"] = record
    return audit
