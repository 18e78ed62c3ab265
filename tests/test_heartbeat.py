"""No long silence on stderr: the heartbeat lines of slow steps, the refusal of default
additions that dwarf a small audit, and progress while reports are drawn.

The heartbeat interval is shortened here (these tests carry the ``heartbeat`` marker that keeps
it, tests/conftest.py) so that the silences tested take a second, not minutes.
"""

from __future__ import annotations

import contextlib
import io
import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import dpaudit
from dpaudit import cli
from dpaudit._core import heartbeat
from dpaudit.audit import engine, limits
from dpaudit.mechanisms import Composed, Gaussian

pytestmark = pytest.mark.heartbeat

#: The heartbeat interval in these tests, and the longest quiet they accept: a loaded machine
#: may delay the heartbeat's thread, never by seconds.
BEAT, LONGEST_QUIET = 0.3, 2.0


class _Timed(io.StringIO):
    """stderr that keeps when each line arrived."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[tuple[float, str]] = []
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            for line in text.splitlines():
                if line.strip():
                    self.lines.append((time.monotonic(), line))
            return super().write(text)


def _cli(*args: object) -> tuple[int, _Timed, float, float]:
    """Run the command; return its exit code, its stderr, when it started and ended."""
    err = _Timed()
    started = time.monotonic()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = cli.main([str(a) for a in args])
    return code, err, started, time.monotonic()


def _longest_quiet(err: _Timed, started: float, ended: float) -> float:
    times = [started, *(t for t, _ in err.lines), ended]
    return max(b - a for a, b in zip(times, times[1:], strict=False))


@pytest.fixture
def quick_beats(monkeypatch):
    monkeypatch.setattr(heartbeat, "HEARTBEAT_SECONDS", BEAT)


def test_a_slow_step_is_told_while_it_lasts(quick_beats, capsys):
    """Inside :func:`~dpaudit._core.heartbeat.beating`, a step that writes nothing for longer
    than the interval gets a line naming it (a callable is read when the line is written)."""
    count = [0]
    with heartbeat.beating(), heartbeat.doing(lambda: f"counting ({count[0]} so far)"):
        count[0] = 7
        time.sleep(4 * BEAT)
    err = capsys.readouterr().err
    assert "dpaudit: still counting (7 so far) (" in err and "s so far)" in err
    with heartbeat.doing("nothing"):  # outside beating(): nothing is written
        time.sleep(2 * BEAT)
    assert capsys.readouterr().err == ""


def test_a_mechanism_whose_outputs_take_long_is_never_silent(quick_beats, tmp_path, monkeypatch):
    """A mechanism whose every output takes long (DP-SGD of 10^6 steps, say): the stage line,
    then nothing for as long as its first outputs took. Now each quiet stretch gets a line
    naming what is drawn."""
    (tmp_path / "slow.py").write_text(
        "import time\nimport numpy as np\n\n"
        "def release(dataset, rng):\n"
        "    time.sleep(0.4)\n"
        "    return float(np.sum(dataset)) + rng.normal()\n"
    )
    spec = tmp_path / "spec.toml"
    spec.write_text(
        '[[audit]]\nname = "slow"\ntrials = 2\nselection_trials = 2\n'
        'attack = { kind = "threshold" }\n'
        'mechanism = { kind = "blackbox", callable = "slow:release", dataset = [0.0], '
        "neighbour = [1.0] }\n"
    )
    code, err, started, ended = _cli("run", spec, "-o", tmp_path / "out")
    assert code == cli.EXIT_OK, err.getvalue()
    assert "still drawing two outputs of" in err.getvalue()
    assert _longest_quiet(err, started, ended) < LONGEST_QUIET, err.lines


@pytest.fixture
def timed_always(monkeypatch):
    """The engine times every mechanism (not only those its probe finds slow), so that the
    additions are measured whatever this machine's speed."""
    monkeypatch.setattr(engine, "PRE_CHECK_SECONDS", 1e-9)


def test_default_additions_that_dwarf_a_small_audit_are_refused_with_the_choice(
    timed_always, monkeypatch
):
    """400 trials asked for; the default selection sample (10,000) and the pilot (5,200) add
    15,200 per dataset. When those would take longer than the stated limit the audit is refused
    before the pilot, offering ``selection_trials``; given, it runs."""
    monkeypatch.setattr(limits, "LONGEST_EXTRA_SECONDS", 1e-3)
    monkeypatch.setattr(limits, "NOTICE_SECONDS", 1e-4)
    composed = Composed(Gaussian(10.0), 200)
    started = time.monotonic()
    with pytest.raises(ValueError) as info:
        dpaudit.audit_mechanism(composed, trials=400, seed=0)
    message = str(info.value)
    assert "400 trials per dataset were asked for" in message
    assert "the default selection sample (10,000) and the fit and pilot (5,200) add 15,200" in (
        message
    )
    assert "selection_trials = 400 adds 800" in message and "beyond the 0.001 s" in message
    assert time.monotonic() - started < 60  # before the 15,600 trials, not after
    result = dpaudit.audit_mechanism(composed, trials=400, seed=0, selection_trials=400)
    assert result.selection_trials == 400
    # From 10,000 trials on, the defaults add at most twice the trials asked for: no refusal.
    dpaudit.audit_mechanism(Gaussian(1.0), trials=10_000, seed=0)


