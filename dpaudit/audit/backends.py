"""Where the engine's batches run: this machine's processes, or a Dask cluster.

The engine hands its batches to ``joblib.Parallel``, so the backend is whatever
:func:`joblib.parallel_config` selects; :func:`backend` selects it::

    with dpaudit.audit.backends.backend("dask", scheduler="tcp://10.0.0.1:8786"):
        result = dpaudit.audit_mechanism(mechanism, trials=10**10, n_jobs=-1)

Backends (:data:`BACKENDS`):

``"local"``
    joblib's default process pool on this machine (``n_jobs`` workers).
``"dask"``
    joblib's ``dask`` backend on a ``dask.distributed`` cluster: the one whose scheduler is at
    ``scheduler`` (``tcp://HOST:PORT``), or, without it, a ``LocalCluster`` of ``n_workers``
    single-threaded worker processes that is started here and stopped on exit. Needs the
    optional dependency ``dask[distributed]``.

Workers never oversubscribe the cores: the ``LocalCluster``'s worker processes start with the
BLAS/OpenMP thread counts of :data:`WORKER_THREAD_ENV` (one thread each), and on any Dask
cluster each engine batch first limits the thread pools of its worker to one thread with
``threadpoolctl`` (part of the ``dask`` extra; :func:`single_threaded`). On a remote cluster
the limit stays in place after the audit: the worker's threads then each use one core, which is
what a pool of task threads needs. The ``local`` backend needs none of this: joblib's process
pool already gives each worker its share of the cores.

Since the engine's batches and their summation order depend only on the audit's arguments, never
on the workers, the results are bit-identical on every backend for the same seed.

No worker outlives the process that started it: the pools of :func:`worker_pool` start every
local worker with a thread that watches the worker's parent and ends the worker within
:data:`PARENT_CHECK_SECONDS` of the parent's end, ``kill -9`` included. (joblib's pool would
otherwise keep idle workers for minutes, and a parent killed outright never stops them.)
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from dpaudit._core.validation import check_choice, check_integer

__all__ = [
    "BACKENDS",
    "WORKER_THREAD_ENV",
    "backend",
    "check_scheduler",
    "dask_available",
    "on_dask",
    "single_threaded",
    "worker_pool",
    "PARENT_CHECK_SECONDS",
]

#: Backends :func:`backend` knows.
BACKENDS = ("local", "dask")

#: Environment of the ``LocalCluster``'s worker processes: one BLAS/OpenMP thread each.
WORKER_THREAD_ENV = {
    name: "1"
    for name in (
        "OMP_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "MKL_NUM_THREADS",
        "BLIS_NUM_THREADS",
        "VECLIB_MAXIMUM_THREADS",
        "NUMEXPR_NUM_THREADS",
    )
}

_SCHEDULER = re.compile(r"^(tcp|tls|ws|wss|inproc|ucx)://[^\s/]+(:\d{1,5})?/?$")


def dask_available() -> bool:
    """Whether ``dask.distributed`` can be imported."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        return False
    return True


def on_dask() -> bool:
    """Whether ``joblib.Parallel`` would run its tasks on a Dask cluster here."""
    import joblib

    if "distributed" not in sys.modules:
        return False
    active, _ = joblib.parallel.get_active_backend()
    return type(active).__name__ == "DaskDistributedBackend"


class _SingleThreaded:
    """``fn`` run with its process's BLAS/OpenMP thread pools limited to one thread."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:  # the worker's environment alone limits its threads
            pass
        else:
            threadpool_limits(limits=1)
        return self.fn(*args, **kwargs)


def single_threaded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, limiting the BLAS/OpenMP thread pools of the process it runs in to one thread
    first (with ``threadpoolctl`` when it is installed; the limit is left in place, so that
    concurrent tasks of one worker never restore each other's limits). Picklable when ``fn``
    is, so that it can be sent to Dask workers."""
    return _SingleThreaded(fn)


#: Seconds between two looks of a local worker process at whether its parent still runs.
PARENT_CHECK_SECONDS = 0.5


