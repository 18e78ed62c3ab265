"""dpaudit scores: files in, report out, one-line errors, exit codes."""

import dataclasses
import json
import os

import numpy as np
import pandas as pd
import pytest

from dpaudit.audit.one_run import simulate_one_run
from dpaudit.cli import main


@pytest.fixture
def table(tmp_path):
    rng = np.random.default_rng(0)
    member = np.r_[np.zeros(1000), np.ones(1000)].astype(int)
    frame = pd.DataFrame({"score": rng.standard_normal(2000) + member, "member": member})
    frame.to_csv(tmp_path / "s.csv", index=False)
    return tmp_path, frame


def test_report_and_claim(table):
    path, _ = table
    assert main(["scores", str(path / "s.csv"), "-o", str(path / "r"), "-q"]) == 0
    assert (path / "r" / "results.json").is_file()
    assert main(["scores", str(path / "s.csv"), "-o", str(path / "r2"), "--claim-mu", "0.3"]) == 3


def test_two_files_and_one_run(tmp_path):
    rng = np.random.default_rng(1)
    np.save(tmp_path / "out.npy", rng.standard_normal(500))
    np.save(tmp_path / "in.npy", rng.standard_normal(500) + 1.0)
    argv = ["scores", str(tmp_path / "in.npy"), "--out", str(tmp_path / "out.npy")]
    assert main([*argv, "-o", str(tmp_path / "r"), "-q"]) == 0
    s, z = simulate_one_run(2000, 2.0, seed=0)
    np.savez(tmp_path / "c.npz", score=s, member=z)
    assert main(["scores", str(tmp_path / "c.npz"), "--one-run", "-o", str(tmp_path / "o")]) == 0
    assert "one_run" in (tmp_path / "o" / "results.json").read_text()
    assert main(["scores", str(tmp_path / "c.npz"), "--one-run", "-o", str(tmp_path / "o")]) == 0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda f: f.assign(member=f.member.astype(float).where(f.index != 3)), "missing"),
        (lambda f: f.assign(member=f.member * 2), "only 0 and 1"),
        (lambda f: f.assign(member="yes"), "only 0 and 1"),
        (lambda f: f.drop(columns="member"), "no column 'member'"),
        (lambda f: f.assign(member=f"1{'0' * 400}"), "beyond the float range"),
    ],
)
def test_bad_membership_one_line_nothing_written(table, capsys, change, message):
    path, frame = table
    change(frame).to_csv(path / "bad.csv", index=False)
    assert main(["scores", str(path / "bad.csv"), "-o", str(path / "x")]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and message in err and "member" in err
    assert err.startswith(f"dpaudit: error: {path / 'bad.csv'}: ")
    assert not (path / "x").exists()


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        (["--confidence", "2"], "--confidence must be in (0, 1)"),
        (["--delta", "1"], "--delta must be in [0, 1)"),
        (["--one-run", "--steps", "3"], "--sample-rate and --steps go together"),
        (["--one-run", "--family", "dpsgd", "--sample-rate", "2", "--steps", "3"], "--sample-rate"),
        (["--one-run", "--family", "dpsgd", "--sample-rate", "0.1", "--steps", "0"], "--steps"),
        (["--one-run", "--method", "steinke", "--claim-mu", "1"], "--claim-mu needs --method fdp"),
        (["--one-run", "--inclusion", "1"], "--inclusion must be in (0, 1)"),
        (["--inclusion", "0.3"], "--inclusion applies to --one-run"),
    ],
)
def test_every_option_is_checked_before_the_scores_are_read(
    tmp_path, capsys, monkeypatch, options, needle
):
    from dpaudit import scores_command

    read = []
    monkeypatch.setattr(scores_command, "_read", lambda path: read.append(path))
    code = main(["scores", str(tmp_path / "s.csv"), "-o", str(tmp_path / "r"), *options])
    assert code == 1 and read == []
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err, err


