"""Inputs nobody should be able to crash dpaudit with: one line on stderr, exit 1, nothing
written, never a traceback, a hang or lost work.

One test per failure class: specs nested a thousand deep, trial counts, compositions and slow
mechanisms beyond the machine, names of thousands of characters, foreign code that raises or
exits, foreign code that returns strings or nothing, damaged store files, SIGINT or SIGTERM
during the pilot of a stored run, progress output into a log file, populations, grids and
learning samples beyond memory, relative module names, Poisson rates that underflow, specs that
say nothing and inputs that are no regular file.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import dpaudit
from dpaudit import cli, specs
from dpaudit._core import validation
from dpaudit.audit import engine, limits
from dpaudit.mechanisms import Gaussian, Mechanism, NeighbouringPair

REPO = Path(__file__).resolve().parents[1]

_GAUSSIAN = '{ kind = "gaussian", sigma = 1.0 }'


def _spec(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spec.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _audit_toml(name: str = "a", mechanism: str = _GAUSSIAN, trials: str = "2000") -> str:
    return f'[[audit]]\nname = "{name}"\nmechanism = {mechanism}\ntrials = {trials}\n'


def _cli(*args: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def _refused(tmp_path: Path, text: str, *needles: str, extra: tuple = ()) -> str:
    """``dpaudit run`` on ``text``: exit 1, one line on stderr holding ``needles``, no output."""
    out = tmp_path / "out"
    started = time.perf_counter()
    code, _, err = _cli("run", _spec(tmp_path, text), "-o", out, "--quiet", *extra)
    assert code == cli.EXIT_USER_ERROR, err
    assert err.count("\n") == 1 and err.startswith("dpaudit: error: "), err
    for needle in needles:
        assert needle in err, err
    assert not out.exists()
    # Refused up front, not after a run (the machine is shared: a generous margin).
    assert time.perf_counter() - started < 60
    return err


# --- specs nested very deeply ---------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "x = " + "[" * 1000 + "]" * 1000 + "\n",
        "x = " + "{a = " * 1000 + "1" + "}" * 1000 + "\n",
        "[" + ".".join(["a"] * 5000) + "]\nx = 1\n",  # dotted tables: parsed, then too deep
        _audit_toml(mechanism="{ kind = 'gaussian', sigma = " + "[" * 300 + "]" * 300 + " }"),
    ],
    ids=["arrays", "tables", "dotted", "in-a-key"],
)
def test_deeply_nested_specs_are_one_line(tmp_path: Path, text: str) -> None:
    _refused(tmp_path, text, "nested more than 64 deep")


def test_deeply_nested_python_values_are_refused() -> None:
    deep: dict = {"kind": "gaussian", "sigma": 1.0}
    for _ in range(5000):
        deep = {"kind": "composed", "base": deep, "times": 2}
    with pytest.raises(specs.SpecError, match="nested more than 64 deep"):
        specs.build_mechanism(deep)
    with pytest.raises(specs.SpecError, match="nested more than 64 deep"):
        specs.parse({"audit": [{"name": "a", "trials": 10, "mechanism": deep}]})
    code, _, err = _cli("bounds", "gaussian", "--param", "sigma=" + "[" * 1000 + "]" * 1000)
    assert code == cli.EXIT_USER_ERROR and err.count("\n") == 1 and "nested too deeply" in err


# --- what the machine cannot do -------------------------------------------------------------


@pytest.mark.parametrize("trials", ["9223372036854775808", "1e19", "1e17"])
def test_trial_counts_beyond_the_machine_are_refused_up_front(tmp_path: Path, trials) -> None:
    err = _refused(tmp_path, _audit_toml(trials=trials), "trials = ", "more than this machine")
    assert f"{limits.max_trials():,}" in err and f"{limits.LONGEST_RUN_DAYS} days" in err
    if trials.isdigit():  # the command line takes integers only
        _refused(tmp_path, _audit_toml(), "more than this machine", extra=("--trials", trials))


def test_trial_count_limit_is_derived_from_the_machine() -> None:
    cores = os.cpu_count() or 1
    seconds = limits.LONGEST_RUN_DAYS * 86_400
    assert limits.max_trials() == limits.FASTEST_VALUES_PER_SECOND * seconds * cores // 2
    assert limits.check_trials("trials", limits.max_trials()) == limits.max_trials()
    with pytest.raises(ValueError, match="trials = .* more than this machine can run"):
        dpaudit.audit_mechanism(Gaussian(1.0), trials=limits.max_trials() + 1)
    with pytest.raises(ValueError, match="selection_trials = "):
        dpaudit.audit_mechanism(Gaussian(1.0), trials=10, selection_trials=10**19)


def test_composition_nested_30_deep_is_refused_before_drawing(tmp_path: Path) -> None:
    mechanism = _GAUSSIAN
    for _ in range(30):  # 2^30 runs of the Gaussian per output
        mechanism = f'{{ kind = "composed", base = {mechanism}, times = 2 }}'
    text = _audit_toml("second", mechanism)
    err = _refused(tmp_path, _audit_toml("first") + text, "audit 2 (second)", "1,073,741,824")
    assert "of memory" in err


def test_a_run_the_pilot_shows_too_slow_is_refused_before_selection(monkeypatch) -> None:
    """The pilot times the mechanism; a run longer than LONGEST_RUN_DAYS is refused. Here the
    longest run is made 1 ms, so any run is too long: refused after the pilot, nothing more."""
    calls = []

    class Counting(Gaussian):
        def sample(self, dataset, size, rng):
            calls.append(size)
            return super().sample(dataset, size, rng)

    # At 1 ms a trial on one worker, 10^9 trials take 11.6 days and 10^12 take 11,574 days.
    with pytest.raises(ValueError, match=r"about 11,574 days .*1 worker\).* 2,592,000,000 fit"):
        limits.check_duration("m", 10**12, 1000, 1.0, 1)
    limits.check_duration("m", 10**9, 1000, 1.0, 1)  # 11.6 days: within 30
    monkeypatch.setattr(limits, "_SECONDS", 1e-3)
    monkeypatch.setattr(engine, "PRE_CHECK_SECONDS", float("inf"))  # no timing before the pilot
    with pytest.raises(ValueError, match=r"would take about .* days here .*at most about"):
        dpaudit.audit_mechanism(Counting(1.0), trials=10**6, seed=0, chunk_size=4096)
    pilot = 10**6 // 4  # selection trials; the pilot is the first 2^16 of that much
    assert sum(calls) == 2 + 2 * min(pilot, 2**16)  # the probe and the pilot, nothing more


class _Slow(Gaussian):
    """A Gaussian at 0.05 s an output (a composition of millions of runs, or slow foreign code),
    that records the size of every draw and refuses draws as large as a pilot chunk."""

    def __init__(self) -> None:
        super().__init__(1.0)
        self.sizes: list[int] = []

    def sample(self, dataset, size, rng):
        self.sizes.append(size)
        if size > 64:
            raise RuntimeError(f"a draw of {size} outputs: hours at this speed")
        time.sleep(0.05 * size)
        return super().sample(dataset, size, rng)


@pytest.mark.parametrize("attack", [None, "learned"])
def test_a_slow_mechanism_is_timed_and_refused_before_its_fit_and_pilot(attack) -> None:
    """A pilot of 2^16 trials at 0.05 s a trial would take an hour and a half before the run's
    duration is checked. The probe shows the mechanism slow, so one trial on both datasets is
    timed first and 10^9 trials are refused at once: nothing drawn but the probe and that
    trial, no fit sample, no pilot."""
    slow = _Slow()
    chosen = None if attack is None else dpaudit.attacks.Learned()
    with pytest.raises(ValueError, match=r"would take about [\d,]+ days here \(a trial on both"):
        dpaudit.audit_mechanism(slow, attack=chosen, trials=10**9, seed=0, n_jobs=1)
    assert slow.sizes == [2, 1, 1]  # the probe, then the timing draw under D and D_prime


def test_a_composition_of_a_million_runs_is_refused_in_one_line(tmp_path: Path) -> None:
    """``dpaudit run`` of a 10^6-fold composition with 10^9 trials: refused before its pilot
    (2^16 trials of 10^6 Gaussian draws each), in one line that says how long it would take."""
    mechanism = f'{{ kind = "composed", base = {_GAUSSIAN}, times = 1_000_000 }}'
    text = _audit_toml("many-runs", mechanism, trials="1_000_000_000")
    _refused(tmp_path, text, "times=1000000) would take about", "lower trials or add workers")


def test_a_learning_sample_beyond_memory_is_refused_before_drawing(monkeypatch) -> None:
    """A learning attack on outputs of 1,000 values: its fit sample of 5,000 outputs per
    dataset (10,000 trials) needs 76 MiB, more than a quarter of a 128 MiB machine; refused
    before any of it is drawn, naming the attack, not a MemoryError hours later."""
    sizes = []

    def wide(dataset, size, rng):
        sizes.append(size)
        return rng.normal(size=(size, 1000)) + float(np.sum(dataset))

    monkeypatch.setattr(validation, "available_memory", lambda: 2**27)
    box = dpaudit.mechanisms.BlackBox(wide, dataset=[0.0], neighbour=[1.0])
    with pytest.raises(ValueError, match=r"attack DeltaLeak.* learns from 5,000 outputs per "):
        dpaudit.audit_mechanism(box, trials=10_000, seed=0)
    assert max(sizes) < 5000


# --- names ------------------------------------------------------------------------------------


@pytest.mark.parametrize("length", [2_000, 100_000])
def test_long_names_are_refused_before_running(tmp_path: Path, length: int) -> None:
    err = _refused(tmp_path, _audit_toml("n" * length), f"has {length:,} characters", "200")
    assert len(err) < 400  # the message quotes the name shortened


def test_names_with_line_breaks_are_refused(tmp_path: Path) -> None:
    _refused(tmp_path, _audit_toml("a\\nb"), "printable")


# --- foreign code -----------------------------------------------------------------------------

_RELEASES = textwrap.dedent(
    """
    import sys

    import numpy as np

    def raises_runtime(dataset, rng):
        raise RuntimeError("boom")

    CALLS = []

    def raises_after_the_probe(dataset, rng):
        CALLS.append(1)
        if len(CALLS) > 2:
            raise RuntimeError("boom")
        return rng.normal()

    def raises_key(dataset, rng):
        raise KeyError("k")

    def exits(dataset, rng):
        raise SystemExit(2)

    def exits_later(dataset, rng):
        if rng.random() < 0.001:
            sys.exit(3)
        return rng.normal()

    def number_as_string(dataset, rng):
        return "1.5"

    def empty(dataset, rng):
        return np.array([])
    """
)


@pytest.fixture
def releases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    module = f"dpaudit_test_releases_{os.getpid()}"
    (tmp_path / f"{module}.py").write_text(_RELEASES)
    monkeypatch.syspath_prepend(str(tmp_path))
    return module


def _blackbox(callable_: str) -> str:
    return (
        f'{{ kind = "blackbox", callable = "{callable_}", dataset = [0.0], neighbour = [1.0], '
        'name = "my-release" }'
    )


@pytest.mark.parametrize(
    ("function", "needles"),
    [
        ("raises_runtime", ("raised RuntimeError: boom", "chunk 0")),
        ("raises_key", ("raised KeyError: 'k'", "chunk 0")),
        ("exits", ("raised SystemExit: 2", "chunk 0")),
        ("exits_later", ("raised SystemExit: 3", "pilot chunk 0")),
        ("number_as_string", ("got the string '1.5'", "chunk 0")),
        ("empty", ("empty outputs", "chunk 0")),
        ("sys:exit", ("raised TypeError", "chunk 0")),
        ("os:getcwd", ("raised TypeError", "chunk 0")),
    ],
)
def test_foreign_code_that_raises_or_exits_is_one_line_naming_mechanism_and_chunk(
    tmp_path: Path, releases: str, function: str, needles: tuple[str, ...]
) -> None:
    target = function if ":" in function else f"{releases}:{function}"
    text = _audit_toml(mechanism=_blackbox(target)) + 'attack = { kind = "threshold" }\n'
    _refused(tmp_path, text, "mechanism my-release", *needles)


def test_foreign_code_that_raises_in_the_fit_sample_is_one_line(tmp_path, releases) -> None:
    """The default attack of a black box learns: the release function's errors in its fit
    sample name the mechanism and the chunk as in every other draw."""
    target = f"{releases}:raises_after_the_probe"
    err = _refused(
        tmp_path,
        _audit_toml(mechanism=_blackbox(target)),
        "mechanism my-release raised RuntimeError: boom (fit chunk 0, dataset D)",
    )
    # Raised while the audit runs, and named as an error of the spec's reading would be.
    assert err.startswith(f"dpaudit: error: {tmp_path / 'spec.toml'}: audit 1 (a): mechanism ")


# --- the store --------------------------------------------------------------------------------

_STORED = _audit_toml("g", trials="60_000") + "seed = 3\n"


@pytest.mark.parametrize("how", ["empty", "truncated"])
def test_damaged_store_file_is_one_line_and_drawn_again(tmp_path: Path, how: str) -> None:
    spec = _spec(tmp_path, _STORED)
    store = tmp_path / "store"
    assert _cli("run", spec, "-o", tmp_path / "a", "--quiet", "--store", store)[0] == 0
    batches = sorted((store / "g").glob("evaluation-*.npz"))
    pilot = sorted((store / "g").glob("pilot-*.npz"))
    for path in (batches[1], pilot[0]):
        data = path.read_bytes()
        path.write_bytes(b"" if how == "empty" else data[: len(data) // 3])
    code, _, err = _cli("run", spec, "-o", tmp_path / "b", "--quiet", "--store", store)
    assert code == cli.EXIT_OK, err
    lines = err.splitlines()
    assert len(lines) == 2 and all(line.startswith("dpaudit: warning: store ") for line in lines)
    assert batches[1].name in err and pilot[0].name in err and "drawn again" in err
    first, again = (json.loads((tmp_path / d / "results.json").read_text()) for d in "ab")
    for document in (first, again):
        document["audits"][0].pop("elapsed_seconds")
    assert first["audits"] == again["audits"]  # re-drawn, bit for bit
    assert batches[1].stat().st_size > 0 and pilot[0].stat().st_size > 0


class _Interrupting(Mechanism):
    """N(sum(dataset), 1); a KeyboardInterrupt (Ctrl-C) at call number ``stop``."""

    relation = "add_remove"

    def __init__(self, stop: int | None = None) -> None:
        self.stop = stop
        self.calls: list[int] = []

    def sample(self, dataset, size, rng):
        self.calls.append(size)
        if len(self.calls) == self.stop:
            raise KeyboardInterrupt
        return np.sum(dataset) + rng.normal(0.0, 1.0, size)

    def worst_case_pair(self):
        return NeighbouringPair(np.zeros(0), np.array([1.0]))

    @property
    def name(self) -> str:
        return "Interrupting"


def test_interrupted_pilot_is_kept_and_not_drawn_again(tmp_path: Path) -> None:
    """Ctrl-C in the third pilot chunk: the two finished chunks are in the store, and the
    resumed audit draws only the rest; its result equals an uninterrupted audit's."""
    args = dict(
        trials=20_000,
        seed=5,
        chunk_size=4096,
        selection_trials=3 * 4096,
        attack=dpaudit.attacks.Threshold(),  # learns nothing: no fit draws before the pilot
    )
    plain = _Interrupting()
    reference = dpaudit.audit_mechanism(plain, **args)
    with pytest.raises(KeyboardInterrupt):
        # Calls: output_shape and the probe, then D and D' of each pilot chunk; stop in chunk 2.
        dpaudit.audit_mechanism(_Interrupting(stop=2 + 2 * 2 + 1), store=tmp_path, **args)
    kept = sorted(p.name for p in tmp_path.glob("*.npz"))
    assert kept == ["pilot-000000000000.npz", "pilot-000000000001.npz"]
    resumed_mechanism = _Interrupting()
    resumed = dpaudit.audit_mechanism(resumed_mechanism, store=tmp_path, **args)
    assert len(resumed_mechanism.calls) == len(plain.calls) - 4  # two pilot chunks, two sides
    out, ref = resumed.to_dict(), reference.to_dict()
    out.pop("elapsed_seconds"), ref.pop("elapsed_seconds")
    assert out == ref