def _exit_with(parent: int) -> None:
    """Wait until this process's parent is no longer ``parent`` (it ended, and this process was
    handed to another), then end this process at once."""
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_SECONDS)
    os._exit(1)


def _watch_parent(parent: int) -> None:
    """The initializer of a worker of :func:`worker_pool`, which ``parent`` started: a thread
    that ends this worker when ``parent`` ends; the end at once when it already has (it was
    killed while this worker was starting)."""
    if os.getppid() != parent:
        os._exit(1)
    threading.Thread(target=_exit_with, args=(parent,), daemon=True).start()


def worker_pool(n_jobs: int) -> Any:
    """``joblib.Parallel(n_jobs, return_as="generator")`` on the backend now active. When that
    is joblib's own process pool (loky, the default), its workers watch this process and end
    within :data:`PARENT_CHECK_SECONDS` of its end, however it ends (module docstring)."""
    import joblib
    from joblib.parallel import get_active_backend

    active, _ = get_active_backend()
    if type(active).__name__ != "LokyBackend" or "initializer" in active.backend_kwargs:
        return joblib.Parallel(n_jobs=n_jobs, return_as="generator")
    backend = type(active)(
        nesting_level=active.nesting_level,
        inner_max_num_threads=active.inner_max_num_threads,
        **active.backend_kwargs,
        initializer=_watch_parent,
        initargs=(os.getpid(),),
    )
    return joblib.Parallel(n_jobs=n_jobs, return_as="generator", backend=backend)


def check_scheduler(scheduler: object) -> str:
    """A scheduler address such as ``tcp://10.0.0.1:8786``; ``ValueError`` otherwise."""
    if not isinstance(scheduler, str) or not _SCHEDULER.match(scheduler):
        raise ValueError(
            "scheduler must be a Dask scheduler address such as 'tcp://HOST:PORT', "
            f"got {scheduler!r}"
        )
    return scheduler


@contextlib.contextmanager
def backend(
    name: str = "local",
    *,
    scheduler: str | None = None,
    n_workers: int | None = None,
) -> Iterator[Any]:
    """Run the engine's batches on backend ``name`` inside the ``with`` block.

    Parameters
    ----------
    name:
        One of :data:`BACKENDS`.
    scheduler:
        ``"dask"`` only: address of a running scheduler; ``None`` starts a ``LocalCluster``.
    n_workers:
        ``"dask"`` without ``scheduler`` only: worker processes of the ``LocalCluster``
        (default: the number of cores).

    Yields
    ------
    The ``dask.distributed.Client`` for ``"dask"``, ``None`` for ``"local"``.
    """
    import joblib

    name = check_choice("backend", name, BACKENDS)
    if scheduler is not None:
        if name != "dask":
            raise ValueError(f"scheduler is only used with backend 'dask', got backend {name!r}")
        scheduler = check_scheduler(scheduler)
    if n_workers is not None:
        if name != "dask" or scheduler is not None:
            raise ValueError("n_workers is only used with backend 'dask' without a scheduler")
        n_workers = check_integer("n_workers", n_workers, minimum=1)
    if name == "local":
        yield None
        return
    if not dask_available():
        raise ValueError(
            "backend 'dask' needs dask.distributed: pip install 'dpaudit[dask]' "
            "(or pip install 'dask[distributed]')"
        )
    from distributed import Client, LocalCluster

    with contextlib.ExitStack() as stack:
        if scheduler is None:
            cluster = stack.enter_context(
                LocalCluster(
                    n_workers=n_workers or os.cpu_count() or 1,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=None,
                    env=WORKER_THREAD_ENV,
                )
            )
            client = stack.enter_context(Client(cluster))
        else:
            try:
                client = stack.enter_context(Client(scheduler, timeout="30s"))
            except OSError as exc:
                raise ValueError(
                    f"cannot reach the Dask scheduler at {scheduler} ({exc})"
                ) from None
        stack.enter_context(joblib.parallel_config(backend="dask"))
        yield client