def test_default_additions_below_the_limit_are_said_with_the_choice(
    timed_always, monkeypatch, capsys
):
    monkeypatch.setattr(limits, "NOTICE_SECONDS", 1e-6)
    dpaudit.audit_mechanism(Composed(Gaussian(10.0), 50), trials=400, seed=0, progress=True)
    err = capsys.readouterr().err
    assert "400 trials per dataset were asked for; the default selection sample (10,000)" in err
    assert "give selection_trials to choose: selection_trials = 400 adds 800" in err


def _results(tmp_path: Path, audits: int) -> Path:
    """A results.json of ``audits`` small audits, written without drawing their figures."""
    from dpaudit.reports.records import build_record, results_document

    records = [
        build_record(dpaudit.audit_mechanism(Gaussian(1.0), trials=300, seed=i), name=f"a{i}")
        for i in range(audits)
    ]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results_document(records), allow_nan=False))
    return path


def test_drawing_a_report_says_so_and_what_it_draws(quick_beats, tmp_path, monkeypatch):
    """Drawing the figures of many audits took minutes without a line; now the report's
    drawing is announced, and a quiet stretch names the audit whose figures are drawn."""
    from dpaudit.reports import writer

    results = _results(tmp_path, 2)
    drawn = writer.audit_figures

    def slowly(record, keys):
        time.sleep(3 * BEAT)
        return drawn(record, keys)

    monkeypatch.setattr(writer, "audit_figures", slowly)
    code, err, started, ended = _cli("report", results, "-o", tmp_path / "again")
    assert code == cli.EXIT_OK
    text = err.getvalue()
    assert f"dpaudit: writing the report of 2 audits to {tmp_path / 'again'}" in text
    assert "still drawing the report's figures: audit 2 of 2" in text
    assert _longest_quiet(err, started, ended) < LONGEST_QUIET, err.lines


def test_the_scores_command_is_never_silent(quick_beats, tmp_path, monkeypatch):
    """``dpaudit scores`` read, audited and drew for seconds without a line below 10^5 scores."""
    from dpaudit.audit import scores

    audited = scores.audit_scores

    def slowly(*args, **kwargs):
        time.sleep(4 * BEAT)
        return audited(*args, **kwargs)

    monkeypatch.setattr(scores, "audit_scores", slowly)
    rng = np.random.default_rng(0)
    table = tmp_path / "s.csv"
    table.write_text("score,member\n" + "".join(f"{rng.normal()},{i % 2}\n" for i in range(200)))
    code, err, started, ended = _cli("scores", table, "-o", tmp_path / "out")
    assert code == cli.EXIT_OK
    assert "dpaudit: still auditing 200 scores" in err.getvalue()
    assert _longest_quiet(err, started, ended) < LONGEST_QUIET, err.lines


def test_quiet_means_no_heartbeat(quick_beats, tmp_path, monkeypatch):
    from dpaudit.audit import scores

    audited = scores.audit_scores
    monkeypatch.setattr(
        scores, "audit_scores", lambda *a, **k: (time.sleep(3 * BEAT), audited(*a, **k))[1]
    )
    table = tmp_path / "s.csv"
    table.write_text("score,member\n" + "".join(f"{i},{i % 2}\n" for i in range(40)))
    code, err, _, _ = _cli("scores", table, "-o", tmp_path / "out", "-q")
    assert code == cli.EXIT_OK and err.getvalue() == ""


def test_a_long_numerical_call_lets_the_heartbeat_through(quick_beats):
    """scipy's betaincinv holds the interpreter for its whole call, so the Clopper-Pearson bounds
    of a scores file of 2 * 10^6 rows kept every heartbeat out for 17 s. They are computed in
    blocks now (the same values), and the heartbeat gets through between blocks."""
    from dpaudit.audit.confidence import clopper_pearson_lower

    counts = np.arange(3_000_000) % 1000
    err = _Timed()
    with contextlib.redirect_stderr(err):
        started = time.monotonic()
        with heartbeat.beating(), heartbeat.doing("bounding"):
            bounds = clopper_pearson_lower(counts, 1000, 0.05)
        ended = time.monotonic()
    assert _longest_quiet(err, started, ended) < LONGEST_QUIET, err.lines
    from scipy import special

    from dpaudit.audit.confidence import BLOCK

    head = counts[: 3 * BLOCK]
    alone = special.betaincinv(np.where(head <= 0, 1.0, head), 1000 - head + 1.0, 0.05)
    assert np.array_equal(bounds[: 3 * BLOCK], np.where(head <= 0, 0.0, alone))