_SLOW_PILOT = textwrap.dedent(
    """
    import time

    import numpy as np

    CALLS = []

    def slow_after_first_pilot_chunk(dataset, size, rng):
        # Vectorised: one call per dataset and chunk. The probe (and any timing draw) draws at
        # most 64 outputs; the first two pilot draws are quick, everything after them slow.
        if size > 64:
            CALLS.append(size)
            if len(CALLS) > 2:
                time.sleep(60)
        return np.sum(dataset) + rng.normal(0.0, 1.0, size)
    """
)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_the_pilot_of_a_stored_run_keeps_the_pilot(
    tmp_path: Path, signum: int
) -> None:
    """A real Ctrl-C (SIGINT), or a ``kill`` (SIGTERM), to ``dpaudit run --store`` during its
    pilot: one line saying what was kept, exit 130, no report; the finished pilot chunk stays in
    the store. One process: the release counts its calls per process to know when to be slow."""
    (tmp_path / "slow_release.py").write_text(_SLOW_PILOT)
    spec = _spec(
        tmp_path,
        _audit_toml(
            mechanism='{ kind = "blackbox", callable = "slow_release:slow_after_first_pilot_chunk",'
            " dataset = [0.0], neighbour = [1.0], vectorised = true }",
            trials="300_000",
        )
        + 'attack = { kind = "threshold" }\nclaim = { kind = "gdp", mu = 1.0 }\n',
    )
    store = tmp_path / "store"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])}
    run = subprocess.Popen(
        [sys.executable, "-m", "dpaudit.cli", "run", str(spec), "-o", str(tmp_path / "out")]
        + ["--store", str(store), "--quiet", "--n-jobs", "1"],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        # As from a terminal: a process started with SIGINT ignored (as the workers of a parallel
        # test run, or a background job of a script, are) keeps ignoring Ctrl-C.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    while not list(store.glob("*/pilot-000000000000.npz")) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # into the slow second pilot chunk
    run.send_signal(signum)
    _, err = run.communicate(timeout=30)
    assert run.returncode == 130, err
    assert err.count("\n") == 1 and "interrupted; no report written" in err
    assert "finished work is kept in" in err
    assert [p.name for p in store.glob("*/*.npz")] == ["pilot-000000000000.npz"]
    assert not (tmp_path / "out").exists()


# --- progress into a log file -------------------------------------------------------------------


def test_progress_into_a_log_file_is_whole_lines(tmp_path: Path) -> None:
    spec = _spec(tmp_path, _audit_toml(trials="20_000"))
    code, _, err = _cli("run", spec, "-o", tmp_path / "out")  # stderr is not a terminal here
    assert code == cli.EXIT_OK
    lines = err.splitlines()
    assert "\r" not in err
    assert lines[0] == "dpaudit: [1/1] a: 20,000 trials per dataset"
    assert lines[-2] == "dpaudit: [1/1] a: consistent"
    assert lines[-1] == f"dpaudit: writing the report of 1 audit to {tmp_path / 'out'}"
    bars = lines[1:-2]  # the first at once, the last when done, at most one per interval between
    assert "0%" in bars[0] and "100%" in bars[-1] and "(selection + evaluation" in bars[-1]
    code, _, err = _cli("run", spec, "-o", tmp_path / "out", "--quiet")
    assert code == cli.EXIT_OK and err == ""


def test_the_main_job_reports_progress_into_a_file(tmp_path: Path) -> None:
    """``dpaudit suite -o reports/`` with stderr redirected to a file: stage lines arrive there
    as the stages start, and a resumed run draws no notice of cancelled tasks."""
    log = tmp_path / "stderr.log"
    argv = [sys.executable, "-m", "dpaudit.cli", "suite", "-o", "reports/", "--trials", "2000"]
    for _ in range(2):  # the second run resumes every audit from the store
        with log.open("w") as err:
            done = subprocess.run(
                [*argv, "--store", "store"], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=err
            )
        assert done.returncode == cli.EXIT_OK, log.read_text()
        lines = log.read_text().splitlines()
        count = len(specs.suite())
        assert lines[0] == f"dpaudit: [1/{count}] gaussian: 2,000 trials per dataset"
        assert f"dpaudit: [{count}/{count}] laplace-overclaimed: violated" in lines
        assert not [line for line in lines if "warning" in line or "cancelled" in line]


def test_progress_bar_says_what_it_counts(capsys: pytest.CaptureFixture[str]) -> None:
    dpaudit.audit_mechanism(
        Gaussian(1.0), trials=20_000, selection_trials=10_000, seed=0, progress=True
    )
    last = capsys.readouterr().err.split("\r")[-1]
    assert "(selection + evaluation trials per dataset)" in last and "30.0k/30.0k" in last


# --- sizes beyond memory, names that are no module, rates that underflow -------------------------


def test_a_noisy_mean_population_beyond_memory_is_refused_naming_n_and_d() -> None:
    from dpaudit.mechanisms import NoisyMean

    with pytest.raises(ValueError, match=r"n = 1000000000 records of d = 10 .*\(n \+ 1\) \* d"):
        NoisyMean(d=10, n=10**9, sigma=1.0)


def test_bins_beyond_memory_are_refused_before_drawing() -> None:
    with pytest.raises(ValueError, match=r"bins must be an integer in \[2, 1048576\]"):
        dpaudit.audit_mechanism(Gaussian(1.0), trials=1000, bins=10**12, seed=0)


@pytest.mark.parametrize("target", ["..x:y", ".x:y", "a..b:c"])
def test_relative_or_malformed_module_names_of_foreign_code_are_one_line(
    tmp_path: Path, target: str
) -> None:
    text = _audit_toml(mechanism=_blackbox(target)) + 'attack = { kind = "threshold" }\n'
    _refused(tmp_path, text, repr(target), "not an absolute module name")


def test_dpsgd_with_a_poisson_rate_that_underflows_the_gaps_samples() -> None:
    """Geometric gaps of a rate below ~1e-18 reach numpy's cap 2^63 - 1, and summing them used
    to overflow and loop forever; run in a process with a time limit so a hang fails the test."""
    code = (
        "import numpy as np\n"
        "from dpaudit.mechanisms import datasets as ds\n"
        "from dpaudit.mechanisms.dpsgd import DPSGD\n"
        "m = DPSGD('logistic', ds.synthetic(n=7, dim=3, seed=4), sigma=1.0, rate=1e-19,\n"
        "          steps=4, clip=0.7)\n"
        "print(m.sample(m.worst_case_pair().d_prime, 5, np.random.default_rng(0)).shape)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(5, 5)"


# --- specs that say nothing, files that are no files ----------------------------------------------


def test_an_empty_array_of_audits_is_refused(tmp_path: Path) -> None:
    _refused(tmp_path, "audit = []\n", "audit: an empty array", "at least one [[audit]]")


def test_a_claim_no_mechanism_can_break_is_refused(tmp_path: Path) -> None:
    text = _audit_toml() + 'claim = { kind = "approx_dp", eps = 1.0, delta = 1.0 }\n'
    _refused(tmp_path, text, "claim (approx_dp): delta must be below 1", "never be refuted")


@pytest.mark.parametrize("command", ["run", "audit-accountant", "report"])
def test_a_fifo_given_as_input_is_refused_without_reading_it(tmp_path: Path, command: str) -> None:
    fifo = tmp_path / "spec.toml"
    os.mkfifo(fifo)  # opening it for reading would block until someone writes
    code, _, err = _cli(command, fifo, "-o", tmp_path / "out")
    assert code == cli.EXIT_USER_ERROR
    assert err.count("\n") == 1 and f"{fifo}: the " in err and "is not a regular file" in err


def test_accountant_progress_into_a_log_file_is_whole_lines(tmp_path: Path) -> None:
    spec = tmp_path / "acc.toml"
    spec.write_text(
        '[[accountant_audit]]\nname = "g"\nmechanism = { kind = "gaussian", sigma = 1.0 }\n'
        'accountants = ["dpaudit:pld"]\nepsilons = [1.0]\ntrials = 20_000\n'
    )
    code, _, err = _cli("audit-accountant", spec, "-o", tmp_path / "out")
    assert code == cli.EXIT_OK and "\r" not in err
    lines = err.splitlines()
    assert lines[0] == "dpaudit: [1/1] g: 20,000 trials"
    assert "(privacy loss)" in lines[-2] and "100%" in lines[-2]
    assert lines[-1] == f"dpaudit: writing the report of 1 audit to {tmp_path / 'out'}"


_ACCOUNTANT = (
    '[[accountant_audit]]\nname = "a"\nmechanism = {mechanism}\n'
    'accountants = ["dpaudit:pld"]\ntrials = 500\n'
)


@pytest.mark.parametrize(
    ("mechanism", "needle"),
    [
        ('{ kind = "flawed", name = "svt" }', "cannot choose an eps grid"),
        ('{ kind = "gaussian", sigma = 1e-300 }', "sensitivity/sigma must be at most"),
    ],
)
def test_an_error_while_an_accountant_audit_runs_names_the_file_and_the_audit(
    tmp_path: Path, mechanism: str, needle: str
) -> None:
    spec = tmp_path / "acc.toml"
    spec.write_text(_ACCOUNTANT.format(mechanism=mechanism))
    code, _, err = _cli("audit-accountant", spec, "-o", tmp_path / "out", "-q")
    assert code == cli.EXIT_USER_ERROR and err.count("\n") == 1
    assert err.startswith(f"dpaudit: error: {spec}: accountant_audit 1 (a): {needle}")
    assert not (tmp_path / "out").exists()


def test_an_accountant_audit_at_eps_far_above_every_loss_is_bounded(tmp_path: Path) -> None:
    # At eps = 150 the importance weights' ratio to the summand bound overflows where the hockey
    # term is 0: the sum became NaN and the audit stopped with "variance must not be NaN".
    spec = tmp_path / "acc.toml"
    text = _ACCOUNTANT.format(mechanism='{ kind = "gaussian", sigma = 1.0 }')
    spec.write_text(text + "epsilons = [0.5, 150.0]\n")
    code, _, err = _cli("audit-accountant", spec, "-o", tmp_path / "out", "-q")
    assert code == cli.EXIT_OK and err == ""
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    delta = document["accountant_audits"][0]["delta"]
    assert delta["upper"][1] is not None and 0.0 <= delta["lower"][1] <= delta["upper"][1]


# --- sizes, seeds, names, files and outputs that were taken in silence or died ---------------


def test_a_population_beyond_memory_is_refused_before_its_datasets_are_drawn(monkeypatch):
    """A fixed-size subsample of 10^9 of 10^9 + 1 records holds two datasets of 8 GB each: on a
    machine (or under an address-space limit) of 3 GiB that is refused naming ``population``,
    not a MemoryError traceback when the worst-case pair is built."""
    monkeypatch.setattr(validation, "available_memory", lambda: 3 * 2**30)
    with pytest.raises(ValueError, match=r"population = 1,000,000,001: .* 14\.9 GiB, more than"):
        dpaudit.mechanisms.FixedSizeSubsampled(Gaussian(1.0), 10**9, 10**9 + 1)
    dpaudit.mechanisms.FixedSizeSubsampled(Gaussian(1.0), 10**3, 10**3 + 1).worst_case_pair()


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS as Linux applies it")
def test_a_population_beyond_an_address_space_limit_is_one_line(tmp_path: Path) -> None:
    """The same spec run as a user under ``ulimit -v 3145728`` (3 GiB): the limit is read, the
    spec refused in one line naming ``population``."""
    import resource

    mechanism = (
        '{ kind = "fixed_size_subsampled", base = { kind = "gaussian", sigma = 1.0 }, '
        "size = 1000000000, population = 1000000001 }"
    )
    spec = _spec(tmp_path, _audit_toml(mechanism=mechanism, trials="400"))
    limit = 3 * 2**30
    done = subprocess.run(
        [sys.executable, "-m", "dpaudit.cli", "run", str(spec), "-o", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)),
    )
    assert done.returncode == cli.EXIT_USER_ERROR, done.stderr
    assert done.stderr.count("\n") == 1 and "population = 1,000,000,001" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: dpaudit.audit_mechanism(Gaussian(1.0), trials=500, seed=0.0), "seed must be"),
        (lambda: dpaudit.audit_mechanism(Gaussian(1.0), trials=500, seed=1e300), "seed must be"),
        (lambda: dpaudit.simulate_one_run(100, 1.0, seed=1.5), "seed must be"),
        (lambda: dpaudit.mechanisms.NoisyMean(4, 10, sigma=1.0, seed=0.0), "seed must be"),
        (lambda: dpaudit.attacks.Learned(seed=1e300), "seed must be"),
        (lambda: dpaudit.audit_mechanism(Gaussian(1.0), trials=500, n_jobs=-100), "n_jobs must"),
        (lambda: dpaudit.audit_scores(np.zeros(8), np.ones(8), name=1.5), "name must be a string"),
        (lambda: dpaudit.reports.write([], "out", title=True), "title must be a string"),
    ],
    ids=[
        "seed 0.0",
        "seed 1e300",
        "one-run seed",
        "mechanism seed",
        "attack seed",
        "n_jobs -100",
        "name 1.5",
        "title True",
    ],
)
def test_float_and_bool_seeds_names_and_too_few_workers_are_refused(call, message) -> None:
    """A seed is an exact integer (``0.0`` and ``1e300`` are refused, not rounded), a name or a
    title is text, and ``n_jobs = -100`` on a machine of fewer cores leaves no worker."""
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("seed", ["0.0", "1e300", "true", '"0"'])
def test_a_spec_seed_that_is_not_an_integer_is_refused(tmp_path: Path, seed: str) -> None:
    _refused(tmp_path, _audit_toml() + f"seed = {seed}\n", "audit 1 (a): seed", "integer seed")


