"""Batteries that search input spaces: correct reference functions declared with an input
space, the rows and pins the plan lays out, what the records say of the setting found, the
false-alarm rate of the whole search, and diffprivlib's floating-point sums found on their own.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from dpaudit.bounds.tradeoff import approx_dp
from dpaudit.libraries import plan_battery, run_battery
from dpaudit.libraries.battery import Claimed, Function, Library, _compact, plan, run
from dpaudit.mechanisms.inputs import SPECIALS, InputSpace, Setting, powers_of_two


def _claims(epsilon: float) -> dict[str, Claimed]:
    claim = Claimed(approx_dp(epsilon, 0.0), {"eps": epsilon}, (0.0,), f"{epsilon:g}-DP")
    return {"replace_one": claim, "add_remove": claim}


def _exact_sum(setting: Setting):
    """A correct bounded sum: records clipped (NaN read as the lower bound), summed exactly
    relative to the lower bound (``math.fsum`` of ``x - lower``, or integers), Laplace noise of
    scale ``2 * width / eps`` from the audit's generator. Replacing or adding a record moves the
    centred sum by at most the width plus its one rounding, so it is ``eps / 2``-DP under both
    relations (Dwork et al. 2006, Laplace mechanism) up to rounding of order ``2**-52``; its
    claim of ``eps`` holds with room."""
    lo, hi = setting.bounds
    scale = 2.0 * (hi - lo) / setting.epsilon

    def release(dataset, size, rng):
        if setting.integer:
            total = float(sum(min(max(int(v), lo), hi) - lo for v in np.asarray(dataset)))
        else:
            x = np.asarray(dataset, dtype=float)
            x = np.clip(np.where(np.isnan(x), lo, x), lo, hi)
            total = math.fsum(x - lo)
        return total + scale * rng.laplace(0.0, 1.0, size)

    return release


def _exact_sum_function(setting: Setting, space: InputSpace | None = None) -> Function:
    return Function(
        f"exact_sum({setting.describe()})",
        lambda: _exact_sum(setting),
        _claims(setting.epsilon),
        lambda relation: {},
        space=space,
        at=None if space is None else _exact_sum_function,
    )


def _randomized_response(setting: Setting):
    """Randomized response on one bit: the bit kept with probability ``e^eps / (1 + e^eps)``,
    exactly ``eps``-DP (Warner 1965)."""
    keep = math.exp(setting.epsilon) / (1.0 + math.exp(setting.epsilon))

    def release(dataset, size, rng):
        bit = int(np.asarray(dataset).ravel()[0] > 0)
        flip = rng.random(size) >= keep
        return np.where(flip, 1 - bit, bit).astype(float)

    return release


def _rr_function(setting: Setting, space: InputSpace | None = None) -> Function:
    claim = {"replace_one": _claims(setting.epsilon)["replace_one"]}
    return Function(
        f"randomized_response(eps={setting.epsilon:g})",
        lambda: _randomized_response(setting),
        claim,
        lambda relation: {},
        space=space,
        at=None if space is None else _rr_function,
    )


SUM_SPACE = InputSpace(
    default=Setting((0.0, 1.0), 10),
    offsets=(0.0, *powers_of_two((10, 30, 52, 1000), signed=True)),
    widths=(1.0, 2.0**20),
    width_ulps=(4,),
    sizes=(1, 10, 1000),
    dtypes=("float64", "int64"),
    epsilons=(0.5, 1.0, 4.0),
    specials=SPECIALS,
    generators=("boundary", "rounding", "overflow", "special", "random"),
    accumulate=np.sum,
    records_per_output=1000.0,
)
RR_SPACE = InputSpace(
    default=Setting((0, 1), 1, "int64", 1.0),
    epsilons=(0.25, 2.0),
    relations=("replace_one",),
)


def reference_library() -> Library:
    """Correct reference functions wrapped as a library, each with an input space."""
    functions = [
        _exact_sum_function(SUM_SPACE.default, SUM_SPACE),
        _rr_function(RR_SPACE.default, RR_SPACE),
    ]
    return Library("reference", "numpy", "numpy", lambda: functions, True, False)


def test_rows_are_one_per_function_relation_and_generator_with_candidates_over_the_space():
    laid_out = plan(reference_library(), trials=500, candidates=12)
    generators = {(r.function.name.split("(")[0], r.relation, r.generator) for r in laid_out.rows}
    for relation in ("replace_one", "add_remove"):
        for generator in ("boundary", "rounding", "overflow", "special", "random"):
            assert ("exact_sum", relation, generator) in generators
    assert ("randomized_response", "replace_one", "boundary") in generators
    assert ("randomized_response", "replace_one", "random") in generators
    assert len(laid_out.rows) == 12
    sums = [r for r in laid_out.rows if r.function.name.startswith("exact_sum")]
    assert all(1 <= len(r.candidates) <= 12 for r in laid_out.rows)
    boundary = next(r for r in sums if r.generator == "boundary")
    assert boundary.candidates[0].setting == SUM_SPACE.default  # the default first
    assert len({c.setting for c in boundary.candidates}) > 1
    assert laid_out.row_confidence == pytest.approx(1 - 0.05 / 12)
    assert laid_out.draws > 0


def test_pins_restrict_every_space_and_a_function_without_the_pinned_bounds_is_left_out():
    laid_out = plan(
        reference_library(),
        relations=["add_remove"],
        bounds=[(2.0**30, 2.0**30 + 1.0)],
        sizes=[100],
        epsilons=[0.5],
    )
    assert {r.relation for r in laid_out.rows} == {"add_remove"}
    settings = {c.setting for r in laid_out.rows for c in r.candidates}
    assert {s.bounds for s in settings} <= {(2.0**30, 2.0**30 + 1.0), (2**30, 2**30 + 1)}
    assert {s.epsilon for s in settings} == {0.5}
    assert {s.size for s in settings if s.dtype == "float64"} == {100}
    # randomized response states replace-one only: pinned to add_remove, it has no row
    assert not any(r.function.name.startswith("randomized") for r in laid_out.rows)
    with pytest.raises(ValueError, match="nothing to audit"):
        plan(
            reference_library(), relations=["add_remove"], functions=["randomized_response(eps=1)"]
        )
    with pytest.raises(ValueError, match="bounds need lower < upper"):
        plan(reference_library(), bounds=[(1.0, 0.0)])
    with pytest.raises(ValueError, match="sizes must be an integer"):
        plan(reference_library(), sizes=[0])
    with pytest.raises(ValueError, match="epsilons must be in"):
        plan(reference_library(), epsilons=[-1.0])
    with pytest.raises(ValueError, match="relations must be among"):
        plan(reference_library(), relations=["swap"])


def test_the_rows_say_which_setting_and_pair_the_search_found(tmp_path):
    laid_out = plan(reference_library(), trials=300, candidates=4, screen_trials=64, seed=1)
    battery = run(replace(laid_out, rows=laid_out.rows[:3]))
    for row in battery.table:
        assert row["setting"].startswith("bounds [")
        assert "records, eps = " in row["setting"]
        assert row["candidates"] == 4 and 1 <= row["screened"] <= 4
    for record in battery.records:
        search = record["search"]
        assert search["setting"]["dtype"] in ("float64", "int64")
        assert search["levels"]["screen"] == 0.0
        assert "generator at bounds [" in record["description"]
        assert "the search screened" in record["description"]
    assert " at bounds [" in battery.markdown()
    battery.write(tmp_path / "out")


def test_long_datasets_are_kept_in_results_as_runs_or_their_size():
    assert _compact([1.0, 2.0]) == [1.0, 2.0]
    runs = [2.0**30] * 1500 + [2.0**30 + 1.0]
    assert _compact(runs) == "1,501 records: 1,500 x 2^30, 1 x 1,073,741,825"
    mixed = list(np.arange(2000.0))
    assert _compact(mixed).startswith("2,000 records: 0, 1, 2, 3, 4, ...")


@pytest.mark.slow
def test_searching_batteries_of_correct_functions_refute_within_their_family_wise_level():
    # 100 batteries of the two correct reference functions above (12 rows each, every row a
    # search over up to 12 candidates across the input space: offsets to 2**1000, widths down
    # to 4 ulps, special values, integer records, eps from 0.5 to 4), each at family-wise
    # confidence 0.95 with its own seed. A battery is refuted with probability at most 0.05 (the
    # screen spends none of the level, the confirmations share it by Bonferroni), so the number
    # of refuted batteries is at most Binomial(100, 0.05) in distribution: more than 12 happens
    # with probability 0.0015 (the false-failure probability of this test).
    assert stats.binom.sf(12, 100, 0.05) < 0.002
    library = reference_library()
    refuted = sum(
        run(plan(library, trials=1000, candidates=12, seed=seed)).refuted for seed in range(100)
    )
    assert refuted <= 12


@pytest.mark.slow
def test_diffprivlibs_float_sums_are_refuted_under_replace_one_by_pairs_the_search_found():
    # No magnitude or pair below: the rounding rows of the default search of tools.sum and
    # tools.mean under replace-one. Each confirmation is an audit at the battery's level; a
    # refutation of a correct claim would have probability at most 0.05.
    pytest.importorskip("diffprivlib")
    names = ["tools.sum(epsilon=1, bounds=(0, 1))", "tools.mean(epsilon=1, bounds=(0, 1))"]
    laid_out = plan_battery("diffprivlib", functions=names, relations=["replace_one"])
    rows = tuple(r for r in laid_out.rows if r.generator == "rounding")
    battery = run_battery(replace(laid_out, rows=rows))
    assert [r["verdict"] for r in battery.table] == ["violated", "violated"]
    for row in battery.table:
        assert not row["setting"].startswith("bounds [0, 1]")
        assert row["epsilon_lower_bound"] > row["claimed_epsilon"]


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--bounds", "1,0", "argument --bounds: must be LOWER,UPPER"),
        ("--bounds", "0,inf", "argument --bounds: must be LOWER,UPPER"),
        ("--sizes", "10,0", "argument --sizes: must be whole numbers"),
        ("--sizes", "2.5", "argument --sizes: must be whole numbers"),
        ("--eps", "1,-1", "argument --eps: must be positive numbers"),
        ("--relation", "swap", "argument --relation: must be one of"),
        ("--budget", "soon", "argument --budget: must be OUTPUTS, SECONDS"),
        ("--budget", "5m,6m", "argument --budget: gives seconds twice"),
    ],
)
def test_the_command_refuses_each_bad_pin_in_one_line_before_any_work(
    tmp_path, capsys, option, value, says
):
    from dpaudit.cli import main

    out = tmp_path / "out"
    assert main(["library", "opendp", "-o", str(out), option, value]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"dpaudit: error: {says}") and "\n" not in err
    assert not out.exists()


def test_the_command_refuses_a_budget_too_small_for_the_confirmations(tmp_path, capsys):
    pytest.importorskip("opendp")
    from dpaudit.cli import main

    assert main(["library", "opendp", "-o", str(tmp_path / "out"), "--budget", "1000"]) == 1
    err = capsys.readouterr().err.strip()
    assert "raise the budget (--budget)" in err and "\n" not in err


def test_the_command_searches_the_pinned_setting_and_shows_it(tmp_path, capsys):
    pytest.importorskip("diffprivlib")
    from dpaudit.cli import main

    argv = [
        "library",
        "diffprivlib",
        "-o",
        str(tmp_path / "out"),
        "--function",
        "tools.sum(epsilon=1, bounds=(0, 1))",
        "--relation",
        "replace_one",
        "--bounds",
        "1073741824,1073741825",
        "--sizes",
        "100",
        "--eps",
        "2",
        "--trials",
        "300",
        "--quick",
    ]
    main(argv)
    captured = capsys.readouterr()
    assert "4 audits" in captured.err  # boundary, rounding, special, random; overflow has none
    assert "bounds [2^30, 2^30 + 1], 100 float64 records, eps = 2" in captured.out
    assert "| add_remove" not in captured.out
