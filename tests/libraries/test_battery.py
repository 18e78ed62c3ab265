"""The library battery: its statistics on correct reference mechanisms wrapped the way the
libraries are, and its plan, records and errors."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.bounds.rdp import ZCDP
from dpaudit.bounds.tradeoff import approx_dp
from dpaudit.libraries import LIBRARIES, library, plan_battery, run_battery
from dpaudit.libraries.battery import Claimed, Function, Library, audit_draws, plan, run
from dpaudit.mechanisms import Gaussian, Laplace
from dpaudit.mechanisms.pairs import boundary_pairs, random_pairs

BOUNDS = (-1.0, 1.0)


def _release(mechanism):
    """dpaudit's own mechanism as a release function, built once per audit as for a library."""

    def build():
        return lambda dataset, size, rng: mechanism.sample(np.asarray(dataset), size, rng)

    return build


def _pairs(relation):
    return {
        "boundary": boundary_pairs(5, *BOUNDS, relation=relation),
        "random": random_pairs(5, *BOUNDS, relation=relation, budget=4),
    }


def _claims(add_remove, replace_one, deltas):
    return {
        "add_remove": Claimed(add_remove, {}, deltas, "add/remove claim"),
        "replace_one": Claimed(replace_one, {}, deltas, "replace-one claim"),
    }


def reference(laplace_eps: float = 1.0) -> Library:
    """Correct Laplace (scale 1) and Gaussian (sigma 1) sums of records in [-1, 1], claiming
    exactly what they are: eps = 1 (add/remove) and 2 (replace-one), rho = 0.5 and 2."""
    functions = [
        Function(
            "laplace",
            _release(Laplace(scale=1.0)),
            _claims(approx_dp(laplace_eps, 0.0), approx_dp(2 * laplace_eps, 0.0), (0.0,)),
            _pairs,
            stated=False,
        ),
        Function(
            "gaussian",
            _release(Gaussian(sigma=1.0)),
            _claims(ZCDP(0.5).tradeoff(), ZCDP(2.0).tradeoff(), (1e-5,)),
            _pairs,
        ),
    ]
    return Library("reference", "numpy", "numpy", lambda: functions, True, False)


def test_the_plan_splits_the_confidence_over_its_rows_and_counts_its_draws():
    laid_out = plan(reference(), trials=1000, candidates=2, screen_trials=100, confidence=0.9)
    assert len(laid_out.rows) == 2 * 2 * 2
    assert laid_out.row_confidence == pytest.approx(1 - 0.1 / 8)
    assert all(len(r.candidates) == 2 for r in laid_out.rows)
    screens = 2 * audit_draws(100)
    assert laid_out.draws == 8 * (2 * audit_draws(1000) + screens)
    assert plan(reference(), trials=1000, quick=True).draws == 8 * audit_draws(1000)


def test_a_correct_reference_battery_is_consistent_and_an_over_claim_is_refuted():
    honest = run(plan(reference(), trials=1000, quick=True, seed=3))
    assert not honest.refuted
    assert {r["verdict"] for r in honest.table} == {"consistent"}
    over = run(plan(reference(laplace_eps=0.3), trials=1000, quick=True, seed=3))
    refuted = {(r["function"], r["generator"]) for r in over.table if r["verdict"] == "violated"}
    assert ("laplace", "boundary") in refuted and not any(f == "gaussian" for f, _ in refuted)


def _silent_laplace(name, add_remove_eps, replace_one_eps):
    """A Laplace sum (true eps 1 under add/remove, 2 under replace-one) claiming the given eps,
    silent about its relation."""
    claims = _claims(approx_dp(add_remove_eps, 0.0), approx_dp(replace_one_eps, 0.0), (0.0,))
    return Function(name, _release(Laplace(scale=1.0)), claims, _pairs, stated=False)