def test_n_jobs_beyond_the_cores_below_zero_is_refused_at_the_command_line(tmp_path) -> None:
    _refused(tmp_path, _audit_toml(), "n_jobs must be at least -", extra=("--n-jobs", "-100"))


def test_accountant_tables_in_a_run_spec_are_refused_not_skipped(tmp_path: Path) -> None:
    """``dpaudit run`` runs [[audit]] tables; [[accountant_audit]] tables beside them would not
    run, so the spec is refused naming the command that runs them (and the other way round)."""
    accountant = (
        '[[accountant_audit]]\nname = "x"\nmechanism = { kind = "gaussian", sigma = 1.0 }\n'
        'accountants = ["dpaudit:pld"]\ntrials = 1000\n'
    )
    _refused(tmp_path, _audit_toml() + accountant, "run by 'dpaudit audit-accountant'")
    code, _, err = _cli(
        "audit-accountant", _spec(tmp_path, accountant + _audit_toml()), "-o", tmp_path / "o"
    )
    assert code == cli.EXIT_USER_ERROR and "[[audit]] tables are run by 'dpaudit run'" in err


def test_a_report_inside_the_store_is_refused_before_any_trial(tmp_path: Path) -> None:
    """``-o st/out --store st`` with an audit named ``out``: the store's directory of that audit
    would be the report's; refused up front (it used to be found after every trial)."""
    err = _refused(
        tmp_path,
        _audit_toml(name="out"),
        "is inside --store",
        extra=("--store", tmp_path / "st", "-o", tmp_path / "st" / "out"),
    )
    assert not (tmp_path / "st").exists() or not any((tmp_path / "st").iterdir()), err


