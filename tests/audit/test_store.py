"""The resumable store: atomic batch files, fingerprint checks, resumed audits identical to
uninterrupted ones (SIGKILL included), worker faults and mechanism failures."""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import dpaudit
from dpaudit import cli
from dpaudit.audit.store import STORE_FORMAT, ChunkStore, fingerprint_digest
from dpaudit.mechanisms import Gaussian, Mechanism, NeighbouringPair

REPO = Path(__file__).resolve().parents[2]


def _record(result) -> dict:
    """Everything of a result except the wall-clock time."""
    out = result.to_dict()
    out.pop("elapsed_seconds")
    return out


# --- the store on its own -------------------------------------------------------------------


def test_save_load_round_trip_is_exact(tmp_path):
    store = ChunkStore(tmp_path / "s", {"seed": 1})
    counts = np.arange(6, dtype=np.int64).reshape(2, 3)
    loss = np.random.default_rng(0).normal(size=(4, 3))
    store.save("evaluation", 64, {"counts": counts, "loss": loss, "fixed": None})
    got = store.load("evaluation", 64)
    assert got["counts"].dtype == np.int64 and np.array_equal(got["counts"], counts)
    assert np.array_equal(got["loss"], loss)  # bit for bit
    assert got["fixed"] is None
    assert store.load("evaluation", 0) is None
    assert store.finished() == {("evaluation", 64)}
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == [
        "evaluation-000000000064.npz",
        "manifest.json",
    ]


def test_manifest_holds_fingerprint_and_digest(tmp_path):
    fingerprint = {"seed": 1, "trials": 10}
    ChunkStore(tmp_path, fingerprint)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["format"] == STORE_FORMAT
    assert manifest["digest"] == fingerprint_digest(fingerprint)
    assert manifest["seed"] == 1 and manifest["trials"] == 10
    # Reopening with the same fingerprint is accepted.
    assert ChunkStore(tmp_path, dict(fingerprint)).digest == manifest["digest"]


def test_other_fingerprint_is_refused_naming_the_fields(tmp_path):
    ChunkStore(tmp_path, {"seed": 1, "trials": 10, "chunk_size": 64})
    with pytest.raises(ValueError, match=r"different audit \(differs in: chunk_size, seed\)"):
        ChunkStore(tmp_path, {"seed": 2, "trials": 10, "chunk_size": 128})


def test_foreign_and_broken_directories_are_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(ValueError, match="not empty and holds no manifest.json"):
        ChunkStore(tmp_path, {"seed": 1})
    other = tmp_path / "other"
    other.mkdir()
    (other / "manifest.json").write_text("{not json")
    with pytest.raises(ValueError, match="unreadable manifest.json"):
        ChunkStore(other, {"seed": 1})
    (other / "manifest.json").write_text(json.dumps({"format": 99}))
    with pytest.raises(ValueError, match="format 99"):
        ChunkStore(other, {"seed": 1})
    a_file = tmp_path / "file"
    a_file.write_text("")
    with pytest.raises(ValueError, match="not a directory"):
        ChunkStore(a_file, {"seed": 1})


def test_invalid_arguments(tmp_path):
    with pytest.raises(ValueError, match="store must be a directory path"):
        ChunkStore(3, {})
    with pytest.raises(ValueError, match="fingerprint must be a mapping"):
        ChunkStore(tmp_path, [1])
    store = ChunkStore(tmp_path, {})
    with pytest.raises(ValueError, match="stream must be a lower-case word"):
        store.save("../x", 0, {"counts": np.zeros(2)})
    with pytest.raises(ValueError, match="first must be a chunk index >= 0"):
        store.load("evaluation", -1)
    with pytest.raises(ValueError, match="arrays must be among"):
        store.save("evaluation", 0, {"other": np.zeros(2)})


def test_leftover_temporary_files_are_removed(tmp_path):
    ChunkStore(tmp_path, {})
    (tmp_path / ".evaluation-000000000000.npz.abc.tmp").write_bytes(b"partial")
    ChunkStore(tmp_path, {})
    assert not list(tmp_path.glob(".*.tmp"))


