"""Backends: argument checks, and bit-identical results on a Dask LocalCluster and in-process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import dpaudit
from dpaudit.audit.backends import (
    BACKENDS,
    WORKER_THREAD_ENV,
    backend,
    check_scheduler,
    dask_available,
    on_dask,
    single_threaded,
)
from dpaudit.mechanisms import Gaussian, RandomizedResponse


def _record(result) -> dict:
    out = result.to_dict()
    out.pop("elapsed_seconds")
    return out


def test_backends_listed():
    assert BACKENDS == ("local", "dask")


@pytest.mark.parametrize(
    "address", ["tcp://127.0.0.1:8786", "tcp://scheduler:8786", "tls://10.0.0.1:8786"]
)
def test_scheduler_addresses_accepted(address):
    assert check_scheduler(address) == address


@pytest.mark.parametrize("address", ["", "127.0.0.1:8786", "http://x:1", "tcp://", 8786, None])
def test_scheduler_addresses_refused(address):
    with pytest.raises(ValueError, match="scheduler must be a Dask scheduler address"):
        check_scheduler(address)


def test_invalid_backend_arguments():
    with pytest.raises(ValueError, match="backend"):
        with backend("spark"):
            pass
    with pytest.raises(ValueError, match="scheduler is only used with backend 'dask'"):
        with backend("local", scheduler="tcp://x:1"):
            pass
    with pytest.raises(ValueError, match="n_workers is only used with backend 'dask'"):
        with backend("local", n_workers=2):
            pass
    if dask_available():
        with pytest.raises(ValueError, match="n_workers"):
            with backend("dask", n_workers=0):
                pass


def test_local_backend_is_a_no_op():
    with backend("local") as client:
        assert client is None
        result = dpaudit.audit_mechanism(Gaussian(1.0), trials=5_000, seed=1)
    assert _record(result) == _record(dpaudit.audit_mechanism(Gaussian(1.0), trials=5_000, seed=1))


def test_dask_missing_is_a_clear_error(monkeypatch):
    from dpaudit.audit import backends

    monkeypatch.setattr(backends, "dask_available", lambda: False)
    with pytest.raises(ValueError, match=r"needs dask.distributed: pip install 'dpaudit\[dask\]'"):
        with backends.backend("dask"):
            pass


@pytest.mark.skipif(not dask_available(), reason="dask.distributed is not installed")
def test_local_cluster_with_two_workers_is_bit_identical_to_one_process(tmp_path):
    audits = [
        (Gaussian(1.0), {"trials": 300_000, "seed": 7, "chunk_size": 4096}),
        (RandomizedResponse(1.0), {"trials": 100_000, "seed": 8}),
    ]
    local = [_record(dpaudit.audit_mechanism(m, n_jobs=1, **kw)) for m, kw in audits]
    with backend("dask", n_workers=2) as client:
        assert len(client.scheduler_info()["workers"]) == 2
        on_cluster = [_record(dpaudit.audit_mechanism(m, n_jobs=-1, **kw)) for m, kw in audits]
        # The store works the same on the cluster: the driver saves what the workers return.
        stored = _record(
            dpaudit.audit_mechanism(*audits[0][:1], n_jobs=-1, store=tmp_path, **audits[0][1])
        )
    assert on_cluster == local
    assert stored == local[0]


def _thread_counts() -> list[int]:
    from threadpoolctl import threadpool_info

    return [pool["num_threads"] for pool in threadpool_info()]


def _worker_environment() -> dict:
    import os

    return {name: os.environ.get(name) for name in WORKER_THREAD_ENV}


def test_single_threaded_limits_the_thread_pools():
    """Under a limit of two threads (restored on exit), the wrapped function sees one."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    with threadpoolctl.threadpool_limits(limits=2):
        before = _thread_counts()
        if not any(n > 1 for n in before):
            pytest.skip("no BLAS/OpenMP pool runs more than one thread here")
        inside = single_threaded(_thread_counts)()
    assert inside and all(n == 1 for n in inside)
    assert not on_dask()