@pytest.mark.parametrize(
    ("array", "needle"),
    [
        (np.ones((10, 10)), "has shape (10, 10); expected one number per row"),
        (np.arange(100).astype("datetime64[D]"), "holds datetime64[D] values, not numbers"),
        (np.array(["1.0"] * 100), "holds <U3 values, not numbers"),
    ],
    ids=["2-d", "datetime", "text"],
)
def test_score_arrays_that_are_not_one_column_of_numbers_are_refused(tmp_path, array, needle):
    """``dpaudit scores good.npy --nonmembers bad.npy``: a 2-d array used to be flattened and a
    datetime64 one read as numbers, both exiting 0; a column of shape (n, 1) is still one."""
    good, bad = tmp_path / "good.npy", tmp_path / "bad.npy"
    np.save(good, np.random.default_rng(0).normal(size=100))
    np.save(bad, array)
    code, _, err = _cli("scores", good, "--nonmembers", bad, "-o", tmp_path / "out")
    assert code == cli.EXIT_USER_ERROR and err.count("\n") == 1, err
    assert f"{bad}: the array {needle}" in err
    np.save(bad, np.random.default_rng(1).normal(size=(100, 1)))
    code, _, err = _cli("scores", good, "--nonmembers", bad, "-o", tmp_path / "out", "-q")
    assert code == cli.EXIT_OK, err


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="PyTorch installed")
def test_a_device_without_pytorch_is_one_line_before_any_progress(tmp_path: Path) -> None:
    code, _, err = _cli(
        "run", _spec(tmp_path, _audit_toml()), "-o", tmp_path / "o", "--device", "cuda"
    )
    assert code == cli.EXIT_USER_ERROR
    assert err.count("\n") == 1 and "needs PyTorch" in err, err


