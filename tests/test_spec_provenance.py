"""Specs find their code beside them; results.json says what was asked and against which claim."""

from __future__ import annotations

import json
import re
import sys

import numpy as np

import dpaudit as dpa
from dpaudit import cli

MODULE = """
import numpy as np

def release(dataset, rng):
    return float(np.sum(dataset)) + rng.laplace(0.0, 0.5)

def factory(scale):
    def fn(dataset, rng):
        return float(np.sum(dataset)) + rng.laplace(0.0, scale)
    return fn
"""

SPEC = """
[[audit]]
name = "beside"
claim = { kind = "approx_dp", eps = 1.0, delta = 0.0 }
attack = { kind = "threshold" }
trials = 4000
deltas = [0.0, 1e-6, 1e-3]
[audit.mechanism]
kind = "blackbox"
callable = "h17_beside_mech:release"
dataset = [0.0]
neighbour = [1.0]

[[audit]]
name = "factory"
claim = { kind = "approx_dp", eps = 1.0, delta = 0.0 }
attack = { kind = "threshold" }
trials = 4000
deltas = [0.0, 1e-6, 1e-3]
[audit.mechanism]
kind = "blackbox"
callable = "h17_beside_mech:factory"
params = { scale = 4.0 }
dataset = [0.0]
neighbour = [1.0]
"""


def test_run_finds_a_module_beside_the_spec_and_records_what_was_asked(tmp_path, monkeypatch):
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "h17_beside_mech.py").write_text(MODULE)
    (folder / "spec.toml").write_text(SPEC)
    monkeypatch.chdir(tmp_path)
    path_before = list(sys.path)
    code = cli.main(["run", str(folder / "spec.toml"), "-o", str(tmp_path / "out"), "--quiet"])
    assert sys.path == path_before and "h17_beside_mech" not in sys.modules
    # Laplace scale 0.5 is 2-DP: the (1, 0) claim is refuted; scale 4 keeps it.
    assert code == cli.EXIT_VIOLATION
    audits = json.loads((tmp_path / "out" / "results.json").read_text())["audits"]
    keys = ["0.0", "1e-06", "0.001"]
    for record in audits:
        assert list(record["epsilon_lower_bounds"]) == keys
        assert list(record["summary"]["epsilon_lower_bound"]) == keys
        assert record["summary"]["epsilon_lower_bound"] == record["epsilon_lower_bounds"]
        assert record["mechanism"]["params"]["claim"] == "(1, 0)-DP"
        assert "<locals>" not in record["mechanism"]["params"]["callable"]
    assert [r["verdict"] for r in audits] == ["violated", "consistent"]
    assert audits[1]["mechanism"]["params"]["callable"] == "h17_beside_mech:factory(scale=4.0)"
    # The page's text, without the line-break points and spans of its table cells.
    page = re.sub(r"<wbr>|</?span[^>]*>", "", (tmp_path / "out" / "index.html").read_text())
    assert "h17_beside_mech:factory(scale=4.0)" in page


def test_reports_write_carries_a_blackbox_claim(tmp_path):
    """A refuted BlackBox claim is reported violated in HTML, Markdown and JSON."""

    def release(dataset, rng):
        return float(np.sum(dataset)) + rng.laplace(0.0, 0.5)

    claim = dpa.bounds.approx_dp(1.0, 0.0)
    box = dpa.mechanisms.BlackBox(release, claim=claim, dataset=[0.0], neighbour=[1.0])
    pair = box.worst_case_pair()
    result = dpa.audit_mechanism(box, pair, dpa.attacks.Threshold(), trials=4000, seed=0)
    out = dpa.reports.write(result, tmp_path / "report")
    record = json.loads((out / "results.json").read_text())["audits"][0]
    assert record["verdict"] == "violated"
    assert record["mechanism"]["params"]["claim"] == claim.name
    assert "Violated" in (out / "README.md").read_text()
    assert "Violated" in (out / "index.html").read_text()


def test_cli_refutes_the_sparse_vector_whose_bound_exceeds_its_claim(tmp_path):
    """DP-Auditorium's sparse-vector variant (claim (1, 0)-DP, true eps up to 1.75 for c = 1)
    with the learned attack and 2e4 trials: the reported eps bound at delta = 0 exceeds 1 and
    the command exits with 3 (violated)."""
    spec = tmp_path / "svt.toml"
    spec.write_text(
        "[[audit]]\n"
        'name = "svt"\n'
        'mechanism = { kind = "flawed", name = "dpa_svt_reveal_records", eps = 1.0, c = 1 }\n'
        'attack = { kind = "learned", train_trials = 20_000 }\n'
        'claim = { kind = "approx_dp", eps = 1.0, delta = 0.0 }\n'
        "trials = 20_000\n"
        "deltas = [0.0]\n"
    )
    code = cli.main(["run", str(spec), "-o", str(tmp_path / "out"), "--quiet"])
    record = json.loads((tmp_path / "out" / "results.json").read_text())["audits"][0]
    assert record["epsilon_lower_bounds"]["0.0"] > 1.0
    assert record["verdict"] == "violated" and code == cli.EXIT_VIOLATION