def test_a_silent_function_is_refuted_under_every_relation_or_with_the_others():
    # "a" holds under add/remove only, "b" under replace-one only: neither is refuted on its
    # own, but no one relation makes both hold. A stated function is refuted by one row.
    # Fixed seeds; at any seed the exact claims raise a false alarm with probability at most
    # 0.05 (the battery's family-wise level), and the over-claims' boundary rows certify far
    # more than they claim (seeds 0 to 4: "a" 1.6 to 1.9 against 0.5 under replace-one, "b"
    # 0.75 to 0.84 against 0.25 under add/remove).
    a = _silent_laplace("a", 1.0, 0.5)
    b = _silent_laplace("b", 0.25, 2.0)
    settings = {"trials": 2000, "quick": True, "seed": 5}
    alone = run(plan(Library("one", "numpy", "numpy", lambda: [a], True, False), **settings))
    assert {(r["relation"], r["verdict"]) for r in alone.table} >= {
        ("replace_one", "violated"),
        ("add_remove", "consistent"),
    }
    assert alone.findings() == [("one: a under one of add_remove, replace_one", "consistent")]
    assert not alone.refuted
    both = run(plan(Library("two", "numpy", "numpy", lambda: [a, b], True, False), **settings))
    claims = dict(both.findings())
    assert claims["two: a under one of add_remove, replace_one"] == "consistent"
    assert claims["two: b under one of add_remove, replace_one"] == "consistent"
    joint = [c for c in claims if c.startswith("two: 2 functions silent about their relation")]
    assert claims[joint[0]] == "violated" and both.refuted
    assert "under add_remove: b refuted; under replace_one: a refuted" in joint[0]
    # With a correct function beside it, add/remove makes every claim hold: the joint claim
    # stands although "a" is refuted under replace-one.
    c = _silent_laplace("c", 1.0, 2.0)
    fine = run(plan(Library("ok", "numpy", "numpy", lambda: [a, c], True, False), **settings))
    joint = [claim for claim, _ in fine.findings() if "silent about their relation" in claim]
    assert dict(fine.findings())[joint[0]] == "consistent" and not fine.refuted
    stated = Function("s", a.release, a.claims, _pairs, stated=True)
    one_row = run(plan(Library("st", "numpy", "numpy", lambda: [stated], True, False), **settings))
    assert one_row.findings() == [("st: s", "violated")]
    (finding,) = one_row.document()["battery"]["findings"]
    assert (finding["claim"], finding["verdict"]) == ("st: s", "violated")
    assert finding["relation"] == "replace_one (stated)"
    assert finding["reason"].startswith("under replace_one, boundary pairs: eps >= ")


def test_rows_audited_at_once_give_the_rows_audited_one_at_a_time():
    laid_out = plan(reference(), trials=500, candidates=2, seed=7)
    one, two = run(laid_out), run(laid_out, n_jobs=2)
    assert [r["epsilon_lower_bound"] for r in one.table] == [
        r["epsilon_lower_bound"] for r in two.table
    ]
    assert [r["pair"] for r in one.table] == [r["pair"] for r in two.table]
    with pytest.raises(ValueError, match="n_jobs must be a non-zero integer"):
        run(laid_out, n_jobs=0)


@pytest.mark.slow
def test_false_alarms_of_the_battery_stay_within_its_level_over_100_seeds():
    # 100 batteries of 8 rows each at family-wise confidence 0.95 on claims that are exact:
    # a battery is refuted with probability at most 0.05, so more than 12 refuted batteries
    # out of 100 would happen with probability below 0.002 (binomial tail).
    refuted = sum(
        run(plan(reference(), trials=1000, quick=True, seed=seed)).refuted for seed in range(100)
    )
    assert refuted <= 12