@pytest.mark.skipif(not dask_available(), reason="dask.distributed is not installed")
def test_dask_workers_run_one_thread_each(monkeypatch):
    """Local cluster workers start with one BLAS/OpenMP thread, and engine batches run wrapped."""
    from joblib import Parallel, delayed

    from dpaudit.audit import engine

    pytest.importorskip("threadpoolctl")
    wrapped = []

    def recording(fn):
        wrapped.append(fn)
        return single_threaded(fn)

    monkeypatch.setattr(engine, "single_threaded", recording)
    with backend("dask", n_workers=1) as client:
        assert on_dask()
        (environment,) = client.run(_worker_environment).values()
        assert environment == WORKER_THREAD_ENV
        counts = Parallel(n_jobs=-1)(delayed(single_threaded(_thread_counts))() for _ in range(2))
        dpaudit.audit_mechanism(Gaussian(1.0), trials=2_000, seed=1, n_jobs=-1)
    assert all(n == 1 for c in counts for n in c)
    assert wrapped == [engine._run_batch]
    assert not on_dask()
    dpaudit.audit_mechanism(Gaussian(1.0), trials=2_000, seed=1, n_jobs=-1)
    assert len(wrapped) == 1  # the local backend runs batches unwrapped


_SPEC = """
[[audit]]
name = "gaussian"
mechanism = { kind = "gaussian", sigma = 1.0 }
trials = 50_000
seed = 3
"""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scheduler", "tcp://127.0.0.1:8786"], "--scheduler needs --backend dask"),
        (["--backend", "dask", "--scheduler", "127.0.0.1"], "scheduler must be a Dask scheduler"),
        (["--backend", "spark"], "invalid choice: 'spark'"),
        (["--backend", "dask", "--n-jobs", "0"], "--n-jobs must be a non-zero integer"),
    ],
)
def test_cli_backend_options_are_checked(tmp_path, capsys, args, message):
    from dpaudit import cli

    spec = tmp_path / "spec.toml"
    spec.write_text(_SPEC)
    code = cli.main(["run", str(spec), "-o", str(tmp_path / "out"), "--quiet", *args])
    err = capsys.readouterr().err.splitlines()
    assert code == cli.EXIT_USER_ERROR and len(err) == 1 and message in err[0], err
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(not dask_available(), reason="dask.distributed is not installed")
def test_cli_dask_backend_matches_local(tmp_path):
    import json

    from dpaudit import cli

    spec = tmp_path / "spec.toml"
    spec.write_text(_SPEC)
    base = ["run", str(spec), "--quiet"]
    assert cli.main([*base, "-o", str(tmp_path / "local")]) == cli.EXIT_OK
    dask = ["--backend", "dask", "--n-jobs", "2", "--store", str(tmp_path / "store")]
    assert cli.main([*base, "-o", str(tmp_path / "dask"), *dask]) == cli.EXIT_OK

    def load(name):
        audits = json.loads((tmp_path / name / "results.json").read_text())["audits"]
        for record in audits:
            record.pop("elapsed_seconds")
            record.pop("spec")  # records the n_jobs override
        return audits

    assert load("dask") == load("local")


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux ``/proc``)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting to be reaped has ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_no_worker_outlives_a_run_killed_with_sigkill(tmp_path):
    """``kill -9`` of ``dpaudit run --n-jobs 2`` while its workers draw trials: within a few
    seconds none of the processes it started is left (joblib's idle workers used to stay for
    minutes, three of them after every kill)."""
    spec = tmp_path / "spec.toml"
    spec.write_text(
        '[[audit]]\nname = "long"\ntrials = 40_000_000\nseed = 3\n'
        'mechanism = { kind = "composed", base = { kind = "gaussian", sigma = 4.0 }, times = 4 }\n'
    )
    store = tmp_path / "store"
    argv = [sys.executable, "-m", "dpaudit.cli", "run", str(spec), "-o", str(tmp_path / "out")]
    run = subprocess.Popen(
        [*argv, "--store", str(store), "--n-jobs", "2", "-q"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 300
        while not list(store.glob("*/selection-*.npz")) and time.monotonic() < deadline:
            assert run.poll() is None, "the run ended before its workers drew a batch"
            time.sleep(0.05)
        started = _children(run.pid)
        assert len(started) >= 2  # the workers (and joblib's resource trackers)
    finally:
        run.kill()
        run.wait()
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in started) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [pid for pid in started if _alive(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left
