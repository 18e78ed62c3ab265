"""dpaudit.reports.text: numbers and sentences of every report."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpaudit.reports.tables import format_cell
from dpaudit.reports.text import format_delta, format_number, format_probability, verdict_sentence


def test_numbers_use_one_format_for_missing_and_infinite_values():
    assert format_number(None) == "—"
    assert format_number(math.inf) == "∞" and format_number("-inf") == "−∞"
    assert format_number(3.14159265) == "3.142"


def test_probabilities_near_one_keep_their_distance_to_one():
    assert format_probability(0.9999748) == "0.9999748"
    assert format_probability(0.5) == "0.5"


def test_deltas_are_written_as_given():
    assert format_delta(0.0) == "0" and format_delta("1e-05") == "1e-05"


def test_verdict_sentence_of_a_violation_names_the_test(violated_record):
    sentence = verdict_sentence(violated_record)
    assert violated_record["verdict"] == "violated"
    assert "threshold" in sentence


def test_report_summary_says_whether_every_verdict_is_as_expected():
    """A deliberately wrong claim refuted as expected is announced as expected; a refutation
    nobody expected is counted as not as expected (both report formats use this line)."""
    from dpaudit.reports.text import report_summary

    expected_refutation = {"verdict": "violated", "expect": "violated", "claim": {"kind": "x"}}
    fine = {"verdict": "consistent", "expect": "consistent", "claim": {"kind": "x"}}
    surprise = {"verdict": "violated", "expect": "consistent", "claim": {"kind": "x"}}
    assert report_summary([fine, expected_refutation]) == (
        "2 audits, 1 violated; all verdicts as expected"
    )
    assert report_summary([fine, surprise]) == "2 audits, 1 violated; 1 not as expected"


# --- bounds round towards the side on which they hold ---------------------------------------------
def test_a_lower_bound_is_never_printed_rounded_up():
    assert format_number(0.99983, rounding="down") == "0.9998"
    assert format_number(0.99996, rounding="down") == "0.9999"  # nearest would be "1"
    assert format_number(0.99983, 3, rounding="down") == "0.999"
    assert format_number(9.99996, rounding="down") == "9.999"
    assert format_number(1.23456e-7, rounding="down") == "1.234e-07"
    assert format_number(0.99983, rounding="up") == "0.9999"
    assert format_number(9.99996, rounding="up") == "10"
    assert format_number(-0.99983, rounding="down") == "-0.9999"
    assert format_number(0.0, rounding="up") == "0" and format_number(2.0, rounding="down") == "2"
    assert format_probability(0.99997481, rounding="up") == "0.9999749"
    assert format_probability(0.99997489, rounding="down") == "0.9999748"


@settings(max_examples=300, deadline=None)
@given(
    st.floats(-1e300, 1e300, allow_nan=False, allow_infinity=False, allow_subnormal=False),
    st.integers(min_value=1, max_value=8),
)
def test_directed_rounding_brackets_the_value_within_one_unit(x, digits):
    low = float(format_number(x, digits, rounding="down"))
    high = float(format_number(x, digits, rounding="up"))
    nearest = float(format_number(x, digits))
    assert low <= x <= high
    assert nearest in (low, high)
    unit = 10.0 ** (math.floor(math.log10(abs(x))) - digits + 1) if x else 0.0
    assert high - low <= 1.0000001 * unit


def test_report_cells_of_bounds_round_to_their_safe_side():
    assert format_cell("lower", 0.99996) == "0.9999"
    assert format_cell("true delta >=", 0.99996) == "0.9999"
    assert format_cell("ε lower bound", 2.99996) == "2.999"
    assert format_cell("upper", 0.0012341) == "0.001235"
    assert format_cell("delta (estimate)", 0.99996) == "1"


def test_rounding_must_be_named():
    with pytest.raises(ValueError, match="rounding must be one of"):
        format_number(1.0, rounding="floor")


def test_every_theory_method_has_one_title_used_by_tables_and_figures(violated_record):
    """A theory method's title lives in one table: the short title heads the columns of the
    tables, the long one labels the figures' curves, and an approximation says it is one."""
    from dpaudit.mechanisms.base import METHOD_KINDS
    from dpaudit.reports.figures import plot_privacy_profile, plot_tradeoff
    from dpaudit.reports.tables import bounds_table
    from dpaudit.reports.text import METHOD_TITLES, method_title

    assert set(METHOD_TITLES) == set(METHOD_KINDS) - {"claim"}
    assert method_title("pld") == "PLD" and method_title("pld", long=True) == "PLD accountant"
    assert method_title("gdp_clt", long=True) == "GDP CLT (approx.)"
    methods = list(violated_record["theory"])
    assert {method_title(m) for m in methods} <= set(bounds_table(violated_record).columns)
    for axes in (plot_tradeoff(violated_record), plot_privacy_profile(violated_record)):
        labels = {line.get_label() for line in axes.get_lines()}
        assert {f"theory: {method_title(m, long=True)}" for m in methods} <= labels


def test_a_final_model_dpsgd_report_says_how_far_the_composition_is_beyond_its_reach():
    import dpaudit
    from dpaudit.mechanisms.dpsgd import DPSGD
    from dpaudit.reports.text import reach_note

    final = DPSGD(sigma=1.0, rate=0.05, steps=40, observe="final_canary")
    record = dpaudit.reports.build_record(dpaudit.audit_mechanism(final, trials=2000, seed=0))
    note = reach_note(record)
    last, composed = final.epsilon(1e-5, "last_iterate"), final.epsilon(1e-5, "pld")
    assert f"ε = {last:.4g}" in note and f"ε = {composed:.4g}" in note
    assert f"{composed / last:.4g} times as much" in note
    white = DPSGD(sigma=1.0, rate=0.05, steps=40, observe="updates")
    record = dpaudit.reports.build_record(dpaudit.audit_mechanism(white, trials=2000, seed=0))
    assert reach_note(record) is None