def test_a_row_whose_function_raises_is_an_error_not_a_crash(tmp_path):
    def broken():
        def release(dataset, size, rng):
            raise OverflowError("the library gave up")

        return release

    lib = Library(
        "broken",
        "numpy",
        "numpy",
        lambda: [Function("f", broken, _claims(approx_dp(1, 0), approx_dp(2, 0), (0.0,)), _pairs)],
        True,
        True,
    )
    battery = run(plan(lib, trials=100, quick=True, functions=["f"]))
    assert {r["verdict"] for r in battery.table} == {"error"}
    assert "OverflowError: the library gave up" in battery.table[0]["error"]
    assert not battery.refuted
    assert "raised OverflowError" in battery.markdown()
    with pytest.raises(ValueError, match="no function of the .* battery ran.*OverflowError"):
        battery.write(tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_bad_input_is_one_error_naming_the_parameter():
    with pytest.raises(ValueError, match="library must be one of"):
        library("tensorflow_privacy")
    with pytest.raises(ValueError, match="functions: reference has no covered function 'x'"):
        plan(reference(), functions=["x"])
    with pytest.raises(ValueError, match="candidates"):
        plan(reference(), candidates=0)
    with pytest.raises(ValueError, match="budget must be OUTPUTS"):
        plan(reference(), budget="lots")
    with pytest.raises(ValueError, match=r"raise the budget \(--budget\)"):
        plan(reference(), budget="1000")
    assert set(LIBRARIES) >= {"diffprivlib", "opendp", "python-dp", "pipeline-dp", "smartnoise-sql"}


def test_a_missing_library_names_its_pip_command():
    lib = Library("nothere", "dpaudit_no_such_module", "nothere", list, True, True)
    with pytest.raises(ValueError, match="library 'nothere' is not installed: pip install nothere"):
        plan(lib)


def test_diffprivlib_battery_in_ci_time():
    pytest.importorskip("diffprivlib")
    functions = ["mechanisms.Laplace(epsilon=1, sensitivity=1)", "tools.count_nonzero(epsilon=1)"]
    battery = run_battery("diffprivlib", trials=300, quick=True, functions=functions)
    assert {r["function"] for r in battery.table} == set(functions)
    assert {r["relation"] for r in battery.table} == {"replace_one", "add_remove"}
    document = battery.document()
    assert "diffprivlib" in document["battery"]["versions"]
    assert all("diffprivlib" in record["versions"] for record in document["audits"])


def test_opendp_battery_in_ci_time():
    pytest.importorskip("opendp")
    pipeline_name = "clamp(0.0, 1.0) >> sum >> laplace[float](scale=1)"
    functions = ["m.make_laplace[int](scale=1)", pipeline_name]
    laid_out = plan_battery("opendp", trials=300, quick=True, functions=functions)
    pipeline = [r for r in laid_out.rows if r.function.name == pipeline_name]
    assert {r.relation: r.claim.table["d_in"] for r in pipeline} == {
        "add_remove": 1,
        "replace_one": 2,
    }
    battery = run_battery(laid_out)
    assert not battery.refuted
    assert battery.provenance["seeded"] is False


def test_functions_must_be_a_list_of_names():
    with pytest.raises(ValueError, match="functions must be a list of function names"):
        plan(reference(), functions="laplace")


def test_the_command_states_its_cost_and_exits_3_on_a_refuted_claim(tmp_path, capsys):
    pytest.importorskip("diffprivlib")
    from dpaudit.cli import main

    name = "tools.sum[int](epsilon=1, bounds=(0, 2**61), dtype=int)"
    argv = ["library", "diffprivlib", "-o", str(tmp_path / "out"), "--trials", "400", "--quick"]
    assert main([*argv, "--function", name]) == 3
    captured = capsys.readouterr()
    # the overflow, boundary, special and random rows of both relations, one candidate each
    assert "8 audits, at most 14,416 calls into diffprivlib" in captured.err
    assert "| violated |" in captured.out
    assert (tmp_path / "out" / "index.html").is_file()


def test_the_command_names_a_missing_library_and_its_pip_command(tmp_path, capsys, monkeypatch):
    import sys

    from dpaudit.cli import main

    monkeypatch.setitem(sys.modules, "opendp", None)
    assert main(["library", "opendp", "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err.strip()
    assert err == "dpaudit: error: library 'opendp' is not installed: pip install opendp"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("quick", [True, False])
def test_the_stated_number_of_draws_is_never_exceeded(quick):
    drawn = []
    mechanism = Laplace(scale=1.0)

    def counting():
        def release(dataset, size, rng):
            drawn.append(size)
            return mechanism.sample(np.asarray(dataset), size, rng)

        return release

    claims = _claims(approx_dp(1, 0), approx_dp(2, 0), (0.0,))
    lib = Library(
        "counted", "numpy", "numpy", lambda: [Function("f", counting, claims, _pairs)], 1, 0
    )
    laid_out = plan(lib, trials=600, quick=quick, candidates=None if quick else 3)
    run(laid_out)
    assert 0 < sum(drawn) <= laid_out.draws


def test_a_library_whose_dependency_is_missing_says_so(tmp_path, monkeypatch):
    (tmp_path / "dpaudit_test_brokenlib.py").write_text("import dpaudit_no_such_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    lib = Library("brokenlib", "dpaudit_test_brokenlib", "brokenlib", list, True, True)
    with pytest.raises(ValueError, match="installed but cannot be imported .*dpaudit_no_such_dep"):
        lib.require()


def test_rows_run_until_decided_stop_early_and_keep_to_their_stated_draws():
    over = plan(
        reference(laplace_eps=0.3),
        trials=16384,
        candidates=2,
        seed=3,
        functions=["laplace"],
        until_decided=True,
    )
    assert all(c.setting is None for row in over.rows for c in row.candidates)
    battery = run(over)
    rows = {(r["function"], r["relation"], r["generator"]): r for r in battery.table}
    refuted = rows[("laplace", "add_remove", "boundary")]
    assert refuted["verdict"] == "violated" and refuted["stopped"] == "refuted"
    assert refuted["outputs_per_dataset"] < 16384  # stopped in its first phase
    for row, r in zip(over.rows, battery.table, strict=True):
        assert 2 * r["outputs_per_dataset"] <= over.row_draws(row) / len(row.candidates)
    assert battery.document()["battery"]["until_decided"] is True
    with pytest.raises(ValueError, match="until_decided"):
        plan(reference(), bounds=[(0.0, 1.0)], until_decided=True)