def test_one_run_inclusion_reaches_the_audit(tmp_path):
    """``--inclusion 0.3``: canaries included with probability 0.3 are audited as designed (the
    record says so), and the same file audited as fair coins is refused in one line."""
    s, z = simulate_one_run(3000, 2.0, seed=0, p=0.3)
    np.savez(tmp_path / "c.npz", score=s, member=z)
    argv = ["scores", str(tmp_path / "c.npz"), "--one-run", "-q"]
    assert main([*argv, "--inclusion", "0.3", "-o", str(tmp_path / "o")]) == 0
    record = json.loads((tmp_path / "o" / "results.json").read_text())
    assert next(iter(record["one_run"].values()))["inclusion"] == 0.3
    assert main([*argv, "-o", str(tmp_path / "fair")]) == 1
    assert not (tmp_path / "fair").exists()


def test_one_run_dpsgd_family_and_flag_pairing(tmp_path, capsys):
    s, z = simulate_one_run(1000, 2.0, seed=0)
    np.savez(tmp_path / "c.npz", score=s, member=z)
    argv = ["scores", str(tmp_path / "c.npz"), "--one-run", "-o", str(tmp_path / "o")]
    assert main([*argv, "--family", "dpsgd", "--sample-rate", "1", "--steps", "1", "-q"]) == 0
    record = (tmp_path / "o" / "results.json").read_text()
    assert '"family": "dpsgd"' in record and "assumes the mechanism is DP-SGD" in record
    assert main([*argv, "--steps", "3"]) == 1
    assert "--sample-rate and --steps" in capsys.readouterr().err
    assert main([*argv, "--sample-rate", "1", "--steps", "1"]) == 1
    assert "--family dpsgd" in capsys.readouterr().err


