"""The ``dpaudit`` command: run, report, suite, list, bounds; exit codes and atomic output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dpaudit import reports, specs
from dpaudit.accountants import installed
from dpaudit.cli import EXIT_OK, EXIT_USER_ERROR, EXIT_VIOLATION, main
from dpaudit.reports.text import format_probability
from tests.reference import rows

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
OVERCLAIMED = EXAMPLES / "laplace-overclaimed.toml"


@pytest.fixture
def no_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    """Leave the figures out of reports (they are tested in tests/reports/): faster runs."""
    monkeypatch.setattr(reports.writer, "audit_figures", lambda record, keys=(): {})


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


def test_list(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "list")
    assert code == EXIT_OK
    for kind in [*specs.MECHANISM_KINDS, *specs.ATTACK_KINDS, *specs.CLAIM_KINDS]:
        assert f"  {kind} " in out
    for method in ("exact", "pld", "rdp", "gdp_clt"):
        assert f"  {method} " in out
    accountant = out[out.index("keys of an [[accountant_audit]] table:") :]
    for key in specs.ACCOUNTANT_AUDIT_KEYS:
        assert f"  {key} " in accountant


def test_bounds_gaussian_against_reference(capsys: pytest.CaptureFixture[str]) -> None:
    eps_ref = {r["query"]: r["value"] for r in rows(item="1", setting="sigma=1.0", quantity="eps")}
    delta_ref = {
        r["query"]: r["value"] for r in rows(item="1", setting="sigma=1.0", quantity="delta")
    }
    code, out, _ = run_cli(
        capsys,
        *("bounds", "gaussian", "--param", "sigma=1", "--delta", "1e-5", "--eps", "1"),
        *("--format", "json"),
    )
    assert code == EXIT_OK
    document = json.loads(out)
    assert document["mechanism"].startswith("Gaussian(sigma=1.0")
    first = document["rows"][0]
    assert first["eps at delta=1e-05"] == pytest.approx(eps_ref[1e-5], rel=1e-6)
    assert first["delta at eps=1"] == pytest.approx(delta_ref[1.0], rel=1e-6)

    code, out, _ = run_cli(capsys, "bounds", "gaussian", "--param", "sigma=1")
    assert code == EXIT_OK
    assert f"{eps_ref[1e-5]:.4g}" in out  # default deltas include 1e-5
    assert "eps at delta=1e-05" in out and "delta at eps=0.5" in out


def test_bounds_nested_mechanism(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(
        capsys,
        *("bounds", "poisson_subsampled", "--param", 'base={kind="gaussian", sigma=1}'),
        *("--param", "rate=0.1", "--format", "csv"),
    )
    assert code == EXIT_OK, err
    assert out.splitlines()[0].startswith("method,kind,eps at delta=1e-05")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("bounds", "gaussion", "--param", "sigma=1"), "gaussion"),
        (("bounds", "gaussian", "--param", "sigma"), "key=value"),
        (("bounds", "gaussian", "--param", "sigma=-1"), "sigma must be in (0, inf)"),
        (("bounds", "gaussian", "--param", "sigma=1", "--delta", "2"), "delta"),
        (("bounds", "gaussian", "--param", "sigma=1", "--param", "kind=laplace"), "kind"),
        (("run",), "required"),
        ((), "required"),
        (("frobnicate",), "frobnicate"),
        (("run", "x.toml", "-o", "out", "--trials", "many"), "--trials"),
        (("report", "nowhere/results.json", "-o", "out"), "not found"),
        (("suite", "--trials", "0"), "trials"),
    ],
)
def test_user_errors_exit_1_with_one_line(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], needle: str
) -> None:
    code, out, err = run_cli(capsys, *args)
    assert code == EXIT_USER_ERROR
    assert err.count("\n") == 1 and err.startswith("dpaudit: error: ")
    assert needle in err
    assert "Traceback" not in err


def test_overclaimed_spec_exits_3_and_names_the_witness(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir = tmp_path / "laplace"
    code, out, _ = run_cli(capsys, "run", OVERCLAIMED, "-o", out_dir)
    assert code == EXIT_VIOLATION
    document = json.loads((out_dir / "results.json").read_text())
    (audit,) = document["audits"]
    assert audit["name"] == "laplace-overclaimed"
    assert audit["verdict"] == "violated"
    witness = audit["witness"]
    alpha, beta = witness["alpha_upper"], witness["beta_upper"]
    if witness["order"] == "d_prime_d":
        alpha, beta = beta, alpha
    # Laplace with scale 0.5 is exactly (2, 0)-DP (eps0 = 1/b). The witness's upper confidence
    # bounds beat the claimed (1, 0)-DP curve max(0, 1 - e alpha, (1 - alpha) / e); they lie above
    # the true curve with probability >= 95% (at this fixed seed they do).
    e = 2.718281828459045
    assert beta < max(0.0, 1 - e * alpha, (1 - alpha) / e)
    assert beta >= max(0.0, 1 - e**2 * alpha, (1 - alpha) / e**2)
    assert audit["trials"] == 100_000 and audit["seed"] == 1
    assert set(audit["epsilon_lower_bounds"]) == {"0.0", "1e-05"}
    page = (out_dir / "index.html").read_text()
    assert "Violated: the claim (1, 0)-DP is refuted" in page
    alpha_text, beta_text = (format_probability(x, rounding="up") for x in (alpha, beta))
    assert alpha_text in page and beta_text in page
    assert "Violated" in out and "index.html" in out


def test_no_fail_on_violation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_figures: None
) -> None:
    code, _, _ = run_cli(
        capsys, "run", OVERCLAIMED, "-o", tmp_path / "r", "--no-fail-on-violation", "--quiet"
    )
    assert code == EXIT_OK
    assert json.loads((tmp_path / "r" / "results.json").read_text())["audits"][0]["verdict"] == (
        "violated"
    )


def test_correct_claims_exit_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_figures: None
) -> None:
    # Both claims in gaussian.toml are true; each audit refutes a true claim with probability at
    # most 1 - confidence (5% and 1%), and the fixed seeds make the outcome reproducible.
    code, out, _ = run_cli(capsys, "run", EXAMPLES / "gaussian.toml", "-o", tmp_path / "g")
    assert code == EXIT_OK
    document = json.loads((tmp_path / "g" / "results.json").read_text())
    assert [a["verdict"] for a in document["audits"]] == ["consistent", "consistent"]
    assert out.count("Consistent") == 2


def test_overrides_reach_the_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_figures: None
) -> None:
    code, _, err = run_cli(
        capsys,
        *("run", OVERCLAIMED, "-o", tmp_path / "r", "--trials", "3000", "--seed", "7"),
        *("--n-jobs", "2", "--quiet"),
    )
    assert code == EXIT_VIOLATION  # 3000 trials still refute a claim that is off by eps = 1
    assert err == ""
    (audit,) = json.loads((tmp_path / "r" / "results.json").read_text())["audits"]
    assert (audit["trials"], audit["seed"]) == (3000, 7)
    assert (audit["spec"]["trials"], audit["spec"]["seed"], audit["spec"]["n_jobs"]) == (3000, 7, 2)


def test_a_blackbox_audit_states_its_calls_before_it_runs_and_records_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_figures: None
) -> None:
    spec = tmp_path / "box.toml"
    spec.write_text(
        '[[audit]]\nname = "box"\ntrials = 300\n'
        'mechanism = { kind = "blackbox", callable = "tests.mechanisms.test_blackbox:noisy_sum", '
        "dataset = [0.0], neighbour = [1.0] }\n"
        'claim = { kind = "pure_dp", eps = 1.0 }\n'
    )
    code, _, err = run_cli(capsys, "run", spec, "-o", tmp_path / "out")
    assert code == EXIT_OK
    first = err.splitlines()[0]
    assert first == (
        "dpaudit: [1/1] box: 300 trials per dataset; at most 1,802 calls into "
        "tests.mechanisms.test_blackbox:noisy_sum (one per output)"
    )
    (audit,) = json.loads((tmp_path / "out" / "results.json").read_text())["audits"]
    assert audit["selection_trials"] == 300
    assert audit["random"]["outputs_drawn"] == 1_802


MALFORMED = {
    "bad-toml": ("[[audit]\nname = 'x'\n", "invalid TOML"),
    "unknown-mechanism": (
        '[[audit]]\nname = "x"\nmechanism = { kind = "gausian", sigma = 1 }\ntrials = 10\n',
        "unknown kind 'gausian'",
    ),
    "negative-sigma": (
        '[[audit]]\nname = "x"\nmechanism = { kind = "gaussian", sigma = -1 }\ntrials = 10\n',
        "sigma must be in (0, inf), got -1.0",
    ),
    "zero-trials": (
        '[[audit]]\nname = "x"\nmechanism = { kind = "gaussian", sigma = 1 }\ntrials = 0\n',
        "trials must be an integer in [1, inf), got 0",
    ),
    "second-audit-bad": (
        '[[audit]]\nname = "x"\nmechanism = { kind = "gaussian", sigma = 1 }\ntrials = 10\n'
        '[[audit]]\nname = "y"\nmechanism = { kind = "laplace", scale = "big" }\ntrials = 10\n',
        "audit 2 (y): mechanism.scale: expected a number",
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_specs_exit_1_and_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    text, needle = MALFORMED[case]
    spec = tmp_path / f"{case}.toml"
    spec.write_text(text)
    out_dir = tmp_path / "out"
    code, _, err = run_cli(capsys, "run", spec, "-o", out_dir)
    assert code == EXIT_USER_ERROR
    assert err.count("\n") == 1
    assert str(spec) in err and needle in err
    assert not out_dir.exists()
    assert leftovers(tmp_path) == []


def test_foreign_output_directory_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir = tmp_path / "home"
    out_dir.mkdir()
    (out_dir / "thesis.tex").write_text("precious")
    code, _, err = run_cli(capsys, "run", OVERCLAIMED, "-o", out_dir)
    assert code == EXIT_USER_ERROR and "not a dpaudit report" in err
    assert [p.name for p in out_dir.iterdir()] == ["thesis.tex"]


def test_report_reproduces_the_same_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_figures: None
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    run_cli(capsys, "run", OVERCLAIMED, "-o", first, "--trials", "20000", "--quiet")
    code, out, _ = run_cli(capsys, "report", first / "results.json", "-o", second)
    assert code == EXIT_OK and "index.html" in out
    for name in ("results.json", "index.html", "README.md"):
        assert (first / name).read_text() == (second / name).read_text(), name
    # A report directory is accepted in place of its results.json, and may be redrawn in place.
    assert run_cli(capsys, "report", first, "-o", first)[0] == EXIT_OK
    assert (first / "index.html").read_text() == (second / "index.html").read_text()


def test_suite_spec_is_printable(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "suite", "--print-spec")
    assert code == EXIT_OK
    assert [a.name for a in specs.loads(out)] == [a.name for a in specs.suite()]


def test_suite_small(tmp_path: Path, capsys: pytest.CaptureFixture[str], no_figures: None) -> None:
    out_dir = tmp_path / "suite"
    code, _, _ = run_cli(
        capsys, "suite", "-o", out_dir, "--trials", "4000", "--quiet", "--fail-on-violation"
    )
    document = json.loads((out_dir / "results.json").read_text())
    verdicts = {a["name"]: a["verdict"] for a in document["audits"]}
    assert set(verdicts) == {a.name for a in specs.suite()}
    assert verdicts["laplace-overclaimed"] == "violated"
    # Every audit met its expectation, so --fail-on-violation still exits 0.
    assert code == EXIT_OK, verdicts
    page = (out_dir / "index.html").read_text()
    for name in verdicts:
        assert f'href="#audit-{name}"' in page


def test_suite_writes_reports_by_default_and_again_over_its_own_report(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    no_figures: None,
) -> None:
    """The README's main job, ``dpaudit suite -o reports/``, works in a fresh directory and when
    run a second time into its own report; without -o it writes to ``reports/`` too."""
    monkeypatch.chdir(tmp_path)
    for args in (("-o", "reports/"), ()):
        code, out, err = run_cli(capsys, "suite", *args, "--trials", "2000")
        assert code == EXIT_OK, err
        assert "report: reports/index.html" in out
        assert (tmp_path / "reports" / "index.html").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reports"]
    # A directory with files of its own is still refused, and left as it was.
    (tmp_path / "reports" / "notes.txt").write_text("mine")
    code, _, err = run_cli(capsys, "suite", "--trials", "2000")
    assert code == EXIT_USER_ERROR and "not a dpaudit report" in err
    assert (tmp_path / "reports" / "notes.txt").read_text() == "mine"


@pytest.mark.slow
def test_suite_with_default_trials(tmp_path: Path) -> None:
    # The reference battery as shipped; each consistent audit refutes its (true) claim with
    # probability at most 1 - confidence = 5%, and the fixed seeds make the outcome reproducible.
    out_dir = tmp_path / "suite"
    done = subprocess.run(
        [sys.executable, "-m", "dpaudit.cli", "suite", "-o", str(out_dir), "--fail-on-violation"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == EXIT_OK, done.stderr
    document = json.loads((out_dir / "results.json").read_text())
    for audit in document["audits"]:
        assert audit["verdict"] == audit["expect"], audit["name"]


def test_command_line_process(tmp_path: Path) -> None:
    """As a process: a one-line error on stderr, no traceback, exit code 1, nothing written."""
    bad = tmp_path / "bad.toml"
    bad.write_text('[[audit]]\nname = "x"\nmechanism = { kind = "gaussian", sigma = -1 }\n')
    done = subprocess.run(
        [sys.executable, "-m", "dpaudit.cli", "run", str(bad), "-o", str(tmp_path / "o")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == EXIT_USER_ERROR
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stdout == ""
    assert [p.name for p in tmp_path.iterdir()] == ["bad.toml"]


# --- one exit-code rule: 3 when a claim is refuted that was not declared an expected refutation --


def test_suite_exits_3_on_a_refutation_it_does_not_expect(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    no_figures: None,
) -> None:
    (overclaimed,) = specs.load(OVERCLAIMED)  # no `expect`: the claim is meant to hold
    monkeypatch.setattr(specs, "suite", lambda: [overclaimed])
    args = ("suite", "-o", tmp_path / "s", "--trials", "20000")
    code, out, _ = run_cli(capsys, *args)
    assert code == EXIT_VIOLATION
    assert "REFUTED: laplace-overclaimed: (1, 0)-DP" in out and "as expected" not in out
    code, out, _ = run_cli(capsys, *args, "--no-fail-on-violation")
    assert code == EXIT_OK and "REFUTED: laplace-overclaimed" in out


def test_suite_exits_0_on_the_refutation_it_declares(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    no_figures: None,
) -> None:
    declared = [a for a in specs.suite() if a.expect == "violated"]
    assert [a.name for a in declared] == ["laplace-overclaimed"]
    monkeypatch.setattr(specs, "suite", lambda: declared)
    code, out, _ = run_cli(capsys, "suite", "-o", tmp_path / "s", "--trials", "20000")
    assert code == EXIT_OK
    assert "REFUTED" not in out and out.splitlines()[-1] == "all verdicts as expected"


def test_audit_accountant_exits_3_on_a_refuted_accountant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from dpaudit.audit import accountant
    from dpaudit.reports import accountants

    def run_accountant_spec(spec: object, *, progress: object) -> dict:
        claims = {"a:pld": {"status": "consistent"}, "b:rdp": {"status": "violated"}}
        summary = {"b:rdp": "VIOLATED at eps = 1"}
        return {"name": spec.name, "claims": claims, "summary": summary}  # type: ignore[attr-defined]

    monkeypatch.setattr(accountant, "run_accountant_spec", run_accountant_spec)
    monkeypatch.setattr(accountants, "write_accountant_report", lambda records, path: path)
    args = ("audit-accountant", EXAMPLES / "accountant-rr-composed.toml", "-o", tmp_path / "a")
    code, out, _ = run_cli(capsys, *args)
    assert code == EXIT_VIOLATION
    assert "rr-composed: b:rdp: VIOLATED at eps = 1" in out and "REFUTED: rr-composed: b:rdp" in out
    assert "a:pld" not in out.split("REFUTED")[-1]
    code, _, _ = run_cli(capsys, *args, "--no-fail-on-violation")
    assert code == EXIT_OK


_RR_ACCOUNTANTS = """\
[[accountant_audit]]
name = "rr"
mechanism = { kind = "composed", base = { kind = "randomized_response", eps = 1.0 }, times = 100 }
accountants = ["dpaudit:pld", "dp_accounting:pld"]
epsilons = [10.0]
trials = 2_000
[accountant_audit.expect."dp_accounting:pld"]
verdict = "violated"
reason = "a  known fault."
"""


@pytest.mark.skipif(not installed("dp_accounting:pld"), reason="dp_accounting is not installed")
@pytest.mark.parametrize("also_expected", [False, True])
def test_audit_accountant_follows_the_verdicts_its_spec_expects(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    also_expected: bool,
) -> None:
    """dp_accounting's PLD accountant is refuted on composed randomized response; a spec that
    expects it, with a reason, exits 0 and prints the reason beside the verdict. Expecting the
    refutation of an accountant that holds (dpaudit:pld) is a verdict not as expected: exit 3."""
    from dpaudit.reports import accountants

    monkeypatch.setattr(accountants, "plot_accountant_audit", _no_plot)
    spec = tmp_path / "rr.toml"
    text = _RR_ACCOUNTANTS
    if also_expected:
        text += '[accountant_audit.expect."dpaudit:pld"]\nverdict = "violated"\nreason = "none"\n'
    spec.write_text(text)
    code, out, _ = run_cli(capsys, "audit-accountant", spec, "-o", tmp_path / "out")
    lines = out.splitlines()
    assert "rr: dp_accounting:pld: VIOLATED at eps = 10: " in out
    assert lines[1].endswith(". As expected: a known fault.")
    assert "REFUTED: rr: dp_accounting:pld" not in out
    record = json.loads((tmp_path / "out" / "results.json").read_text())["accountant_audits"][0]
    expected = {"verdict": "violated", "reason": "a known fault."}
    assert record["expect"]["dp_accounting:pld"] == expected
    assert "| expected |" in (tmp_path / "out" / "README.md").read_text()
    if also_expected:
        assert code == EXIT_VIOLATION
        assert lines[0].endswith(". Not as expected: the spec expects violated: none")
        assert lines[-1] == "NOT REFUTED: rr: dpaudit:pld (its refutation was expected)"
    else:
        assert code == EXIT_OK and lines[-1] == "all verdicts as expected"


def _no_plot(record: object, ax: object = None, **kwargs: object) -> object:
    from matplotlib.figure import Figure

    return Figure().add_subplot()


# --- output directories: checked before any trial, one line naming the option ---------------------


def _no_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every command's first piece of work fail the test."""
    from dpaudit import libraries, scores_command
    from dpaudit.audit import accountant

    def work(*args: object, **kwargs: object) -> None:
        raise AssertionError("work started before the output was checked")

    monkeypatch.setattr(specs.AuditSpec, "run", work)
    monkeypatch.setattr(accountant, "run_accountant_spec", work)
    monkeypatch.setattr(scores_command, "load_table", work)
    monkeypatch.setattr(reports, "load_results", work)
    monkeypatch.setattr(libraries, "plan_battery", work)


