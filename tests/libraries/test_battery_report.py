"""One verdict everywhere: a battery's report says what ``dpaudit library`` prints (the refuted
claims with their relation and reason, the violated rows that refute no claim, the relations
assumed), ``-q`` keeps the ``REFUTED:`` lines, and the report draws the figures of the violated
rows only (unless asked for all), telling of each as it goes.

The battery is dpaudit's own Laplace sum of records in [-1, 1] (true eps 1 under add/remove, 2
under replace-one) claiming eps 1 under add/remove and 0.5 under replace-one, once silent about
its relation ("silent") and once stating it ("stated"), at 2,000 trials and seed 5: the
replace-one rows certify 1.6 to 1.9 against 0.5 (see ``test_battery.py``), the add/remove rows
test an exact claim, which a row refutes with probability at most 0.05 / 8 (Bonferroni).
"""

from __future__ import annotations

import contextlib
import html
import io
import json
import sys
from importlib.metadata import EntryPoint

import numpy as np
import pytest

from dpaudit import libraries, reports
from dpaudit.bounds.tradeoff import approx_dp
from dpaudit.cli import main
from dpaudit.libraries.battery import Claimed, Function, Library
from dpaudit.mechanisms import Laplace
from dpaudit.mechanisms.pairs import boundary_pairs, random_pairs
from dpaudit.reports.batteries import REFUTED, UNREFUTED

SETTINGS = ["--trials", "2000", "--quick", "--seed", "5", "--n-jobs", "1"]


def _release():
    mechanism = Laplace(scale=1.0)
    return lambda dataset, size, rng: mechanism.sample(np.asarray(dataset), size, rng)


def _pairs(relation):
    return {
        "boundary": boundary_pairs(5, -1.0, 1.0, relation=relation),
        "random": random_pairs(5, -1.0, 1.0, relation=relation, budget=4),
    }


def _function(name, stated):
    claims = {
        "add_remove": Claimed(approx_dp(1.0, 0.0), {}, (0.0,), "(1, 0)-DP"),
        "replace_one": Claimed(approx_dp(0.5, 0.0), {}, (0.0,), "(0.5, 0)-DP"),
    }
    return Function(name, _release, claims, _pairs, stated=stated)


def _tiny_figures(record, keys=("tradeoff", "profile", "histogram")):
    """One-pixel figures in place of an audit's (only their number is tested here)."""
    from matplotlib.figure import Figure

    return {key: Figure(figsize=(0.1, 0.1)) for key in keys}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """``dpaudit library fake`` (the silent and the stated Laplace sums) run four ways: as is,
    ``--function silent``, ``-q`` and ``--all-figures``; each ``(exit code, stdout, stderr,
    report directory)``. The figures of the audits are one-pixel stand-ins."""
    functions = [_function("silent", False), _function("stated", True)]
    library = Library("fake", "numpy", "numpy", lambda: functions, True, False)
    out = {}
    with pytest.MonkeyPatch.context() as patch:
        registered = libraries._registered()
        fake = EntryPoint("fake", __name__, "dpaudit.libraries")
        patch.setattr(libraries, "_registered", lambda: {**registered, "fake": [fake]})
        patch.setattr(sys.modules[__name__], "LIBRARY", library, raising=False)
        patch.setattr(reports.writer, "audit_figures", _tiny_figures)
        for key, extra in (
            ("default", []),
            ("silent", ["--function", "silent"]),
            ("quiet", ["-q"]),
            ("all", ["--all-figures"]),
        ):
            directory = tmp_path_factory.mktemp(key) / "out"
            capture = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(capture[0]), contextlib.redirect_stderr(capture[1]):
                code = main(["library", "fake", "-o", str(directory), *SETTINGS, *extra])
            out[key] = (code, capture[0].getvalue(), capture[1].getvalue(), directory)
    return out


def _verdict_part(page: str, end: str) -> str:
    """The report before its first audit's section: its verdict."""
    return page.split(end, 1)[0]


def test_the_report_headline_is_the_refuted_lines_the_terminal_prints(runs):
    code, out, _, report = runs["default"]
    assert code == 3
    refuted = [line for line in out.splitlines() if line.startswith(REFUTED)]
    # the stated function is refuted, named with its relation and the rows that refute it
    assert len(refuted) == 1 and refuted[0].startswith(f"{REFUTED}fake: stated — under ")
    assert "under replace_one, boundary pairs: eps >= " in refuted[0]
    page = (report / "index.html").read_text()
    head = _verdict_part(page, "<h2")
    assert f'<div class="verdict violated"><p>{html.escape(refuted[0])}</p></div>' in head
    assert "not as expected" not in page and "1 of 2 claims refuted" in head
    top = _verdict_part((report / "README.md").read_text(), "\n## ")
    assert f"- **{reports.markdown.inline_markdown(refuted[0])}**" in top
    document = json.loads((report / "results.json").read_text())
    assert reports.batteries.refuted_lines(document["battery"]) == refuted


