"""dpaudit.reports.text: numbers and sentences of every report."""

from __future__ import annotations

import math

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