COMMANDS = {
    "run": ("run", str(OVERCLAIMED)),
    "suite": ("suite",),
    "scores": ("scores", str(EXAMPLES / "gaussian.toml")),
    "audit-accountant": ("audit-accountant", str(EXAMPLES / "accountant-rr-composed.toml")),
    "report": ("report", "results.json"),
    "library": ("library", "diffprivlib"),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("where", ["proc", "under-a-file", "foreign-directory"])
def test_unwritable_output_is_refused_before_any_work(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    where: str,
) -> None:
    if where == "proc" and not Path("/proc/self").is_dir():
        pytest.skip("no /proc here")
    _no_work(monkeypatch)
    monkeypatch.chdir(tmp_path)
    Path("spec.toml").write_text("mine")
    output = {"proc": "/proc/x", "under-a-file": "spec.toml/sub", "foreign-directory": "."}[where]
    code, out, err = run_cli(capsys, *COMMANDS[command], "-o", output)
    assert code == EXIT_USER_ERROR and out == ""
    assert err.count("\n") == 1 and err.startswith(f"dpaudit: error: -o {output}: "), err
    assert ".tmp" not in err and "probe" not in err
    assert [p.name for p in tmp_path.iterdir()] == ["spec.toml"]


@pytest.mark.parametrize("command", ["run", "suite"])
@pytest.mark.parametrize("store", ["r", "r/store"])
def test_store_inside_the_output_is_refused_before_any_work(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    store: str,
) -> None:
    _no_work(monkeypatch)
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(capsys, *COMMANDS[command], "-o", "r", "--store", store)
    assert code == EXIT_USER_ERROR
    assert err.count("\n") == 1 and f"--store {store} is inside -o r" in err
    assert list(tmp_path.iterdir()) == []


# --- help and options shared by the commands ----------------------------------------------------


@pytest.mark.parametrize(
    "command", ["run", "suite", "report", "audit-accountant", "scores", "library"]
)
def test_help_says_what_o_receives_and_every_writing_command_takes_q(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "-o DIR, --output DIR report directory" in text
    assert "-q, --quiet" in text


def test_library_n_jobs_is_checked_first_and_named_as_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_work(monkeypatch)
    code, _, err = run_cli(
        capsys, "library", "diffprivlib", "-o", str(tmp_path / "r"), "--n-jobs", "0"
    )
    assert code == EXIT_USER_ERROR and err.count("\n") == 1
    assert err.startswith("dpaudit: error: --n-jobs must be a non-zero integer"), err


def test_bounds_format_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["bounds", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--format {text,csv,json} table on stdout" in text


def test_bench_flawed_exits_3_only_when_a_correct_mechanism_is_flagged(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import pandas as pd

    from dpaudit.audit import benchmark
    from dpaudit.reports import tables

    rows = {
        "name": ["broken-caught", "broken-missed", "correct"],
        "correct": [False, False, True],
        "flagged": [True, False, False],
        "claimed_epsilon": [1.0, 1.0, 1.0],
    }
    frame = pd.DataFrame(rows)
    monkeypatch.setattr(benchmark, "run_benchmark", lambda *a, **k: frame)
    monkeypatch.setattr(tables, "format_benchmark", lambda f: "table")
    code, out, _ = run_cli(capsys, "bench-flawed")
    assert code == EXIT_OK and out.splitlines()[-1] == "all verdicts as expected"
    frame.loc[2, "flagged"] = True
    code, out, _ = run_cli(capsys, "bench-flawed")
    assert code == EXIT_VIOLATION and "REFUTED: correct: eps = 1" in out
    assert run_cli(capsys, "bench-flawed", "--no-fail-on-violation")[0] == EXIT_OK


def test_bench_flawed_quiet_prints_no_table_and_o_writes_the_csv(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import pandas as pd

    from dpaudit.audit import benchmark
    from dpaudit.reports import tables

    frame = pd.DataFrame(
        {"name": ["correct"], "correct": [True], "flagged": [False], "claimed_epsilon": [1.0]}
    )
    heard = {}

    def run_benchmark(*args: object, **kwargs: object) -> pd.DataFrame:
        heard.update(kwargs)
        return frame

    monkeypatch.setattr(benchmark, "run_benchmark", run_benchmark)
    monkeypatch.setattr(tables, "format_benchmark", lambda f: "the table")
    code, out, _ = run_cli(capsys, "bench-flawed", "-q", "-o", str(tmp_path / "t.csv"))
    assert code == EXIT_OK and out == "" and heard["progress"] is False
    assert pd.read_csv(tmp_path / "t.csv")["name"].tolist() == ["correct"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv"]
    code, out, _ = run_cli(capsys, "bench-flawed")
    assert heard["progress"] is True and "the table" in out


@pytest.mark.parametrize("csv", ["spec.toml/table.csv", "missing/table.csv", "."])
def test_bench_flawed_csv_is_checked_before_the_benchmark_runs(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    csv: str,
) -> None:
    from dpaudit.audit import benchmark

    def run_benchmark(*args: object, **kwargs: object) -> None:
        raise AssertionError("the benchmark ran before --csv was checked")

    monkeypatch.setattr(benchmark, "run_benchmark", run_benchmark)
    monkeypatch.chdir(tmp_path)
    Path("spec.toml").write_text("mine")
    code, _, err = run_cli(capsys, "bench-flawed", "--csv", csv)
    assert code == EXIT_USER_ERROR
    assert err.count("\n") == 1 and err.startswith(f"dpaudit: error: -o/--csv {csv}: "), err


def test_sigterm_stops_like_an_interrupt_and_leaves_nothing_half_written(tmp_path):
    """kill (SIGTERM) during the main job: exit 130 with one line, no report, no temporary file
    beside it, and the finished batches kept in the store."""
    import signal
    import subprocess
    import sys

    command = [sys.executable, "-m", "dpaudit.cli", "suite", "-o", str(tmp_path / "out")]
    command += ["--store", str(tmp_path / "store"), "--trials", "4000000"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    assert process.stderr is not None
    first = process.stderr.readline()  # the first progress line: the audits have started
    assert first.startswith("dpaudit:"), first
    process.send_signal(signal.SIGTERM)
    _, rest = process.communicate(timeout=120)
    assert process.returncode == 130, rest
    assert "interrupted; no report written" in rest
    assert not (tmp_path / "out").exists()
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert not list((tmp_path / "store").rglob(".*.tmp"))


def test_a_command_first_removes_what_a_killed_report_writer_left(tmp_path, capsys):
    """A report writer killed with ``kill -9`` leaves its hidden temporary directory; the next
    command with ``-o`` beside it removes it before its own work, even one that then fails."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    debris = tmp_path / f".old-report.{'d' * 12}.{reports.writer._host()}-{gone.pid}.tmp"
    (debris / "figures").mkdir(parents=True)
    code, _, err = run_cli(capsys, "report", tmp_path / "missing.json", "-o", tmp_path / "out")
    assert code == EXIT_USER_ERROR and "not found" in err
    assert leftovers(tmp_path) == []


def test_until_decided_stops_a_refuted_claim_early_and_says_when_and_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_figures: None
) -> None:
    out_dir = tmp_path / "seq"
    code, out, err = run_cli(capsys, "run", OVERCLAIMED, "-o", out_dir, "--until-decided")
    assert code == EXIT_VIOLATION
    (audit,) = json.loads((out_dir / "results.json").read_text())["audits"]
    sequential = audit["sequential"]
    assert audit["verdict"] == "violated" and sequential["refuted"]
    assert sequential["stopped"] == "refuted" and sequential["reason"]
    # the spec's 100,000 trials are the cap; a clear violation stops in the first phase
    assert sequential["schedule"]["max_trials"] == 100_000
    assert sequential["phases"] == 1 and max(sequential["outputs_per_dataset"]) < 10_000
    # the bounds shown are read at the per-look level, which the record states
    assert audit["gamma_share"] * (1 - audit["confidence"]) == pytest.approx(
        sequential["family_gamma"], rel=1e-12
    )
    page = (out_dir / "index.html").read_text()
    assert "Sequential audit: stopped after" in page and "because" in page
    assert "until decided, at most 100,000 trials per dataset" in err
    assert "Sequential audit" in out


def test_until_decided_refuses_what_a_sequential_audit_cannot_honour(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "fixed.toml"
    spec.write_text(
        OVERCLAIMED.read_text(encoding="utf-8") + 'strategy = "bonferroni"\n', encoding="utf-8"
    )
    code, _, err = run_cli(capsys, "run", spec, "-o", tmp_path / "o", "--until-decided")
    assert code == EXIT_USER_ERROR
    assert "--until-decided" in err and "strategy = 'bonferroni'" in err
    assert not (tmp_path / "o").exists()
    code, _, err = run_cli(
        capsys,
        "run",
        OVERCLAIMED,
        "-o",
        tmp_path / "o",
        "--until-decided",
        "--store",
        tmp_path / "s",
    )
    assert code == EXIT_USER_ERROR and "--store" in err