def test_a_spec_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_bytes(b"\xef\xbb\xbf" + _audit_toml(trials="300").encode())
    code, _, err = _cli("run", spec, "-o", tmp_path / "out", "-q")
    assert code == cli.EXIT_OK, err


def test_a_full_disk_is_one_plain_line_naming_the_report(tmp_path: Path, monkeypatch) -> None:
    """No ``[Errno 28]`` and no name of a temporary file: the report directory and the reason."""
    spec = _spec(tmp_path, _audit_toml(trials="300"))

    def full(self, data):
        raise OSError(28, "No space left on device", str(self))

    monkeypatch.setattr(Path, "write_bytes", full)
    code, _, err = _cli("run", spec, "-o", tmp_path / "out", "-q")
    assert code == cli.EXIT_USER_ERROR
    assert err == f"dpaudit: error: {tmp_path / 'out'}: no space left on device\n"
    assert not list(tmp_path.glob(".out*"))


def test_an_output_that_is_a_symbolic_link_loop_is_refused_in_words(tmp_path: Path) -> None:
    (tmp_path / "loop").symlink_to("loop")
    err = _refused(
        tmp_path,
        _audit_toml(),
        "a symbolic link that leads nowhere",
        extra=("-o", tmp_path / "loop"),
    )
    assert ".tmp" not in err and "Errno" not in err


