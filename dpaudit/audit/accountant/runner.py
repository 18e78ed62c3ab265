"""The accountant audit: :func:`audit_accountant` samples, bounds and checks every claim."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from dpaudit._core.streams import chunk_generator
from dpaudit._core.validation import (
    as_float_array,
    check_integer,
    check_n_jobs,
    check_probability,
    check_seed,
)
from dpaudit.accountants.claims import Claim
from dpaudit.accountants.convert import as_claim
from dpaudit.accountants.libraries import AccountantUnavailable
from dpaudit.audit.accountant.estimators import (
    _DEFAULT_POINTS,
    STAIRCASE,
    _add,
    _Job,
    _loss_model,
    _plan,
    _run_task,
    _tasks,
)
from dpaudit.audit.accountant.result import AccountantAudit, _unavailable
from dpaudit.audit.backends import worker_pool
from dpaudit.audit.engine import default_chunk_size
from dpaudit.audit.importance import LossTilt, loss_tilt
from dpaudit.mechanisms.base import METHOD_KINDS, NeighbouringPair

__all__ = ["audit_accountant"]


def _claims(claimed: Any, mechanism: Any) -> dict[str, Claim | Exception]:
    """Name -> claim, or the exception that says why it is unavailable."""
    if isinstance(claimed, Mapping):
        items = list(claimed.items())
    elif isinstance(claimed, list | tuple) and all(isinstance(c, str) for c in claimed):
        items = [(c, c) for c in claimed]
    else:
        items = [(None, claimed)]
    out: dict[str, Claim | Exception] = {}
    for key, value in items:
        label = key if key is not None else (value if isinstance(value, str) else None)
        try:
            claim = as_claim(value, mechanism, name=label)
        except AccountantUnavailable as exc:
            out[str(label)] = exc
            continue
        out[label if label is not None else claim.name] = claim
    if not out:
        raise ValueError("claimed must hold at least one claim")
    return out


# --------------------------------------------------------------------------------------- grid
def _check_epsilons(epsilons: Any) -> np.ndarray:
    eps = np.atleast_1d(as_float_array("epsilons", epsilons))
    if eps.ndim != 1 or eps.size == 0 or not np.isfinite(eps).all() or (eps < 0).any():
        raise ValueError(
            f"epsilons must be a non-empty 1-d sequence of finite numbers >= 0, got {epsilons!r}"
        )
    return np.unique(eps)


def _default_epsilons(
    mechanism: Any, claims: Mapping[str, Claim | Exception], floor: float
) -> np.ndarray:
    """``eps`` at :data:`_DEFAULT_POINTS` values of ``delta`` from 0.1 down to ``floor``: from the
    mechanism's own tightest valid theory when it has one, else from the first claim (a table
    claim's own ``eps`` values are used as they are)."""
    deltas = np.geomspace(0.1, floor, _DEFAULT_POINTS)
    available = [c for c in claims.values() if isinstance(c, Claim)]
    for claim in available:
        table = getattr(claim, "table_epsilons", None)
        if table is not None:
            return np.unique(table)
    sources: list[Callable[[float], float]] = []
    methods = getattr(mechanism, "theory_methods", ())
    for method in methods:
        if METHOD_KINDS.get(method) in ("exact", "bound"):
            sources.append(lambda d, m=method: mechanism.epsilon(d, method=m))
            break
    sources += [c.epsilon for c in available]
    for source in sources:
        found = []
        for d in deltas:
            try:
                found.append(float(source(float(d))))
            except (ValueError, ArithmeticError, NotImplementedError):
                continue
        eps = np.array(found)
        eps = eps[np.isfinite(eps)]
        if eps.size >= 2:
            return np.unique(np.round(eps, 4))
    raise ValueError("cannot choose an eps grid for this mechanism and claim: give epsilons")


# --------------------------------------------------------------------------------------- steps
def _check_run_options(n_jobs: object, importance: object, progress: object) -> None:
    check_n_jobs("n_jobs", n_jobs)
    if importance not in ("auto", True, False):
        raise ValueError(f"importance must be 'auto', True or False, got {importance!r}")
    if progress is not None and not isinstance(progress, bool):
        raise ValueError(f"progress must be None, True or False, got {progress!r}")


def _tilts(
    model: Any, datasets: tuple[tuple[Any, Any], tuple[Any, Any]], importance: bool | str
) -> tuple[LossTilt | None, LossTilt | None]:
    """The exact tilted sampler of each order, where one is known and ``importance`` allows."""
    if importance is False:
        return (None, None)
    tilts = (loss_tilt(model, *datasets[0]), loss_tilt(model, *datasets[1]))
    if importance is True and all(t is None for t in tilts):
        raise ValueError(
            f"importance=True, but no exact tilted sampler is known for {model.name}; "
            "use importance='auto' or False"
        )
    return tilts


def _values_per_output(model: Any, pair: NeighbouringPair, seed: int) -> int:
    """Scalar values per output, from two probe outputs (stream ``"accountant_probe"``), which
    also check that the model has a log-density."""
    probe = np.asarray(model.sample(pair.d, 2, chunk_generator(seed, "accountant_probe", 0)))
    try:
        model.log_density(pair.d, probe)
    except (NotImplementedError, AttributeError):
        raise ValueError(
            f"{getattr(model, 'name', type(model).__name__)} has no log_density: its privacy "
            "loss cannot be sampled (DP-SGD: use the Dirac canary)"
        ) from None
    return max(1, int(np.prod(probe.shape[1:], dtype=np.int64)))