def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    path.write_bytes({"empty": b"", "truncated": data[: len(data) // 2], "garbage": b"PK\x03"}[how])


@pytest.mark.parametrize("how", ["empty", "truncated", "garbage"])
def test_damaged_batch_and_pilot_files_are_reported_removed_and_left_out(tmp_path, how):
    store = ChunkStore(tmp_path, {})
    store.save("evaluation", 0, {"counts": np.ones((2, 3), dtype=np.int64)})
    store.save("evaluation", 8, {"counts": np.ones((2, 3), dtype=np.int64)})
    store.save_scores("pilot", 0, np.ones((2, 5)))
    _damage(tmp_path / "evaluation-000000000008.npz", how)
    _damage(tmp_path / "pilot-000000000000.npz", how)
    with pytest.warns(RuntimeWarning) as caught:
        assert store.finished() == {("evaluation", 0)}
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2 and all("\n" not in m for m in messages)
    assert "evaluation-000000000008.npz is damaged" in messages[0]
    assert "pilot-000000000000.npz is damaged" in messages[1]
    assert all("removed and drawn again" in m for m in messages)
    assert sorted(p.name for p in tmp_path.glob("*.npz")) == ["evaluation-000000000000.npz"]
    # Damage found when loading (after finished()): reported, removed, None.
    _damage(tmp_path / "evaluation-000000000000.npz", how)
    with pytest.warns(RuntimeWarning, match="evaluation-000000000000.npz is damaged"):
        assert store.load("evaluation", 0) is None
    store.save_scores("pilot", 1, np.ones((2, 5)))
    with pytest.warns(RuntimeWarning, match="shape"):
        assert store.load_scores("pilot", 1, (2, 4)) is None
    assert not list(tmp_path.glob("*.npz"))


def _rewrite(path: Path, change) -> None:
    """Rewrite a stored file with ``change`` applied to its arrays (its checksum left as it was),
    as an edit or a bug elsewhere would."""
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k].copy() for k in data.files}
    change(arrays)
    np.savez(path, **arrays)


@pytest.mark.parametrize(
    ("name", "change"),
    [
        ("evaluation-000000000000.npz", lambda a: a.update(counts=2 * a["counts"])),
        ("evaluation-000000000000.npz", lambda a: a.update(counts=a["counts"].astype(float))),
        ("evaluation-000000000000.npz", lambda a: a.update(counts=a["counts"][:, :-3])),
        ("pilot-000000000000.npz", lambda a: a.update(scores=3.0 * a["scores"])),
    ],
)
def test_edited_files_are_reported_removed_and_drawn_again(tmp_path, name, change):
    """Doubled counts, counts turned float, three bins fewer, rescaled pilot scores: the file no
    longer matches its checksum, so it is reported in one line, removed and drawn again, and the
    resumed audit equals one that was never interrupted."""
    m = Gaussian(1.0)
    plain = dpaudit.audit_mechanism(m, trials=50_000, seed=3, chunk_size=4096)
    dpaudit.audit_mechanism(m, trials=50_000, seed=3, chunk_size=4096, store=tmp_path)
    _rewrite(tmp_path / name, change)
    with pytest.warns(RuntimeWarning, match=f"{name} is damaged .*checksum.*drawn again"):
        again = dpaudit.audit_mechanism(m, trials=50_000, seed=3, chunk_size=4096, store=tmp_path)
    assert _record(again) == _record(plain)


def test_a_file_from_another_audits_store_is_not_taken(tmp_path):
    """Checksums are keyed by the audit's fingerprint: a batch file copied from the store of
    another audit (same stream and index) is damaged for this one."""
    first, second = ChunkStore(tmp_path / "a", {"seed": 1}), ChunkStore(tmp_path / "b", {"seed": 2})
    first.save("evaluation", 0, {"counts": np.ones((2, 3), dtype=np.int64)})
    name = "evaluation-000000000000.npz"
    (tmp_path / "b" / name).write_bytes((tmp_path / "a" / name).read_bytes())
    with pytest.warns(RuntimeWarning, match="checksum"):
        assert second.load("evaluation", 0) is None


def test_a_batch_whose_counts_do_not_add_up_to_its_trials_is_not_taken(tmp_path):
    """A batch is read only if its counts add up, on each dataset, to the trials it holds."""
    store = ChunkStore(tmp_path / "s", {"seed": 1})
    store.save("evaluation", 0, {"counts": np.array([[3, 7], [5, 5]], dtype=np.int64)})
    assert store.load("evaluation", 0, 10)["counts"].sum() == 20
    with pytest.warns(RuntimeWarning, match=r"counts add up to \[10, 10\], not 12 trials each"):
        assert store.load("evaluation", 0, 12) is None
    assert not list((tmp_path / "s").glob("evaluation-*"))


def test_a_batch_copied_over_another_of_the_same_audit_is_not_taken(tmp_path):
    """``evaluation-...000.npz`` copied onto a later batch of the same audit used to be read
    (its checksum keyed by the audit only), moving eps without a word. The checksum binds a
    file to its stream and first chunk too: the copy is reported, removed, drawn again, and the
    resumed audit equals one never interrupted."""
    m = Gaussian(1.0)
    plain = dpaudit.audit_mechanism(m, trials=300_000, seed=9, chunk_size=4096)
    dpaudit.audit_mechanism(m, trials=300_000, seed=9, chunk_size=4096, store=tmp_path)
    first, *_, later = sorted(tmp_path.glob("evaluation-*.npz"))[:-1]  # the same size of batch
    later.write_bytes(first.read_bytes())
    with pytest.warns(RuntimeWarning, match=f"{later.name} is damaged .*checksum"):
        again = dpaudit.audit_mechanism(m, trials=300_000, seed=9, chunk_size=4096, store=tmp_path)
    assert _record(again) == _record(plain)


# --- the engine with a store ----------------------------------------------------------------


def test_audit_with_store_equals_audit_without(tmp_path):
    m = Gaussian(1.0)
    plain = dpaudit.audit_mechanism(m, trials=200_000, seed=4)
    first = dpaudit.audit_mechanism(m, trials=200_000, seed=4, store=tmp_path)
    stored = {p.name for p in tmp_path.glob("*.npz")}
    assert stored and any(n.startswith("selection-") for n in stored)
    assert any(n.startswith("evaluation-") for n in stored)
    with warnings.catch_warnings(record=True) as caught:
        # a resume with nothing left to run starts no worker pool, so nothing warns that a pool
        # cancelled no task (joblib's warning comes when its generator is collected)
        warnings.simplefilter("always")
        again = dpaudit.audit_mechanism(m, trials=200_000, seed=4, store=tmp_path, n_jobs=2)
        gc.collect()
    assert not [w for w in caught if "cancelled" in str(w.message)]
    assert _record(first) == _record(plain) == _record(again)
    assert {p.name for p in tmp_path.glob("*.npz")} == stored


def test_partial_store_resumes_identically(tmp_path):
    m = Gaussian(1.0)
    plain = dpaudit.audit_mechanism(m, trials=300_000, seed=9, chunk_size=4096)
    dpaudit.audit_mechanism(m, trials=300_000, seed=9, chunk_size=4096, store=tmp_path)
    files = sorted(tmp_path.glob("*.npz"))
    for path in files[::2]:  # drop every other finished batch: those are recomputed
        path.unlink()
    resumed = dpaudit.audit_mechanism(
        m, trials=300_000, seed=9, chunk_size=4096, store=tmp_path, n_jobs=2
    )
    assert _record(resumed) == _record(plain)
    assert sorted(tmp_path.glob("*.npz")) == files


@pytest.mark.parametrize(
    ("change", "field"),
    [({"seed": 5}, "seed"), ({"trials": 100_001}, "trials"), ({"chunk_size": 512}, "chunk_size")],
)
def test_store_of_another_audit_is_refused(tmp_path, change, field):
    m = Gaussian(1.0)
    dpaudit.audit_mechanism(m, trials=100_000, seed=4, chunk_size=1024, store=tmp_path)
    args = {"trials": 100_000, "seed": 4, "chunk_size": 1024, **change}
    with pytest.raises(ValueError, match=f"different audit \\(differs in: .*{field}"):
        dpaudit.audit_mechanism(m, store=tmp_path, **args)


def test_store_of_a_fixed_audit_with_other_thresholds_is_refused(tmp_path):
    """The fixed strategy's counts depend on its thresholds, so they are in the fingerprint:
    a rerun with other thresholds (as many, so that old sums would fit) is refused instead of
    reusing the stored counts. The same thresholds in another order are the same tests: the
    stored sums serve and the counts follow the new order, as without a store."""
    m = Gaussian(1.0)
    args = {"trials": 20_000, "seed": 4, "strategy": "fixed"}
    first = dpaudit.audit_mechanism(m, threshold=[0.5, 1.0], store=tmp_path, **args)
    again = dpaudit.audit_mechanism(m, threshold=[1.0, 0.5], store=tmp_path, **args)
    plain = dpaudit.audit_mechanism(m, threshold=[1.0, 0.5], **args)
    assert np.array_equal(again.fixed_counts, plain.fixed_counts)
    assert np.array_equal(again.fixed_counts, first.fixed_counts[:, ::-1])
    with pytest.raises(ValueError, match=r"different audit \(differs in: threshold\)"):
        dpaudit.audit_mechanism(m, threshold=[0.0, 2.0], store=tmp_path, **args)
    with pytest.raises(ValueError, match=r"different audit \(differs in: threshold\)"):
        dpaudit.audit_mechanism(m, threshold=[0.5, 1.0 + 1e-12], store=tmp_path, **args)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["threshold"] == [0.5, 1.0]


def test_store_of_another_mechanism_is_refused(tmp_path):
    dpaudit.audit_mechanism(Gaussian(1.0), trials=20_000, seed=4, store=tmp_path)
    with pytest.raises(ValueError, match="different audit"):
        dpaudit.audit_mechanism(Gaussian(1.5), trials=20_000, seed=4, store=tmp_path)


class Failing(Mechanism):
    """N(sum(dataset), 1) that misbehaves in chunk ``bad`` of the evaluation stream."""

    def __init__(self, problem: str) -> None:
        self.problem = problem
        self.calls = 0

    def sample(self, dataset, size, rng):
        out = np.sum(dataset) + rng.normal(0.0, 1.0, size)
        if size == 1000 and np.sum(dataset) == 1.0:  # the last, short evaluation chunk
            if self.problem == "raise":
                raise RuntimeError("out of cheese")
            if self.problem == "nan":
                out[3] = np.nan
            if self.problem == "inf":
                out[0] = -np.inf
            if self.problem == "shape":
                out = out[:-1]
        return out

    def worst_case_pair(self):
        return NeighbouringPair(np.zeros(0), np.array([1.0]))

    def params(self):
        return {"problem": self.problem}


@pytest.mark.parametrize(
    ("problem", "message"),
    [
        ("raise", "raised RuntimeError: out of cheese"),
        ("nan", "returned NaN or infinite outputs"),
        ("inf", "returned NaN or infinite outputs"),
        ("shape", r"returned 999 outputs, expected 1000"),
    ],
)
def test_misbehaving_mechanism_stops_with_named_chunk(problem, message):
    # 2^15 + 1000 evaluation trials in chunks of 2^12: chunk 8 is the short one.
    with pytest.raises(ValueError, match=message) as info:
        dpaudit.audit_mechanism(
            Failing(problem), trials=2**15 + 1000, seed=1, chunk_size=2**12, selection_trials=4096
        )
    text = str(info.value)
    assert "Failing(problem=" in text and "evaluation chunk 8" in text
    assert "\n" not in text


def test_misbehaving_mechanism_at_the_cli_is_one_line(tmp_path, monkeypatch, capsys):
    from dpaudit import specs

    monkeypatch.setitem(
        specs.MECHANISM_KINDS,
        "failing_for_test",
        specs.Kind(lambda: Failing("raise"), {}, "raises in its last chunk"),
    )
    spec = tmp_path / "s.toml"
    spec.write_text(
        '[[audit]]\nname = "f"\nmechanism = { kind = "failing_for_test" }\n'
        'attack = { kind = "threshold" }\n'
        f"trials = {2**15 + 1000}\nselection_trials = 4096\nclaim = {{ kind = 'gdp', mu = 1 }}\n"
    )
    code = cli.main(["run", str(spec), "-o", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err.splitlines()
    assert code == cli.EXIT_USER_ERROR
    assert len(err) == 1 and "out of cheese" in err[0] and "chunk" in err[0]
    # An attack that cannot score (here: no density for the likelihood ratio) is named too.
    spec.write_text(spec.read_text().replace('"threshold"', '"likelihood_ratio"'))
    code = cli.main(["run", str(spec), "-o", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err.splitlines()
    assert code == cli.EXIT_USER_ERROR and len(err) == 1
    assert "attack LikelihoodRatio raised NotImplementedError" in err[0] and "chunk 0" in err[0]
    assert not (tmp_path / "out").exists()


class DiesOnce(Gaussian):
    """N(sum(dataset), 1) whose first call in a worker process kills that process."""

    def __init__(self, marker: str) -> None:
        super().__init__(1.0)
        self.marker = marker
        self.parent = os.getpid()

    def sample(self, dataset, size, rng):
        if os.getpid() != self.parent and not os.path.exists(self.marker):
            Path(self.marker).touch()
            os._exit(1)
        return super().sample(dataset, size, rng)


def test_dead_worker_is_replaced_and_its_batch_rerun(tmp_path):
    marker = str(tmp_path / "died")
    store = tmp_path / "store"
    survived = dpaudit.audit_mechanism(
        DiesOnce(marker), trials=200_000, seed=2, n_jobs=2, store=store
    )
    assert os.path.exists(marker)  # a worker did die
    plain = dpaudit.audit_mechanism(DiesOnce(marker), trials=200_000, seed=2, n_jobs=1)
    assert _record(survived) == _record(plain)


# --- killed and resumed ---------------------------------------------------------------------

_SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    import numpy as np
    import dpaudit
    from dpaudit.mechanisms import Gaussian

    class SlowGaussian(Gaussian):
        # Sleeps in every call so that the run can be killed half-way.
        def sample(self, dataset, size, rng):
            time.sleep(0.004)
            return super().sample(dataset, size, rng)

    if __name__ == "__main__":
        store = None if sys.argv[2] == "-" else sys.argv[2]
        result = dpaudit.audit_mechanism(
            SlowGaussian(1.0), trials=200_000, seed=21, chunk_size=2048, n_jobs=2, store=store
        )
        out = result.to_dict()
        out.pop("elapsed_seconds")
        with open(sys.argv[1], "w") as handle:
            json.dump(out, handle, sort_keys=True)
    """
)


def _run_script(script: Path, *args: str, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, str(script), *args], cwd=REPO, env=env, start_new_session=True, **kwargs
    )


def test_sigkill_mid_way_then_resume_is_identical(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(_SCRIPT)
    store = tmp_path / "store"
    reference = tmp_path / "reference.json"
    assert _run_script(script, str(reference), "-").wait(timeout=300) == 0

    killed = _run_script(script, str(tmp_path / "killed.json"), str(store))
    deadline = time.monotonic() + 240
    while len(list(store.glob("[se]*.npz"))) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    os.killpg(killed.pid, signal.SIGKILL)  # the audit and its workers
    killed.wait(timeout=60)
    assert killed.returncode == -signal.SIGKILL
    done = len(list(store.glob("[se]*.npz")))  # selection and evaluation batches
    assert not (tmp_path / "killed.json").exists()

    resumed = tmp_path / "resumed.json"
    assert _run_script(script, str(resumed), str(store)).wait(timeout=300) == 0
    total = len(list(store.glob("[se]*.npz")))
    # The kill came mid-way: some but not all batches had been stored.
    assert 4 <= done < total
    assert json.loads(resumed.read_text()) == json.loads(reference.read_text())


# --- the command line -----------------------------------------------------------------------

_SPEC = """
[[audit]]
name = "gaussian one"
mechanism = { kind = "gaussian", sigma = 1.0 }
claim = { kind = "gdp", mu = 1.0 }
trials = 60_000
seed = 3

[[audit]]
name = "laplace"
mechanism = { kind = "laplace", scale = 1.0 }
trials = 30_000
seed = 4
deltas = [0.0]
"""


def _results(directory: Path) -> list[dict]:
    audits = json.loads((directory / "results.json").read_text())["audits"]
    for record in audits:
        record.pop("elapsed_seconds")
    return audits


def test_cli_store_keeps_batches_per_audit_and_resumes_identically(tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text(_SPEC)
    args = ["run", str(spec), "--quiet", "--store", str(tmp_path / "store")]
    assert cli.main([*args, "-o", str(tmp_path / "a")]) == cli.EXIT_OK
    kept = sorted(p.name for p in (tmp_path / "store").iterdir())
    assert len(kept) == 2 and "laplace" in kept and kept[0].startswith("gaussian_one-")
    for name in kept:
        assert (tmp_path / "store" / name / "manifest.json").exists()
    assert cli.main([*args, "-o", str(tmp_path / "b")]) == cli.EXIT_OK
    assert _results(tmp_path / "a") == _results(tmp_path / "b")


def test_cli_store_of_another_run_is_one_line_error(tmp_path, capsys):
    spec = tmp_path / "spec.toml"
    spec.write_text(_SPEC)
    store = ["--store", str(tmp_path / "store"), "--quiet"]
    assert cli.main(["run", str(spec), "-o", str(tmp_path / "a"), *store]) == cli.EXIT_OK
    capsys.readouterr()
    code = cli.main(["run", str(spec), "-o", str(tmp_path / "b"), "--seed", "99", *store])
    err = capsys.readouterr().err.splitlines()
    assert code == cli.EXIT_USER_ERROR and len(err) == 1
    assert "belongs to a different audit" in err[0] and "seed" in err[0]
    assert not (tmp_path / "b").exists()