def test_the_current_directory_is_named_in_words(tmp_path: Path, monkeypatch) -> None:
    """A report that cannot be created in the working directory: "in the current directory",
    not "in ."."""

    def refused(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(validation.tempfile, "mkdtemp", refused)
    code, _, err = _cli("scores", "s.csv", "-o", "out")
    assert code == cli.EXIT_USER_ERROR
    assert "cannot create a directory in the current directory (permission denied)" in err


@pytest.mark.parametrize(
    ("option", "value", "needle"),
    [("--seed", "-1", "--seed must be"), ("--n-jobs", "0", "--n-jobs must be a non-zero")],
)
def test_accountant_overrides_are_refused_before_the_first_audit(tmp_path, option, value, needle):
    """They were checked per audit, after its stage line: two lines for one input error."""
    spec = tmp_path / "acc.toml"
    spec.write_text(
        '[[accountant_audit]]\nname = "g"\nmechanism = { kind = "gaussian", sigma = 1.0 }\n'
        'accountants = ["dpaudit:pld"]\ntrials = 2000\n'
    )
    code, _, err = _cli("audit-accountant", spec, "-o", tmp_path / "out", option, value)
    assert code == cli.EXIT_USER_ERROR and err.count("\n") == 1 and needle in err, err


def test_a_selection_sample_of_one_trial_is_refused_with_the_spec(tmp_path: Path) -> None:
    """Refused when the spec is read, not after the audit's stage line (two lines)."""
    spec = _spec(tmp_path, _audit_toml() + "selection_trials = 1\n")
    code, _, err = _cli("run", spec, "-o", tmp_path / "out")
    assert code == cli.EXIT_USER_ERROR and err.count("\n") == 1, err
    assert "selection_trials must be an integer in [2, inf), got 1" in err