def test_one_run_on_a_membership_sorted_file_certifies_nothing(tmp_path, capsys):
    """A CSV sorted by its membership column with scores that carry no information: eps >= 0,
    mu >= 0 (a tie order from row position certified eps >= 10.6 here)."""
    frame = pd.DataFrame({"score": np.zeros(10_000), "member": np.repeat([1, 0], 5_000)})
    frame.to_csv(tmp_path / "sorted.csv", index=False)
    argv = ["scores", str(tmp_path / "sorted.csv"), "--one-run", "-o", str(tmp_path / "o")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "eps >= 0 at delta=1e-05, mu >= 0 " in out and "lower bound, 95%" in out


def test_one_run_claim_mu_is_refuted_and_announced(tmp_path, capsys):
    s, z = simulate_one_run(4000, 2.0, seed=0)
    np.savez(tmp_path / "c.npz", score=s, member=z)
    argv = ["scores", str(tmp_path / "c.npz"), "--one-run", "-o", str(tmp_path / "o")]
    assert main([*argv, "--claim-mu", "0.1"]) == 3
    assert "REFUTED" in capsys.readouterr().out
    assert main([*argv, "--claim-mu", "0.1", "--method", "steinke"]) == 1


def test_declared_threshold_on_the_command_line(tmp_path, capsys):
    """--threshold fixes the test in advance: the line reads the same eps as audit_scores with
    thresholds; without it, two-valued scores get a note pointing to it; with --one-run it is
    refused in one line before anything is written."""
    from dpaudit._core.numbers import format_number
    from dpaudit.audit.scores import audit_scores

    rng = np.random.default_rng(2)
    member = np.r_[np.zeros(400), np.ones(400)].astype(int)
    p = np.e / (1 + np.e)
    score = np.where(member == 1, rng.random(800) < p, rng.random(800) > p).astype(float)
    pd.DataFrame({"score": score, "member": member}).to_csv(tmp_path / "b.csv", index=False)
    argv = ["scores", str(tmp_path / "b.csv"), "--threshold", "0.5", "-o", str(tmp_path / "r")]
    assert main(argv) == 0
    declared = audit_scores(score[member == 0], score[member == 1], thresholds=[0.5])
    record = json.loads((tmp_path / "r" / "results.json").read_text())["audits"][0]
    each = dataclasses.replace(declared, confidence=record["family"]["confidence_per_test"])
    assert record["epsilon_lower_bounds"]["1e-05"] == each.epsilon_lower_bound(1e-5) > 0
    out = capsys.readouterr().out
    assert f"eps >= {format_number(each.epsilon_lower_bound(1e-5), rounding='down')}" in out
    assert "distinct values" not in out
    assert main(["scores", str(tmp_path / "b.csv"), "-o", str(tmp_path / "u")]) == 0
    assert "only 2 distinct values" in capsys.readouterr().out
    argv = ["scores", str(tmp_path / "b.csv"), "--one-run", "--threshold", "0.5"]
    assert main([*argv, "-o", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--threshold" in err
    assert not (tmp_path / "o").exists()


def test_a_refuted_claim_and_a_claim_that_holds_print_different_verdict_lines(table, capsys):
    path, _ = table
    argv = ["scores", str(path / "s.csv"), "-o", str(path / "r")]
    assert main([*argv, "--claim-mu", "0.3"]) == 3
    out = capsys.readouterr().out
    assert "REFUTED: scores: s.csv: 0.3-GDP" in out and "as expected" not in out
    assert main([*argv, "--claim-mu", "5"]) == 0
    out = capsys.readouterr().out
    assert "REFUTED" not in out and out.splitlines()[-1] == "all verdicts as expected"
    assert main([*argv, "--claim-mu", "0.3", "--no-fail-on-violation"]) == 0


def _damaged_npz(path):
    np.savez(path, score=np.arange(10.0), member=np.r_[np.zeros(5), np.ones(5)])
    path.write_bytes(path.read_bytes()[:40])


def _save(path, save, *args, **arrays):
    """``save`` (np.save or np.savez) into ``path`` as named, whatever its suffix."""
    with open(path, "wb") as handle:
        save(handle, *args, **arrays)


def _npy_of_impossible_shape(path):
    """An .npy header that claims 10^11 values (745 GiB) over a file of 300."""
    _save(path, np.save, np.arange(300.0))
    data = path.read_bytes()
    header = b"{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999,), }"
    path.write_bytes(data[:10] + header + b" " * (data.index(b"\n") - 10 - len(header)) + b"\n")


@pytest.mark.parametrize(
    ("name", "write", "needle"),
    [
        ("d.npz", _damaged_npz, "cannot be read as a .npz file"),
        ("latin.csv", lambda p: p.write_bytes(b"score,member\n\xe9\xff,1\n"), "cannot be read"),
        ("empty.csv", lambda p: p.write_text(""), "cannot be read as a .csv file"),
        (
            "huge.csv",
            lambda p: p.write_text("score,member\n" + "1e308,1\n-1e308,0\n" * 3),
            "column 'score': the scores span -1e+308 to 1e+308",
        ),
        (
            "wide.csv",
            lambda p: p.write_text("score,member\n" + "1e308,1\n0,0\n" * 3),
            "column 'score': the scores span 0 to 1e+308, a range wider than",
        ),
        ("few.csv", lambda p: p.write_text("score,member\n1,1\n2,0\n3,1\n"), "at least 4 scores"),
        ("fifo.csv", lambda p: os.mkfifo(p), "the scores file is not a regular file"),
        # each of these was a traceback: TypeError, MemoryError, OverflowError
        ("array.npz", lambda p: _save(p, np.save, np.arange(10.0)), "not an .npz archive"),
        ("archive.npy", lambda p: _save(p, np.savez, score=np.ones(8)), "not an .npy array"),
        ("shape.npy", _npy_of_impossible_shape, "cannot be read as a .npy file"),
        (
            "complex.npz",
            lambda p: _save(p, np.savez, score=np.arange(8.0) + 1j, member=np.array([0, 1] * 4)),
            "column 'score' holds complex numbers; scores are real",
        ),
        (
            "digits.csv",
            lambda p: p.write_text("score,member\n" + f"1{'0' * 400},1\n0,0\n" * 4),
            "column 'score' holds a number beyond the float range",
        ),
    ],
)
def test_unreadable_scores_are_one_line_naming_the_file(tmp_path, capsys, name, write, needle):
    path = tmp_path / name
    write(path)
    assert main(["scores", str(path), "-o", str(tmp_path / "r")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"error: {path}: " in err and needle in err, err
    assert "scores_d" not in err and "width" not in err
    assert not (tmp_path / "r").exists()


def test_a_one_run_file_of_one_canary_is_one_line_naming_the_file(tmp_path, capsys):
    path = tmp_path / "one.csv"
    path.write_text("score,member\n1,0\n")
    assert main(["scores", str(path), "--one-run", "-o", str(tmp_path / "r")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"error: {path}: canaries (rows): needs at least 2" in err


def test_the_second_input_file_is_nonmembers_and_out_is_a_deprecated_alias(tmp_path, capsys):
    rng = np.random.default_rng(1)
    np.save(tmp_path / "out.npy", rng.standard_normal(500))
    np.save(tmp_path / "in.npy", rng.standard_normal(500) + 1.0)
    argv = ["scores", str(tmp_path / "in.npy"), "-o", str(tmp_path / "r"), "-q"]
    assert main([*argv, "--nonmembers", str(tmp_path / "out.npy")]) == 0
    first = json.loads((tmp_path / "r" / "results.json").read_text())["audits"][0]
    assert capsys.readouterr().err == ""
    assert main([*argv, "--out", str(tmp_path / "out.npy")]) == 0
    assert "--out is deprecated" in capsys.readouterr().err
    again = json.loads((tmp_path / "r" / "results.json").read_text())["audits"][0]
    assert again["epsilon_lower_bounds"] == first["epsilon_lower_bounds"]
    both = [*argv, "--out", str(tmp_path / "out.npy"), "--nonmembers", str(tmp_path / "out.npy")]
    assert main(both) == 1


@pytest.mark.parametrize("claim", [[], ["--claim-mu", "20"]])
def test_the_line_shows_the_reports_numbers_and_their_confidence(table, capsys, claim):
    """The terminal line and the report read the same family of tests: the eps and mu printed
    are those of results.json, rounded down (lower bounds) and the ceiling up, with the
    confidence each was read at, written as the report writes it; with a claim too, whose
    tests share the confidence."""
    from dpaudit._core.numbers import format_number
    from dpaudit.reports.text import level_per_test

    path, _ = table
    assert main(["scores", str(path / "s.csv"), "-o", str(path / "r"), *claim]) == 0
    line = capsys.readouterr().out.strip().splitlines()[0]
    record = json.loads((path / "r" / "results.json").read_text())["audits"][0]
    eps = format_number(record["epsilon_lower_bounds"]["1e-05"], rounding="down")
    mu = format_number(record["mu_lower_bound"], rounding="down")
    assert f"eps >= {eps}" in line and f"mu >= {mu}" in line
    assert float(eps) <= record["epsilon_lower_bounds"]["1e-05"]
    assert float(mu) <= record["mu_lower_bound"]
    each = level_per_test(record)
    assert f"95% for the {record['family']['tests']} tests together, each at {each}" in line
    ceiling = format_number(record["mu_ceiling"], rounding="up")
    assert f"ceiling for this n: mu {ceiling}" in line and float(ceiling) >= record["mu_ceiling"]


def test_many_scores_get_stage_lines_on_stderr_and_quiet_gets_none(tmp_path, capsys, monkeypatch):
    from dpaudit import scores_command

    monkeypatch.setattr(scores_command, "STAGED_SCORES", 20)
    rng = np.random.default_rng(0)
    path = tmp_path / "s.csv"
    pd.DataFrame({"score": rng.normal(size=40), "member": [0, 1] * 20}).to_csv(path, index=False)
    assert main(["scores", str(path), "-o", str(tmp_path / "r")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "dpaudit: [1/1] scores: 40 scores: auditing",
        "dpaudit: [1/1] scores: 40 scores: writing the report",
    ]
    assert main(["scores", str(path), "-o", str(tmp_path / "q"), "-q"]) == 0
    assert capsys.readouterr().err == ""


def test_one_run_options_without_one_run_are_refused_not_ignored(tmp_path, capsys):
    """``--sample-rate 0.1 --steps 10`` on scores of many models used to be ignored (exit 0)."""
    table = tmp_path / "s.csv"
    table.write_text("score,member\n" + "".join(f"{i},{i % 2}\n" for i in range(40)))
    for extra in (["--sample-rate", "0.1", "--steps", "10"], ["--family", "gdp"]):
        assert main(["scores", str(table), "-o", str(tmp_path / "out"), *extra]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "only with --one-run" in err and extra[0] in err


def test_repeated_thresholds_are_refused_as_the_engine_refuses_them():
    from dpaudit import audit_scores

    with pytest.raises(ValueError, match="thresholds must not repeat values"):
        audit_scores(np.zeros(8), np.ones(8), thresholds=[0.5, 0.5])