def test_violated_rows_that_refute_no_claim_are_named_with_the_reason(runs):
    code, out, _, report = runs["silent"]
    assert code == 0
    lines = out.splitlines()
    (note,) = [line for line in lines if line.startswith(UNREFUTED)]
    assert "fake: silent: violated under replace_one (assumed relation), boundary pairs" in note
    assert "does not say which neighbours it means" in note
    assert "the claim may hold under add_remove" in note
    assert lines[-1] == "all verdicts as expected"
    page = _verdict_part((report / "index.html").read_text(), "<h2")
    assert html.escape(note) in page
    readme = _verdict_part((report / "README.md").read_text(), "\n## ")
    assert reports.markdown.inline_markdown(note) in readme


def test_rows_under_an_assumed_relation_say_so_in_html_and_markdown(runs):
    report = runs["silent"][3]
    page = (report / "index.html").read_text()
    readme = (report / "README.md").read_text()
    for relation in ("replace_one", "add_remove"):
        heading = f"silent [{relation} (assumed relation), boundary]"
        assert f'<h2 id="audit-silent--{relation}--assumed-relation---boundary-">' in page
        assert heading in page and reports.markdown.inline_markdown(heading) in readme
        assert f"| {relation} (assumed) | boundary |" in readme


def test_quiet_keeps_the_refuted_lines(runs):
    code, out, err, _ = runs["quiet"]
    assert code == 3
    lines = out.splitlines()
    assert lines and all(line.startswith((REFUTED, UNREFUTED)) for line in lines)
    assert [line for line in lines if line.startswith(REFUTED)] == [
        line for line in runs["default"][1].splitlines() if line.startswith(REFUTED)
    ]
    assert "all verdicts as expected" not in out and "dpaudit: report:" not in err


def test_the_report_draws_the_violated_rows_figures_and_tells_of_each(runs):
    _, _, err, report = runs["default"]
    document = json.loads((report / "results.json").read_text())
    violated = [r["name"] for r in document["audits"] if r["verdict"] == "violated"]
    assert 0 < len(violated) < len(document["audits"]) == 8
    # by default: the trade-off plane of each violated row, and the summary
    pngs = sorted(p.name for p in (report / "figures").iterdir())
    assert len(pngs) == len(violated) + 1 and "summary.png" in pngs
    assert all(name.endswith("-tradeoff.png") for name in pngs if name != "summary.png")
    page = (report / "index.html").read_text()
    assert page.count("data:image/png;base64,") == len(violated) + 1
    told = [line for line in err.splitlines() if line.startswith("dpaudit: report: figure ")]
    assert len(told) == len(violated) + 1
    assert told[0].startswith(f"dpaudit: report: figure 1/{len(violated) + 1}: the summary")
    # the claim's curve is stored once per record, not again as a theory of its own, and by
    # the points where it bends (an (eps, 0) claim: a handful)
    assert all("claim" not in record["theory"] for record in document["audits"])
    assert all(len(record["claim"]["tradeoff"]["alpha"]) < 10 for record in document["audits"])
    _, _, err, every = runs["all"]
    assert len(list((every / "figures").iterdir())) == 3 * 8 + 1
    assert len([line for line in err.splitlines() if "report: figure " in line]) == 8 + 1


def test_a_battery_report_drawn_again_from_results_json_keeps_its_verdict(runs, tmp_path):
    report = runs["default"][3]
    assert main(["report", str(report), "-o", str(tmp_path / "again"), "-q"]) == 0
    for name in ("README.md", "index.html"):
        first = (report / name).read_text()
        again = (tmp_path / "again" / name).read_text()
        assert _verdict_part(again, "<h2" if name == "index.html" else "\n## ") == _verdict_part(
            first, "<h2" if name == "index.html" else "\n## "
        )


def test_a_stored_claim_keeps_only_the_points_where_it_bends():
    from dpaudit.bounds.rdp import ZCDP
    from dpaudit.libraries.battery import _bends
    from dpaudit.reports.records import CURVE_ALPHA

    for curve, most in ((approx_dp(1.0, 0.0), 10), (approx_dp(0.5, 1e-3), 10)):
        points = {"alpha": CURVE_ALPHA.tolist(), "beta": curve(CURVE_ALPHA).tolist()}
        bent = _bends(points)
        assert len(bent["alpha"]) <= most
        # linear interpolation between the points kept gives back every stored point
        back = np.interp(CURVE_ALPHA, bent["alpha"], bent["beta"])
        assert np.max(np.abs(back - curve(CURVE_ALPHA))) <= 1e-12
    smooth = {"alpha": CURVE_ALPHA.tolist(), "beta": ZCDP(0.5).tradeoff()(CURVE_ALPHA).tolist()}
    bent = _bends(smooth)
    back = np.interp(CURVE_ALPHA, bent["alpha"], bent["beta"])
    assert np.max(np.abs(back - np.asarray(smooth["beta"]))) <= 1e-12