def _sample_orders(job: _Job, trials: int, n_jobs: int, progress: bool | None) -> tuple:
    """The summed tallies of both orders, chunk tasks run by ``joblib`` and added in order."""
    from joblib import delayed
    from tqdm import tqdm

    chunk_size = job.chunk_size
    tasks = _tasks(0, trials, chunk_size) + _tasks(1, trials, chunk_size)
    if progress is None:  # long runs, when stderr is a terminal (tqdm's own check)
        disable = True if 2 * trials < 10**7 else None
    else:
        disable = not progress
    bar = tqdm(
        total=2 * trials,
        unit="sample",
        unit_scale=True,
        file=sys.stderr,
        disable=disable,
        desc=f"{getattr(job.mechanism, 'name', 'mechanism')} (privacy loss)",
    )
    totals: list[dict | None] = [None, None]
    with bar, worker_pool(n_jobs) as parallel:
        results = parallel(delayed(_run_task)(job, *task) for task in tasks)
        for (order, first, n_chunks, total), tally in zip(tasks, results, strict=True):
            totals[order] = _add(totals[order], tally)
            bar.update(min(total, (first + n_chunks) * chunk_size) - first * chunk_size)
    return totals[0], totals[1]


# --------------------------------------------------------------------------------------- main
def audit_accountant(
    mechanism: Any,
    claimed: Any,
    *,
    trials: int,
    seed: int = 0,
    confidence: float = 0.95,
    epsilons: Sequence[float] | np.ndarray | None = None,
    pair: NeighbouringPair | None = None,
    n_jobs: int = 1,
    importance: bool | str = "auto",
    chunk_size: int | None = None,
    progress: bool | None = None,
) -> AccountantAudit:
    """Check claimed ``delta(eps)`` curves against the sampled privacy loss of ``mechanism``.

    Parameters
    ----------
    mechanism:
        A mechanism with ``sample`` and ``log_density`` (every reference mechanism, subsampled
        and composed ones; DP-SGD observing its canary updates).
    claimed:
        One claim or several: a callable ``eps -> delta``, a table of ``(eps, delta)`` pairs, a
        :class:`~dpaudit.bounds.tradeoff.TradeoffCurve`, anything with ``.delta(eps)``, the name
        of an accountant of :mod:`dpaudit.accountants` (``"dp_accounting:pld"``, ...), a list of
        such names, or a mapping name -> claim. Accountants whose package is missing or that do
        not cover the mechanism are reported as such (:class:`ClaimCheck`), not as errors.
    trials:
        Privacy-loss samples per order (``D || D_prime`` and ``D_prime || D``).
    seed:
        Root seed; chunk ``i`` of each order draws from its own stream of
        :data:`dpaudit._core.streams.STREAMS` (``accountant_d_d_prime``, ``accountant_d_prime_d``).
    confidence:
        Family-wise level of the intervals, simultaneous over the grid, orders and sides.
    epsilons:
        The ``eps`` grid; default: ``eps`` at 12 values of ``delta`` from ``0.1`` down to
        ``10 / trials`` (``1e-10`` when importance sampling is available), read off the
        mechanism's own tightest theory, else off the first claim.
    pair:
        The neighbouring pair; default ``mechanism.worst_case_pair()``.
    n_jobs:
        Workers for ``joblib.Parallel``; the result is bit-identical for any value.
    importance:
        ``"auto"`` (tilt every order that has an exact tilted sampler), ``True`` (require one) or
        ``False`` (plain sampling only).
    chunk_size:
        Samples per random-stream chunk (default as in :func:`dpaudit.audit`); results depend on
        it, so it is recorded.
    progress:
        Progress bar on stderr (``True``: always, ``False``: never); ``None`` shows it for
        ``10^7`` samples or more on a terminal.
    """
    started = time.perf_counter()
    trials = check_integer("trials", trials, minimum=2)
    seed = check_seed("seed", seed)
    confidence = check_probability("confidence", confidence, low_open=True, high_open=True)
    _check_run_options(n_jobs, importance, progress)
    if not callable(getattr(mechanism, "sample", None)):
        raise ValueError(
            "mechanism must offer sample(dataset, size, rng) and log_density, got "
            f"{type(mechanism).__name__}"
        )
    pair = mechanism.worst_case_pair() if pair is None else pair
    if not isinstance(pair, NeighbouringPair):
        raise ValueError(f"pair must be a NeighbouringPair, got {type(pair).__name__}")
    model, model_pair = _loss_model(mechanism, pair)
    datasets = ((model_pair.d, model_pair.d_prime), (model_pair.d_prime, model_pair.d))
    tilts = _tilts(model, datasets, importance)
    claims = _claims(claimed, mechanism)
    if epsilons is None:
        floor = min(10.0 / trials, 1e-10) if any(t is not None for t in tilts) else 10.0 / trials
        eps = _default_epsilons(mechanism, claims, min(floor, 0.01))
    else:
        eps = _check_epsilons(epsilons)
    plans = (_plan(tilts[0], eps), _plan(tilts[1], eps))
    thresholds = eps[:, None] - np.log1p(-STAIRCASE)[None, :]

    values = _values_per_output(model, model_pair, seed)
    chunk_size = default_chunk_size(values) if chunk_size is None else chunk_size
    chunk_size = check_integer("chunk_size", chunk_size, minimum=1)
    job = _Job(model, datasets, tilts, plans, eps, thresholds, seed, chunk_size)
    totals = _sample_orders(job, trials, int(n_jobs), progress)
    result = AccountantAudit(
        mechanism=mechanism,
        pair=pair,
        epsilons=eps,
        trials=trials,
        seed=seed,
        confidence=confidence,
        chunk_size=chunk_size,
        plans=plans,
        tallies=totals,
        elapsed_seconds=0.0,
    )
    for name, claim in claims.items():
        if isinstance(claim, Exception):
            result.claims[name] = _unavailable(name, claim)
        else:
            result.check(claim, name=name)
    result.elapsed_seconds = time.perf_counter() - started
    return result
